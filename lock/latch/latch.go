// Package latch is Redisson's count-down latch (RCountDownLatch) on one
// Redis node (the scripts follow current Redisson). The key holds the
// count:
//
//   - trySetCount sets it only if the key does not exist, and publishes a
//     "new count" message;
//   - countDown decrements it; at zero or below the key is deleted, and
//     the decrement that reaches exactly zero publishes "zero";
//   - getCount reads it, a missing key counting as zero;
//   - await returns at once when the count is zero, else subscribes and
//     reads the count again on every message until it is zero.
//
// A missing key means "open". So a failover to a replica that never saw
// trySetCount opens the latch for every waiter at once, and one to a
// replica that missed the count-downs closes it again for good: waiters
// then wait for count-downs nobody will send (catalog row latch-failover).
package latch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
)

// Redisson's CountDownLatchPubSub messages.
const (
	zeroCountMessage = 0
	newCountMessage  = 1
)

// Channel is the latch's channel (Redisson's name).
func Channel(key string) string { return "redisson_countdownlatch__channel__{" + key + "}" }

var (
	// KEYS[1] the count, KEYS[2] the channel; ARGV[1] the message, ARGV[2]
	// the count.
	trySetScript = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[2]);
  redis.call('publish', KEYS[2], ARGV[1]);
  return 1
else
  return 0
end
`)
	// KEYS[1] the count, KEYS[2] the channel; ARGV[1] the zero message.
	countDownScript = redis.NewScript(`
local v = redis.call('decr', KEYS[1]);
if v <= 0 then redis.call('del', KEYS[1]) end;
if v == 0 then redis.call('publish', KEYS[2], ARGV[1]) end;
return v;
`)
)

// Latch is Redisson's RCountDownLatch on one key.
type Latch struct {
	client redis.UniversalClient
	key    string
	cfg    lock.Options
}

// New returns the latch on key.
func New(client redis.UniversalClient, key string, opts ...lock.Option) (*Latch, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: latch: nil redis client", lock.ErrConfig)
	}
	if key == "" {
		return nil, fmt.Errorf("%w: latch: empty key", lock.ErrConfig)
	}
	l := &Latch{client: client, key: key, cfg: lock.DefaultOptions()}
	if err := lock.Apply(&l.cfg, opts); err != nil {
		return nil, fmt.Errorf("latch: %w", err)
	}
	return l, nil
}

// Key is the key holding the count.
func (l *Latch) Key() string { return l.key }

// TrySetCount sets the count when the key does not exist.
func (l *Latch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	if count < 1 {
		return false, fmt.Errorf("%w: latch %s: count %d, want at least 1", lock.ErrConfig, l.key, count)
	}
	n, err := trySetScript.Run(ctx, l.client, []string{l.key, Channel(l.key)}, newCountMessage, count).Int64()
	if err != nil {
		return false, lock.Classify(err, lock.ErrNotObtained)
	}
	return n == 1, nil
}

// CountDown decrements the count.
func (l *Latch) CountDown(ctx context.Context) error {
	err := countDownScript.Run(ctx, l.client, []string{l.key, Channel(l.key)}, zeroCountMessage).Err()
	return lock.Classify(err, lock.ErrNotObtained)
}

// Count is the current count (0 when the key does not exist).
func (l *Latch) Count(ctx context.Context) (int64, error) {
	n, err := l.client.Get(ctx, l.key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, lock.Classify(err, lock.ErrNotObtained)
	}
	return n, nil
}

// Await returns once the count is zero: at once if it is, else after the
// message that the count changed and a read that finds it zero. A read
// that fails is tried again readRetry later (the Redisson client retries
// its commands too), so a waiter outlives a failover. It returns
// ErrNotObtained (wrapped) when ctx ends first.
func (l *Latch) Await(ctx context.Context) error {
	_, err := reentrant.Wait(ctx, l.client, Channel(l.key), 0, func(ctx context.Context) (lock.Lease, time.Duration, error) {
		n, err := l.Count(ctx)
		if err != nil {
			return lock.Lease{}, readRetry, fmt.Errorf("%w: latch %s: reading the count failed: %v", lock.ErrNotObtained, l.key, err)
		}
		if n > 0 {
			return lock.Lease{}, -1, fmt.Errorf("%w: latch %s: count is %d", lock.ErrNotObtained, l.key, n)
		}
		return lock.Lease{}, 0, nil
	})
	return err
}

// readRetry is how long a waiter waits before it reads a count again
// after a read failed.
const readRetry = 100 * time.Millisecond

var _ lock.Latch = (*Latch)(nil)
