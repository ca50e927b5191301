package clients_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// What each client does with connect sentinel, by its library's design.
const (
	// follows: it asks the Sentinels again on every reconnect, so after a
	// failover it reaches the new primary.
	follows = "follows"
	// stays: it asks the Sentinels once, at connect, and keeps that
	// address: after a failover it keeps dialing the old primary.
	stays = "stays"
	// refuses: its init refuses connect sentinel.
	refuses = "refuses"
	// sometimes: it asks the Sentinels again only after some errors (Laravel
	// reconnects when php-redis says the server "went away", not after a
	// "read error"); which one a failover brings is a matter of timing, so
	// it may or may not reach the new primary — through its own proxy when
	// it does.
	sometimes = "sometimes"
)

var sentinelMode = map[string]string{
	"reference":        "", // the protocol's example: one node only, not tried here
	"redis-py":         follows,
	"tooz":             follows,
	"symfony":          follows, // per_request: each request connects anew
	"laravel":          follows, // per_request: each request connects anew
	"symfony-combined": refuses,
}

// workerMode is what the PHP clients do as a long-running worker
// (per_request false: one connection for every call).
var workerMode = map[string]string{
	"symfony": stays,
	"laravel": sometimes,
}

// sentinelCase is a client with its options, and what it does with Sentinel.
type sentinelCase struct {
	client, mode string
	options      map[string]any
}

func (c sentinelCase) name() string {
	if c.options != nil {
		return c.client + " (per_request false)"
	}
	return c.client
}

// sentinelCases: every shipped client with its defaults, and the PHP
// clients as long-running workers.
func sentinelCases() []sentinelCase {
	var out []sentinelCase
	for _, name := range protocol.Shipped() {
		if mode := sentinelMode[name]; mode != "" {
			out = append(out, sentinelCase{client: name, mode: mode})
		}
		if mode := workerMode[name]; mode != "" {
			out = append(out, sentinelCase{client: name, mode: mode, options: map[string]any{"per_request": false}})
		}
	}
	return out
}

// sentinelInit is the init a run gives client 0 of c: its own proxies to
// the Sentinels and the nodes, and the announced addresses mapped to them.
func sentinelInit(t testing.TB, c *cluster.Cluster, key string) protocol.Init {
	v, err := c.ClientView(0)
	if err != nil {
		t.Fatal(err)
	}
	in := protocol.Init{Kind: lock.KindLock, Keys: []string{key}, TTLMS: 10000, Connect: protocol.ConnectSentinel,
		Sentinels: v.Sentinels, MasterName: v.MasterName, ReadTimeoutMS: 500, AddressMap: map[string]string{}}
	for _, x := range v.Nodes {
		in.Nodes = append(in.Nodes, protocol.Node{Name: x, Addr: v.Addrs[x]})
	}
	for announced, node := range v.Announced {
		in.AddressMap[announced] = v.Addrs[node]
	}
	return in
}

// TestSentinelFailover: through replicated:1+sentinels, every client that
// takes connect sentinel finds the primary through its own proxies; after
// the primary is killed and the Sentinels fail over, a client whose
// library asks them again — or that connects anew for each request, as a
// PHP application under PHP-FPM does — reaches the new primary through
// its own proxy (cutting that link cuts it off), and one that asked once
// (a long-running PHP worker with Symfony) does not.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	for _, name := range protocol.Shipped() {
		if _, ok := sentinelMode[name]; !ok {
			t.Errorf("client %s: say in sentinelMode what its library does with Sentinel", name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tp, err := cluster.ParseTopology("replicated:1+sentinels")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, cluster.Spec{Topology: tp, Clients: 1})
	if err != nil {
		t.Fatalf("start replicated:1+sentinels: %v", err)
	}
	t.Cleanup(func() { c.Close() })

	lockers := map[string]lock.Locker{}
	modes := map[string]string{}
	for i, sc := range sentinelCases() {
		name := sc.name()
		key := fmt.Sprintf("%s:%d", locktest.Key(t), i)
		in := sentinelInit(t, c, key)
		if sc.options != nil {
			in.Options, _ = json.Marshal(sc.options)
		}
		if sc.mode == refuses {
			wantRefused(t, sc.client, in, "connect sentinel: ")
			continue
		}
		l := locker(t, start(t, sc.client, in), key)
		held, err := l.Acquire(ctxFor(t, 10*time.Second))
		if err != nil {
			t.Fatalf("client %s: acquire through Sentinel's primary: %v", name, err)
		}
		if err := l.Release(ctxFor(t, 10*time.Second), held); err != nil {
			t.Fatalf("client %s: release: %v", name, err)
		}
		lockers[name], modes[name] = l, sc.mode
	}

	if err := c.Kill("p"); err != nil {
		t.Fatal(err)
	}
	if to, err := c.WaitFailover(ctx, "p"); err != nil || to != "r1" {
		t.Fatalf("failover: to %q, %v", to, err)
	}
	for name, l := range lockers {
		t.Run(name, func(t *testing.T) {
			wait := 20 * time.Second // clients that follow reach r1 at their next call
			if modes[name] != follows {
				wait = 6 * time.Second
			}
			reached := acquireWithin(t, l, wait)
			switch modes[name] {
			case follows, sometimes:
				if !reached && modes[name] == follows {
					t.Fatalf("%s asks the Sentinels on every reconnect (or request), yet did not reach the new primary within 20 s", name)
				}
				if !reached {
					t.Logf("%s did not ask the Sentinels again this time", name)
					return
				}
				if err := c.Cut(cluster.Reset, cluster.Both, cluster.ClientLink(0, "r1")); err != nil {
					t.Fatal(err)
				}
				_, err := l.Acquire(ctxFor(t, 10*time.Second))
				if err := c.Heal(); err != nil {
					t.Fatal(err)
				}
				if err == nil {
					t.Fatalf("%s acquired with its link c0->r1 cut: its traffic to the new primary bypasses its proxy", name)
				}
				t.Logf("with its link c0->r1 cut: %v", err)
			case stays:
				if reached {
					t.Fatalf("%s asks the Sentinels once, at connect, yet reached the new primary", name)
				}
			}
		})
	}
}

// acquireWithin tries l until an acquire succeeds (and releases it) or d
// has passed; any error but a success counts as not reached.
func acquireWithin(t *testing.T, l lock.Locker, d time.Duration) bool {
	t.Helper()
	var last error
	for n, end := 1, time.Now().Add(d); time.Now().Before(end); n++ {
		held, err := l.Acquire(ctxFor(t, 10*time.Second))
		if err == nil {
			if err := l.Release(ctxFor(t, 10*time.Second), held); err != nil {
				t.Logf("release after the failover: %v", err)
			}
			t.Logf("reached the new primary at attempt %d", n)
			return true
		}
		if n == 1 {
			t.Logf("first acquire after the failover: %v", err)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("last acquire after the failover: %v", last)
	return false
}
