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
	Valid           = "Valid"
)

// ErrNotApplicable is a check's error when it does not apply to the lock
// (Valid, for a lock whose library does not answer for its leases).
var ErrNotApplicable = errors.New("does not apply")

// Target is the lock under check.
type Target struct {
	// New returns an independent client's lock on key: each call is another
	// contender (its own owner value, ideally its own connections).
	New func(key string, ttl time.Duration) (lock.Locker, error)
	// TTL for the timing checks; default 400 ms.
	TTL time.Duration
	// Validity is what the lock tells its callers of a grant's validity:
	// one within the TTL (ValidityExposed, every tumbler lock), none at all
	// (ValidityNone: a client whose library says only "held", whose leases
	// are held until released, lock.NoExpiry), or unknown (ValidityUnknown:
	// a client program without a manifest), when each lease is judged by
	// what it carries.
	Validity Validity
	// Remote: the lock runs in another process (a lock client program),
	// which counts its validity from a moment tumbler cannot see, within
	// the call (before it sent its SET, say): a validity may then end up
	// to the TTL after the call returned, where a lock of this process,
	// which counts from before its first request, must end within the TTL
	// of the call's start.
	Remote bool
	// Seen, when set, carries what the leases of earlier checks were, so
	// that a lock whose leases change kind from one check to the next
	// fails (ValidityUnknown); each check otherwise starts afresh.
	Seen *Seen
	// Cut, when set, stops the servers' replies to every contender from
	// arriving (their requests still do) until heal is called: what the
	// LostReply check needs.
	Cut func() (heal func() error, err error)
	// Hung, when set, says whether an error is the harness's, not the
	// lock's: a client program that gave no reply of its own in time.
	Hung func(error) bool
}

// Validity is what a lock tells its callers of how long a grant is valid.
type Validity int

// The validities.
const (
	// ValidityExposed: every lease carries a validity within its TTL.
	ValidityExposed Validity = iota
	// ValidityNone: no lease carries one; each is held until released.
	ValidityNone
	// ValidityUnknown: the lock declares neither: a lease is judged by
	// what it carries, and every lease must carry the same kind.
	ValidityUnknown
)

// Seen is what kind of lease a lock's grants were: with a validity or
// without. It is safe for concurrent use.
type Seen struct {
	mu        sync.Mutex
	first     string // the kind of the first lease seen ("" before it)
	firstWhat string
}

// carries says what a lease carries: "a validity" or "no validity".
func carries(l lock.Lease) string {
	if l.ValidUntil.Before(l.Start.Add(365 * 24 * time.Hour)) {
		return "a validity"
	}
	return "no validity"
}

// kind judges a granted lease's kind (what) against what the lock declares
// and, for a lock that declares nothing, against the leases seen before.
func (t Target) kind(l lock.Lease, what string) error {
	got := carries(l)
	switch t.Validity {
	case ValidityExposed:
		if got != "a validity" {
			return fmt.Errorf("%s carried no validity (ValidUntil %v, held until released), but the lock declares one", what, l.ValidUntil)
		}
	case ValidityNone:
		if got != "no validity" {
			return fmt.Errorf("%s carried a validity (ValidUntil %v), but the lock declares none (its manifest: validity false): declare it, or send no valid_until_ns", what, l.ValidUntil)
		}
	case ValidityUnknown:
		if t.Seen == nil {
			return nil
		}
		t.Seen.mu.Lock()
		defer t.Seen.mu.Unlock()
		if t.Seen.first == "" {
			t.Seen.first, t.Seen.firstWhat = got, what
		} else if got != t.Seen.first {
			return fmt.Errorf("%s carried %s, but an earlier lease (%s) carried %s: a lock's leases either all carry a validity or none does", what, got, t.Seen.firstWhat, t.Seen.first)
		}
	}
	return nil
}

// judged is a contender whose grants are judged by their kind (Target.kind).
type judged struct {
	lock.Locker
	t    Target
	name string
}

func (j judged) Acquire(ctx context.Context) (lock.Lease, error) {
	l, err := j.Locker.Acquire(ctx)
	if err == nil {
		err = j.t.kind(l, j.name+"'s acquire")
	}
	return l, err
}

func (j judged) Extend(ctx context.Context, held lock.Lease) (lock.Lease, error) {
	l, err := j.Locker.Extend(ctx, held)
	if err == nil {
		err = j.t.kind(l, j.name+"'s extend")
	}
	return l, err
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
	{Valid, "a lock that answers for its leases (lock.Validator; answers_valid) says a lease is valid while held, within its TTL, and not valid once its TTL ran out unextended", validAnswers},
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
		out[i] = judged{Locker: l, t: t, name: fmt.Sprintf("contender %d", i)}
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
	from, fromWhat := lease.Start, "start"
	if t.Remote {
		from, fromWhat = after, "the call's end"
	}
	switch {
	case lease.Key != key || lease.Value == "":
		return fmt.Errorf("lease key %q value %q: want key %q and a non-empty owner value", lease.Key, lease.Value, key)
	case lease.Start.Before(before) || lease.Start.After(after):
		return fmt.Errorf("lease start %v outside the acquire call [%v, %v]", lease.Start, before, after)
	case carries(lease) == "no validity": // the kind was judged by Acquire
	case !lease.ValidUntil.After(lease.Start) || lease.ValidUntil.After(from.Add(t.ttl())):
		return fmt.Errorf("ValidUntil %v not within (start, %s+TTL] = (%v, %v]", lease.ValidUntil, fromWhat, lease.Start, from.Add(t.ttl()))
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

// errOverslept: a timing check's sleep overran the window it meant to
// land in (a loaded machine), so its outcome says nothing.
var errOverslept = errors.New("the check overslept its window")

// extend runs extendOnce, again (on a fresh key) when a loaded machine
// made a try overrun its window, up to three tries.
func extend(ctx context.Context, t Target, key string) error {
	var err error
	for try := 1; try <= 3; try++ {
		k := key
		if try > 1 {
			k = fmt.Sprintf("%s:%d", key, try)
		}
		if err = extendOnce(ctx, t, k); !errors.Is(err, errOverslept) {
			return err
		}
	}
	return fmt.Errorf("three tries overslept the extended validity: the machine is too loaded to judge extend")
}

func extendOnce(ctx context.Context, t Target, key string) error {
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
	asked := time.Now()
	if _, err := b.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		if !asked.Before(ext.ValidUntil) {
			// A loaded machine overslept the extended validity: B's
			// grant says nothing about the extend. Try again.
			return errOverslept
		}
		return fmt.Errorf("B acquired after A extended, before the extended TTL ran out (asked %v before it did): err = %v", ext.ValidUntil.Sub(asked).Round(time.Millisecond), err)
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

// validAnswers runs validOnce, again (on a fresh key) when a loaded
// machine made the first question come too late to mean anything, up to
// three tries.
func validAnswers(ctx context.Context, t Target, key string) error {
	var err error
	for try := 1; try <= 3; try++ {
		k := key
		if try > 1 {
			k = fmt.Sprintf("%s:%d", key, try)
		}
		if err = validOnce(ctx, t, k); !errors.Is(err, errOverslept) {
			return err
		}
	}
	return fmt.Errorf("three tries asked too late after the grant: the machine is too loaded to judge valid")
}

func validOnce(ctx context.Context, t Target, key string) error {
	ttl := t.ttl()
	ls, err := t.contenders(key, ttl, 1)
	if err != nil {
		return err
	}
	l := ls[0]
	v, ok := l.(judged).Locker.(lock.Validator)
	if !ok {
		return fmt.Errorf("%w: the lock does not answer for its leases (lock.Validator; a client's manifest: answers_valid)", ErrNotApplicable)
	}
	before := time.Now()
	lease, err := l.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire free lock: %w", err)
	}
	after := time.Now()
	ans, err := v.Valid(ctx, lease)
	answered := time.Now()
	if err != nil {
		return fmt.Errorf("asked whether a lease it had just granted is valid: %w", err)
	}
	if !ans.Valid {
		if answered.Sub(before) >= ttl/2 {
			return errOverslept
		}
		return fmt.Errorf("the library said a lease it granted %v before is not valid, within its TTL %v", answered.Sub(after).Round(time.Millisecond), ttl)
	}
	if !ans.Until.IsZero() && (ans.Until.Before(before) || ans.Until.After(answered.Add(ttl))) {
		return fmt.Errorf("the library said the lease is valid until %v, not within the acquire's start and the answer's time plus the TTL (%v, %v]", ans.Until, before, answered.Add(ttl))
	}
	// Past every end the lease can have: the TTL from the call's end, and
	// the validity it carried or the library gave, whichever is later.
	end := after.Add(ttl)
	if carries(lease) == "a validity" && lease.ValidUntil.After(end) {
		end = lease.ValidUntil
	}
	if ans.Until.After(end) {
		end = ans.Until
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(end) + ttl/4):
	}
	late, err := v.Valid(ctx, lease)
	if err != nil {
		return fmt.Errorf("asked whether a lease whose TTL ran out is valid: %w", err)
	}
	if late.Valid {
		return fmt.Errorf("the library said a lease is still valid %v after its TTL %v ran out, unextended (it answered until %v)", time.Since(after.Add(ttl)).Round(time.Millisecond), ttl, late.Until)
	}
	_ = l.Release(ctx, lease) // expired: the outcome says nothing here
	return nil
}
