package latch

import (
	"errors"
	"testing"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

func TestConformance(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	locktest.LatchSuite{New: func(t testing.TB, key string) lock.Latch {
		l, err := New(locktest.Client(t, addr), key)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}}.Run(t)
}

func TestConfigErrors(t *testing.T) {
	c := lock.NewClient("127.0.0.1:1")
	t.Cleanup(func() { _ = c.Close() })
	if _, err := New(nil, "k"); !errors.Is(err, lock.ErrConfig) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := New(c, ""); !errors.Is(err, lock.ErrConfig) {
		t.Errorf("empty key: %v", err)
	}
	l, _ := New(c, "k")
	if _, err := l.TrySetCount(locktest.Context(t), 0); !errors.Is(err, lock.ErrConfig) {
		t.Errorf("count 0: %v", err)
	}
}

// TestMissingKeyIsOpen: a latch whose key vanished (a failover to a
// replica that never saw it) lets every waiter pass.
func TestMissingKeyIsOpen(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	c := locktest.Client(t, addr)
	l, _ := New(c, "k")
	ctx := locktest.Context(t)
	if _, err := l.TrySetCount(ctx, 3); err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, "k")
	if err := l.Await(ctx); err != nil {
		t.Fatalf("await after the key vanished: %v, want it open", err)
	}
}
