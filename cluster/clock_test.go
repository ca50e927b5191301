package cluster

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// skew is the node's TIME minus the host's wall clock.
//
// It reads TIME a few times and keeps the reading of the shortest round
// trip, as NTP does: the server read its clock within that round trip, so
// the shortest one bounds the error best (one reading on a loaded host
// could be off by half a slow round trip).
func skew(t testing.TB, cl *redis.Client) time.Duration {
	t.Helper()
	d, _ := reading(t, cl)
	return d
}

// reading is skew's reading and the host's time it was taken at (the
// middle of the shortest round trip).
func reading(t testing.TB, cl *redis.Client) (time.Duration, time.Time) {
	t.Helper()
	var best, rtt time.Duration
	var at time.Time
	for i := 0; i < 5; i++ {
		before := time.Now()
		tm, err := cl.Time(testCtx(t, 5*time.Second)).Result()
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(before)
		if i == 0 || took < rtt {
			at = before.Add(took / 2)
			best, rtt = tm.Sub(at), took
		}
	}
	return best, at
}

func near(got, want, tolerance time.Duration) bool {
	return math.Abs(float64(got-want)) <= float64(tolerance)
}

func TestClockShimShiftsExpiryAndTime(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:2"), Clock: true})
	ctx := testCtx(t, 30*time.Second)
	n1, n2 := direct(t, c, "n1"), direct(t, c, "n2")

	if d := skew(t, n1); !near(d, 0, time.Second) {
		t.Fatalf("n1 is off by %v with offset 0", d)
	}
	const ttl = 2 * time.Second
	for _, cl := range []*redis.Client{n1, n2} {
		if err := cl.Set(ctx, "lock", "holder", ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetClock("n1", ttl+time.Second); err != nil {
		t.Fatal(err)
	}
	if n := n1.Exists(ctx, "lock").Val(); n != 0 {
		t.Error("n1's clock jumped past the TTL, yet the key is still there")
	}
	if v := n2.Get(ctx, "lock").Val(); v != "holder" {
		t.Errorf("n2's clock did not move, yet its key is %q", v)
	}
	if d := skew(t, n1); !near(d, ttl+time.Second, time.Second) {
		t.Errorf("n1 TIME is %v off, want about +%v", d, ttl+time.Second)
	}
	if d := skew(t, n2); !near(d, 0, time.Second) {
		t.Errorf("n2 TIME is %v off, want 0", d)
	}

	if err := c.SetClock("n1", -time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, n1); !near(d, -time.Hour, time.Second) {
		t.Errorf("n1 TIME is %v off, want about -1h", d)
	}
	// A key set now lives by the node's (slow) clock: PX 1s still expires
	// a second later, since only the offset moved, not the rate.
	if err := n1.Set(ctx, "k", "v", time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if ms := n1.PTTL(ctx, "k").Val(); ms <= 0 || ms > time.Second {
		t.Errorf("PTTL right after SET PX 1000 under -1h: %v", ms)
	}

	// The offset belongs to the node and survives its restart.
	if err := c.Restart(ctx, "n1", RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, n1); !near(d, -time.Hour, time.Second) {
		t.Errorf("after restart n1 TIME is %v off, want about -1h", d)
	}
	if err := c.SetClock("n1", 0); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, n1); !near(d, 0, time.Second) {
		t.Errorf("n1 TIME is %v off after resetting the offset", d)
	}
}

// BenchmarkClockShim compares redis-server throughput with the shim loaded
// (offset 0) against a plain redis-server, alternating within each
// iteration; shim/plain is the throughput ratio (target ≥ 0.9).
func BenchmarkClockShim(b *testing.B) { benchClockShim(b, false) }

// BenchmarkClockShimDrift is BenchmarkClockShim with the shim's clock
// running at 1.5× (every clock read also reads the monotonic clock).
func BenchmarkClockShimDrift(b *testing.B) { benchClockShim(b, true) }

func benchClockShim(b *testing.B, drift bool) {
	p, err := NewProcessProvider()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	plainAddr, err := p.Start(ctx, ProcSpec{Name: "plain", Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	shimAddr, err := p.Start(ctx, ProcSpec{Name: "shim", Dir: b.TempDir(), Clock: true})
	if err != nil {
		b.Fatal(err)
	}
	if drift {
		if err := p.SetClockDrift("shim", clockshim.Rate(1.5, clockshim.Mono())); err != nil {
			b.Fatal(err)
		}
	}
	const conns, rounds, batch = 8, 20, 100
	load := func(addr string) time.Duration {
		cl := redis.NewClient(&redis.Options{Addr: addr, PoolSize: conns, DisableIdentity: true, Protocol: 2})
		defer cl.Close()
		_ = cl.Ping(ctx).Err()
		start := time.Now()
		var wg sync.WaitGroup
		for g := 0; g < conns; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					pipe := cl.Pipeline()
					for i := 0; i < batch; i++ {
						if i%2 == 0 {
							pipe.Set(ctx, "k", i, time.Minute)
						} else {
							pipe.Get(ctx, "k")
						}
					}
					if _, err := pipe.Exec(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	var plain, shim time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			plain += load(plainAddr)
			shim += load(shimAddr)
		} else {
			shim += load(shimAddr)
			plain += load(plainAddr)
		}
	}
	b.ReportMetric(float64(plain)/float64(shim), "shim/plain")
	ops := float64(b.N * conns * rounds * batch)
	b.ReportMetric(ops/shim.Seconds(), "shim-ops/s")
	b.ReportMetric(ops/plain.Seconds(), "plain-ops/s")
}

// TestClockShimRate runs a node's clock at 1.5× and at 0.5× of the host's,
// then back at the host's pace, and reads the rate off TIME; the key a
// fast clock expires early and a slow one keeps late.
func TestClockShimRate(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:2"), Clock: true})
	ctx := testCtx(t, 30*time.Second)
	n1, n2 := direct(t, c, "n1"), direct(t, c, "n2")
	const window = 600 * time.Millisecond
	// The pace over the host time that really passed between the two
	// readings: on a loaded host the sleep may last well past the window.
	rate := func(cl *redis.Client) float64 {
		before, from := reading(t, cl)
		time.Sleep(window)
		after, to := reading(t, cl)
		return 1 + float64(after-before)/float64(to.Sub(from))
	}
	if err := c.SetClockDrift("n1", clockshim.Rate(1.5, clockshim.Mono())); err != nil {
		t.Fatal(err)
	}
	if r := rate(n1); math.Abs(r-1.5) > 0.05 {
		t.Errorf("n1 runs at %.3f× the host's pace, want 1.5", r)
	}
	if r := rate(n2); math.Abs(r-1) > 0.05 {
		t.Errorf("n2 runs at %.3f×, want 1 (only n1 drifts)", r)
	}
	for _, cl := range []*redis.Client{n1, n2} {
		if err := cl.Set(ctx, "k", "v", time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(750 * time.Millisecond) // n1 counts 1.125 s, n2 0.75 s
	if n := n1.Exists(ctx, "k").Val(); n != 0 {
		t.Error("n1's clock runs at 1.5×, yet its PX 1000 key lived 750 ms of host time")
	}
	if n := n2.Exists(ctx, "k").Val(); n != 1 {
		t.Error("n2's key of PX 1000 is gone after 750 ms at the host's pace")
	}

	if err := c.SetClockDrift("n1", clockshim.Rate(0.5, clockshim.Mono())); err != nil {
		t.Fatal(err)
	}
	if r := rate(n1); math.Abs(r-0.5) > 0.05 {
		t.Errorf("n1 runs at %.3f× after rate 0.5, want 0.5", r)
	}
	// The drift stacks on the offset and stops without a jump of its own
	// beyond what it gained: the zero Drift puts the clock back on the host.
	if err := c.SetClock("n1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, n1); !near(d, time.Hour, time.Second) {
		t.Errorf("n1 with offset 1h and a slow drift is %v off", d)
	}
	if err := c.SetClockDrift("n1", clockshim.Drift{}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetClock("n1", 0); err != nil {
		t.Fatal(err)
	}
	if d := skew(t, n1); !near(d, 0, 50*time.Millisecond) {
		t.Errorf("n1 is %v off once the offset and the drift are gone", d)
	}
	if r := rate(n1); math.Abs(r-1) > 0.05 {
		t.Errorf("n1 runs at %.3f× with the drift gone, want 1", r)
	}
}
