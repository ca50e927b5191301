package recipes

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

func mustNew(t testing.TB, name, addr, key string, ttl time.Duration, opts ...lock.Option) lock.Locker {
	t.Helper()
	l, err := New(name, locktest.Client(t, addr), key, ttl, opts...)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	if c, ok := l.(interface{ Close() }); ok {
		t.Cleanup(c.Close)
	}
	return l
}

func TestConformance(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t, 1)[0].Addr
	exclude := map[string]map[string]string{
		NameSetNXDel: {
			locktest.ReleaseOthers: "release is a plain DEL that frees whoever holds the key (TestSetNXDelSlowHolderFreesNextHolder)",
			locktest.Expiry:        "a holder's late DEL frees the next holder's lock (TestSetNXDelSlowHolderFreesNextHolder)",
			locktest.Extend:        "extend is an owner-blind PEXPIRE that renews the next holder's lock (TestSetNXDelExtendRenewsOthersLock)",
		},
		NameTimerRenew: {
			locktest.Extend: "the renewal script's HEXISTS fails on the string key, so Extend never renews yet reports success (TestTimerRenewNeverRenews)",
		},
		NameGiveUpRenew: {
			locktest.Expiry: "its watchdog renews the lease until a renewal fails (TestGiveUpRenewStopsAtTheFirstFailure)",
			locktest.Extend: "its watchdog keeps the extended lease alive too (TestGiveUpRenewStopsAtTheFirstFailure)",
		},
	}
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			locktest.Suite{
				New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
					return mustNew(t, name, addr, key, ttl)
				},
				Exclude: exclude[name],
			}.Run(t)
		})
	}
}

func TestConstructorErrors(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	cases := []struct {
		name   string
		client redis.UniversalClient
		key    string
		ttl    time.Duration
		opts   []lock.Option
		want   string
	}{
		{NameSetNXDel, nil, "k", time.Second, nil, "nil redis client"},
		{NameCheckThenDel, c, "", time.Second, nil, "empty key"},
		{NameLuaTimestamp, c, "k", 0, nil, "must be positive"},
		{NameGetSetTimestamp, c, "k", time.Second, []lock.Option{lock.WithWallClock(nil)}, "nil wall clock"},
		{"setnx-nope", c, "k", time.Second, nil, "unknown recipe"},
	}
	for _, tc := range cases {
		_, err := New(tc.name, tc.client, tc.key, tc.ttl, tc.opts...)
		if !errors.Is(err, lock.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, key %q, ttl %v): err = %v, want ErrConfig mentioning %q", tc.name, tc.key, tc.ttl, err, tc.want)
		}
	}
}

var errCrash = errors.New("client crashed")

func crashAt(step string) lock.Option {
	return lock.WithHook(func(_ context.Context, s string) error {
		if s == step {
			return errCrash
		}
		return nil
	})
}

func pttl(t *testing.T, c *redis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(locktest.Context(t), "pttl", key).Int64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return n
}

func TestSetNXExpireCrashLeavesKeyForever(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 200 * time.Millisecond
	c := locktest.Client(t, addr)

	ok := mustNew(t, NameSetNXExpire, addr, "control", ttl)
	if _, err := ok.Acquire(locktest.Context(t)); err != nil {
		t.Fatalf("acquire without a crash: %v", err)
	}
	if p := pttl(t, c, "control"); p <= 0 || p > ttl.Milliseconds() {
		t.Fatalf("without a crash the key's PTTL is %d ms, want (0, %d]", p, ttl.Milliseconds())
	}

	a := mustNew(t, NameSetNXExpire, addr, "k", ttl, crashAt(StepAfterSetNX), lock.WithValue(func() string { return "A" }))
	_, err := a.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrUnknown) || !errors.Is(err, errCrash) {
		t.Fatalf("A crashing after SETNX: err = %v, want ErrUnknown wrapping the crash", err)
	}
	// B retries for at least 5×TTL by counting attempts, not with a
	// deadline: a deadline that lands during a SETNX in flight makes the
	// outcome unknown (ErrUnknown), which is right but not what this test
	// is about.
	const every = 20 * time.Millisecond
	attempts := int(5*ttl/every) + 1
	b := mustNew(t, NameSetNXExpire, addr, "k", ttl, lock.WithRetry(lock.Strategy{Attempts: attempts, Delay: every, Jitter: 10 * time.Millisecond}))
	began := time.Now()
	if l, err := b.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B waiting 5×TTL for the crashed client's lock: lease %+v, err = %v; want ErrNotObtained", l, err)
	}
	if waited := time.Since(began); waited < 5*ttl {
		t.Fatalf("B gave up after %v, before 5×TTL (%v)", waited, 5*ttl)
	}
	if p := pttl(t, c, "k"); p != -1 {
		t.Fatalf("crashed client's key has PTTL %d, want -1 (no TTL)", p)
	}
	if v := c.Get(locktest.Context(t), "k").Val(); v != "A" {
		t.Fatalf("key holds %q after 5×TTL, want the crashed client's %q", v, "A")
	}
}

// waitGone polls until key no longer exists (its TTL ran out).
func waitGone(t *testing.T, c *redis.Client, key string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for c.Exists(locktest.Context(t), key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after %v", key, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSetNXDelSlowHolderFreesNextHolder(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 500 * time.Millisecond
	c := locktest.Client(t, addr)
	a, b, d := mustNew(t, NameSetNXDel, addr, "k", ttl), mustNew(t, NameSetNXDel, addr, "k", ttl), mustNew(t, NameSetNXDel, addr, "k", ttl)

	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	waitGone(t, c, "k", 4*ttl) // A is slow: its lease ran out while it worked
	lb, err := b.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("B acquire after A's TTL: %v", err)
	}
	if err := a.Release(locktest.Context(t), la); err != nil {
		t.Fatalf("slow A's release: %v (the recipe's DEL should have succeeded)", err)
	}
	if n := c.Exists(locktest.Context(t), "k").Val(); n != 0 {
		t.Fatalf("after slow A's DEL the key still exists: A did not delete B's lock")
	}
	ld, err := d.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("D acquire after A deleted B's lock: %v", err)
	}
	if !lb.ValidUntil.After(ld.Start) {
		t.Fatalf("B's lease (valid until %v) had ended before D acquired at %v: no double grant shown", lb.ValidUntil, ld.Start)
	}
	forged := ld
	forged.Value = "not-the-owner"
	if err := b.Release(locktest.Context(t), forged); err != nil {
		t.Fatalf("release with another owner's value: %v (the owner-blind DEL should succeed)", err)
	}
	if n := c.Exists(locktest.Context(t), "k").Val(); n != 0 {
		t.Fatalf("a release with a forged value left D's lock in place")
	}
}

func TestSetNXDelExtendRenewsOthersLock(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 400 * time.Millisecond
	c := locktest.Client(t, addr)
	a, b := mustNew(t, NameSetNXDel, addr, "k", ttl), mustNew(t, NameSetNXDel, addr, "k", ttl)
	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	waitGone(t, c, "k", 4*ttl)
	lb, err := b.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("B acquire: %v", err)
	}
	ext, err := a.Extend(locktest.Context(t), la)
	if err != nil {
		t.Fatalf("A extending its lapsed lease: %v (the owner-blind PEXPIRE should succeed)", err)
	}
	if v := c.Get(locktest.Context(t), "k").Val(); v != lb.Value || ext.Value == v {
		t.Fatalf("key holds %q (B's value %q, A's %q): A's extend should have renewed B's key", v, lb.Value, ext.Value)
	}
}

func TestCheckThenDelReleaseFreesNewHolder(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 300 * time.Millisecond
	c := locktest.Client(t, addr)
	b, d := mustNew(t, NameCheckThenDel, addr, "k", ttl), mustNew(t, NameCheckThenDel, addr, "k", ttl)
	var lb lock.Lease
	var errB error
	// A stalls between its GET (which matched) and its DEL, long enough for
	// its lease to run out and B to acquire.
	stall := lock.WithHook(func(_ context.Context, step string) error {
		if step != StepBetweenGetAndDel {
			return nil
		}
		waitGone(t, c, "k", 4*ttl)
		lb, errB = b.Acquire(locktest.Context(t))
		return nil
	})
	a := mustNew(t, NameCheckThenDel, addr, "k", ttl, stall)
	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	if err := a.Release(locktest.Context(t), la); err != nil {
		t.Fatalf("A release: %v (its DEL should have gone through)", err)
	}
	if errB != nil {
		t.Fatalf("B acquire while A stalled between GET and DEL: %v", errB)
	}
	if n := c.Exists(locktest.Context(t), "k").Val(); n != 0 {
		t.Fatalf("B's lock survived A's DEL")
	}
	ld, err := d.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("D acquire after A's DEL freed B's lock: %v", err)
	}
	if !lb.ValidUntil.After(ld.Start) {
		t.Fatalf("B's lease (valid until %v) ended before D acquired at %v: no double grant shown", lb.ValidUntil, ld.Start)
	}
}

func TestGetSetTimestampLoserOverwritesHolder(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 300 * time.Millisecond
	c := locktest.Client(t, addr)
	a, winner := mustNew(t, NameGetSetTimestamp, addr, "k", ttl), mustNew(t, NameGetSetTimestamp, addr, "k", ttl)
	var lw lock.Lease
	var errW error
	// The loser stalls after GET saw A's expired timestamp; the winner does
	// the whole dance meanwhile. The stall outlasts a millisecond so the two
	// timestamps differ (equal ones would hide the overwrite).
	race := lock.WithHook(func(_ context.Context, step string) error {
		if step == StepBeforeGetSet {
			time.Sleep(5 * time.Millisecond)
			lw, errW = winner.Acquire(locktest.Context(t))
		}
		return nil
	})
	loser := mustNew(t, NameGetSetTimestamp, addr, "k", ttl, race)

	if _, err := a.Acquire(locktest.Context(t)); err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	time.Sleep(ttl + 50*time.Millisecond) // A crashed; its timestamp is now in the past
	_, err := loser.Acquire(locktest.Context(t))
	if errW != nil {
		t.Fatalf("winner acquire during the loser's stall: %v", errW)
	}
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("loser of the GETSET race: err = %v, want ErrNotObtained", err)
	}
	v := c.Get(locktest.Context(t), "k").Val()
	if v == lw.Value {
		t.Fatalf("key still holds the winner's timestamp %q: the loser's GETSET did not overwrite it", v)
	}
	if err := winner.Release(locktest.Context(t), lw); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("winner releasing after the loser overwrote its timestamp (%q → %q): err = %v, want ErrNotHeld", lw.Value, v, err)
	}
	if n := c.Exists(locktest.Context(t), "k").Val(); n != 1 {
		t.Fatalf("the winner could not unlock, yet the key is gone")
	}
}

// skewed is a wall clock that runs ahead of the real one.
func skewed(d time.Duration) lock.Option {
	return lock.WithWallClock(func() time.Time { return time.Now().Add(d) })
}

func testSkewDoubleGrant(t *testing.T, name string) {
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 2 * time.Second
	a := mustNew(t, name, addr, "k", ttl)
	honest := mustNew(t, name, addr, "k", ttl)
	ahead := mustNew(t, name, addr, "k", ttl, skewed(3*ttl))

	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	if _, err := honest.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("a client with a correct clock acquired while A holds: err = %v", err)
	}
	lb, err := ahead.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("client whose clock runs %v ahead: %v, want it to take A's lock", 3*ttl, err)
	}
	now := time.Now()
	if !la.Valid(now) || !lb.Valid(now) {
		t.Fatalf("at %v A's lease valid=%v (until %v), B's valid=%v (until %v): want both, a double grant", now, la.Valid(now), la.ValidUntil, lb.Valid(now), lb.ValidUntil)
	}
	if err := a.Release(locktest.Context(t), la); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A release after the skewed client took over: err = %v, want ErrNotHeld", err)
	}
}

func TestGetSetTimestampSkewDoubleGrant(t *testing.T) { testSkewDoubleGrant(t, NameGetSetTimestamp) }
func TestLuaTimestampSkewDoubleGrant(t *testing.T)    { testSkewDoubleGrant(t, NameLuaTimestamp) }

func TestTimerRenewNeverRenews(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 600 * time.Millisecond
	c := locktest.Client(t, addr)
	var mu sync.Mutex
	var events []lock.RenewEvent
	observe := lock.WithRenewObserver(func(ev lock.RenewEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	a := mustNew(t, NameTimerRenew, addr, "k", ttl, observe)
	b := mustNew(t, NameTimerRenew, addr, "k", ttl)

	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	err = timerRenewScript.Run(locktest.Context(t), c, []string{"k"}, la.Value, ttl.Milliseconds()).Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("renewal script on the held string key: err = %v, want WRONGTYPE", err)
	}
	var lb lock.Lease
	deadline := la.Start.Add(3 * ttl)
	for {
		if lb, err = b.Acquire(locktest.Context(t)); err == nil {
			break
		}
		if !errors.Is(err, lock.ErrNotObtained) || time.Now().After(deadline) {
			t.Fatalf("B acquire: %v (A's lock should expire at its TTL, renewals notwithstanding)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	var oks []lock.RenewEvent
	for _, ev := range events {
		if ev.Phase == "ok" {
			oks = append(oks, ev)
		}
	}
	mu.Unlock()
	if len(oks) < 2 {
		t.Fatalf("A's timer reported %d successful renewals before B acquired at %v after A; want ≥ 2 (one every TTL/3)", len(oks), lb.Start.Sub(la.Start))
	}
	last := oks[len(oks)-1]
	if last.Err != nil || !last.Lease.ValidUntil.After(lb.Start) || !last.Lease.ValidUntil.After(la.ValidUntil) {
		t.Fatalf("A's last renewal: err %v, believed valid until %v; B acquired at %v, A's original lease ended %v: want A to believe it still holds", last.Err, last.Lease.ValidUntil, lb.Start, la.ValidUntil)
	}
	if err := a.Release(locktest.Context(t), la); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A release while B holds: err = %v, want ErrNotHeld", err)
	}
	mu.Lock()
	n := len(events)
	mu.Unlock()
	time.Sleep(ttl / 2)
	mu.Lock()
	after := len(events)
	mu.Unlock()
	if after != n {
		t.Fatalf("A's timer reported %d events after A released", after-n)
	}
	if err := b.Release(locktest.Context(t), lb); err != nil {
		t.Fatalf("B release: %v", err)
	}
}

// TestGiveUpRenewStopsAtTheFirstFailure: the give-up-renew watchdog renews
// while its renewals work, then one renewal fails (the key is away for a
// moment, renamed and put back with its TTL) and it never renews again:
// the key expires under its holder, who was not told, and B acquires.
func TestGiveUpRenewStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t, 1)[0].Addr
	ttl := 600 * time.Millisecond
	c := locktest.Client(t, addr)
	var mu sync.Mutex
	var events []lock.RenewEvent
	observe := lock.WithRenewObserver(func(ev lock.RenewEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	phases := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := make([]string, len(events))
		for i, ev := range events {
			out[i] = ev.Phase
		}
		return out
	}
	a := mustNew(t, NameGiveUpRenew, addr, "k", ttl, observe)
	b := mustNew(t, NameGiveUpRenew, addr, "k", ttl)
	ctx := locktest.Context(t)
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	time.Sleep(2 * ttl)
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B acquire after 2 TTLs of renewals: %v, want ErrNotObtained", err)
	}
	if err := c.Rename(ctx, "k", "k.away").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(ttl); !slices.Contains(phases(), "fail"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no renewal failed in a TTL with the key away: %v", phases())
		}
	}
	if err := c.Rename(ctx, "k.away", "k").Err(); err != nil {
		t.Fatal(err)
	}
	failedAt := len(phases())
	var lb lock.Lease
	for deadline := time.Now().Add(2 * ttl); ; time.Sleep(10 * time.Millisecond) {
		if lb, err = b.Acquire(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B acquire: %v (A's lock should expire a TTL after its last renewal)", err)
		}
	}
	if got := phases(); len(got) != failedAt || got[len(got)-1] != "fail" { // ErrNotHeld: definite
		t.Errorf("A's watchdog went on after its failure: %v", got[failedAt-1:])
	}
	if oks := slices.Index(phases(), "ok"); oks < 0 {
		t.Errorf("no renewal worked before the failure: %v", phases())
	}
	if err := a.Release(ctx, la); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("A release while B holds: %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Errorf("B release: %v", err)
	}
}
