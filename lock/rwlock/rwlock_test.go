package rwlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

func newLock(t testing.TB, addr, key string, ttl time.Duration, opts ...lock.Option) *Lock {
	t.Helper()
	l, err := New(locktest.Client(t, addr), key, ttl, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func TestConformance(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	locktest.RWSuite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.ReadWriteLocker {
			return newLock(t, addr, key, ttl)
		},
	}.Run(t)
}

func TestHashLayout(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	c := locktest.Client(t, addr)
	ctx := locktest.Context(t)
	a := newLock(t, addr, "k", 5*time.Second, lock.WithValue(func() string { return "a" }))
	b := newLock(t, addr, "k", 5*time.Second, lock.WithValue(func() string { return "b" }))
	la, err := a.ReadLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	la2, err := a.ReadLock().Acquire(ctx) // nested read hold of the same owner
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.ReadLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := c.HGetAll(ctx, "k").Val()
	if h["mode"] != "read" || h["a"] != "2" || h["b"] != "1" || len(h) != 3 {
		t.Fatalf("hash %v: want mode read, a 2, b 1", h)
	}
	for _, l := range []lock.Lease{la, la2} {
		if err := a.ReadLock().Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if h := c.HGetAll(ctx, "k").Val(); h["mode"] != "read" || len(h) != 2 {
		t.Fatalf("after A's releases the hash is %v: want mode and b only", h)
	}
	if err := b.ReadLock().Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("the hash outlived its last reader")
	}
	lw, err := a.WriteLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h := c.HGetAll(ctx, "k").Val(); h["mode"] != "write" || h["a:write"] != "1" {
		t.Fatalf("write hash %v: want mode write, a:write 1", h)
	}
	if _, err := a.ReadLock().Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("the writer's own read acquire: err = %v, want ErrNotObtained (the published script grants reads only without a writer)", err)
	}
	if err := a.WriteLock().Release(ctx, lw); err != nil {
		t.Fatal(err)
	}
}

// TestShortLeaseReaderCutsTheHash shows Redisson #2144 on the published
// script: a reader granted later with a shorter lease sets the TTL of the
// whole hash, so a writer gets in while the first reader's lease is valid.
func TestShortLeaseReaderCutsTheHash(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	long := newLock(t, addr, "k", 5*time.Second)
	short := newLock(t, addr, "k", 300*time.Millisecond)
	writer := newLock(t, addr, "k", 5*time.Second)
	ctx := locktest.Context(t)
	ll, err := long.ReadLock().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.ReadLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	lw, err := writer.WriteLock().Acquire(ctx)
	if err != nil {
		t.Fatalf("writer after the short reader's lease: %v; want granted (the hash expired with the short lease)", err)
	}
	if !ll.Valid(time.Now()) {
		t.Fatalf("the long reader's lease ended already; the test shows nothing")
	}
	if err := writer.WriteLock().Release(ctx, lw); err != nil {
		t.Fatal(err)
	}
}

func TestWriterWokenByLastReader(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	r := newLock(t, addr, "k", time.Minute)
	w := newLock(t, addr, "k", time.Minute, lock.WithRetry(lock.Wait(0, 0)))
	lr, err := r.ReadLock().Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := w.WriteLock().Acquire(ctx)
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	released := time.Now()
	if err := r.ReadLock().Release(locktest.Context(t), lr); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting writer: %v", err)
	}
	if d := time.Since(released); d > 2*time.Second {
		t.Fatalf("the writer got the lock %v after the release (pttl is a minute): it was not woken", d)
	}
}
