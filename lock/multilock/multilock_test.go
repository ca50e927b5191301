package multilock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

type newFunc func([]redis.UniversalClient, string, time.Duration, ...lock.Option) (*Lock, error)

func build(t testing.TB, f newFunc, cs []redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) *Lock {
	t.Helper()
	l, err := f(cs, key, ttl, opts...)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return l
}

func TestConformance(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 5)
	for name, f := range map[string]newFunc{"multi": NewMulti, "redisson-redlock": NewRedLock} {
		t.Run(name, func(t *testing.T) {
			locktest.Suite{
				New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
					return build(t, f, locktest.Clients(t, redistest.Addrs(servers)), key, ttl)
				},
			}.Run(t)
		})
	}
}

func TestConfigErrors(t *testing.T) {
	c := lock.NewClient("127.0.0.1:1")
	t.Cleanup(func() { _ = c.Close() })
	if _, err := NewMulti(nil, "k", time.Second); !errors.Is(err, lock.ErrConfig) {
		t.Errorf("no clients: %v", err)
	}
	if _, err := NewRedLock([]redis.UniversalClient{c, c}, "k", time.Second); !errors.Is(err, lock.ErrConfig) {
		t.Errorf("the same client twice: %v", err)
	}
	if _, err := NewMulti([]redis.UniversalClient{c}, "", time.Second); !errors.Is(err, lock.ErrConfig) {
		t.Errorf("empty key: %v", err)
	}
}

func TestWaitTime(t *testing.T) {
	for _, tc := range []struct{ lease, lo, hi time.Duration }{
		{time.Second, 2 * time.Second, 2 * time.Second},
		{2 * time.Second, 2 * time.Second, 2 * time.Second},
		{4 * time.Second, 2 * time.Second, 4 * time.Second},
		{10 * time.Second, 5 * time.Second, 10 * time.Second},
	} {
		for i := 0; i < 50; i++ {
			if w := WaitTime(tc.lease); w < tc.lo || w > tc.hi {
				t.Fatalf("WaitTime(%v) = %v, want in [%v, %v]", tc.lease, w, tc.lo, tc.hi)
			}
		}
	}
}

// TestMultiNeedsEveryNode: with one node down no acquire succeeds, and the
// nodes taken on the way are given back.
func TestMultiNeedsEveryNode(t *testing.T) {
	servers := redistest.Start(t, 3)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	servers[2].Stop()
	m := build(t, NewMulti, cs, "k", time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := m.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("multi with a node down: err = %v, want ErrNotObtained", err)
	}
	for i, c := range cs[:2] {
		if n := c.Exists(locktest.Context(t), "k").Val(); n != 0 {
			t.Fatalf("node %d keeps the key after the failed acquire", i)
		}
	}
	r := build(t, NewRedLock, cs, "k", time.Second)
	l, err := r.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("redisson-redlock with 1 of 3 nodes down: %v (2 of 3 suffice)", err)
	}
	if err := r.Release(locktest.Context(t), l); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// TestReleaseSaysWhatItFreed: a node that lost the owner's hold (as a
// node restarted empty does) does not make a release that freed the other
// nodes "not held": for MultiLock those nodes blocked every other owner
// until the release, so it changed the lock (a history must not call it
// a call without effect). For RedissonRedLock on three nodes, one node
// still holding blocks no one, so freeing it alone is "not held", and
// freeing two is a release.
func TestReleaseSaysWhatItFreed(t *testing.T) {
	servers := redistest.Start(t, 3)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	ctx := locktest.Context(t)
	for _, tc := range []struct {
		name string
		f    newFunc
		lose int // nodes that lose the hold before the release
		want error
	}{
		{"multi, one node lost", NewMulti, 1, nil},
		{"multi, two nodes lost", NewMulti, 2, nil},
		{"multi, every node lost", NewMulti, 3, lock.ErrNotHeld},
		{"redisson-redlock, one node lost", NewRedLock, 1, nil},
		{"redisson-redlock, two nodes lost", NewRedLock, 2, lock.ErrNotHeld},
	} {
		l := build(t, tc.f, cs, "k", 5*time.Second)
		lease, err := l.Acquire(ctx)
		if err != nil {
			t.Fatalf("%s: acquire: %v", tc.name, err)
		}
		for _, c := range cs[:tc.lose] {
			if err := c.Del(ctx, "k").Err(); err != nil {
				t.Fatal(err)
			}
		}
		err = l.Release(ctx, lease)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: release = %v, want %v", tc.name, err, tc.want)
		}
		for i, c := range cs {
			if n := c.Exists(ctx, "k").Val(); n != 0 {
				t.Errorf("%s: node %d keeps the key after the release", tc.name, i)
			}
		}
	}
}

// TestNoValidityCheck: a client stalled after the grants for longer than
// the nodes' leases still gets the lock, although another client took it
// meanwhile: RedissonRedLock checks no elapsed time.
func TestNoValidityCheck(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	addrs := redistest.Addrs(servers)
	stall := make(chan struct{})
	var stalled bool
	hook := lock.WithHook(func(ctx context.Context, step string) error {
		if step == lock.StepGranted && !stalled {
			stalled = true
			<-stall
		}
		return nil
	})
	a := build(t, NewRedLock, locktest.Clients(t, addrs), "k", 200*time.Millisecond, hook)
	b := build(t, NewRedLock, locktest.Clients(t, addrs), "k", 5*time.Second)
	got := make(chan lock.Lease, 1)
	go func() {
		l, err := a.Acquire(context.Background())
		if err != nil {
			t.Errorf("A: %v", err)
		}
		got <- l
	}()
	// A's nodes were locked with a lease of twice its wait time (2×2 s);
	// wait it out, then B takes the lock.
	time.Sleep(4500 * time.Millisecond)
	lb, err := b.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("B after A's nodes expired: %v", err)
	}
	close(stall)
	la := <-got
	now := time.Now()
	if !la.Valid(now) || !lb.Valid(now) {
		t.Fatalf("A valid %v, B valid %v: want both to believe they hold the lock", la.Valid(now), lb.Valid(now))
	}
}
