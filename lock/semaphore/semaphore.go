// Package semaphore is Redisson's two distributed semaphores on one Redis
// node (the scripts follow current Redisson):
//
//   - Semaphore is RSemaphore: the key holds the number of free permits.
//     trySetPermits sets it only if absent; an acquire decrements it when
//     at least one is free; a release increments it and publishes the new
//     value on the semaphore's channel, which wakes waiters. Permits have
//     no owner and no expiry: a holder that crashes never gives its permit
//     back, and a failover to a replica that missed decrements hands out
//     permits that are held already.
//   - Expirable is RPermitExpirableSemaphore: every acquired permit has an
//     id and a lease in a sorted set (score: its expiry, ms on the
//     acquiring client's wall clock). Every acquire first returns expired
//     permits to the pool, so a holder stopped past its lease — a GC pause
//     — finds its permit re-issued when it resumes, while it still
//     believes it holds it (catalog row permit-expirable-semaphore-gc-pause).
//
// Waiting follows Redisson: subscribe to the channel and wait for a
// release's message (or, for Expirable, until the nearest permit expires).
package semaphore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
)

// Channel is the channel releases of key publish on (Redisson's
// "redisson_sc:{key}").
func Channel(key string) string { return "redisson_sc:{" + key + "}" }

// TimeoutKey is the sorted set of an Expirable's permits (Redisson's
// suffixName(key, "timeout")).
func TimeoutKey(key string) string {
	if strings.Contains(key, "{") {
		return key + ":timeout"
	}
	return "{" + key + "}:timeout"
}

var (
	// KEYS[1] the count, KEYS[2] the channel; ARGV[1] the permits.
	trySetScript = redis.NewScript(`
local value = redis.call('get', KEYS[1]);
if (value == false) then
  redis.call('set', KEYS[1], ARGV[1]);
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1;
end;
return 0;
`)
	// KEYS[1] the count; ARGV[1] the permits wanted.
	acquireScript = redis.NewScript(`
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  local val = redis.call('decrby', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;
`)
	// KEYS[1] the count, KEYS[2] the channel; ARGV[1] the permits.
	releaseScript = redis.NewScript(`
local value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call('publish', KEYS[2], value);
return value;
`)
)

func check(client redis.UniversalClient, key string, permits int) error {
	if client == nil {
		return fmt.Errorf("%w: semaphore: nil redis client", lock.ErrConfig)
	}
	if key == "" {
		return fmt.Errorf("%w: semaphore: empty key", lock.ErrConfig)
	}
	if permits < 1 {
		return fmt.Errorf("%w: semaphore: %d permits, want at least 1", lock.ErrConfig, permits)
	}
	return nil
}

// permitKey is what both semaphores are: a count of free permits on one
// key, set up once with TrySetPermits.
type permitKey struct {
	client  redis.UniversalClient
	key     string
	permits int
	cfg     lock.Options
}

// newPermitKey checks the settings and applies the options.
func newPermitKey(client redis.UniversalClient, key string, permits int, opts []lock.Option) (permitKey, error) {
	if err := check(client, key, permits); err != nil {
		return permitKey{}, err
	}
	pk := permitKey{client: client, key: key, permits: permits, cfg: lock.DefaultOptions()}
	if err := lock.Apply(&pk.cfg, opts); err != nil {
		return permitKey{}, fmt.Errorf("semaphore: %w", err)
	}
	return pk, nil
}

// Key is the key holding the free permits.
func (s *permitKey) Key() string { return s.key }

// Permits is how many permits the semaphore is set up with.
func (s *permitKey) Permits() int { return s.permits }

// TrySetPermits sets the count to Permits unless the key exists.
func (s *permitKey) TrySetPermits(ctx context.Context) (bool, error) {
	n, err := trySetScript.Run(ctx, s.client, []string{s.key, Channel(s.key)}, s.permits).Int64()
	if err != nil {
		return false, lock.Classify(err, lock.ErrNotObtained)
	}
	return n == 1, nil
}

// Semaphore is Redisson's RSemaphore on one key.
type Semaphore struct {
	permitKey
}

// New returns the RSemaphore on key, to be set up with permits permits.
// Retry: TryOnce makes one attempt; otherwise Acquire waits for releases
// until ctx ends.
func New(client redis.UniversalClient, key string, permits int, opts ...lock.Option) (*Semaphore, error) {
	pk, err := newPermitKey(client, key, permits, opts)
	if err != nil {
		return nil, err
	}
	return &Semaphore{pk}, nil
}

// Available is the number of free permits (0 when the key is missing).
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	n, err := s.client.Get(ctx, s.key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// Acquire takes one permit. The lease's Value is a label the client makes
// for the history (RSemaphore does not tell permits apart); it never
// expires.
func (s *Semaphore) Acquire(ctx context.Context) (lock.Lease, error) {
	return reentrant.Wait(ctx, s.client, Channel(s.key), s.cfg.Retry.Attempts, s.try)
}

func (s *Semaphore) try(ctx context.Context) (lock.Lease, time.Duration, error) {
	start := time.Now()
	n, err := acquireScript.Run(ctx, s.client, []string{s.key}, 1).Int64()
	if err != nil {
		return lock.Lease{}, 0, lock.Classify(err, lock.ErrNotObtained)
	}
	if n == 0 {
		return lock.Lease{}, -1, fmt.Errorf("%w: semaphore %s: no free permit", lock.ErrNotObtained, s.key)
	}
	return lock.Lease{Key: s.key, Value: s.cfg.NewValue(), Start: start, ValidUntil: lock.NoExpiry(start)}, 0, nil
}

// Release adds a permit back and wakes the waiters. RSemaphore cannot tell
// whether the permit was held: it answers nil unless the command failed.
func (s *Semaphore) Release(ctx context.Context, l lock.Lease) error {
	if l.Key != s.key {
		return fmt.Errorf("%w: lease for key %q given to the semaphore on %q", lock.ErrNotHeld, l.Key, s.key)
	}
	return lock.Classify(releaseScript.Run(ctx, s.client, []string{s.key, Channel(s.key)}, 1).Err(), lock.ErrNotHeld)
}

// nonExpirable is Redisson's score for a permit without a lease.
const nonExpirable = 922337203685477

var (
	// KEYS[1] the count, KEYS[2] the permits' set, KEYS[3] the channel;
	// ARGV[1] permits wanted, ARGV[2] the permit's expiry, ARGV[3] now,
	// ARGV[4] the non-expirable score, ARGV[5..] the permit ids. 'OK' when
	// acquired; ':<score>' the nearest expiry; nil when none will expire.
	expAcquireScript = redis.NewScript(`
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]);
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds));
  local value = redis.call('incrby', KEYS[1], #expiredIds);
  if tonumber(value) > 0 then
    redis.call('publish', KEYS[3], value);
  end;
end;
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
  redis.call('decrby', KEYS[1], ARGV[1]);
  for i = 5, #ARGV, 1 do
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]);
  end;
  local ttl = redis.call('pttl', KEYS[1]);
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl);
  end;
  return 'OK';
end;
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if v[1] ~= nil and v[2] ~= ARGV[4] then
  return ':' .. tostring(v[2]);
end
return nil;
`)
	// KEYS[1] the count, KEYS[2] the channel, KEYS[3] the permits' set;
	// ARGV[1] the permit id, ARGV[2] permits, ARGV[3] now. 1: released;
	// 0: not held (gone, or expired: then returned to the pool anyway).
	expReleaseScript = redis.NewScript(`
local expire = redis.call('zscore', KEYS[3], ARGV[1]);
local removed = redis.call('zrem', KEYS[3], ARGV[1]);
if tonumber(removed) ~= 1 then
  return 0;
end;
local value = redis.call('incrby', KEYS[1], ARGV[2]);
redis.call('publish', KEYS[2], value);
if tonumber(expire) <= tonumber(ARGV[3]) then
  return 0;
end;
return 1;
`)
	// KEYS[1] the count, KEYS[2] the permits' set, KEYS[3] the channel;
	// ARGV[1] the permit id, ARGV[2] its new expiry, ARGV[3] now.
	expUpdateScript = redis.NewScript(`
local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1);
if #expiredIds > 0 then
  redis.call('zrem', KEYS[2], unpack(expiredIds));
  local value = redis.call('incrby', KEYS[1], #expiredIds);
  if tonumber(value) > 0 then
    redis.call('publish', KEYS[3], value);
  end;
end;
local value = redis.call('zscore', KEYS[2], ARGV[1]);
if (value ~= false) then
  redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]);
  return 1;
end;
return 0;
`)
)

// Expirable is Redisson's RPermitExpirableSemaphore on one key: each permit
// is acquired with a lease of the TTL.
type Expirable struct {
	permitKey
	ttl time.Duration
}

// NewExpirable returns the permit-expirable semaphore on key with permits
// permits, each acquired for ttl.
func NewExpirable(client redis.UniversalClient, key string, permits int, ttl time.Duration, opts ...lock.Option) (*Expirable, error) {
	pk, err := newPermitKey(client, key, permits, opts)
	if err != nil {
		return nil, err
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	return &Expirable{permitKey: pk, ttl: ttl}, nil
}

func (s *Expirable) now() int64 { return s.cfg.WallClock().UnixMilli() }

// Acquire takes one permit with a lease of the TTL; its id is the lease's
// Value. While none is free it waits for a release's message or the
// nearest expiry.
func (s *Expirable) Acquire(ctx context.Context) (lock.Lease, error) {
	return reentrant.Wait(ctx, s.client, Channel(s.key), s.cfg.Retry.Attempts, s.try)
}

func (s *Expirable) try(ctx context.Context) (lock.Lease, time.Duration, error) {
	id := lock.RandomValue()
	start := time.Now()
	now := s.now()
	res, err := expAcquireScript.Run(ctx, s.client, []string{s.key, TimeoutKey(s.key), Channel(s.key)},
		1, now+s.ttl.Milliseconds(), now, nonExpirable, id).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return lock.Lease{}, -1, fmt.Errorf("%w: semaphore %s: no free permit", lock.ErrNotObtained, s.key)
	case err != nil:
		return lock.Lease{}, 0, lock.Classify(err, lock.ErrNotObtained)
	}
	str, _ := res.(string)
	if str == "OK" {
		return lock.Lease{Key: s.key, Value: id, Start: start, TTL: s.ttl, ValidUntil: s.cfg.ValidUntil(start, s.ttl)}, 0, nil
	}
	if next, ok := strings.CutPrefix(str, ":"); ok {
		if ms, perr := strconv.ParseFloat(next, 64); perr == nil {
			wait := max(time.Duration(int64(ms)-now)*time.Millisecond, 0)
			return lock.Lease{}, wait, fmt.Errorf("%w: semaphore %s: no free permit, the next expires in %v", lock.ErrNotObtained, s.key, wait)
		}
	}
	return lock.Lease{}, 0, fmt.Errorf("%w: semaphore %s: acquire script returned %T %v", lock.ErrUnknown, s.key, res, res)
}

// Release gives the permit back: ErrNotHeld when it was no longer held
// (released already, or expired — an expired permit goes back to the pool
// all the same).
func (s *Expirable) Release(ctx context.Context, l lock.Lease) error {
	if l.Key != s.key {
		return fmt.Errorf("%w: lease for key %q given to the semaphore on %q", lock.ErrNotHeld, l.Key, s.key)
	}
	n, err := expReleaseScript.Run(ctx, s.client, []string{s.key, Channel(s.key), TimeoutKey(s.key)}, l.Value, 1, s.now()).Int64()
	if err != nil {
		return lock.Classify(err, lock.ErrNotHeld)
	}
	if n == 0 {
		return fmt.Errorf("%w: semaphore %s: permit %s was released already or had expired", lock.ErrNotHeld, s.key, l.Value)
	}
	return nil
}

// Extend renews the permit's lease (Redisson's updateLeaseTime).
func (s *Expirable) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if l.Key != s.key {
		return lock.Lease{}, fmt.Errorf("%w: lease for key %q given to the semaphore on %q", lock.ErrNotHeld, l.Key, s.key)
	}
	start := time.Now()
	now := s.now()
	n, err := expUpdateScript.Run(ctx, s.client, []string{s.key, TimeoutKey(s.key), Channel(s.key)}, l.Value, now+s.ttl.Milliseconds(), now).Int64()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotHeld)
	}
	if n == 0 {
		return lock.Lease{}, fmt.Errorf("%w: semaphore %s: permit %s is gone", lock.ErrNotHeld, s.key, l.Value)
	}
	l.Start, l.TTL, l.ValidUntil = start, s.ttl, s.cfg.ValidUntil(start, s.ttl)
	return l, nil
}

var (
	_ lock.Semaphore = (*Semaphore)(nil)
	_ lock.Semaphore = (*Expirable)(nil)
)
