package adapters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// Redislock is a bsm/redislock lock on one key of one node, behind
// lock.Locker: Obtain (one try; tumbler's lock.Retry does the waiting, with
// the token from lock.Options.NewValue), Release, and Refresh for Extend.
//
// Lease.Start is the instant Obtain (or Refresh) returned and ValidUntil is
// Start + TTL, with no drift allowance. That is deliberate: redislock has no
// elapsed-time check and hands its users a lock "for TTL" from the moment it
// returns, however long the request took. A client paused after its SET NX
// reached Redis and before it read the reply believes in a lease that may
// already have expired — the catalog row redislock-pause-during-acquire
// shows the double grant that follows.
//
// redislock cannot rebuild a *Lock from its key and value (its fields are
// unexported, and Obtain with the same token would take the lock again
// rather than look it up), so the adapter keeps the Locks it obtained in a
// map by lease value. Release and Extend work only through the adapter that
// acquired the lease; any other gets ErrNotHeld. Entries leave the map when
// redislock says the lock is released or not held, or once a full TTL has
// passed beyond their ValidUntil (by then Redis has expired the key).
//
// A caller's own token (redislock.Options.Token, variant redislock-token)
// is a value generator that returns it every time (lock.WithValue): every
// Obtain passes it, and redislock re-obtains a key whose stored value
// begins with it — the holder's own key, another client's with the same
// token, or one whose token it is a prefix of
// (TestRedislockTokenPrefixTakesOver). The map then holds the latest Lock
// under the token, so the release of an earlier lease releases the current
// one, as redislock's own Release of the earlier Lock would.
//
// Errors: redislock.ErrNotObtained is ErrNotObtained (acquire) or ErrNotHeld
// (refresh); redislock.ErrLockNotHeld is ErrNotHeld; transport errors go
// through lock.Classify (a timeout is ErrUnknown).
type Redislock struct {
	client *redislock.Client
	key    string
	ttl    time.Duration
	cfg    lock.Options

	mu   sync.Mutex
	held map[string]heldLock
}

type heldLock struct {
	lk         *redislock.Lock
	validUntil time.Time
}

// NewRedislock returns a redislock lock on key.
func NewRedislock(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Redislock, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: redislock: nil redis client", lock.ErrConfig)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("redislock: %w", err)
	}
	r := &Redislock{client: redislock.New(client), key: key, ttl: ttl, cfg: lock.DefaultOptions(), held: map[string]heldLock{}}
	if err := lock.Apply(&r.cfg, opts); err != nil {
		return nil, fmt.Errorf("redislock: %w", err)
	}
	return r, nil
}

// Key is the Redis key this lock guards.
func (r *Redislock) Key() string { return r.key }

// Acquire calls Obtain once per attempt of the configured strategy.
func (r *Redislock) Acquire(ctx context.Context) (lock.Lease, error) {
	r.prune(time.Now())
	return lock.Retry(ctx, r.cfg.Retry, func(ctx context.Context) (lock.Lease, error) {
		lk, err := r.client.Obtain(ctx, r.key, r.ttl, &redislock.Options{Token: r.cfg.NewValue()})
		if errors.Is(err, redislock.ErrNotObtained) {
			return lock.Lease{}, fmt.Errorf("%w: %s: %w", lock.ErrNotObtained, r.key, err)
		}
		if err != nil {
			return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
		}
		// A stall here stands for one inside Obtain between sending SET and
		// reading its reply: redislock's users take the lock as held for a
		// full TTL from the moment Obtain returns, however late that is.
		if err := r.cfg.Step(ctx, lock.StepGranted); err != nil {
			return lock.Lease{}, fmt.Errorf("%w: %s: %w", lock.ErrUnknown, r.key, err)
		}
		returned := time.Now()
		l := r.lease(lk.Token(), returned)
		r.mu.Lock()
		r.held[l.Value] = heldLock{lk: lk, validUntil: l.ValidUntil}
		r.mu.Unlock()
		return l, nil
	})
}

func (r *Redislock) lease(value string, returned time.Time) lock.Lease {
	return lock.Lease{Key: r.key, Value: value, Start: returned, TTL: r.ttl, ValidUntil: returned.Add(r.ttl)}
}

func (r *Redislock) prune(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for v, h := range r.held {
		if now.After(h.validUntil.Add(r.ttl)) {
			delete(r.held, v)
		}
	}
}

func (r *Redislock) lookup(l lock.Lease) (*redislock.Lock, error) {
	if l.Key != r.key {
		return nil, fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, l.Key, r.key)
	}
	r.mu.Lock()
	h, ok := r.held[l.Value]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s: this adapter holds no redislock lock with value %q", lock.ErrNotHeld, r.key, l.Value)
	}
	return h.lk, nil
}

func (r *Redislock) forget(value string) {
	r.mu.Lock()
	delete(r.held, value)
	r.mu.Unlock()
}

// Release calls the Lock's Release.
func (r *Redislock) Release(ctx context.Context, l lock.Lease) error {
	lk, err := r.lookup(l)
	if err != nil {
		return err
	}
	switch err = lk.Release(ctx); {
	case err == nil:
		r.forget(l.Value)
		return nil
	case errors.Is(err, redislock.ErrLockNotHeld):
		r.forget(l.Value)
		return fmt.Errorf("%w: %s: %w", lock.ErrNotHeld, r.key, err)
	}
	return lock.Classify(err, lock.ErrNotHeld) // kept: the caller may retry
}

// Extend calls the Lock's Refresh with the TTL.
func (r *Redislock) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	lk, err := r.lookup(l)
	if err != nil {
		return lock.Lease{}, err
	}
	err = lk.Refresh(ctx, r.ttl, nil)
	returned := time.Now()
	if errors.Is(err, redislock.ErrNotObtained) {
		r.forget(l.Value)
		return lock.Lease{}, fmt.Errorf("%w: %s: %w", lock.ErrNotHeld, r.key, err)
	}
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotHeld)
	}
	ext := r.lease(l.Value, returned)
	r.mu.Lock()
	r.held[l.Value] = heldLock{lk: lk, validUntil: ext.ValidUntil}
	r.mu.Unlock()
	return ext, nil
}
