package clients_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// validator is the client's lock on key as a lock.Validator: its manifest
// declares answers_valid.
func validator(t *testing.T, p *protocol.Process, key string, opts ...lock.Option) lock.Validator {
	t.Helper()
	l := locker(t, p, key, opts...)
	v, ok := l.(lock.Validator)
	if !ok {
		t.Fatalf("the client's lock on %s is a %T: its manifest declares answers_valid, so it must be a lock.Validator", key, l)
	}
	return v
}

// TestSymfonyAnswersValid: Symfony's clients answer the valid request with
// Lock::isExpired and getRemainingLifetime: valid with at most the TTL
// left while held, not valid once the TTL ran out. Both are read on the
// client's wall clock (Key compares the expiring time it computed with
// microtime), so a client whose clock was stepped back by more than the
// TTL after its grant still says valid when Redis has dropped its key —
// Symfony's documented premise that the system's date does not change,
// shown.
func TestSymfonyAnswersValid(t *testing.T) {
	t.Parallel()
	shim, err := clockshim.Build()
	if err != nil {
		t.Fatalf("the clock shim: %v", err)
	}
	servers := redistest.Start(t, 3)
	ttl := time.Second
	for _, name := range []string{"symfony", "symfony-combined"} {
		t.Run(name, func(t *testing.T) {
			m := manifest(t, name)
			if !m.AnswersValid {
				t.Fatalf("%s's manifest does not declare answers_valid", name)
			}
			key := locktest.Key(t)
			p := start(t, name, initFor(m, servers, key, ttl, map[string]any{"per_request": false}), func(c *protocol.Config) { c.ClockShim = shim })
			var offset atomic.Int64
			v := validator(t, p, key, lock.WithWallClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }))
			ctx := ctxFor(t, 30*time.Second)

			lease, err := v.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			asked := time.Now()
			ans, err := v.Valid(ctx, lease)
			if err != nil || !ans.Valid || ans.Until.IsZero() || ans.Until.After(asked.Add(ttl)) {
				t.Fatalf("valid right after the grant: %+v, %v; want valid, with at most the TTL %v left", ans, err, ttl)
			}
			time.Sleep(time.Until(lease.Start.Add(ttl)) + 300*time.Millisecond)
			if ans, err = v.Valid(ctx, lease); err != nil || ans.Valid {
				t.Fatalf("valid %v after the TTL ran out: %+v, %v; want not valid", time.Since(lease.Start.Add(ttl)), ans, err)
			}

			lease, err = v.Acquire(ctx)
			if err != nil {
				t.Fatalf("acquire after the first lease expired: %v", err)
			}
			offset.Store(int64(-3 * ttl)) // the client's clock steps back past the whole TTL
			time.Sleep(time.Until(lease.Start.Add(ttl)) + 300*time.Millisecond)
			ans, err = v.Valid(ctx, lease)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range servers[:nodeCount(m)] {
				if n := s.Client(t).Exists(context.Background(), key).Val(); n != 0 {
					t.Fatalf("node %d still holds %s %v after the TTL: the lease did not expire in Redis", i, key, time.Since(lease.Start))
				}
			}
			if !ans.Valid {
				t.Fatalf("valid after the TTL ran out, with the client's clock %v behind: %+v; Symfony reads its wall clock, so it should still say valid", 3*ttl, ans)
			}
			t.Logf("%s: with the client's clock %v behind, %v after the grant, Redis has no key and Symfony says valid for %v more",
				name, 3*ttl, time.Since(lease.Start).Round(time.Millisecond), time.Until(ans.Until).Round(time.Millisecond))
		})
	}
}

// TestSymfonyReuseKey: with reuse_key, one Key serves every acquisition of
// a name, and the store's token lives in it: two leases one after the
// other carry the same token; without it each acquisition has a Key, and
// a token, of its own.
func TestSymfonyReuseKey(t *testing.T) {
	servers := redistest.Start(t, 1)
	for _, reuse := range []bool{false, true} {
		key := locktest.Key(t)
		p := start(t, "symfony", initFor(manifest(t, "symfony"), servers, key, time.Second, map[string]any{"reuse_key": reuse}))
		l := locker(t, p, key)
		ctx := ctxFor(t, 20*time.Second)
		var tokens []string
		for range 2 {
			lease, err := l.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Release(ctx, lease); err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, lease.Value)
		}
		if same := tokens[0] == tokens[1]; same != reuse {
			t.Errorf("reuse_key %v: tokens %q, want the same token %v", reuse, tokens, reuse)
		}
	}
}
