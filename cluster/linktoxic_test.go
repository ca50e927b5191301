package cluster

import (
	"sync"
	"testing"
	"time"
)

// TestToxicChurnOnClosingConnections replays the shape that panicked the
// whole process inside toxiproxy v2.12.0 when toxics were added to and
// removed from running proxies: long reply delays that make clients time
// out and close their connections, a blackhole over the delay, its heal,
// and the delay again at once, many times over. The link's toxics are now
// fixed at the proxy's making, so the churn only changes their state; the
// test fails by crashing the test binary if that is not so.
func TestToxicChurnOnClosingConnections(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 60*time.Second)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := through(t, c, 0, "n1", 30*time.Millisecond)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = cl.Ping(ctx).Err() // times out and closes its connection
			}
		}()
	}
	for i := 0; i < 60; i++ {
		if err := c.Delay(400*time.Millisecond, 0, Downstream, "c0->n1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if err := c.Cut(Blackhole, Downstream, "c0->n1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
		if err := c.Heal("c0->n1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Delay(400*time.Millisecond, 0, Downstream, "c0->n1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Cut(Reset, Upstream, "c0->n1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Heal("c0->n1"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	cl := through(t, c, 0, "n1", time.Second)
	if err := cl.Ping(ctx).Err(); err != nil {
		// A healed blackhole closes what it held: one retry dials anew.
		if err := cl.Ping(ctx).Err(); err != nil {
			t.Fatalf("ping after the churn healed: %v", err)
		}
	}
}

// TestHealReleasesDelayedReplies: a reply held by a delay goes out when the
// delay is healed, not when it would have ended (as toxiproxy's latency
// toxic flushes on removal).
func TestHealReleasesDelayedReplies(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", 20*time.Second)
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Delay(10*time.Second, 0, Downstream, "c0->n1"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- cl.Ping(ctx).Err() }()
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("ping returned (%v) through a 10 s reply delay after %v", err, time.Since(start))
	default:
	}
	if err := c.Heal("c0->n1"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("ping after heal: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the delayed reply came %v after the ping, want it at the heal (~300ms)", took)
	}
}
