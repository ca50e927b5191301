// Package lock defines the one interface every tumbler lock variant
// implements: acquire, release and extend a lease on a key, with typed errors
// that separate "not obtained" from "outcome unknown".
//
// The variants live in sub-packages (single, redlock, watchdog, fenced,
// reentrant, recipes, adapters, and Redisson's other synchronizers: fair,
// multilock, rwlock, semaphore, latch). This package holds what they
// share: the Lease, the errors, the options, the retry loop, the validity
// rule, and the sibling interfaces of Locker for the synchronizers it does
// not fit (kinds.go).
package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors every variant returns, possibly wrapped; test them with errors.Is.
var (
	// ErrNotObtained means the lock is definitely not held by the caller:
	// another owner holds it, no quorum answered, or validity ran out.
	ErrNotObtained = errors.New("lock not obtained")
	// ErrHeld is the ErrNotObtained of a lock that found the key held by
	// another owner (its SET NX answered "not set"): a claim that some
	// lease held the key during the call, which a history records
	// (history.Op.Held) and the refusals checker holds it to. A lock whose
	// refusal can mean something else (no quorum) returns ErrNotObtained.
	ErrHeld = fmt.Errorf("%w: held by another owner", ErrNotObtained)
	// ErrNotHeld means a release or extend found the lease no longer held
	// by its owner (expired, or taken by someone else).
	ErrNotHeld = errors.New("lock not held")
	// ErrUnknown means the command may or may not have run: a timeout or a
	// connection lost after sending. A history records it as "info".
	ErrUnknown = errors.New("lock outcome unknown")
	// ErrConfig wraps every constructor error (bad key, TTL, quorum, client).
	ErrConfig = errors.New("invalid lock configuration")
)

// Lease is what an acquire grants. All times are local times that carry Go's
// monotonic reading, so differences between them are immune to wall-clock
// jumps on the client.
type Lease struct {
	Key string
	// Value identifies the owner; releases and extends compare it.
	Value string
	// Token is the fencing token for variants that issue one; 0 otherwise.
	Token int64
	// Start is when the acquire (or the extend that produced this lease)
	// began: the TTL is counted from before the request was sent.
	Start time.Time
	TTL   time.Duration
	// ValidUntil is the last instant the holder may act on the protected
	// resource: Start + TTL − drift (ARCHITECTURE.md, "Time and leases").
	ValidUntil time.Time
	// Lost is closed when the variant learns that the lease is gone (the
	// watchdog closes it when a renewal fails or validity runs out). It is
	// nil for variants that cannot tell; a nil channel never fires.
	Lost <-chan struct{}
}

// Valid reports whether now is before ValidUntil.
func (l Lease) Valid(now time.Time) bool { return now.Before(l.ValidUntil) }

// Locker is a lock on one key. Implementations are safe for concurrent use
// unless their documentation says otherwise (reentrant locks are per owner).
type Locker interface {
	// Key is the Redis key this lock guards.
	Key() string
	// Acquire obtains the lock following the configured retry strategy,
	// until ctx is done. It returns ErrNotObtained or ErrUnknown (wrapped)
	// on failure.
	Acquire(ctx context.Context) (Lease, error)
	// Release gives the lease up. ErrNotHeld when it was no longer held.
	Release(ctx context.Context, l Lease) error
	// Extend renews the lease for another TTL counted from the start of the
	// extend, returning the new lease. ErrNotHeld when it was lost.
	Extend(ctx context.Context, l Lease) (Lease, error)
}

// Validity is a lock library's own verdict on a lease, given when it was
// asked: whether the lease still holds, on the library's clocks, and, if
// the library says, until when.
type Validity struct {
	// Valid: the library says its caller still holds the lock.
	Valid bool
	// Until is the end the library gave (its remaining lifetime counted
	// from its answer), on this process's clock; zero when it gave none.
	Until time.Time
}

// Validator is a Locker that can ask its library, at the moment its
// caller is about to act, whether a lease it granted is still valid (as
// Symfony's Lock::isExpired and getRemainingLifetime answer, on the
// client's wall clock). A workload that checks validity asks it before
// every protected action and acts only on a valid answer; a Locker without
// it is judged by the ValidUntil its lease carried from the grant. Valid
// returns ErrUnknown (wrapped) when no answer came.
type Validator interface {
	Locker
	Valid(ctx context.Context, l Lease) (Validity, error)
}
