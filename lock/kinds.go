package lock

import (
	"context"
	"time"
)

// Primitive is anything a workload can take on one key: a Locker, or one
// of the sibling shapes below for the synchronizers whose shape a Locker
// does not fit. Every one of them names its key.
type Primitive interface {
	Key() string
}

// ReadWriteLocker is a lock with two modes on one key (Redisson's
// RReadWriteLock): readers share it, a writer excludes everyone. Each mode
// is itself a Locker — acquire, release and extend one hold — so the
// sibling only hands out the two; it is not a Locker itself because which
// mode a holder takes is the caller's choice per acquire, and the modes
// exclude differently (a second reader is granted, a second writer is
// not), which the Locker contract ("the lock is held by one owner") cannot
// say.
type ReadWriteLocker interface {
	Key() string
	// ReadLock is the shared mode: granted while no writer holds the key.
	ReadLock() Locker
	// WriteLock is the exclusive mode.
	WriteLock() Locker
}

// Semaphore hands out a fixed number of permits on one key (Redisson's
// RSemaphore and RPermitExpirableSemaphore). It is not a Locker because up
// to Permits holders hold it at once, and a plain RSemaphore's permit has
// no owner and no expiry, so there is nothing to extend and a release
// cannot tell "not held" from "held by someone else": it only adds a
// permit back.
type Semaphore interface {
	Key() string
	// Permits is how many permits the semaphore is set up with.
	Permits() int
	// TrySetPermits sets the semaphore up with Permits permits if it does
	// not exist yet (Redisson's trySetPermits), reporting whether it did.
	TrySetPermits(ctx context.Context) (bool, error)
	// Acquire takes one permit, waiting as the retry strategy says. The
	// lease's Value identifies the permit where the semaphore tells permits
	// apart (a permit-expirable semaphore's permit id), and its ValidUntil
	// is NoExpiry for a permit that never expires.
	Acquire(ctx context.Context) (Lease, error)
	// Release gives the permit back: ErrNotHeld when a permit-expirable
	// semaphore no longer had it (it expired).
	Release(ctx context.Context, l Lease) error
}

// Latch is a count-down latch on one key (Redisson's RCountDownLatch):
// nothing is held. Clients set a count, count it down, and wait until it
// reaches zero — three calls no Locker method fits.
type Latch interface {
	Key() string
	// TrySetCount sets the count if the latch does not exist (has reached
	// zero or was never set), reporting whether it did.
	TrySetCount(ctx context.Context, count int64) (bool, error)
	// CountDown decrements the count; the decrement that reaches zero
	// deletes the latch and wakes its waiters.
	CountDown(ctx context.Context) error
	// Await returns once the count is zero, or ErrNotObtained (wrapped)
	// when ctx ends first.
	Await(ctx context.Context) error
	// Count is the current count: 0 for a latch that does not exist.
	Count(ctx context.Context) (int64, error)
}

// NoExpiry is the ValidUntil of a lease that never expires (a plain
// RSemaphore permit) or whose library exposes no validity (its caller
// holds the lock until it releases it): far enough ahead that no run
// reaches it. Histories and reports recognize it by history.NoExpiry.
func NoExpiry(start time.Time) time.Time { return start.Add(100 * 365 * 24 * time.Hour) }

// QueueEvent reports a fair lock's waiter at its queue, as the lock saw it:
// Phase "queued" after a poll left the waiter queued (Deadline is when its
// queue entry times out unless it polls again before), "left" after it
// removed itself from the queue on giving up. Invoked and Returned bracket
// the request; Err is set when its outcome is unknown.
type QueueEvent struct {
	Phase    string
	Key      string
	Owner    string
	Invoked  time.Time
	Returned time.Time
	Deadline time.Time
	Err      error
}

// WithQueueObserver installs an OnQueue callback (fair locks call it). It
// must not block.
func WithQueueObserver(f func(QueueEvent)) Option {
	return func(c Configurable) error {
		c.LockOptions().OnQueue = f
		return nil
	}
}

// Queued calls OnQueue if one is installed.
func (o *Options) Queued(ev QueueEvent) {
	if o.OnQueue != nil {
		o.OnQueue(ev)
	}
}
