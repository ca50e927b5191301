package reentrant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

func newLocker(t testing.TB, addr, key string, ttl time.Duration, opts ...lock.Option) *Locker {
	t.Helper()
	l, err := New(locktest.Client(t, addr), key, ttl, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// waiting makes Acquire wait (pub/sub and pttl) until ctx is done.
var waiting = lock.WithRetry(lock.Wait(0, 0))

func TestConformance(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newLocker(t, addr, key, ttl)
		},
	}.Run(t)
}

func TestConstructorErrors(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	cases := []struct {
		client redis.UniversalClient
		key    string
		ttl    time.Duration
		opts   []lock.Option
		want   string
	}{
		{nil, "k", time.Second, nil, "nil redis client"},
		{c, "", time.Second, nil, "empty key"},
		{c, "k", -time.Second, nil, "must be positive"},
		{c, "k", time.Second, []lock.Option{lock.WithValue(func() string { return "" })}, "empty owner id"},
		{c, "k", time.Second, []lock.Option{lock.WithRetry(lock.Strategy{Attempts: -1})}, "negative field"},
	}
	for _, tc := range cases {
		_, err := New(tc.client, tc.key, tc.ttl, tc.opts...)
		if !errors.Is(err, lock.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(key %q, ttl %v): err = %v, want ErrConfig mentioning %q", tc.key, tc.ttl, err, tc.want)
		}
	}
}

func TestNestedHolds(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	c := locktest.Client(t, addr)
	owner := newLocker(t, addr, "k", 5*time.Second, lock.WithValue(func() string { return "owner-a" }))
	other := newLocker(t, addr, "k", 5*time.Second)
	if owner.Owner() != "owner-a" || other.Owner() == "" || other.Owner() == owner.Owner() {
		t.Fatalf("owner ids %q and %q: want the fixed one and a distinct random one", owner.Owner(), other.Owner())
	}
	count := func() string { return c.HGet(locktest.Context(t), "k", owner.Owner()).Val() }

	var leases []lock.Lease
	for i := 0; i < 3; i++ {
		l, err := owner.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatalf("nested acquire %d by the holder: %v", i+1, err)
		}
		leases = append(leases, l)
	}
	if n := count(); n != "3" {
		t.Fatalf("hold count after 3 acquires = %q, want 3", n)
	}
	for i := 0; i < 2; i++ {
		if err := owner.Release(locktest.Context(t), leases[2-i]); err != nil {
			t.Fatalf("release %d of 3: %v", i+1, err)
		}
	}
	if n := count(); n != "1" {
		t.Fatalf("hold count after 3 acquires and 2 releases = %q, want 1", n)
	}
	if _, err := other.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("another owner acquired while the holder still has 1 hold: err = %v", err)
	}
	if err := owner.Release(locktest.Context(t), leases[0]); err != nil {
		t.Fatalf("third release: %v", err)
	}
	if n := c.Exists(locktest.Context(t), "k").Val(); n != 0 {
		t.Fatalf("key still exists after the last release")
	}
	lo, err := other.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("another owner after the last release: %v", err)
	}
	if err := owner.Release(locktest.Context(t), leases[0]); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("fourth release (no hold left, other owner holds): err = %v, want ErrNotHeld", err)
	}
	if err := other.Release(locktest.Context(t), lo); err != nil {
		t.Fatalf("other owner's release after the refused one: %v", err)
	}
}

// waitSubscribed returns once n clients listen on key's channel.
func waitSubscribed(t *testing.T, c *redis.Client, key string, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.PubSubNumSub(locktest.Context(t), Channel(key)).Val()[Channel(key)] < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d subscribers on %s after 5 s", n, Channel(key))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWaiterWokenByRelease(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 10 * time.Second
	holder := newLocker(t, addr, "k", ttl)
	waiter := newLocker(t, addr, "k", ttl, waiting)

	lh, err := holder.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("holder acquire: %v", err)
	}
	type result struct {
		lease lock.Lease
		err   error
		at    time.Time
	}
	got := make(chan result, 1)
	go func() {
		l, err := waiter.Acquire(locktest.Context(t))
		got <- result{l, err, time.Now()}
	}()
	waitSubscribed(t, locktest.Client(t, addr), "k", 1)
	time.Sleep(time.Until(lh.Start.Add(200 * time.Millisecond)))
	released := time.Now()
	if err := holder.Release(locktest.Context(t), lh); err != nil {
		t.Fatalf("holder release: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter acquire: %v", r.err)
	}
	latency := r.at.Sub(released)
	if latency < 0 {
		t.Fatalf("waiter acquired %v before the holder released", -latency)
	}
	if latency >= ttl/10 {
		t.Fatalf("waiter acquired %v after the release, want < TTL/10 = %v: the unlock message did not wake it", latency, ttl/10)
	}
	t.Logf("wake-up latency after release: %v (TTL %v)", latency, ttl)
	if err := waiter.Release(locktest.Context(t), r.lease); err != nil {
		t.Fatalf("waiter release: %v", err)
	}
}

func TestWaiterBoundedByPTTL(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 500 * time.Millisecond
	crashed := newLocker(t, addr, "k", ttl) // acquires and never releases: no message will come
	waiter := newLocker(t, addr, "k", ttl, waiting)
	lc, err := crashed.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("holder acquire: %v", err)
	}
	ctx, cancel := context.WithTimeout(locktest.Context(t), 10*ttl)
	defer cancel()
	lw, err := waiter.Acquire(ctx)
	if err != nil {
		t.Fatalf("waiter with a %v budget, holder's TTL %v and no release: %v (the pttl must bound the wait)", 10*ttl, ttl, err)
	}
	if lw.Start.Before(lc.Start.Add(ttl / 2)) {
		t.Fatalf("waiter acquired %v after the holder, well within its TTL %v", lw.Start.Sub(lc.Start), ttl)
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 10 * time.Second
	holder := newLocker(t, addr, "k", ttl)
	if _, err := holder.Acquire(locktest.Context(t)); err != nil {
		t.Fatalf("holder acquire: %v", err)
	}
	waiter := newLocker(t, addr, "k", ttl, waiting)
	ctx, cancel := context.WithTimeout(locktest.Context(t), 300*time.Millisecond)
	defer cancel()
	_, err := waiter.Acquire(ctx)
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter whose ctx ends while the lock is held: err = %v, want ErrNotObtained wrapping the deadline", err)
	}

	twice := newLocker(t, addr, "k", ttl, lock.WithRetry(lock.Strategy{Attempts: 2}))
	_, err = twice.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("two attempts while the lock is held 10 s: err = %v, want ErrNotObtained without waiting for ctx", err)
	}
}

// TestContention runs owners that each take the lock twice (nested) through
// waiting acquires, with a non-atomic counter update inside.
func TestContention(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	const owners, rounds = 5, 10
	var counter, inside, overlaps atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, owners)
	for i := 0; i < owners; i++ {
		l := newLocker(t, addr, "k", 2*time.Second, waiting)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				outer, err := l.Acquire(locktest.Context(t))
				if err != nil {
					errs <- err
					return
				}
				inner, err := l.Acquire(locktest.Context(t))
				if err != nil {
					errs <- fmt.Errorf("nested acquire: %w", err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				v := counter.Load()
				time.Sleep(time.Millisecond)
				counter.Store(v + 1)
				inside.Add(-1)
				if err := l.Release(locktest.Context(t), inner); err != nil {
					errs <- fmt.Errorf("inner release: %w", err)
					return
				}
				if err := l.Release(locktest.Context(t), outer); err != nil {
					errs <- fmt.Errorf("outer release: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d critical sections overlapped another owner's", n)
	}
	if got := counter.Load(); got != owners*rounds {
		t.Fatalf("counter = %d, want %d", got, owners*rounds)
	}
}
