// Package locktest is the conformance suite every lock variant runs against
// real Redis: mutual exclusion under contention, refusal to release someone
// else's lease, expiry, and extend. Its siblings do the same for the
// siblings of lock.Locker: RWSuite, SemaphoreSuite and LatchSuite. A variant whose documented flaw breaks
// one of these properties excludes that test by name, with the reason, and
// proves the flaw in its own tests instead. Context, Client and Clients are
// the helpers every lock test needs.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// Suite describes the variant under test.
type Suite struct {
	// New returns an independent client's lock on key: each call is another
	// contender (its own owner value, ideally its own connections).
	New func(t testing.TB, key string, ttl time.Duration) lock.Locker
	// Exclude names tests that do not apply, mapped to the reason.
	Exclude map[string]string
	// TTL for the timing tests; default 400 ms.
	TTL time.Duration
	// NoValidity: the lock does not expose a validity to its caller (a
	// client whose library says only "held", lock/protocol's leases without
	// valid_until_ns), so its leases are held until released: ValidUntil
	// must be far in the future (lock.NoExpiry), not within the TTL.
	NoValidity bool
}

// Names of the tests in the suite, for Exclude.
const (
	MutualExclusion = "MutualExclusion"
	ReleaseOthers   = "ReleaseOthersRefused"
	Expiry          = "Expiry"
	Extend          = "Extend"
	LeaseFields     = "LeaseFields"
)

// Run runs every test not excluded.
func (s Suite) Run(t *testing.T) {
	if s.TTL == 0 {
		s.TTL = 400 * time.Millisecond
	}
	tests := []struct {
		name string
		f    func(*testing.T)
	}{
		{LeaseFields, s.leaseFields},
		{MutualExclusion, s.mutualExclusion},
		{ReleaseOthers, s.releaseOthers},
		{Expiry, s.expiry},
		{Extend, s.extend},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := s.Exclude[tc.name]; ok {
				t.Skipf("excluded for this variant: %s", why)
			}
			tc.f(t)
		})
	}
}

var keySeq atomic.Int64

// Key returns a key no other test in this process uses.
func Key(t testing.TB) string {
	return fmt.Sprintf("locktest:%s:%d", t.Name(), keySeq.Add(1))
}

// Context returns a context for one step of a test, cancelled on test
// cleanup. Its deadline turns a hung request into a failure, not a hung
// test; it is far beyond any step's expected time.
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Client returns a lock.NewClient to addr (tweak as there), closed on test
// cleanup.
func Client(t testing.TB, addr string, tweak ...func(*redis.Options)) *redis.Client {
	c := lock.NewClient(addr, tweak...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Clients returns a Client per address, as multi-node locks take them.
func Clients(t testing.TB, addrs []string, tweak ...func(*redis.Options)) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		out[i] = Client(t, a, tweak...)
	}
	return out
}

func (s Suite) leaseFields(t *testing.T) {
	key := Key(t)
	l := s.New(t, key, s.TTL)
	if l.Key() != key {
		t.Fatalf("Key() = %q, want %q", l.Key(), key)
	}
	before := time.Now()
	lease, err := l.Acquire(Context(t))
	if err != nil {
		t.Fatalf("acquire free lock: %v", err)
	}
	after := time.Now()
	if lease.Key != key || lease.Value == "" {
		t.Fatalf("lease key %q value %q: want key %q and a non-empty owner value", lease.Key, lease.Value, key)
	}
	if lease.Start.Before(before) || lease.Start.After(after) {
		t.Fatalf("lease start %v outside the acquire call [%v, %v]", lease.Start, before, after)
	}
	switch {
	case s.NoValidity:
		if far := lease.Start.Add(365 * 24 * time.Hour); lease.ValidUntil.Before(far) {
			t.Fatalf("ValidUntil %v: a lock that exposes no validity is held until released, want lock.NoExpiry (after %v)", lease.ValidUntil, far)
		}
	case !lease.ValidUntil.After(lease.Start) || lease.ValidUntil.After(lease.Start.Add(s.TTL)):
		t.Fatalf("ValidUntil %v not within (start, start+TTL] = (%v, %v]", lease.ValidUntil, lease.Start, lease.Start.Add(s.TTL))
	}
	if err := l.Release(Context(t), lease); err != nil {
		t.Fatalf("release own lease: %v", err)
	}
}

// mutualExclusion runs contenders that each do a non-atomic read-modify-write
// of a shared counter inside the critical section. Atomic loads and stores
// keep the race detector quiet (it cannot see Redis as synchronisation) while
// a lost increment still shows any overlap.
func (s Suite) mutualExclusion(t *testing.T) {
	const contenders, rounds = 8, 15
	ttl := 2 * time.Second // far longer than a section: expiry must not be what frees the lock
	key := Key(t)
	var counter, inside, maxInside atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	c := Context(t)
	for i := 0; i < contenders; i++ {
		l := s.New(t, key, ttl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				lease, err := acquireWait(c, l)
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
				}
				v := counter.Load()
				time.Sleep(time.Millisecond)
				counter.Store(v + 1)
				inside.Add(-1)
				if err := l.Release(c, lease); err != nil {
					errs <- fmt.Errorf("release: %w", err)
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
	if got, want := counter.Load(), int64(contenders*rounds); got != want {
		t.Fatalf("counter = %d after %d critical sections: %d increments lost to overlapping holders", got, want, want-got)
	}
	if m := maxInside.Load(); m != 1 {
		t.Fatalf("%d holders were inside the critical section at once", m)
	}
}

// acquirer is what acquireWait retries: a Locker or a Semaphore.
type acquirer interface {
	Acquire(context.Context) (lock.Lease, error)
}

func acquireWait(c context.Context, l acquirer) (lock.Lease, error) {
	for {
		lease, err := l.Acquire(c)
		if err == nil || !errors.Is(err, lock.ErrNotObtained) {
			return lease, err
		}
		select {
		case <-c.Done():
			return lease, fmt.Errorf("gave up waiting: %w", err)
		case <-time.After(time.Millisecond):
		}
	}
}

func (s Suite) releaseOthers(t *testing.T) {
	key := Key(t)
	a, b, c := s.New(t, key, s.TTL), s.New(t, key, s.TTL), s.New(t, key, s.TTL)
	lease, err := a.Acquire(Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	forged := lease
	forged.Value = "not-the-owner"
	if err := b.Release(Context(t), forged); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("B releasing A's lock with another owner value: err = %v, want ErrNotHeld", err)
	}
	if _, err := c.Acquire(Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("C acquired while A holds (after B's forged release): err = %v, want ErrNotObtained", err)
	}
	if err := a.Release(Context(t), lease); err != nil {
		t.Fatalf("A release: %v", err)
	}
	if err := a.Release(Context(t), lease); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release of the same lease: err = %v, want ErrNotHeld", err)
	}
}

func (s Suite) expiry(t *testing.T) {
	key := Key(t)
	a, b := s.New(t, key, s.TTL), s.New(t, key, s.TTL)
	lease, err := a.Acquire(Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	if _, err := b.Acquire(Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B acquired right after A: err = %v, want ErrNotObtained", err)
	}
	deadline := lease.Start.Add(5 * s.TTL)
	for {
		lb, err := b.Acquire(Context(t))
		if err == nil {
			if held := time.Since(lease.Start); held < s.TTL/2 {
				t.Fatalf("B acquired %v after A, well before the TTL %v", held, s.TTL)
			}
			if err := a.Release(Context(t), lease); !errors.Is(err, lock.ErrNotHeld) {
				t.Fatalf("A releasing its expired lease now held by B: err = %v, want ErrNotHeld", err)
			}
			if err := b.Release(Context(t), lb); err != nil {
				t.Fatalf("B release after A's refused release: %v (A's release must not have freed B's lock)", err)
			}
			return
		}
		if !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("B acquire: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's lock did not expire within 5×TTL (%v)", 5*s.TTL)
		}
		time.Sleep(s.TTL / 20)
	}
}

func (s Suite) extend(t *testing.T) {
	key := Key(t)
	a, b := s.New(t, key, s.TTL), s.New(t, key, s.TTL)
	lease, err := a.Acquire(Context(t))
	if err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	time.Sleep(s.TTL * 6 / 10)
	ext, err := a.Extend(Context(t), lease)
	if err != nil {
		t.Fatalf("A extend within validity: %v", err)
	}
	if !ext.ValidUntil.After(lease.ValidUntil) {
		t.Fatalf("extended ValidUntil %v not after the original %v", ext.ValidUntil, lease.ValidUntil)
	}
	time.Sleep(s.TTL * 6 / 10) // past the original TTL, within the extended one
	if _, err := b.Acquire(Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B acquired after A extended, before the extended TTL ran out: err = %v", err)
	}
	time.Sleep(s.TTL + s.TTL/2)
	lb, err := b.Acquire(Context(t))
	if err != nil {
		t.Fatalf("B acquire after A's extended lease expired: %v", err)
	}
	if _, err := a.Extend(Context(t), ext); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("A extending a lease B now holds: err = %v, want ErrNotHeld", err)
	}
	if err := b.Release(Context(t), lb); err != nil {
		t.Fatalf("B release: %v", err)
	}
}
