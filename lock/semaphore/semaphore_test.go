package semaphore

import (
	"errors"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

func TestConformance(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	t.Run("semaphore", func(t *testing.T) {
		locktest.SemaphoreSuite{New: func(t testing.TB, key string, permits int, _ time.Duration, opts ...lock.Option) lock.Semaphore {
			s, err := New(locktest.Client(t, addr), key, permits, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}}.Run(t)
	})
	t.Run("permit-expirable", func(t *testing.T) {
		locktest.SemaphoreSuite{New: func(t testing.TB, key string, permits int, ttl time.Duration, opts ...lock.Option) lock.Semaphore {
			s, err := NewExpirable(locktest.Client(t, addr), key, permits, ttl, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}}.Run(t)
	})
}

func TestConfigErrors(t *testing.T) {
	c := lock.NewClient("127.0.0.1:1")
	t.Cleanup(func() { _ = c.Close() })
	for _, err := range []error{
		func() error { _, err := New(nil, "k", 1); return err }(),
		func() error { _, err := New(c, "", 1); return err }(),
		func() error { _, err := New(c, "k", 0); return err }(),
		func() error { _, err := NewExpirable(c, "k", 1, 0); return err }(),
	} {
		if !errors.Is(err, lock.ErrConfig) {
			t.Errorf("err = %v, want ErrConfig", err)
		}
	}
}

// TestPlainPermitsHaveNoOwner: an RSemaphore release always adds a permit,
// so releasing twice makes more permits than were set up.
func TestPlainPermitsHaveNoOwner(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	s, err := New(locktest.Client(t, addr), "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := locktest.Context(t)
	if _, err := s.TrySetPermits(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatalf("a second release: %v (RSemaphore cannot tell)", err)
	}
	if n, _ := s.Available(ctx); n != 2 {
		t.Fatalf("available after two releases of one permit = %d, want 2", n)
	}
}

// TestExpiredPermitReissued: a holder's permit that expired is returned to
// the pool by the next acquire, and the holder's release then fails.
func TestExpiredPermitReissued(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	mk := func() *Expirable {
		s, err := NewExpirable(locktest.Client(t, addr), "k", 1, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := mk(), mk()
	ctx := locktest.Context(t)
	if _, err := a.TrySetPermits(ctx); err != nil {
		t.Fatal(err)
	}
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B while A holds the only permit: %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	lb, err := b.Acquire(ctx)
	if err != nil {
		t.Fatalf("B after A's permit expired: %v", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A releasing its expired permit: %v, want ErrNotHeld", err)
	}
	if _, err := a.Extend(ctx, la); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A extending its expired permit: %v, want ErrNotHeld", err)
	}
	if _, err := b.Extend(ctx, lb); err != nil {
		t.Fatalf("B extends its permit: %v", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatalf("B release: %v", err)
	}
}
