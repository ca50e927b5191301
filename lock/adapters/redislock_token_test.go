package adapters

import (
	"errors"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

// newRedislockToken is a redislock adapter whose every Obtain passes token
// (redislock.Options.Token), as a user who sets Token does.
func newRedislockToken(t testing.TB, addr, key string, ttl time.Duration, token string) *Redislock {
	t.Helper()
	r, err := NewRedislock(client(t, addr), key, ttl, lock.WithValue(func() string { return token }))
	if err != nil {
		t.Fatalf("NewRedislock: %v", err)
	}
	return r
}

// TestRedislockTokenConformance: with a token of its own per contender,
// fixed for all its Obtains, redislock passes the suite.
func TestRedislockTokenConformance(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t, 1)[0].Addr
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newRedislockToken(t, addr, key, ttl, lock.RandomValue())
		},
	}.Run(t)
}

// TestRedislockTokenReobtains: an Obtain whose token the key holds
// re-obtains it (redislock #71: the obtain script compares the stored
// value's first len(token) bytes with the token and SETs again) — while the
// holder holds, and by another client passing the same token. One Release
// then frees it for everyone.
func TestRedislockTokenReobtains(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	admin := srv.Client(t)
	ttl := 5 * time.Second
	a := newRedislockToken(t, srv.Addr, "k", ttl, "shared")
	b := newRedislockToken(t, srv.Addr, "k", ttl, "shared")
	c := newRedislockToken(t, srv.Addr, "k", ttl, "other")
	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	if _, err := a.Acquire(locktest.Context(t)); err != nil {
		t.Fatalf("A's second Obtain while it holds: %v (the token's prefix matches: re-obtained)", err)
	}
	lb, err := b.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("B, passing A's token, while A holds: %v (redislock re-obtains for any caller with the token)", err)
	}
	if lb.Value != la.Value || admin.Get(locktest.Context(t), "k").Val() != "shared" {
		t.Fatalf("B's lease %q, key %q: want both the shared token", lb.Value, admin.Get(locktest.Context(t), "k").Val())
	}
	if _, err := c.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("C with another token: err = %v, want ErrNotObtained", err)
	}
	if err := b.Release(locktest.Context(t), lb); err != nil {
		t.Fatalf("B release: %v", err)
	}
	if _, err := c.Acquire(locktest.Context(t)); err != nil {
		t.Fatalf("C after B's one release, A's two Obtains before it: %v; nothing counts them", err)
	}
}

// TestRedislockTokenPrefixTakesOver: the obtain script compares only the
// first len(token) bytes of the stored value, so a client whose token is a
// prefix of the holder's ("worker-1" of "worker-10") is granted the lock
// the other holds, although the two tokens differ. The holder is not told:
// its release finds the key changed and reports not held.
func TestRedislockTokenPrefixTakesOver(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	admin := srv.Client(t)
	ttl := 5 * time.Second
	w10 := newRedislockToken(t, srv.Addr, "k", ttl, "worker-10")
	w1 := newRedislockToken(t, srv.Addr, "k", ttl, "worker-1")
	held, err := w10.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("worker-10 acquire: %v", err)
	}
	stolen, err := w1.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("worker-1 while worker-10 holds: %v; redislock v0.9.4 grants it (prefix match)", err)
	}
	if now := time.Now(); !held.Valid(now) || !stolen.Valid(now) {
		t.Fatalf("want both leases valid now (a double grant): worker-10 %v, worker-1 %v", held.Valid(now), stolen.Valid(now))
	}
	if v := admin.Get(locktest.Context(t), "k").Val(); v != "worker-1" {
		t.Fatalf("key holds %q after the takeover, want worker-1", v)
	}
	if err := w10.Release(locktest.Context(t), held); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("worker-10's release after the takeover: err = %v, want ErrNotHeld", err)
	}
	if err := w1.Release(locktest.Context(t), stolen); err != nil {
		t.Fatalf("worker-1 release: %v", err)
	}
	// The other way round the prefix does not match: refused.
	if _, err := w1.Acquire(locktest.Context(t)); err != nil {
		t.Fatalf("worker-1 acquire: %v", err)
	}
	if _, err := w10.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("worker-10 while worker-1 holds: err = %v, want ErrNotObtained", err)
	}
}
