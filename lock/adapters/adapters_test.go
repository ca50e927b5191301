package adapters

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

// contextTimeouts makes a client honour context deadlines, so redsync's
// per-round timeout bounds its requests.
func contextTimeouts(o *redis.Options) { o.ContextTimeoutEnabled = true }

func client(t testing.TB, addr string) *redis.Client {
	return locktest.Client(t, addr, contextTimeouts)
}

func clients(t testing.TB, addrs []string) []redis.UniversalClient {
	return locktest.Clients(t, addrs, contextTimeouts)
}

func newRedsync(t testing.TB, addrs []string, key string, ttl time.Duration, opts ...lock.Option) *Redsync {
	t.Helper()
	// Generous against a loaded 2-core machine running -race: a round that
	// misses it is ErrUnknown, and the suite expects definite answers.
	opts = append([]lock.Option{lock.WithNodeTimeout(300 * time.Millisecond)}, opts...)
	r, err := NewRedsync(clients(t, addrs), key, ttl, opts...)
	if err != nil {
		t.Fatalf("NewRedsync: %v", err)
	}
	return r
}

func TestRedsyncConformance(t *testing.T) {
	t.Parallel()
	addrs := redistest.Addrs(redistest.Start(t, 3))
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newRedsync(t, addrs, key, ttl)
		},
	}.Run(t)
}

func TestRedislockConformance(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t, 1)[0].Addr
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			r, err := NewRedislock(client(t, addr), key, ttl)
			if err != nil {
				t.Fatalf("NewRedislock: %v", err)
			}
			return r
		},
	}.Run(t)
}

func TestConstructorErrors(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	cases := []struct {
		what string
		err  error
		want string
	}{
		{"redsync without clients", func() error { _, err := NewRedsync(nil, "k", time.Second); return err }(), "no redis clients"},
		{"redsync with a nil client", func() error {
			_, err := NewRedsync([]redis.UniversalClient{c, nil}, "k", time.Second)
			return err
		}(), "client 1 is nil"},
		{"redsync with an empty key", func() error { _, err := NewRedsync([]redis.UniversalClient{c}, "", time.Second); return err }(), "empty key"},
		{"redsync with a nil passthrough option", func() error {
			_, err := NewRedsync([]redis.UniversalClient{c}, "k", time.Second, RedsyncOptions(nil))
			return err
		}(), "option 0 is nil"},
		{"redislock with a nil client", func() error { _, err := NewRedislock(nil, "k", time.Second); return err }(), "nil redis client"},
		{"redislock with a zero TTL", func() error { _, err := NewRedislock(c, "k", 0); return err }(), "must be positive"},
		{"redislock given redsync options", func() error {
			_, err := NewRedislock(c, "k", time.Second, RedsyncOptions(redsync.WithSetNXOnExtend()))
			return err
		}(), "only to the redsync adapter"},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, lock.ErrConfig) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrConfig mentioning %q", tc.what, tc.err, tc.want)
		}
	}
}

// waitGoneEverywhere polls until key exists on none of the nodes.
func waitGoneEverywhere(t *testing.T, addrs []string, key string, limit time.Duration) {
	t.Helper()
	cs := clients(t, addrs)
	deadline := time.Now().Add(limit)
	for {
		n := int64(0)
		for _, c := range cs {
			n += c.Exists(locktest.Context(t), key).Val()
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still on %d nodes after %v", key, n, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRedsyncSetNXOnExtend reproduces redsync #147: with WithSetNXOnExtend,
// an extend after the lease lapsed re-creates the key wherever it is free,
// so A's extend succeeds although B held the lock in between.
func TestRedsyncSetNXOnExtend(t *testing.T) {
	addrs := redistest.Addrs(redistest.Start(t, 3))
	ttl := 300 * time.Millisecond
	for _, setNX := range []bool{true, false} {
		key := "k-setnx"
		var opts []lock.Option
		if setNX {
			opts = append(opts, RedsyncOptions(redsync.WithSetNXOnExtend()))
		} else {
			key = "k-plain"
		}
		a := newRedsync(t, addrs, key, ttl, opts...)
		b := newRedsync(t, addrs, key, ttl)

		la, err := a.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatalf("A acquire: %v", err)
		}
		waitGoneEverywhere(t, addrs, key, 5*ttl)
		lb, err := b.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatalf("B acquire after A's lease lapsed: %v", err)
		}
		if lb.Value == la.Value || !lb.Start.After(la.ValidUntil) {
			t.Fatalf("B's lease %+v does not follow A's %+v", lb, la)
		}
		if err := b.Release(locktest.Context(t), lb); err != nil {
			t.Fatalf("B release: %v", err)
		}
		ext, err := a.Extend(locktest.Context(t), la)
		if !setNX {
			if !errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("without WithSetNXOnExtend, A extending its lapsed lease: err = %v, want ErrNotHeld", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("with WithSetNXOnExtend, A extending after B held and released: %v (redsync #147 says it succeeds)", err)
		}
		if !ext.ValidUntil.After(time.Now()) || ext.Value != la.Value {
			t.Fatalf("A's extended lease %+v: want A's value, valid now", ext)
		}
		for i, c := range clients(t, addrs) {
			if v := c.Get(locktest.Context(t), key).Val(); v != la.Value {
				t.Fatalf("node %d holds %q after A's extend, want A's value %q", i, v, la.Value)
			}
		}
		// A's view: acquired at la.Start, extended at ext.Start, never told it
		// lost the lock; yet B held it from lb.Start.
		t.Logf("A believes it held %v → %v; B held it from %v (%v after A's acquire)", la.Start.Format(time.StampMicro), ext.ValidUntil.Format(time.StampMicro), lb.Start.Format(time.StampMicro), lb.Start.Sub(la.Start))
	}
}

// blackhole accepts connections and never answers: a request sent there has
// an unknown outcome.
func blackhole(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// refused is an address where nothing listens: nothing is ever sent.
func refused(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestRedsyncErrorMapping(t *testing.T) {
	real := redistest.Start(t, 1)[0].Addr
	ttl := time.Second

	unknown := newRedsync(t, []string{real, blackhole(t), blackhole(t)}, "k", ttl)
	if _, err := unknown.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrUnknown) {
		t.Fatalf("acquire with 2 of 3 nodes silent: err = %v, want ErrUnknown (their SET NX may have run)", err)
	}
	// The live node must answer within the round for the result to be
	// definite; refused dials fail at once.
	definite := newRedsync(t, []string{real, refused(t), refused(t)}, "k2", ttl, lock.WithNodeTimeout(time.Second))
	_, err := definite.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, lock.ErrUnknown) {
		t.Fatalf("acquire with 2 of 3 nodes refusing connections: err = %v, want ErrNotObtained only", err)
	}
	one := newRedsync(t, []string{real}, "k3", ttl)
	l, err := one.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire on one node: %v", err)
	}
	other := newRedsync(t, []string{real}, "k3", ttl)
	if err := other.Release(locktest.Context(t), l); err != nil {
		t.Fatalf("releasing a lease through another adapter (redsync.WithValue): %v", err)
	}
	if _, err := one.Extend(locktest.Context(t), l); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("extend after release: err = %v, want ErrNotHeld", err)
	}
}

func TestRedislockLeaseBelief(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := time.Second
	a, err := NewRedislock(client(t, addr), "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	l, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if l.Start.Before(before) || l.ValidUntil != l.Start.Add(ttl) {
		t.Fatalf("lease %+v: want Start = the instant Obtain returned and ValidUntil = Start + TTL exactly", l)
	}
	b, err := NewRedislock(client(t, addr), "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Release(locktest.Context(t), l); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release through an adapter that did not obtain the lease: err = %v, want ErrNotHeld", err)
	}
	if n := client(t, addr).Exists(locktest.Context(t), "k").Val(); n != 1 {
		t.Fatalf("the refused release removed the key")
	}
	if err := a.Release(locktest.Context(t), l); err != nil {
		t.Fatalf("release by the owner: %v", err)
	}
}

// TestRedislockStallAfterGrant shows the flaw the catalog row
// redislock-pause-during-acquire relies on: after a stall between the grant
// and the return, redislock hands out a lease for a full TTL although the key
// has already expired in Redis and another client holds it.
func TestRedislockStallAfterGrant(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 300 * time.Millisecond
	var other lock.Lease
	b, err := NewRedislock(client(t, addr), "k", ttl)
	if err != nil {
		t.Fatal(err)
	}
	stall := lock.WithHook(func(ctx context.Context, step string) error {
		if step != lock.StepGranted {
			return nil
		}
		time.Sleep(ttl + ttl/3)
		other, err = b.Acquire(ctx) // the key expired during the stall
		return err
	})
	a, err := NewRedislock(client(t, addr), "k", ttl, stall)
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("A's acquire after the stall: %v (redislock has no elapsed-time check, so it must succeed)", err)
	}
	if other.Value == "" {
		t.Fatal("B did not acquire while A was stalled")
	}
	if now := time.Now(); !la.Valid(now) || !other.Valid(now) {
		t.Fatalf("want both leases valid now (a double grant): A valid %v, B valid %v", la.Valid(now), other.Valid(now))
	}
}
