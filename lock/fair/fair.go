// Package fair is Redisson's fair lock (RFairLock) on one Redis node, with
// the acquire scripts of Redisson's published RFairLock — Redisson's before #1104 (2017).
// The lock is the reentrant hash of package reentrant; next to it a list
// is the FIFO queue of waiting owners and a sorted set holds each queued
// owner's timeout, an absolute time in ms on the clients' wall clocks:
//
//  1. every attempt first purges stale waiters: while the queue's head has
//     a timeout at or before the caller's now, it is removed;
//  2. the lock is granted when it is free and the queue is empty or the
//     caller is its head (which leaves the queue), or nested to its owner;
//  3. otherwise the caller's timeout is set — the head's timeout minus now
//     (or, for the head itself, the lock's pttl), plus now and
//     threadWaitTime (5 s in Redisson) — and it joins the tail if it was
//     not queued yet; the wait (ttl) comes back.
//
// Every waiting attempt refreshes the caller's timeout, so a live waiter
// keeps its place; a waiter that stops polling — crashed, or paused past
// threadWaitTime once it is at the head — is purged by whoever comes next
// and loses its place. That is documented behaviour, not a fairness
// violation: Redisson's documentation says a fair lock waits
// threadWaitTime for a waiter that has died. The history shows it, because
// each queued attempt is reported with its entry's timeout (QueueEvent).
//
// An attempt that must not wait (lock.TryOnce) runs the published version's other
// script, which purges and grants but never queues. It is silent on
// releasing and giving up; both come from the same Redisson version: a
// release purges stale waiters, frees the hash (or decrements a nested
// hold) and publishes on the head waiter's own channel; an owner that gives
// up waiting removes itself from the queue and the timeout set (Redisson
// #757). Timeouts are in the clients' wall-clock ms (lock.Options
// .WallClock): a client whose clock is skewed purges or keeps waiters the
// others would not.
package fair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
)

// DefaultThreadWaitTime is Redisson's threadWaitTime (fairLockWaitTimeout).
const DefaultThreadWaitTime = 5 * time.Second

// StepQueued is the lock step (lock.Options.Hook) right after an attempt
// left the caller queued and before it waits: a waiter stalled here stops
// polling while it keeps its place until its entry times out.
const StepQueued = "queued"

// The stale-waiter purge every script begins with; ARGV[k] is the caller's
// now in ms.
const purge = `
while true do
  local firstThreadId2 = redis.call('lindex', KEYS[2], 0);
  if firstThreadId2 == false then
    break;
  end;
  local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId2));
  if timeout <= tonumber(ARGV[%d]) then
    redis.call('zrem', KEYS[3], firstThreadId2);
    redis.call('lpop', KEYS[2]);
  else
    break;
  end;
end;
`

// grantOrNest, after purge, is how both acquire scripts begin: the lock
// goes to ARGV[2] when it is free and ARGV[2] heads the queue (or nobody
// waits), and a hold ARGV[2] has nests; either returns nil (granted).
const grantOrNest = `
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
  redis.call('lpop', KEYS[2]);
  redis.call('zrem', KEYS[3], ARGV[2]);
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
`

// KEYS: the lock hash, the queue list, the timeout set.
var (
	// ARGV[1] TTL ms, ARGV[2] owner, ARGV[3] now. nil: granted; 1: not.
	tryScript = redis.NewScript(fmt.Sprintf(purge, 3) + grantOrNest + `return 1;
`)
	// ARGV[1] TTL ms, ARGV[2] owner, ARGV[3] now + threadWaitTime, ARGV[4]
	// now. nil: granted; otherwise the wait in ms, the caller queued.
	queueScript = redis.NewScript(fmt.Sprintf(purge, 4) + grantOrNest + `local firstThreadId = redis.call('lindex', KEYS[2], 0);
local ttl;
if firstThreadId ~= false and firstThreadId ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], firstThreadId)) - tonumber(ARGV[4]);
else
  ttl = redis.call('pttl', KEYS[1]);
end;
local timeout = ttl + tonumber(ARGV[3]);
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;
`)
	// KEYS[4] the channel prefix; ARGV[1] the unlock message, ARGV[2] TTL
	// ms, ARGV[3] owner, ARGV[4] now. nil: not held by the owner; 0: still
	// held (nested); 1: released, the head waiter told.
	releaseScript = redis.NewScript(fmt.Sprintf(purge, 4) + `
if (redis.call('exists', KEYS[1]) == 0) then
  local nextThreadId = redis.call('lindex', KEYS[2], 0);
  if nextThreadId ~= false then
    redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]);
  end;
  return 1;
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
end;
redis.call('del', KEYS[1]);
local nextThreadId = redis.call('lindex', KEYS[2], 0);
if nextThreadId ~= false then
  redis.call('publish', KEYS[4] .. ':' .. nextThreadId, ARGV[1]);
end;
return 1;
`)
	// KEYS[1] the queue, KEYS[2] the timeout set; ARGV[1] the owner.
	leaveScript = redis.NewScript(`
redis.call('zrem', KEYS[2], ARGV[1]);
redis.call('lrem', KEYS[1], 0, ARGV[1]);
`)
)

// Queue is the key of the waiters' list, as Redisson names it.
func Queue(key string) string { return "redisson_lock_queue:{" + key + "}" }

// Timeouts is the key of the waiters' timeout set, as Redisson names it.
func Timeouts(key string) string { return "redisson_lock_timeout:{" + key + "}" }

// Channel is the channel prefix; a waiter listens on Channel(key)+":"+owner.
func Channel(key string) string { return "redisson_lock__channel:{" + key + "}" }

type config struct {
	lock.Options
	wait time.Duration
}

// WithThreadWaitTime sets threadWaitTime, how long past its turn a queued
// waiter keeps its place without polling (default 5 s).
func WithThreadWaitTime(d time.Duration) lock.Option {
	return func(c lock.Configurable) error {
		cfg, ok := c.(*config)
		if !ok {
			return fmt.Errorf("fair.WithThreadWaitTime applies to the fair lock, not %T", c)
		}
		if d < time.Millisecond {
			return fmt.Errorf("thread wait time %v must be at least 1ms", d)
		}
		cfg.wait = d
		return nil
	}
}

// Locker is one owner's fair lock on one key.
type Locker struct {
	client redis.UniversalClient
	key    string
	keys   []string // hash, queue, timeouts
	ttl    time.Duration
	owner  string
	cfg    config
}

// New returns the fair lock on key for one owner, whose id is drawn once
// from the value generator (lock.WithValue fixes it).
func New(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Locker, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: fair: nil redis client", lock.ErrConfig)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("fair: %w", err)
	}
	l := &Locker{client: client, key: key, keys: []string{key, Queue(key), Timeouts(key)}, ttl: ttl,
		cfg: config{Options: lock.DefaultOptions(), wait: DefaultThreadWaitTime}}
	if err := lock.Apply(&l.cfg, opts); err != nil {
		return nil, fmt.Errorf("fair: %w", err)
	}
	l.owner = l.cfg.NewValue()
	if l.owner == "" {
		return nil, fmt.Errorf("%w: fair: the value generator gave an empty owner id", lock.ErrConfig)
	}
	return l, nil
}

// Key is the lock hash's key.
func (l *Locker) Key() string { return l.key }

// Owner is the owner id (hash field, queue entry).
func (l *Locker) Owner() string { return l.owner }

// ThreadWaitTime is the configured threadWaitTime.
func (l *Locker) ThreadWaitTime() time.Duration { return l.cfg.wait }

func (l *Locker) now() int64 { return l.cfg.WallClock().UnixMilli() }

// Acquire takes the lock in queue order. With lock.TryOnce it makes one
// attempt that never queues; otherwise it queues and waits for its turn
// (a message on its own channel, or the wait the script returned), polling
// again each time, and leaves the queue when the attempts or ctx run out.
func (l *Locker) Acquire(ctx context.Context) (lock.Lease, error) {
	if l.cfg.Retry.Attempts == 1 {
		return l.tryOnce(ctx)
	}
	lease, err := reentrant.Wait(ctx, l.client, Channel(l.key)+":"+l.owner, l.cfg.Retry.Attempts, l.poll)
	if err != nil && errors.Is(err, lock.ErrNotObtained) {
		l.leave(ctx)
	}
	return lease, err
}

func (l *Locker) tryOnce(ctx context.Context) (lock.Lease, error) {
	start := time.Now()
	err := tryScript.Run(ctx, l.client, l.keys, l.ttl.Milliseconds(), l.owner, l.now()).Err()
	if errors.Is(err, redis.Nil) {
		return l.lease(start), nil
	}
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	return lock.Lease{}, fmt.Errorf("%w: %s held, or others queued first", lock.ErrNotObtained, l.key)
}

// poll is one queueing attempt.
func (l *Locker) poll(ctx context.Context) (lock.Lease, time.Duration, error) {
	start := time.Now()
	now := l.now()
	res, err := queueScript.Run(ctx, l.client, l.keys, l.ttl.Milliseconds(), l.owner, now+l.cfg.wait.Milliseconds(), now).Result()
	if errors.Is(err, redis.Nil) {
		return l.lease(start), 0, nil
	}
	if err != nil {
		return lock.Lease{}, 0, lock.Classify(err, lock.ErrNotObtained)
	}
	ms, ok := res.(int64)
	if !ok {
		return lock.Lease{}, 0, fmt.Errorf("%w: %s: queue script returned %T %v", lock.ErrUnknown, l.key, res, res)
	}
	wait := time.Duration(ms) * time.Millisecond
	// The entry's timeout is ttl + now + threadWaitTime on this client's
	// clock, which is start + ttl + threadWaitTime on the monotonic one.
	l.cfg.Queued(lock.QueueEvent{Phase: "queued", Key: l.key, Owner: l.owner, Invoked: start, Returned: time.Now(), Deadline: start.Add(wait + l.cfg.wait)})
	if err := l.cfg.Step(ctx, StepQueued); err != nil {
		return lock.Lease{}, 0, fmt.Errorf("%w: %s: %w", lock.ErrUnknown, l.key, err)
	}
	if ms < 0 {
		wait = -1
	}
	return lock.Lease{}, wait, fmt.Errorf("%w: %s held or others queued first; queued, next look in %v", lock.ErrNotObtained, l.key, wait)
}

// leave removes the owner from the queue (Redisson's acquireFailed), even
// when ctx has ended.
func (l *Locker) leave(ctx context.Context) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	start := time.Now()
	err := leaveScript.Run(lctx, l.client, []string{Queue(l.key), Timeouts(l.key)}, l.owner).Err()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	if err != nil {
		err = lock.Classify(err, lock.ErrNotHeld)
	}
	l.cfg.Queued(lock.QueueEvent{Phase: "left", Key: l.key, Owner: l.owner, Invoked: start, Returned: time.Now(), Err: err})
}

func (l *Locker) lease(start time.Time) lock.Lease {
	return lock.Lease{Key: l.key, Value: l.owner, Start: start, TTL: l.ttl, ValidUntil: l.cfg.ValidUntil(start, l.ttl)}
}

func (l *Locker) check(lease lock.Lease) error {
	if lease.Key != l.key {
		return fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, lease.Key, l.key)
	}
	return nil
}

// Release gives up one hold and, with the last, tells the head waiter. As
// in Redisson, releasing a lock that no longer exists (it expired) answers
// "released".
func (l *Locker) Release(ctx context.Context, lease lock.Lease) error {
	if err := l.check(lease); err != nil {
		return err
	}
	keys := append(append([]string(nil), l.keys...), Channel(l.key))
	err := releaseScript.Run(ctx, l.client, keys, reentrant.UnlockMessage, l.ttl.Milliseconds(), lease.Value, l.now()).Err()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s not held by %q", lock.ErrNotHeld, l.key, lease.Value)
	}
	return lock.Classify(err, lock.ErrNotHeld)
}

// Extend renews the TTL while the owner holds the lock.
func (l *Locker) Extend(ctx context.Context, lease lock.Lease) (lock.Lease, error) {
	if err := l.check(lease); err != nil {
		return lock.Lease{}, err
	}
	start := time.Now()
	if err := reentrant.ExtendHash(ctx, l.client, l.key, l.ttl, lease.Value); err != nil {
		return lock.Lease{}, err
	}
	ext := l.lease(start)
	ext.Value = lease.Value
	return ext, nil
}

// QueueState is the queue as Redis holds it: owners in order with their
// timeouts (ms on the clients' wall clocks). For tests and reports.
func (l *Locker) QueueState(ctx context.Context) (owners []string, timeouts []int64, err error) {
	owners, err = l.client.LRange(ctx, Queue(l.key), 0, -1).Result()
	if err != nil {
		return nil, nil, err
	}
	for _, o := range owners {
		s, err := l.client.ZScore(ctx, Timeouts(l.key), o).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, nil, err
		}
		timeouts = append(timeouts, int64(s))
	}
	return owners, timeouts, nil
}

var _ lock.Locker = (*Locker)(nil)
