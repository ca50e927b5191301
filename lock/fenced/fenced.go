// Package fenced is the single-primary lock of package single with a
// fencing token, the remedy Kleppmann gives for the holder that outlives its
// lease (a GC pause, a partition): the protected resource remembers the
// highest token it accepted and rejects lower ones.
//
// The acquire is one Lua script — SET key value NX PX ttl and, only if that
// succeeded, INCR on the per-lock counter key (CounterKey) — so a grant and
// its token can never be separated, and every grant's token is larger than
// every earlier grant's on the same primary. The token travels in
// Lease.Token and survives Extend. Release, extend, WAIT (single.WithWait)
// and retries are package single's, unchanged.
//
// The counter has no expiry: letting it expire would restart tokens at 1.
// The guarantee is only as durable as the counter: a failover to a replica
// that missed the last INCR issues the same token twice (the
// fenced-failover-token-reuse scenario); WithWait narrows that window as it
// does for the lock key. In Redis Cluster both keys must hash to one slot:
// give the lock key a hash tag, e.g. "{orders}".
package fenced

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// CounterKey is the key holding the last token issued for the lock on key.
func CounterKey(key string) string { return key + ":fence" }

var acquireScript = redis.NewScript(`if redis.call("set", KEYS[1], ARGV[1], "nx", "px", ARGV[2]) then return redis.call("incr", KEYS[2]) end return false`)

// setFenced is the single.SetFunc of a fenced lock; a held key makes the
// script return false, which arrives as redis.Nil.
func setFenced(ctx context.Context, c single.Conn, key, value string, ttl time.Duration) (int64, error) {
	return acquireScript.Run(ctx, c, []string{key, CounterKey(key)}, value, ttl.Milliseconds()).Int64()
}

// Lock is a single.Lock whose leases carry fencing tokens.
type Lock struct{ *single.Lock }

// New returns the fenced lock on key. It takes the same options as
// single.New, including single.WithWait.
func New(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	l, err := single.NewWith(setFenced, client, key, ttl, opts...)
	if err != nil {
		return nil, err
	}
	return &Lock{l}, nil
}

var _ lock.Locker = (*Lock)(nil)
