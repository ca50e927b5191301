package clients_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// The properties of the libraries that the conformance suite's excluded
// tests would have shown, each on the real library.

func manifest(t testing.TB, name string) protocol.Manifest {
	t.Helper()
	m, err := protocol.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wantErr(t testing.TB, what string, err, kind error, says string) {
	t.Helper()
	if !errors.Is(err, kind) || !strings.Contains(err.Error(), says) {
		t.Fatalf("%s: %v, want %v saying %q", what, err, kind, says)
	}
}

// TestRedisPyReleaseClearsTokenFirst shows redis-py issue #3847 on the
// library: Lock.release clears its token before the release's reply
// arrives. A release whose reply is lost is info; releasing the lease again
// is refused by the library (it has no token left) although the key is
// still held in Redis, where it stays until it expires.
func TestRedisPyReleaseClearsTokenFirst(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 1)[0]
	key := locktest.Key(t)
	in := initFor(manifest(t, "redis-py"), []*redistest.Server{srv}, key, 30*time.Second, nil)
	in.ReadTimeoutMS = 300
	l := locker(t, start(t, "redis-py", in), key)
	held, err := l.Acquire(ctxFor(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	admin := srv.Client(t)
	ctx := ctxFor(t, 10*time.Second)
	// Writes wait unexecuted for 1.5 s: the release's script is not run
	// before redis-py gives up on its reply (300 ms) and drops the
	// connection, and a script whose client is gone never runs.
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 1500, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "release whose reply is lost", l.Release(ctx, held), lock.ErrUnknown, "TimeoutError")
	time.Sleep(1600 * time.Millisecond)
	wantErr(t, "second release of the same lease", l.Release(ctx, held), lock.ErrNotHeld, "Cannot release an unlocked lock")
	if v, err := admin.Get(ctx, key).Result(); err != nil || v != held.Value {
		t.Fatalf("key %s after the refused release: %q, %v; want it still held with the lease's token %s", key, v, err, held.Value)
	}
	if ttl := admin.PTTL(ctx, key).Val(); ttl < 20*time.Second {
		t.Fatalf("key's PTTL %v: want it held for the rest of its 30 s", ttl)
	}
}

// TestRedisPyTimeoutNone: with timeout null (redis-py's default None) the
// lock never expires, and the library refuses to extend it.
func TestRedisPyTimeoutNone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 1)[0]
	key := locktest.Key(t)
	in := initFor(manifest(t, "redis-py"), []*redistest.Server{srv}, key, 300*time.Millisecond, map[string]any{"timeout": nil})
	a, b := locker(t, start(t, "redis-py", in), key), locker(t, start(t, "redis-py", in), key)
	ctx := ctxFor(t, 10*time.Second)
	held, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // over three times the plan's TTL
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B's acquire 1 s into a lock with no timeout: %v, want ErrNotObtained", err)
	}
	if ttl := srv.Client(t).PTTL(ctx, key).Val(); ttl != -1 {
		t.Fatalf("PTTL of a lock with no timeout: %v, want -1 (no expiry)", ttl)
	}
	_, err = a.Extend(ctx, held)
	wantErr(t, "extend of a lock with no timeout", err, lock.ErrNotHeld, "Cannot extend a lock with no timeout")
	if err := a.Release(ctx, held); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// TestReleaseOfALeaseNotHeldReportsSuccess: Symfony's release() of a lease
// it does not hold — another owner's token, or its own lease expired and
// taken by another — returns as a release that worked. It does not free the
// holder's lock.
func TestReleaseOfALeaseNotHeldReportsSuccess(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	for _, name := range []string{"symfony", "symfony-combined"} {
		t.Run(name, func(t *testing.T) {
			ttl := 500 * time.Millisecond
			key := locktest.Key(t)
			in := initFor(manifest(t, name), servers, key, ttl, nil)
			a, b, c := locker(t, start(t, name, in), key), locker(t, start(t, name, in), key), locker(t, start(t, name, in), key)
			ctx := ctxFor(t, 10*time.Second)
			la, err := a.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			forged := la
			forged.Value = "not-the-owner"
			if err := b.Release(ctx, forged); err != nil {
				t.Fatalf("B releasing a token it never held: %v; Symfony reports success", err)
			}
			if _, err := c.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("C's acquire after B's forged release: %v; A's lock must still be held", err)
			}
			time.Sleep(ttl + ttl/2)
			lb, err := b.Acquire(ctx)
			if err != nil {
				t.Fatalf("B's acquire once A's lease expired: %v", err)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatalf("A releasing its expired lease, now B's lock: %v; Symfony reports success", err)
			}
			if _, err := c.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("C's acquire after A's release of its expired lease: %v; B's lock must still be held", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatalf("B's release: %v", err)
			}
		})
	}
}

// TestSymfonyValidityCountsFromTheRefresh: Symfony saves the lock with the
// store's initial TTL (300 s) and only then refreshes it to the lock's TTL,
// resetting the lease's lifetime: a client stopped between the two (the
// step granted) leaves a key that lives 300 s, and the validity it reports
// counts from the refresh, after the stop, not from the start of acquire.
func TestSymfonyValidityCountsFromTheRefresh(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 1)
	key := locktest.Key(t)
	ttl := 2 * time.Second
	p := start(t, "symfony", initFor(manifest(t, "symfony"), servers, key, ttl, nil))
	admin := servers[0].Client(t)
	const stall = 500 * time.Millisecond
	var atStep time.Duration
	l := locker(t, p, key, lock.WithHook(func(ctx context.Context, step string) error {
		if step == lock.StepGranted {
			atStep = admin.PTTL(ctx, key).Val()
			time.Sleep(stall)
		}
		return nil
	}))
	lease, err := l.Acquire(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	if atStep < 250*time.Second {
		t.Errorf("key's PTTL at the step granted: %v, want the store's initial TTL (300 s)", atStep)
	}
	if left := admin.PTTL(context.Background(), key).Val(); left > ttl || left < ttl-time.Second {
		t.Errorf("key's PTTL after the acquire: %v, want the lock's TTL %v (the refresh)", left, ttl)
	}
	if lease.Key != key || lease.Value == "" {
		t.Fatalf("lease key %q value %q", lease.Key, lease.Value)
	}
	if min := lease.Start.Add(stall + ttl); lease.ValidUntil.Before(min) {
		t.Errorf("ValidUntil %v: Symfony counts it from the refresh, after the %v stall, want after %v", lease.ValidUntil, stall, min)
	}
	if max := done.Add(ttl); lease.ValidUntil.After(max) {
		t.Errorf("ValidUntil %v after the acquire's end plus the TTL %v", lease.ValidUntil, max)
	}
}

// TestLaravelCannotExtend: Laravel's lock has no extend, so an extend is a
// failure naming why; and its lease is the TTL rounded up to whole seconds.
func TestLaravelCannotExtend(t *testing.T) {
	servers := redistest.Start(t, 1)
	key := locktest.Key(t)
	l := locker(t, start(t, "laravel", initFor(manifest(t, "laravel"), servers, key, 400*time.Millisecond, nil)), key)
	ctx := ctxFor(t, 10*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ttl := servers[0].Client(t).PTTL(ctx, key).Val(); ttl <= 500*time.Millisecond || ttl > time.Second {
		t.Errorf("PTTL for a 400 ms TTL: %v, want Laravel's whole second", ttl)
	}
	_, err = l.Extend(ctx, held)
	wantErr(t, "extend", err, lock.ErrNotHeld, "cannot be extended")
	if err := l.Release(ctx, held); err != nil {
		t.Fatalf("release after the refused extend: %v", err)
	}
}

// TestToozHeartbeatKeepsTheLock: tooz's heartbeat thread renews the lock
// as long as the process runs; once it stops, the lock expires after its
// TTL. Without the heart (start_heart false) it expires like redis-py's.
func TestToozHeartbeatKeepsTheLock(t *testing.T) {
	servers := redistest.Start(t, 1)
	ttl := time.Second
	t.Run("heart", func(t *testing.T) {
		key := locktest.Key(t)
		in := initFor(manifest(t, "tooz"), servers, key, ttl, nil)
		pa := start(t, "tooz", in)
		a, b := locker(t, pa, key), locker(t, start(t, "tooz", in), key)
		ctx := ctxFor(t, 30*time.Second)
		held, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * ttl)
		if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("B's acquire three TTLs into A's lease: %v; tooz's heart must have kept it", err)
		}
		if _, err := a.Extend(ctx, held); err != nil {
			t.Fatalf("A's extend (the lock's heartbeat): %v", err)
		}
		pa.Close() // the process ends without releasing: its heart stops
		stopped := time.Now()
		expireWithin(t, ctx, b, stopped, ttl)
	})
	t.Run("no heart", func(t *testing.T) {
		key := locktest.Key(t)
		in := initFor(manifest(t, "tooz"), servers, key, ttl, map[string]any{"start_heart": false})
		a, b := locker(t, start(t, "tooz", in), key), locker(t, start(t, "tooz", in), key)
		ctx := ctxFor(t, 30*time.Second)
		held, err := a.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		expireWithin(t, ctx, b, held.Start, ttl)
	})
}

// expireWithin waits for b to get the lock, which must happen after about
// ttl from since (not well before, and within three TTLs).
func expireWithin(t *testing.T, ctx context.Context, b lock.Locker, since time.Time, ttl time.Duration) {
	t.Helper()
	for {
		lb, err := b.Acquire(ctx)
		if err == nil {
			if after := time.Since(since); after < ttl/2 {
				t.Fatalf("B got the lock %v after the holder stopped renewing, well before the TTL %v", after, ttl)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatalf("B's release: %v", err)
			}
			return
		}
		if !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("B's acquire: %v", err)
		}
		if time.Since(since) > 3*ttl {
			t.Fatalf("the lock did not expire within 3×TTL (%v) of its holder stopping", 3*ttl)
		}
		time.Sleep(ttl / 10)
	}
}

// TestPhpRedisStaleReplyAfterATimeout shows a php-redis 5.3.7 flaw through
// Laravel's lock in a long-running worker (per_request false: one
// connection for every call): a read timeout on a script's reply
// (redis_read_reply_type, "socket error on read socket") does not close the
// connection, unlike one on a plain reply (redis_sock_gets closes it), so
// the script's reply, when it comes, is read as the reply to the next
// command. A release that timed out shifts every later reply by one: the
// next acquire of a free key is told "not acquired" while its SET took the
// key, and the one after that is told "acquired" on a key another client
// holds. (Under PHP-FPM, per_request, the shift ends with the request.)
func TestPhpRedisStaleReplyAfterATimeout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 1)[0]
	m := manifest(t, "laravel")
	k1, k2, k3 := locktest.Key(t), locktest.Key(t), locktest.Key(t)
	in := initFor(m, []*redistest.Server{srv}, k1, 30*time.Second, map[string]any{"per_request": false})
	in.ReadTimeoutMS = 300
	pa := start(t, "laravel", in)
	a1, a2, a3 := locker(t, pa, k1), locker(t, pa, k2), locker(t, pa, k3)
	b3 := locker(t, start(t, "laravel", initFor(m, []*redistest.Server{srv}, k3, 30*time.Second, nil)), k3)
	ctx := ctxFor(t, 10*time.Second)
	admin := srv.Client(t)
	held, err := a1.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b3.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 600, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "A's release while writes are paused", a1.Release(ctx, held), lock.ErrUnknown, "socket error on read socket")
	time.Sleep(700 * time.Millisecond) // the script runs now; its reply waits on A's connection
	if _, err := a2.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("A's acquire of the free key %s: %v; php-redis reads the release's stale reply and Laravel says not acquired", k2, err)
	}
	if n := admin.Exists(ctx, k2).Val(); n != 1 {
		t.Fatalf("key %s after A was told it did not get it: exists %d; its SET ran all the same", k2, n)
	}
	got, err := a3.Acquire(ctx)
	if err != nil {
		t.Fatalf("A's acquire of %s, held by B: %v; php-redis reads the previous SET's stale +OK and Laravel says acquired", k3, err)
	}
	if v := admin.Get(ctx, k3).Val(); v != lb.Value || got.Value == lb.Value {
		t.Fatalf("key %s holds %q; B's lease %q, A's %q: want B's, with A told it holds the lock too", k3, v, lb.Value, got.Value)
	}
}

// TestSymfonyCombinedMajority: Symfony's CombinedStore with the
// ConsensusStrategy is a Redlock — with one of three nodes down it still
// grants and releases (a release that freed a majority is ok though the
// store swallowed the down node's error) — and with two down an acquire is
// info, not the "conflicted" the library reports: saves failed, and may
// have landed.
func TestSymfonyCombinedMajority(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	key := locktest.Key(t)
	in := initFor(manifest(t, "symfony-combined"), servers, key, 5*time.Second, nil)
	in.ReadTimeoutMS = 300
	a, b := locker(t, start(t, "symfony-combined", in), key), locker(t, start(t, "symfony-combined", in), key)
	ctx := ctxFor(t, 20*time.Second)
	servers[2].Stop()
	held, err := a.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire with one node of three down: %v", err)
	}
	// B's saves conflict on the two live nodes; the CombinedStore's
	// cleanup delete fails on the down one, where B saved nothing: certain.
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B's acquire while A holds two nodes: %v, want ErrNotObtained", err)
	}
	if err := a.Release(ctx, held); err != nil {
		t.Fatalf("release with one node down (two of three deleted): %v", err)
	}
	if lb, err := b.Acquire(ctx); err != nil {
		t.Fatalf("B's acquire after A's release: %v", err)
	} else if err := b.Release(ctx, lb); err != nil {
		t.Fatalf("B's release: %v", err)
	}
	servers[1].Stop()
	_, err = a.Acquire(ctx)
	wantErr(t, "acquire with two nodes of three down", err, lock.ErrUnknown, "a store may hold the lock")
}
