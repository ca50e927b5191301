// Package adapters puts peer Redis lock clients behind lock.Locker, so the
// harness tests them unchanged next to tumbler's own variants:
// go-redsync/redsync v4 (Redlock), bsm/redislock, redis/rueidis's
// rueidislock (a majority of keys on one client, renewed in the
// background) and go-zero's RedisLock (one object per client and key, over
// go-zero's own client). Each adapter maps the library's results to tumbler's typed
// errors as faithfully as its API allows, and documents what that API
// cannot tell apart. Wrap any other client the same way.
package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// Redsync is a redsync v4 Mutex on one key across independent nodes,
// behind lock.Locker.
//
// Each Acquire makes a new redsync Mutex and calls TryLockContext (one try):
// tumbler's lock.Retry does the waiting, so redsync's own tries and delays
// never apply. Release and Extend rebuild a Mutex from the lease alone
// (redsync.WithValue), so any Redsync adapter on the same key and nodes can
// release or extend any lease.
//
// Settings: the drift factor is lock.Options.DriftFactor (redsync has no
// fixed drift term, so DriftFixed is ignored); lock.WithNodeTimeout sets
// redsync's timeout factor to NodeTimeout/TTL (redsync bounds a whole
// acquire round by it through the context; its default is 0.05×TTL). The
// bound reaches the socket only if the go-redis clients honour context
// deadlines (redis.Options.ContextTimeoutEnabled); otherwise their
// ReadTimeout applies. RedsyncOptions passes
// redsync options through (WithSetNXOnExtend, WithFailFast,
// WithShufflePools, WithDriftFactor, WithTimeoutFactor, …); WithExpiry,
// WithTries, WithGenValueFunc and WithValue are overridden by the adapter.
//
// Lease.ValidUntil is the Mutex's Until(): redsync's start + TTL − elapsed −
// TTL×driftFactor. Lease.Start is the later of the instant the adapter called
// redsync and Until − TTL, both before redsync sent anything.
//
// What redsync's API cannot tell apart, and how the adapter answers:
//   - a failed acquire does not say how many nodes took the key nor whether
//     redsync's clean-up release reached them: when any node's error leaves
//     the SET NX outcome unknown (timeout, connection lost) the result is
//     ErrUnknown, even if the other nodes' replies already made a quorum
//     impossible;
//   - redsync.ErrFailed is both "quorum reached but validity used up" and
//     "no error, no quorum": ErrNotObtained;
//   - redsync.ErrExtendFailed means a quorum took the new TTL but too late
//     for any validity: ErrNotHeld (the holder must stop), although the keys
//     do hold the new TTL;
//   - a release or extend that reached fewer than a quorum with only definite
//     replies is ErrNotHeld, whether the key was gone or someone else's.
type Redsync struct {
	rs  *redsync.Redsync
	key string
	ttl time.Duration
	cfg redsyncConfig
}

type redsyncConfig struct {
	lock.Options
	passthrough []redsync.Option
}

// RedsyncOptions passes options through to every redsync Mutex the adapter
// makes. Only NewRedsync accepts it.
func RedsyncOptions(opts ...redsync.Option) lock.Option {
	return func(c lock.Configurable) error {
		rc, ok := c.(*redsyncConfig)
		if !ok {
			return fmt.Errorf("adapters.RedsyncOptions applies only to the redsync adapter, not to %T", c)
		}
		for i, o := range opts {
			if o == nil {
				return fmt.Errorf("redsync option %d is nil", i)
			}
		}
		rc.passthrough = append(rc.passthrough, opts...)
		return nil
	}
}

// NewRedsync returns a redsync lock on key over clients, one per independent
// node (quorum len/2+1, redsync's rule).
func NewRedsync(clients []redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Redsync, error) {
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: redsync: no redis clients", lock.ErrConfig)
	}
	pools := make([]redsyncredis.Pool, len(clients))
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("%w: redsync: redis client %d is nil", lock.ErrConfig, i)
		}
		pools[i] = goredis.NewPool(c)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("redsync: %w", err)
	}
	r := &Redsync{rs: redsync.New(pools...), key: key, ttl: ttl, cfg: redsyncConfig{Options: lock.DefaultOptions()}}
	if err := lock.Apply(&r.cfg, opts); err != nil {
		return nil, fmt.Errorf("redsync: %w", err)
	}
	return r, nil
}

// Key is the Redis key this lock guards.
func (r *Redsync) Key() string { return r.key }

func (r *Redsync) mutex(value string) *redsync.Mutex {
	opts := []redsync.Option{redsync.WithDriftFactor(r.cfg.DriftFactor)}
	if r.cfg.NodeTimeout > 0 {
		opts = append(opts, redsync.WithTimeoutFactor(float64(r.cfg.NodeTimeout)/float64(r.ttl)))
	}
	opts = append(opts, r.cfg.passthrough...)
	opts = append(opts,
		redsync.WithExpiry(r.ttl),
		redsync.WithTries(1),
		redsync.WithGenValueFunc(func() (string, error) { return r.cfg.NewValue(), nil }),
	)
	if value != "" {
		opts = append(opts, redsync.WithValue(value))
	}
	return r.rs.NewMutex(r.key, opts...)
}

// Acquire tries redsync's Lock once per attempt of the configured strategy.
func (r *Redsync) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, r.cfg.Retry, func(ctx context.Context) (lock.Lease, error) {
		m := r.mutex("")
		start := time.Now()
		if err := m.TryLockContext(ctx); err != nil {
			return lock.Lease{}, redsyncError(r.key, err, lock.ErrNotObtained)
		}
		if err := r.cfg.Step(ctx, lock.StepGranted); err != nil {
			return lock.Lease{}, fmt.Errorf("%w: %s: %w", lock.ErrUnknown, r.key, err)
		}
		return r.lease(m, start), nil
	})
}

// lease reads the mutex's Until. redsync counts it from its own start,
// taken inside the call after ours; Until − TTL is before that start too, so
// the later of the two is still a start before any request was sent, and
// keeps ValidUntil within Start + TTL however long the caller was descheduled
// between the two clock reads.
func (r *Redsync) lease(m *redsync.Mutex, start time.Time) lock.Lease {
	until := m.Until()
	if s := until.Add(-r.ttl); s.After(start) {
		start = s
	}
	return lock.Lease{Key: r.key, Value: m.Value(), Start: start, TTL: r.ttl, ValidUntil: until}
}

// Release unlocks the lease's value on every node; it needs a quorum.
func (r *Redsync) Release(ctx context.Context, l lock.Lease) error {
	if err := r.checkLease(l); err != nil {
		return err
	}
	ok, err := r.mutex(l.Value).UnlockContext(ctx)
	if ok {
		return nil
	}
	return redsyncError(r.key, err, lock.ErrNotHeld)
}

// Extend resets the TTL on every node holding the lease's value (and, with
// WithSetNXOnExtend, on every node where the key is free); it needs a
// quorum within validity.
func (r *Redsync) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if err := r.checkLease(l); err != nil {
		return lock.Lease{}, err
	}
	m := r.mutex(l.Value)
	start := time.Now()
	ok, err := m.ExtendContext(ctx)
	if !ok {
		return lock.Lease{}, redsyncError(r.key, err, lock.ErrNotHeld)
	}
	return r.lease(m, start), nil
}

func (r *Redsync) checkLease(l lock.Lease) error {
	if l.Key != r.key {
		return fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, l.Key, r.key)
	}
	if l.Value == "" {
		return fmt.Errorf("%w: %s: lease has no owner value", lock.ErrNotHeld, r.key)
	}
	return nil
}

// redsyncError maps a failed redsync call: ErrUnknown when any node's error
// leaves its command's outcome unknown, definite otherwise.
func redsyncError(key string, err, definite error) error {
	if err == nil {
		return fmt.Errorf("%w: %s: no quorum", definite, key)
	}
	if anyUnknown(err) {
		return fmt.Errorf("%w: %s: %w", lock.ErrUnknown, key, err)
	}
	return fmt.Errorf("%w: %s: %w", definite, key, err)
}

// anyUnknown walks redsync's joined per-node errors.
func anyUnknown(err error) bool {
	switch e := err.(type) {
	case *redsync.RedisError:
		return errors.Is(lock.Classify(e.Err, lock.ErrNotObtained), lock.ErrUnknown)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if anyUnknown(inner) {
				return true
			}
		}
	}
	return false
}
