// Package conform holds the properties every lock must have, checked
// against real Redis: mutual exclusion under contention, refusal to release
// someone else's lease, expiry, extend, the lease's fields, and an unknown
// outcome for a reply that never came. They are plain functions over
// lock.Locker returning what went wrong, so the same checks serve the test
// suite every variant runs (package locktest) and `tumbler conform`, which
// runs them against a lock client program before anyone trusts a verdict on
// it.
package conform

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumbler-dev/tumbler/lock"
)

// Names of the checks.
const (
	LeaseFields     = "LeaseFields"
	MutualExclusion = "MutualExclusion"
	ReleaseOthers   = "ReleaseOthersRefused"
	Expiry          = "Expiry"
	Extend          = "Extend"
	LostReply       = "LostReply"
)

// Target is the lock under check.
type Target struct {
	// New returns an independent client's lock on key: each call is another
	// contender (its own owner value, ideally its own connections).
	New func(key string, ttl time.Duration) (lock.Locker, error)
	// TTL for the timing checks; default 400 ms.
	TTL time.Duration
	// NoValidity: the lock does not expose a validity to its caller (a
	// client whose library says only "held"), so its leases are held until
	// released: ValidUntil must be far in the future (lock.NoExpiry), not
	// within the TTL.
	NoValidity bool
	// Cut, when set, stops the servers' replies to every contender from
	// arriving (their requests still do) until heal is called: what the
	// LostReply check needs.
	Cut func() (heal func() error, err error)
	// Hung, when set, says whether an error is the harness's, not the
	// lock's: a client program that gave no reply of its own in time.
	Hung func(error) bool
}

// Check is one property.
type Check struct {
	Name string
	// What says in a line what it checks.
	What string
	Run  func(ctx context.Context, t Target, key string) error
}

// Checks are every property, in the order they are run.
var Checks = []Check{
	{LeaseFields, "a grant's lease names the key, an owner, a start within the call and a validity within the TTL (or none, if the library exposes none)", leaseFields},
	{MutualExclusion, "8 contenders, 15 critical sections each: never two inside at once, no increment lost", mutualExclusion},
	{ReleaseOthers, "a release with another owner's lease is refused and leaves the holder's lock; a second release of a lease is refused", releaseOthers},
	{Expiry, "a lease nobody releases expires about its TTL; its holder's late release is refused and frees nothing", expiry},
	{Extend, "an extend within the validity keeps others out past the first TTL; an extend of a lease now another's is refused", extend},
	{LostReply, "an acquire whose reply never comes is an unknown outcome (info), not a failure", lostReply},
}

// ttl is the target's TTL for the timing checks.
func (t Target) ttl() time.Duration {
	if t.TTL > 0 {
		return t.TTL
	}
	return 400 * time.Millisecond
}

// contenders makes n contenders on key.
func (t Target) contenders(key string, ttl time.Duration, n int) ([]lock.Locker, error) {
	out := make([]lock.Locker, n)
	for i := range out {
		l, err := t.New(key, ttl)
		if err != nil {
			return nil, fmt.Errorf("contender %d: %w", i, err)
		}
		out[i] = l
	}
	return out, nil
}

func leaseFields(ctx context.Context, t Target, key string) error {
	ls, err := t.contenders(key, t.ttl(), 1)
	if err != nil {
		return err
	}
	l := ls[0]
	if l.Key() != key {
		return fmt.Errorf("Key() = %q, want %q", l.Key(), key)
	}
	before := time.Now()
	lease, err := l.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire free lock: %w", err)
	}
	after := time.Now()
	switch {
	case lease.Key != key || lease.Value == "":
		return fmt.Errorf("lease key %q value %q: want key %q and a non-empty owner value", lease.Key, lease.Value, key)
	case lease.Start.Before(before) || lease.Start.After(after):
		return fmt.Errorf("lease start %v outside the acquire call [%v, %v]", lease.Start, before, after)
	case t.NoValidity:
		if far := lease.Start.Add(365 * 24 * time.Hour); lease.ValidUntil.Before(far) {
			return fmt.Errorf("ValidUntil %v: a lock that exposes no validity is held until released, want lock.NoExpiry (after %v)", lease.ValidUntil, far)
		}
	case !lease.ValidUntil.After(lease.Start) || lease.ValidUntil.After(lease.Start.Add(t.ttl())):
		return fmt.Errorf("ValidUntil %v not within (start, start+TTL] = (%v, %v]", lease.ValidUntil, lease.Start, lease.Start.Add(t.ttl()))
	}
	if err := l.Release(ctx, lease); err != nil {
		return fmt.Errorf("release own lease: %w", err)
	}
	return nil
}

// mutualExclusion runs contenders that each do a non-atomic read-modify-write
// of a shared counter inside the critical section. Atomic loads and stores
// keep the race detector quiet (it cannot see Redis as synchronisation) while
// a lost increment still shows any overlap.
func mutualExclusion(ctx context.Context, t Target, key string) error {
	const contenders, rounds = 8, 15
	ttl := 2 * time.Second // far longer than a section: expiry must not be what frees the lock
	ls, err := t.contenders(key, ttl, contenders)
	if err != nil {
		return err
	}
	var counter, inside, maxInside atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for _, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				lease, err := AcquireWait(ctx, l)
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
				if err := l.Release(ctx, lease); err != nil {
					errs <- fmt.Errorf("release: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if got, want := counter.Load(), int64(contenders*rounds); got != want {
		return fmt.Errorf("counter = %d after %d critical sections: %d increments lost to overlapping holders", got, want, want-got)
	}
	if m := maxInside.Load(); m != 1 {
		return fmt.Errorf("%d holders were inside the critical section at once", m)
	}
	return nil
}

// Acquirer is what AcquireWait retries: a Locker or a Semaphore.
type Acquirer interface {
	Acquire(context.Context) (lock.Lease, error)
}

// AcquireWait acquires l, trying again every millisecond while it is not
// obtained, until ctx ends.
func AcquireWait(ctx context.Context, l Acquirer) (lock.Lease, error) {
	for {
		lease, err := l.Acquire(ctx)
		if err == nil || !errors.Is(err, lock.ErrNotObtained) {
			return lease, err
		}
		select {
		case <-ctx.Done():
			return lease, fmt.Errorf("gave up waiting: %w", err)
		case <-time.After(time.Millisecond):
		}
	}
}

func releaseOthers(ctx context.Context, t Target, key string) error {
	ls, err := t.contenders(key, t.ttl(), 3)
	if err != nil {
		return err
	}
	a, b, c := ls[0], ls[1], ls[2]
	lease, err := a.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("A acquire: %w", err)
	}
	forged := lease
	forged.Value = "not-the-owner"
	if err := b.Release(ctx, forged); !errors.Is(err, lock.ErrNotHeld) {
		return fmt.Errorf("B releasing A's lock with another owner value: err = %v, want ErrNotHeld", err)
	}
	if _, err := c.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		return fmt.Errorf("C acquired while A holds (after B's forged release): err = %v, want ErrNotObtained", err)
	}
	if err := a.Release(ctx, lease); err != nil {
		return fmt.Errorf("A release: %w", err)
	}
	if err := a.Release(ctx, lease); !errors.Is(err, lock.ErrNotHeld) {
		return fmt.Errorf("second release of the same lease: err = %v, want ErrNotHeld", err)
	}
	return nil
}

func expiry(ctx context.Context, t Target, key string) error {
	ttl := t.ttl()
	ls, err := t.contenders(key, ttl, 2)
	if err != nil {
		return err
	}
	a, b := ls[0], ls[1]
	lease, err := a.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("A acquire: %w", err)
	}
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		return fmt.Errorf("B acquired right after A: err = %v, want ErrNotObtained", err)
	}
	deadline := lease.Start.Add(5 * ttl)
	for {
		lb, err := b.Acquire(ctx)
		if err == nil {
			if held := time.Since(lease.Start); held < ttl/2 {
				return fmt.Errorf("B acquired %v after A, well before the TTL %v", held, ttl)
			}
			if err := a.Release(ctx, lease); !errors.Is(err, lock.ErrNotHeld) {
				return fmt.Errorf("A releasing its expired lease now held by B: err = %v, want ErrNotHeld", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				return fmt.Errorf("B release after A's refused release: %v (A's release must not have freed B's lock)", err)
			}
			return nil
		}
		if !errors.Is(err, lock.ErrNotObtained) {
			return fmt.Errorf("B acquire: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("A's lock did not expire within 5×TTL (%v)", 5*ttl)
		}
		time.Sleep(ttl / 20)
	}
}

func extend(ctx context.Context, t Target, key string) error {
	ttl := t.ttl()
	ls, err := t.contenders(key, ttl, 2)
	if err != nil {
		return err
	}
	a, b := ls[0], ls[1]
	lease, err := a.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("A acquire: %w", err)
	}
	time.Sleep(ttl * 6 / 10)
	ext, err := a.Extend(ctx, lease)
	if err != nil {
		return fmt.Errorf("A extend within validity: %w", err)
	}
	if !ext.ValidUntil.After(lease.ValidUntil) {
		return fmt.Errorf("extended ValidUntil %v not after the original %v", ext.ValidUntil, lease.ValidUntil)
	}
	time.Sleep(ttl * 6 / 10) // past the original TTL, within the extended one
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		return fmt.Errorf("B acquired after A extended, before the extended TTL ran out: err = %v", err)
	}
	time.Sleep(ttl + ttl/2)
	lb, err := b.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("B acquire after A's extended lease expired: %w", err)
	}
	if _, err := a.Extend(ctx, ext); !errors.Is(err, lock.ErrNotHeld) {
		return fmt.Errorf("A extending a lease B now holds: err = %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		return fmt.Errorf("B release: %w", err)
	}
	return nil
}

// lostReply cuts the servers' replies during an acquire: the call must
// end as an unknown outcome (lock.ErrUnknown), within its own bound.
func lostReply(ctx context.Context, t Target, key string) error {
	if t.Cut == nil {
		return errors.New("the target cannot cut replies (Target.Cut)")
	}
	ls, err := t.contenders(key, t.ttl(), 1)
	if err != nil {
		return err
	}
	l := ls[0]
	heal, err := t.Cut()
	if err != nil {
		return fmt.Errorf("cut the replies: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, aerr := l.Acquire(actx)
	cancel()
	if err := heal(); err != nil {
		return fmt.Errorf("heal the cut: %w", err)
	}
	switch {
	case aerr == nil:
		return errors.New("an acquire whose reply never came succeeded")
	case !errors.Is(aerr, lock.ErrUnknown):
		return fmt.Errorf("an acquire whose reply never came: %v, want an unknown outcome (info): the SET may have landed", aerr)
	case t.Hung != nil && t.Hung(aerr):
		return fmt.Errorf("the client gave no answer of its own and was killed (%v): its library waits past the read timeout it was given", aerr)
	}
	return nil
}
