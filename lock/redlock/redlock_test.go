package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/redlock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

func newLock(t testing.TB, cs []redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) *redlock.Lock {
	l, err := redlock.New(cs, key, ttl, opts...)
	if err != nil {
		t.Fatalf("redlock.New: %v", err)
	}
	return l
}

// holders counts the servers on which key exists.
func holders(t testing.TB, cs []redis.UniversalClient, key string) int {
	n := 0
	for _, c := range cs {
		n += int(c.Exists(locktest.Context(t), key).Val())
	}
	return n
}

// stallProof is the node timeout of the conformance runs: eight
// contenders on a two-core machine shared with other work, under the race
// detector, stall past the 40–50 ms default now and then, which would fail
// the suite for the machine's sake. The timeout's own behaviour is
// TestStalledNodeTimesOut's and TestDefaultNodeTimeout's.
var stallProof = lock.WithNodeTimeout(250 * time.Millisecond)

func TestConformance(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 5)
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newLock(t, locktest.Clients(t, redistest.Addrs(servers)), key, ttl, stallProof)
		},
	}.Run(t)
}

func TestConfigErrors(t *testing.T) {
	c := func() redis.UniversalClient {
		c := lock.NewClient("127.0.0.1:1")
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a, b, d := c(), c(), c()
	var typedNil *redis.Client
	cases := []struct {
		name    string
		clients []redis.UniversalClient
		key     string
		ttl     time.Duration
		opts    []lock.Option
		want    string
	}{
		{"no clients", nil, "k", time.Second, nil, "no redis clients"},
		{"two nodes", []redis.UniversalClient{a, b}, "k", time.Second, nil, "2 nodes is even"},
		{"nil client", []redis.UniversalClient{a, nil, b}, "k", time.Second, nil, "client 1"},
		{"typed nil client", []redis.UniversalClient{typedNil}, "k", time.Second, nil, "nil redis client"},
		{"same client twice", []redis.UniversalClient{a, b, a}, "k", time.Second, nil, "clients 0 and 2 are the same"},
		{"empty key", []redis.UniversalClient{a, b, d}, "", time.Second, nil, "empty key"},
		{"zero TTL", []redis.UniversalClient{a, b, d}, "k", 0, nil, "must be positive"},
		{"drift eats TTL", []redis.UniversalClient{a}, "k", 10 * time.Millisecond, []lock.Option{lock.WithDrift(0.5, 10*time.Millisecond)}, "leaves no validity"},
		{"bad node timeout", []redis.UniversalClient{a}, "k", time.Second, []lock.Option{lock.WithNodeTimeout(0)}, "node timeout"},
		{"single's option", []redis.UniversalClient{a}, "k", time.Second, []lock.Option{single.WithWait(1, time.Millisecond)}, "applies to single and fenced"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := redlock.New(tc.clients, tc.key, tc.ttl, tc.opts...)
			if !errors.Is(err, lock.ErrConfig) || !strings.Contains(err.Error(), tc.want) || l != nil {
				t.Fatalf("New = %v, %v; want nil and an ErrConfig mentioning %q", l, err, tc.want)
			}
		})
	}
	l := newLock(t, []redis.UniversalClient{a, b, d}, "k", time.Second)
	if l.Quorum() != 2 || l.NodeTimeout() != redlock.DefaultNodeTimeout(time.Second) {
		t.Fatalf("3 nodes: quorum %d node timeout %v", l.Quorum(), l.NodeTimeout())
	}
	if l := newLock(t, []redis.UniversalClient{a}, "k", time.Second, lock.WithNodeTimeout(7*time.Millisecond)); l.NodeTimeout() != 7*time.Millisecond {
		t.Fatalf("WithNodeTimeout ignored: %v", l.NodeTimeout())
	}
}

func TestDefaultNodeTimeout(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		10 * time.Second:       50 * time.Millisecond, // the docs' figure
		30 * time.Second:       150 * time.Millisecond,
		time.Second:            50 * time.Millisecond,
		200 * time.Millisecond: 20 * time.Millisecond,
	} {
		if got := redlock.DefaultNodeTimeout(ttl); got != want {
			t.Errorf("DefaultNodeTimeout(%v) = %v, want %v", ttl, got, want)
		}
	}
}

func TestMinorityDown(t *testing.T) {
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	servers[1].Stop()
	servers[3].Stop()
	l := newLock(t, cs, "k", 5*time.Second)
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire with 3 of 5 nodes up: %v", err)
	}
	if _, err := newLock(t, cs, "k", 5*time.Second).Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second client acquired on the surviving majority: %v", err)
	}
	if lease, err = l.Extend(locktest.Context(t), lease); err != nil {
		t.Fatalf("extend with 3 of 5 nodes up: %v", err)
	}
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatalf("release with 3 of 5 nodes up: %v", err)
	}
	if n := holders(t, []redis.UniversalClient{cs[0], cs[2], cs[4]}, "k"); n != 0 {
		t.Fatalf("%d live nodes still hold the key after release", n)
	}
}

// Without a quorum the acquire fails definitely (the dead nodes refused
// the connection: nothing was sent) and the live minority is cleaned up.
func TestNoQuorum(t *testing.T) {
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	for _, i := range []int{0, 2, 4} {
		servers[i].Stop()
	}
	l := newLock(t, cs, "k", 5*time.Second)
	_, err := l.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "granted by 2 of 5 nodes, quorum 3") {
		t.Fatalf("acquire with 2 of 5 nodes up: %v, want ErrNotObtained (granted by 2 of 5)", err)
	}
	if n := holders(t, []redis.UniversalClient{cs[1], cs[3]}, "k"); n != 0 {
		t.Fatalf("a failed acquire left the key on %d live nodes", n)
	}
}

// A quorum that arrives after the validity ended is no lock: three nodes
// answer only after a pause longer than the TTL; the acquire must fail and
// take the key back from them (it would otherwise live another TTL there).
func TestValidityUsedUp(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 5)
	slow := func(o *redis.Options) { o.ReadTimeout = 10 * time.Second }
	cs := locktest.Clients(t, redistest.Addrs(servers), slow)
	admin := locktest.Clients(t, redistest.Addrs(servers))
	const ttl = time.Second
	l := newLock(t, cs, "k", ttl, lock.WithNodeTimeout(5*time.Second))
	for _, c := range cs { // pooled connections, so the pause meets the SETs themselves
		if err := c.Ping(locktest.Context(t)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, 1, 2} {
		if err := admin[i].Do(locktest.Context(t), "client", "pause", 1300, "write").Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "past the validity") {
		t.Fatalf("quorum after the validity: %v, want ErrNotObtained (past the validity)", err)
	}
	if n := holders(t, admin, "k"); n != 0 {
		t.Fatalf("%d nodes still hold the key of a refused acquire", n)
	}
}

// One stalled node does not hold the fan-out up: its reply is awaited only
// for the node timeout (its client would wait 10 s).
func TestStalledNodeTimesOut(t *testing.T) {
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers), func(o *redis.Options) { o.ReadTimeout = 10 * time.Second })
	l := newLock(t, cs, "k", 2*time.Second)
	for _, c := range cs {
		if err := c.Ping(locktest.Context(t)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	resume := servers[4].Freeze(t)
	begin := time.Now()
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire with one stalled node: %v", err)
	}
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatalf("release with one stalled node: %v", err)
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("acquire+release took %v: the fan-out waited for the stalled node's 10 s read timeout", took)
	}
	resume()
}

// A majority that neither granted nor refused, and that the cleanup could
// not reach either, may hold our value: the outcome is unknown, not "not
// obtained", and Retry must not try again.
func TestUnreachableMajorityIsUnknown(t *testing.T) {
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	for _, c := range cs {
		if err := c.Ping(locktest.Context(t)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, 1, 2} {
		servers[i].Freeze(t)
	}
	attempts := 0
	l := newLock(t, cs, "k", 5*time.Second, lock.WithNodeTimeout(100*time.Millisecond),
		lock.WithRetry(lock.Strategy{Attempts: 3}),
		lock.WithValue(func() string { attempts++; return lock.RandomValue() }))
	_, err := l.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrUnknown) || errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire with 3 of 5 nodes stalled: %v, want ErrUnknown", err)
	}
	if attempts != 1 {
		t.Fatalf("%d attempts after an unknown outcome, want 1", attempts)
	}
	if n := holders(t, cs[3:], "k"); n != 0 {
		t.Fatalf("the granting minority still holds the key on %d nodes", n)
	}
}

// TestStallAfterGrantRefused: a client stalled after its quorum granted the
// lock and before it read the outcome (a GC pause mid-acquire) must refuse a
// lease whose validity ran out meanwhile, and leave no node holding the key.
func TestStallAfterGrantRefused(t *testing.T) {
	cs := locktest.Clients(t, redistest.Addrs(redistest.Start(t, 3)))
	ttl := 300 * time.Millisecond
	stalled := false
	stall := lock.WithHook(func(ctx context.Context, step string) error {
		if step == lock.StepGranted {
			stalled = true
			time.Sleep(ttl + ttl/2)
		}
		return nil
	})
	l := newLock(t, cs, "stall", ttl, stall, lock.WithNodeTimeout(2*ttl))
	_, err := l.Acquire(locktest.Context(t))
	if !stalled {
		t.Fatal("the granted step was never reported")
	}
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire after a stall of 1.5×TTL past the grant: err = %v, want ErrNotObtained (validity used up)", err)
	}
	if n := holders(t, cs, "stall"); n != 0 {
		t.Fatalf("%d nodes still hold the key after the refused acquire", n)
	}
}
