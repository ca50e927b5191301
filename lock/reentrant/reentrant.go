// Package reentrant is Redisson's RLock model on one Redis node: the lock is
// a hash whose only field is the owner id and whose value is the hold count,
// so the owner may acquire again while it holds (as Redisson does it).
// Waiters subscribe to a per-lock channel and are woken by the release's
// PUBLISH, with the holder's remaining TTL (pttl) as the bound of each wait.
//
// A Locker is one owner, like a Java thread in Redisson: every Acquire
// through it is a nested hold of that owner, and each needs its own Release.
// Give each goroutine (or process) that must exclude the others its own
// Locker. Goroutines sharing one Locker share the owner id and do not
// exclude each other.
package reentrant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// Redisson's scripts (RedissonLock.tryLockInnerAsync, unlockInnerAsync,
// renewExpirationAsync): KEYS[1] the lock hash, ARGV[1] the TTL in ms,
// ARGV[2] the owner. The acquire returns nil when acquired and the holder's
// pttl otherwise.
var (
	acquireScript = redis.NewScript(`
if (redis.call('exists', KEYS[1]) == 0) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);
`)
	// KEYS[2] is the channel, ARGV[1] the unlock message, ARGV[2] the TTL,
	// ARGV[3] the owner. nil: not held by the owner; 0: still held (count
	// > 0, TTL renewed); 1: freed and waiters told.
	releaseScript = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
else
  redis.call('del', KEYS[1]);
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1;
end;
return nil;
`)
	extendScript = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;
`)
)

// UnlockMessage is Redisson's LockPubSub.UNLOCK_MESSAGE, which a release
// publishes on the lock's channel (this lock, the fair and the read-write
// lock alike).
const UnlockMessage = 0

// ExtendHash renews the TTL of a Redisson hash lock at key while owner has
// a hold on it (the watchdog's renewal script, which the reentrant, fair
// and read-write locks share): an error wrapping lock.ErrNotHeld when it
// has none, lock.Classify's classes otherwise.
func ExtendHash(ctx context.Context, c redis.Scripter, key string, ttl time.Duration, owner string) error {
	n, err := extendScript.Run(ctx, c, []string{key}, ttl.Milliseconds(), owner).Int64()
	if err != nil {
		return lock.Classify(err, lock.ErrNotHeld)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s not held by owner %q", lock.ErrNotHeld, key, owner)
	}
	return nil
}

// subscribeTimeout bounds the wait for the SUBSCRIBE confirmation.
const subscribeTimeout = time.Second

// Channel is the pub/sub channel a release of key publishes on. It is
// Redisson's name, so Redisson clients waiting on the same key are woken too.
func Channel(key string) string { return "redisson_lock__channel:{" + key + "}" }

// Locker is one owner's reentrant lock on one key.
type Locker struct {
	client  redis.UniversalClient
	key     string
	channel string
	ttl     time.Duration
	owner   string
	cfg     lock.Options
}

// New returns a reentrant lock on key for one owner, whose id is drawn once
// from the value generator (lock.WithValue fixes it). The retry strategy's
// Attempts bounds the acquire attempts (TryOnce: no waiting); its Delay and
// Jitter do not apply: a waiter sleeps until the unlock message or the
// holder's pttl, whichever comes first, and ctx bounds the whole wait.
func New(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Locker, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: reentrant: nil redis client", lock.ErrConfig)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("reentrant: %w", err)
	}
	l := &Locker{client: client, key: key, channel: Channel(key), ttl: ttl, cfg: lock.DefaultOptions()}
	if err := lock.Apply(&l.cfg, opts); err != nil {
		return nil, fmt.Errorf("reentrant: %w", err)
	}
	l.owner = l.cfg.NewValue()
	if l.owner == "" {
		return nil, fmt.Errorf("%w: reentrant: the value generator gave an empty owner id", lock.ErrConfig)
	}
	return l, nil
}

// Key is the Redis key this lock guards.
func (l *Locker) Key() string { return l.key }

// Owner is the owner id stored as the hash field.
func (l *Locker) Owner() string { return l.owner }

// Acquire takes the lock, or another hold of it if this owner already holds
// it. While another owner holds it, Acquire waits (unless the strategy
// allows one attempt) for the release's message or the holder's pttl, then
// tries again, until the attempts or ctx run out.
func (l *Locker) Acquire(ctx context.Context) (lock.Lease, error) {
	return Wait(ctx, l.client, l.channel, l.cfg.Retry.Attempts, l.try)
}

// TryFunc is one attempt of a lock that waits the Redisson way: a lease, or
// ErrNotObtained with how long to wait at most before the next attempt
// (the holder's pttl; a negative wait means "until a message comes").
type TryFunc func(ctx context.Context) (lock.Lease, time.Duration, error)

// Wait is Redisson's wait for a lock (RedissonLock.lock and tryLock, and
// the same loop in its semaphores and latches): try once; while the answer
// is ErrNotObtained, subscribe to channel before trying again — so a
// release after that attempt cannot slip by unseen — and sleep until a
// message on channel or the wait the attempt returned, whichever comes
// first, until attempts (0: no bound; 1: no waiting) or ctx run out. Any
// other error ends the wait at once.
func Wait(ctx context.Context, client redis.UniversalClient, channel string, attempts int, try TryFunc) (lock.Lease, error) {
	lease, wait, err := try(ctx)
	if err == nil || !errors.Is(err, lock.ErrNotObtained) || attempts == 1 {
		return lease, err
	}
	ps := client.Subscribe(ctx)
	defer ps.Close()
	if serr := subscribe(ctx, ps, channel); serr != nil {
		return lock.Lease{}, fmt.Errorf("%w; then waiting failed: %w", err, serr)
	}
	msgs := ps.Channel()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for n := 2; ; n++ {
		if lease, wait, err = try(ctx); err == nil || !errors.Is(err, lock.ErrNotObtained) {
			return lease, err
		}
		if attempts > 0 && n >= attempts {
			return lock.Lease{}, err
		}
		var expired <-chan time.Time
		if wait >= 0 { // −1: held without a TTL; only a message can free it
			timer.Reset(wait)
			expired = timer.C
		}
		select {
		case <-ctx.Done():
			return lock.Lease{}, fmt.Errorf("%w (gave up after %d attempts: %w)", err, n, ctx.Err())
		case <-msgs:
		case <-expired:
		}
		timer.Stop() // since Go 1.23 this also discards a fire that raced with the message
	}
}

func subscribe(ctx context.Context, ps *redis.PubSub, channel string) error {
	if err := ps.Subscribe(ctx, channel); err != nil {
		return fmt.Errorf("subscribe %s: %w", channel, err)
	}
	d := subscribeTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		d = time.Until(dl)
	}
	if d <= 0 {
		return fmt.Errorf("subscribe %s: %w", channel, context.DeadlineExceeded)
	}
	msg, err := ps.ReceiveTimeout(ctx, d)
	if err != nil {
		return fmt.Errorf("subscribe %s: no confirmation: %w", channel, err)
	}
	if s, ok := msg.(*redis.Subscription); !ok || s.Kind != "subscribe" {
		return fmt.Errorf("subscribe %s: unexpected reply %v", channel, msg)
	}
	return nil
}

// try runs the acquire script once. On ErrNotObtained it returns the
// holder's pttl (−1 when the key has no TTL).
func (l *Locker) try(ctx context.Context) (lock.Lease, time.Duration, error) {
	start := time.Now()
	res, err := acquireScript.Run(ctx, l.client, []string{l.key}, l.ttl.Milliseconds(), l.owner).Result()
	if errors.Is(err, redis.Nil) {
		return l.lease(start), 0, nil
	}
	if err != nil {
		return lock.Lease{}, 0, lock.Classify(err, lock.ErrNotObtained)
	}
	ms, ok := res.(int64)
	if !ok {
		return lock.Lease{}, 0, fmt.Errorf("%w: %s: acquire script returned %T %v", lock.ErrUnknown, l.key, res, res)
	}
	pttl := time.Duration(ms) * time.Millisecond
	if ms < 0 {
		pttl = -1
	}
	return lock.Lease{}, pttl, fmt.Errorf("%w: %s held by another owner for %v more", lock.ErrNotObtained, l.key, pttl)
}

func (l *Locker) lease(start time.Time) lock.Lease {
	return lock.Lease{Key: l.key, Value: l.owner, Start: start, TTL: l.ttl, ValidUntil: l.cfg.ValidUntil(start, l.ttl)}
}

func (l *Locker) checkLease(lease lock.Lease) error {
	if lease.Key != l.key {
		return fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, lease.Key, l.key)
	}
	return nil
}

// Release gives up one hold of the lease's owner. The last hold deletes the
// key and wakes the waiters; an earlier one renews the TTL. Holds are
// counted, not told apart: releasing the same lease twice gives up two
// holds.
func (l *Locker) Release(ctx context.Context, lease lock.Lease) error {
	if err := l.checkLease(lease); err != nil {
		return err
	}
	err := releaseScript.Run(ctx, l.client, []string{l.key, l.channel}, UnlockMessage, l.ttl.Milliseconds(), lease.Value).Err()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s not held by owner %q", lock.ErrNotHeld, l.key, lease.Value)
	}
	return lock.Classify(err, lock.ErrNotHeld)
}

// Extend renews the TTL of the whole lock (every hold of the owner).
func (l *Locker) Extend(ctx context.Context, lease lock.Lease) (lock.Lease, error) {
	if err := l.checkLease(lease); err != nil {
		return lock.Lease{}, err
	}
	start := time.Now()
	if err := ExtendHash(ctx, l.client, l.key, l.ttl, lease.Value); err != nil {
		return lock.Lease{}, err
	}
	ext := l.lease(start)
	ext.Value = lease.Value
	return ext, nil
}
