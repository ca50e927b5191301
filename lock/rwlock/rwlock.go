// Package rwlock is Redisson's read-write lock (RReadWriteLock) on one
// Redis node, with the scripts of Redisson's published RReadWriteLock: the lock is one hash
// whose field "mode" is "read" or "write", each owner's field its hold
// count, and one pexpire for the whole hash.
//
//   - read: granted when the hash has no mode (set mode read, the owner's
//     count to 1) or is in read mode (count + 1); either way the whole
//     hash gets the reader's TTL. Otherwise the writer's pttl comes back.
//   - write: granted when the hash has no mode, or to the writer that holds
//     it already (a nested hold); otherwise the holder's pttl.
//
// The published scripts stop short of unlocking; the release scripts are those of the
// same Redisson version (before Redisson #758, early 2017): decrement the
// owner's count, on zero remove its field, and when only "mode" is left
// delete the hash and publish on the lock's channel, which wakes readers
// and writers waiting there (Redisson's channel name, so Redisson clients
// on the same key are woken too). A nested release renews the TTL. One
// change from that version, as current Redisson has it: releasing a lock
// whose hash is gone answers "not held" (that version answered "released").
//
// One pexpire per hash is the design Redisson #2144 questions: a reader
// granted later with a shorter lease cuts the TTL of the whole hash, so an
// earlier reader with a longer lease loses its read hold before it ends
// and a writer can be granted while that reader still reads. Later Redisson
// versions keep a timeout key per read hold for exactly this reason; this
// package keeps the published version on purpose (catalog row
// rwlock-reader-lease-cut).
//
// A Lock is one owner, like a Java thread in Redisson: its read and write
// locks share the owner id (the write lock's hash field is the owner id
// plus ":write", as in Redisson).
package rwlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
)

// The scripts: KEYS[1] the hash, ARGV[1] the TTL in ms, ARGV[2] the owner's
// field. An acquire returns nil when granted and the pttl otherwise.
var (
	readScript = redis.NewScript(`
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'read');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'read') then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);
`)
	writeScript = redis.NewScript(`
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'write');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'write') then
  if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
  end;
end;
return redis.call('pttl', KEYS[1]);
`)
	// KEYS[2] the channel; ARGV[1] the unlock message, ARGV[2] the TTL,
	// ARGV[3] the owner's field, ARGV[4] the mode released. nil: not held
	// by the owner in that mode; 0: still held (nested); 1: released.
	releaseScript = redis.NewScript(`
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('publish', KEYS[2], ARGV[1]);
  return nil;
end;
if (mode == ARGV[4]) then
  if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
  end;
  local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
  if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    return 0;
  end;
  redis.call('hdel', KEYS[1], ARGV[3]);
  if (redis.call('hlen', KEYS[1]) == 1) then
    redis.call('del', KEYS[1]);
    redis.call('publish', KEYS[2], ARGV[1]);
  end;
  return 1;
end;
return nil;
`)
)

// Channel is the pub/sub channel a release of key publishes on (Redisson's
// "redisson_rwlock:{key}").
func Channel(key string) string { return "redisson_rwlock:{" + key + "}" }

// The values of the hash's "mode" field.
const (
	modeRead  = "read"
	modeWrite = "write"
)

// Lock is one owner's read-write lock on one key.
type Lock struct {
	client redis.UniversalClient
	key    string
	ttl    time.Duration
	owner  string
	cfg    lock.Options
	read   *Mode
	write  *Mode
}

// New returns the read-write lock on key for one owner, whose id is drawn
// once from the value generator (lock.WithValue fixes it). The retry
// strategy's Attempts bounds the acquire attempts (TryOnce: no waiting); a
// waiter sleeps until the release's message or the holder's pttl.
func New(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: rwlock: nil redis client", lock.ErrConfig)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	l := &Lock{client: client, key: key, ttl: ttl, cfg: lock.DefaultOptions()}
	if err := lock.Apply(&l.cfg, opts); err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	l.owner = l.cfg.NewValue()
	if l.owner == "" {
		return nil, fmt.Errorf("%w: rwlock: the value generator gave an empty owner id", lock.ErrConfig)
	}
	l.read = &Mode{l: l, mode: modeRead, field: l.owner, script: readScript}
	l.write = &Mode{l: l, mode: modeWrite, field: l.owner + ":write", script: writeScript}
	return l, nil
}

// Key is the Redis key of the hash.
func (l *Lock) Key() string { return l.key }

// Owner is the owner id (the read lock's hash field).
func (l *Lock) Owner() string { return l.owner }

// ReadLock is the shared mode.
func (l *Lock) ReadLock() lock.Locker { return l.read }

// WriteLock is the exclusive mode.
func (l *Lock) WriteLock() lock.Locker { return l.write }

// Mode is one mode of a Lock: a Locker whose leases carry the owner's
// hash field as their Value.
type Mode struct {
	l      *Lock
	mode   string
	field  string
	script *redis.Script
}

// Key is the Redis key of the hash.
func (m *Mode) Key() string { return m.l.key }

// Acquire takes a hold in this mode, waiting (unless the strategy allows
// one attempt) for a release's message or the holder's pttl.
func (m *Mode) Acquire(ctx context.Context) (lock.Lease, error) {
	return reentrant.Wait(ctx, m.l.client, Channel(m.l.key), m.l.cfg.Retry.Attempts, m.try)
}

func (m *Mode) try(ctx context.Context) (lock.Lease, time.Duration, error) {
	l := m.l
	start := time.Now()
	res, err := m.script.Run(ctx, l.client, []string{l.key}, l.ttl.Milliseconds(), m.field).Result()
	if errors.Is(err, redis.Nil) {
		return m.lease(start), 0, nil
	}
	if err != nil {
		return lock.Lease{}, 0, lock.Classify(err, lock.ErrNotObtained)
	}
	ms, ok := res.(int64)
	if !ok {
		return lock.Lease{}, 0, fmt.Errorf("%w: %s: %s script returned %T %v", lock.ErrUnknown, l.key, m.mode, res, res)
	}
	wait := time.Duration(ms) * time.Millisecond
	if ms < 0 {
		wait = -1
	}
	return lock.Lease{}, wait, fmt.Errorf("%w: %s held in a mode that excludes %s for %v more", lock.ErrNotObtained, l.key, m.mode, wait)
}

func (m *Mode) lease(start time.Time) lock.Lease {
	l := m.l
	return lock.Lease{Key: l.key, Value: m.field, Start: start, TTL: l.ttl, ValidUntil: l.cfg.ValidUntil(start, l.ttl)}
}

func (m *Mode) check(lease lock.Lease) error {
	if lease.Key != m.l.key {
		return fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, lease.Key, m.l.key)
	}
	return nil
}

// Release gives up one hold of the lease's owner in this mode; the last
// hold of the last owner deletes the hash and wakes the waiters.
func (m *Mode) Release(ctx context.Context, lease lock.Lease) error {
	if err := m.check(lease); err != nil {
		return err
	}
	l := m.l
	err := releaseScript.Run(ctx, l.client, []string{l.key, Channel(l.key)}, reentrant.UnlockMessage, l.ttl.Milliseconds(), lease.Value, m.mode).Err()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s not held in %s mode by %q", lock.ErrNotHeld, l.key, m.mode, lease.Value)
	}
	return lock.Classify(err, lock.ErrNotHeld)
}

// Extend renews the TTL of the whole hash while the owner holds it in
// this mode (Redisson's renewal script).
func (m *Mode) Extend(ctx context.Context, lease lock.Lease) (lock.Lease, error) {
	if err := m.check(lease); err != nil {
		return lock.Lease{}, err
	}
	l := m.l
	start := time.Now()
	if err := reentrant.ExtendHash(ctx, l.client, l.key, l.ttl, lease.Value); err != nil {
		return lock.Lease{}, err
	}
	ext := m.lease(start)
	ext.Value = lease.Value
	return ext, nil
}

var (
	_ lock.ReadWriteLocker = (*Lock)(nil)
	_ lock.Locker          = (*Mode)(nil)
)
