package adapters

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis/rueidislock"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

// newRueidislock is a rueidislock adapter on its own go-redis client to
// addr, closed on cleanup. Its node timeout (TryNextAfter) is generous
// against a loaded 2-core machine running -race, where rueidislock's 20 ms
// default times keys out now and then (ErrUnknown), and the tests expect
// definite answers.
func newRueidislock(t testing.TB, addr, key string, ttl time.Duration, opts ...lock.Option) *Rueidislock {
	t.Helper()
	opts = append([]lock.Option{lock.WithNodeTimeout(300 * time.Millisecond)}, opts...)
	r, err := NewRueidislock(client(t, addr), key, ttl, opts...)
	if err != nil {
		t.Fatalf("NewRueidislock: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// rueidisKeys are the keys rueidislock stores for key with its defaults
// (KeyPrefix "rueidislock", KeyMajority 2: three keys).
func rueidisKeys(key string) []string {
	return []string{"rueidislock:0:" + key, "rueidislock:1:" + key, "rueidislock:2:" + key}
}

func TestRueidislockConformance(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newRueidislock(t, addr, key, ttl)
		},
		// rueidislock exposes no expiry: its caller holds the lock until
		// it releases it (ValidUntil is lock.NoExpiry(Start)).
		NoValidity: true,
		Exclude: map[string]string{
			locktest.Expiry: "rueidislock renews a held lock until it is released; TestRueidislockLost shows a lease lost",
			locktest.Extend: "rueidislock renews by itself and cannot be extended on demand; TestRueidislockLease checks Extend",
		},
	}.Run(t)
}

// TestRueidislockLease checks the lease the adapter hands out and what
// rueidislock stores for it: its three keys, each with our value and a TTL
// of about the lock's, gone after Release.
func TestRueidislockLease(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	admin := srv.Client(t)
	ttl := 2 * time.Second
	r := newRueidislock(t, srv.Addr, "k", ttl)
	before := time.Now()
	l, err := r.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if l.Key != "k" || l.Value == "" || l.Start.Before(before) || l.Start.After(time.Now()) || l.TTL != ttl {
		t.Fatalf("lease %+v: want key k, a value, a Start within the call and TTL %v", l, ttl)
	}
	if !l.ValidUntil.Equal(lock.NoExpiry(l.Start)) || l.Lost == nil {
		t.Fatalf("lease %+v: want ValidUntil = lock.NoExpiry(Start) and a Lost channel", l)
	}
	// rueidislock returns once a majority of its keys is set and sets the
	// rest in a goroutine of its own (lock.go, try: "if i < m.totalcnt { go
	// func…"), so the third key may not be set yet: at least two of the
	// three hold the value.
	values, set := map[string]bool{}, 0
	for _, k := range rueidisKeys("k") {
		v, err := admin.Get(locktest.Context(t), k).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		set++
		values[v] = true
		if ms := admin.PTTL(locktest.Context(t), k).Val(); ms <= ttl-time.Second || ms > ttl {
			t.Fatalf("PTTL %s = %v, want about the TTL %v (PXAT = client now + KeyValidity)", k, ms, ttl)
		}
	}
	if set < 2 {
		t.Fatalf("%d of rueidislock's 3 keys set after a grant, want a majority", set)
	}
	if len(values) != 1 || values[l.Value] {
		t.Fatalf("values on the keys: %v; want one value, rueidislock's own, not the adapter's handle %q", values, l.Value)
	}
	if ext, err := r.Extend(locktest.Context(t), l); err != nil || ext != l {
		t.Fatalf("extend of a held lease: %+v, %v; want the same lease", ext, err)
	}
	if err := r.Release(locktest.Context(t), l); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := admin.Exists(locktest.Context(t), rueidisKeys("k")...).Val(); n != 0 {
		t.Fatalf("%d keys left after Release returned", n)
	}
	select {
	case <-l.Lost:
		t.Fatal("Lost closed by a release")
	default:
	}
	if _, err := r.Extend(locktest.Context(t), l); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("extend after release: err = %v, want ErrNotHeld", err)
	}
}

// TestRueidislockLost: a lease outlives its TTL while held (rueidislock
// renews it), and is lost — Lost closed, the observer told, Release
// ErrNotHeld — as soon as a majority of its keys is deleted behind its back.
func TestRueidislockLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 1)[0]
	admin := srv.Client(t)
	ttl := 400 * time.Millisecond
	var mu sync.Mutex
	var events []lock.RenewEvent
	observe := lock.WithRenewObserver(func(ev lock.RenewEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	})
	a := newRueidislock(t, srv.Addr, "k", ttl, observe)
	b := newRueidislock(t, srv.Addr, "k", ttl)
	l, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	time.Sleep(3 * ttl)
	if _, err := b.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B acquire 3 TTLs after A's, A still holding: err = %v, want ErrNotObtained (renewed)", err)
	}
	select {
	case <-l.Lost:
		t.Fatal("A's lease lost while held and renewed")
	default:
	}
	deleted := time.Now()
	if err := admin.Del(locktest.Context(t), rueidisKeys("k")[:2]...).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost:
		t.Logf("Lost closed %v after a majority of the keys was deleted", time.Since(deleted))
	case <-time.After(5 * ttl):
		t.Fatalf("Lost not closed %v after a majority of the keys was deleted", 5*ttl)
	}
	mu.Lock()
	if len(events) != 1 || events[0].Phase != "lost" || events[0].Lease.Value != l.Value || !errors.Is(events[0].Err, lock.ErrNotHeld) {
		t.Errorf("renew events %+v: want one lost event for the lease, ErrNotHeld", events)
	}
	mu.Unlock()
	if err := a.Release(locktest.Context(t), l); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release of a lost lease: err = %v, want ErrNotHeld", err)
	}
	lb, err := b.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("B acquire after A lost the lock: %v", err)
	}
	if err := b.Release(locktest.Context(t), lb); err != nil {
		t.Fatal(err)
	}
}

// TestRueidislockErrorMapping: a key's request that timed out after it was
// sent is ErrUnknown; a node that refuses connections is ErrNotObtained.
func TestRueidislockErrorMapping(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 1)[0]
	ttl := time.Second
	r := newRueidislock(t, srv.Addr, "k", ttl, lock.WithNodeTimeout(50*time.Millisecond))
	l, err := r.Acquire(locktest.Context(t)) // the rueidis client is connected
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if err := r.Release(locktest.Context(t), l); err != nil {
		t.Fatalf("release: %v", err)
	}
	thaw := srv.Freeze(t)
	_, err = r.Acquire(locktest.Context(t))
	thaw()
	t.Logf("acquire on a frozen node: %v", err)
	if !errors.Is(err, lock.ErrUnknown) {
		t.Fatalf("acquire on a frozen node: err = %v, want ErrUnknown (its SETs were sent)", err)
	}
	down := newRueidislock(t, refused(t), "k", ttl)
	if _, err := down.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, lock.ErrUnknown) {
		t.Fatalf("acquire on a node refusing connections: err = %v, want ErrNotObtained only", err)
	}
}

// TestRueidislockClientClosed: closing the go-redis client the adapter was
// built on closes its rueidis client: the lease held is lost (an in-process
// crash of its holder), and later acquires fail.
func TestRueidislockClientClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 1)[0]
	c := lock.NewClient(srv.Addr)
	r, err := NewRueidislock(c, "k", 2*time.Second, lock.WithNodeTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	l, err := r.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	_ = c.Close()
	select {
	case <-l.Lost:
	case <-time.After(3 * janitorTick):
		t.Fatalf("lease not lost %v after its go-redis client was closed", 3*janitorTick)
	}
	if _, err := r.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("acquire after the client was closed: err = %v, want ErrNotObtained naming the close", err)
	}
}

// TestClientClosedProbe holds go-redis to what clientClosed relies on: a
// command under a cancelled context says ErrClosed on a closed client and
// dials nothing on an open one.
func TestClientClosedProbe(t *testing.T) {
	dials := 0
	count := func(o *redis.Options) {
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials++
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
	}
	c := lock.NewClient(redistest.Start(t, 1)[0].Addr, count)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{refused(t)}})
	for _, u := range []redis.UniversalClient{c, cc} {
		if clientClosed(u) {
			t.Fatalf("%T: an open client probed as closed", u)
		}
		_ = u.Close()
		if !clientClosed(u) {
			t.Fatalf("%T: a closed client probed as open", u)
		}
	}
	if dials != 0 {
		t.Fatalf("the probe dialled %d times", dials)
	}
}

// TestRueidislockIdleClose: the adapter's rueidis client closes once no
// lease is held and nothing was called for idleFor, and opens again on the
// next acquire.
func TestRueidislockIdleClose(t *testing.T) {
	t.Parallel()
	old := idleNanos.Swap(int64(100 * time.Millisecond))
	t.Cleanup(func() { idleNanos.Store(old) })
	srv := redistest.Start(t, 1)[0]
	r := newRueidislock(t, srv.Addr, "k", time.Second)
	open := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.locker != nil
	}
	l, err := r.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(janitorTick + janitorTick/2)
	if !open() {
		t.Fatal("the rueidis client closed while a lease was held")
	}
	if err := r.Release(locktest.Context(t), l); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * janitorTick); open(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the rueidis client still open %v after the last release", 3*janitorTick)
		}
	}
	if l, err = r.Acquire(locktest.Context(t)); err != nil {
		t.Fatalf("acquire after the idle close: %v", err)
	}
	if err := r.Release(locktest.Context(t), l); err != nil {
		t.Fatal(err)
	}
}

// TestRueidislockNodeClockAhead shows what rueidislock's SET NX PXAT does
// on a node whose clock is ahead of the client's by more than the
// validity: the node answers OK and stores nothing. First by hand, with a
// PXAT in the past on a plain server; then through the adapter, on a
// server whose clock the clock shim moves ahead: two clients are granted
// the same lock at once.
func TestRueidislockNodeClockAhead(t *testing.T) {
	plain := redistest.Start(t, 1)[0].Client(t)
	ctx := locktest.Context(t)
	t.Logf("redis-server %s", redisVersion(t, plain))
	past := time.Now().Add(-10 * time.Second).UnixMilli()
	for i := range 2 {
		res, err := plain.Do(ctx, "SET", "k", fmt.Sprint("v", i), "NX", "PXAT", past).Result()
		if err != nil || res != "OK" {
			t.Fatalf("SET k NX PXAT <10 s ago>, try %d: %v %v; want OK", i, res, err)
		}
		if n := plain.Exists(ctx, "k").Val(); n != 0 {
			t.Fatalf("SET NX PXAT <10 s ago> stored the key")
		}
	}

	prov, err := cluster.NewProcessProvider()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prov.Close() })
	addr, err := prov.Start(ctx, cluster.ProcSpec{Name: "ahead", Dir: t.TempDir(), Clock: true})
	if err != nil {
		t.Fatalf("start a redis-server with the clock shim: %v", err)
	}
	ttl := time.Second
	if err := prov.SetClock("ahead", ttl+time.Second); err != nil {
		t.Fatal(err)
	}
	a := newRueidislock(t, addr, "k", ttl)
	b := newRueidislock(t, addr, "k", ttl)
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	select {
	case <-la.Lost:
		t.Fatal("A's lease lost right after its acquire, before any contender")
	default: // A holds the lock, as far as rueidislock tells it
	}
	_, err = b.Acquire(ctx)
	granted := time.Now()
	if err != nil {
		t.Fatalf("B acquire while A holds, node clock %v ahead: %v; want a grant (the double grant)", ttl+time.Second, err)
	}
	if n := client(t, addr).Exists(ctx, rueidisKeys("k")...).Val(); n != 0 {
		t.Fatalf("%d of rueidislock's keys stored on the node whose clock is ahead", n)
	}
	// A learns it lost the lock only afterwards: B's SETs invalidate the
	// keys A's GETs track, or A's first renewal (ExtendInterval = TTL/2)
	// finds them gone.
	select {
	case <-la.Lost:
		t.Logf("A's lease lost %v after B was granted the lock", time.Since(granted))
	case <-time.After(ttl):
		t.Fatalf("A's lease not lost %v after B was granted the lock", ttl)
	}
}

func redisVersion(t *testing.T, c *redis.Client) string {
	info, err := c.Info(locktest.Context(t), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	t.Fatal("INFO server has no redis_version")
	return ""
}

func TestRueidislockConstructorErrors(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	t.Cleanup(func() { _ = ring.Close() })
	cases := []struct {
		what string
		err  error
		want string
	}{
		{"a nil client", func() error { _, err := NewRueidislock(nil, "k", time.Second); return err }(), "nil redis client"},
		{"an empty key", func() error { _, err := NewRueidislock(c, "", time.Second); return err }(), "empty key"},
		{"a ring client", func() error { _, err := NewRueidislock(ring, "k", time.Second); return err }(), "*redis.Ring"},
		{"a nil passthrough option", func() error { _, err := NewRueidislock(c, "k", time.Second, RueidislockOptions(nil)); return err }(), "option 0 is nil"},
		{"redislock given rueidislock options", func() error {
			_, err := NewRedislock(c, "k", time.Second, RueidislockOptions(func(*rueidislock.LockerOption) {}))
			return err
		}(), "only to the rueidislock adapter"},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, lock.ErrConfig) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrConfig mentioning %q", tc.what, tc.err, tc.want)
		}
	}
}
