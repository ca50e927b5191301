package recipes

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// GetSetTimestamp is the recipe of the Redis SETNX command page, as quoted
// in blog posts on expiry-timestamp locks. The value is an expiry time by
// the client's clock (lock.Options.WallClock, Unix milliseconds): now + TTL
// + 1 ms. The key has no Redis TTL. To acquire:
//
//  1. SETNX k expiry — 1 means acquired;
//  2. GET k — a timestamp not older than now means held: give up this try;
//  3. GETSET k expiry — if the old value is still an expired timestamp the
//     lock is ours; otherwise another client won the race.
//
// Flaws: (a) expiry is decided by each client's clock, so a client whose
// clock runs ahead takes a lock that is still held; (b) the loser of a GETSET
// race has already written its own timestamp over the winner's, so the
// winner's release (below) finds a value that is not its own and cannot
// unlock — the complaint such posts make. The hook sees StepBeforeGetSet between GET
// and GETSET.
//
// Release follows such posts' reading: GET, compare with the lease's
// timestamp in the client, DEL (hook step StepBetweenGetAndDel), so a holder
// whose timestamp was overwritten gets ErrNotHeld. Extend is tumbler's
// addition in the same style: GET, compare, SET a new timestamp; the new
// lease carries the new value.
//
// ValidUntil: start + TTL − drift, counted on the monotonic clock from
// before SETNX: the client believes it holds the lock for TTL after reading
// its wall clock.
type GetSetTimestamp struct{ base }

// NewGetSetTimestamp returns the getset-timestamp recipe on key.
func NewGetSetTimestamp(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*GetSetTimestamp, error) {
	b, err := newBase(NameGetSetTimestamp, client, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return &GetSetTimestamp{b}, nil
}

// Acquire runs SETNX / GET / GETSET, retrying per the configured strategy.
func (r *GetSetTimestamp) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, r.cfg.Retry, r.try)
}

func (r *GetSetTimestamp) stamp() (now int64, stamp string) {
	t := r.cfg.WallClock()
	return t.UnixMilli(), strconv.FormatInt(t.Add(r.ttl+time.Millisecond).UnixMilli(), 10)
}

func (r *GetSetTimestamp) try(ctx context.Context) (lock.Lease, error) {
	start := time.Now()
	now, stamp := r.stamp()
	set, err := r.client.Do(ctx, "setnx", r.key, stamp).Int64()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	if set == 1 {
		return r.lease(stamp, start), nil
	}
	cur, err := r.client.Get(ctx, r.key).Result()
	if errors.Is(err, redis.Nil) {
		return lock.Lease{}, r.notObtained("released between SETNX and GET")
	}
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	held, err := strconv.ParseInt(cur, 10, 64)
	if err != nil {
		return lock.Lease{}, r.notObtained("holds %q, not a timestamp", cur)
	}
	if held >= now {
		return lock.Lease{}, r.notObtained("held until %d, now %d by this client's clock", held, now)
	}
	if err := r.step(ctx, StepBeforeGetSet); err != nil {
		return lock.Lease{}, err
	}
	old, err := r.client.GetSet(ctx, r.key, stamp).Result()
	if errors.Is(err, redis.Nil) {
		return r.lease(stamp, start), nil // the key was free: GETSET just took it
	}
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	if prev, err := strconv.ParseInt(old, 10, 64); err == nil && prev < now {
		return r.lease(stamp, start), nil
	}
	return lock.Lease{}, r.notObtained("another client won the GETSET race (its value %q is now overwritten by ours, %s)", old, stamp)
}

// Release sends GET, compares with the lease's timestamp, then DEL.
func (r *GetSetTimestamp) Release(ctx context.Context, l lock.Lease) error {
	return r.getCompareDel(ctx, l)
}

// Extend sends GET, compares with the lease's timestamp, then SETs a new
// timestamp by the client's clock.
func (r *GetSetTimestamp) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if err := r.checkLease(l); err != nil {
		return lock.Lease{}, err
	}
	start := time.Now()
	_, stamp := r.stamp()
	if err := r.getCompare(ctx, l); err != nil {
		return lock.Lease{}, err
	}
	if err := r.client.Set(ctx, r.key, stamp, 0).Err(); err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotHeld)
	}
	return r.lease(stamp, start), nil
}

// Seed 004's scripts, verbatim: the client passes its clock reading; the
// value is now + timeout; the unlock deletes only when value − begin equals
// the timeout.
var (
	luaTimestampLock = redis.NewScript(`
local now = tonumber(ARGV[1])
local timeout = tonumber(ARGV[2])
local to = now + timeout
local locked = redis.call('SETNX', KEYS[1], to)
if (locked == 1) then
    return 0
end
local kt = redis.call('type', KEYS[1]);
if (kt['ok'] ~= 'string') then
    return 2
end
local keyValue = tonumber(redis.call('get', KEYS[1]))
if (now > keyValue) then
    redis.call('set', KEYS[1], to)
    return 0
end
return 1
`)
	luaTimestampUnlock = redis.NewScript(`
local begin = tonumber(ARGV[1])
local timeout = tonumber(ARGV[2])
local kt = redis.call('type', KEYS[1]);
if (kt['ok'] == 'string') then
    local keyValue = tonumber(redis.call('get', KEYS[1]))
    if ((keyValue - begin) == timeout) then
        redis.call('del', KEYS[1])
        return 0
    end
end
return 1
`)
	// luaTimestampExtend is tumbler's extend in the published style: the same
	// ownership test as the unlock, then a new value from the client's clock.
	luaTimestampExtend = redis.NewScript(`
local begin = tonumber(ARGV[1])
local timeout = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local kt = redis.call('type', KEYS[1]);
if (kt['ok'] == 'string') then
    local keyValue = tonumber(redis.call('get', KEYS[1]))
    if ((keyValue - begin) == timeout) then
        redis.call('set', KEYS[1], now + timeout)
        return 0
    end
end
return 1
`)
)

// LuaTimestamp is the Lua recipe of such posts: one script does SETNX k now+timeout,
// and, when the key holds a timestamp older than now, overwrites it; the
// unlock script deletes the key when its value minus the client's saved
// start equals the timeout. now is the client's clock
// (lock.Options.WallClock, Unix milliseconds). The key has no Redis TTL.
//
// Flaw: atomic, but still client-clock dependent: a client whose clock runs
// ahead sees a held lock as expired and takes it — a double grant. Two
// clients that start in the same millisecond also write the same value and
// can release each other's lock.
//
// The lease's Value is the stored value (start + timeout); the client's
// saved start is Value − TTL. Extend is tumbler's addition in the published
// style (same ownership test, new value from the client's clock).
//
// ValidUntil: start + TTL − drift on the monotonic clock from before the
// script: the client believes it holds the lock for TTL.
type LuaTimestamp struct{ base }

// NewLuaTimestamp returns the lua-timestamp recipe on key.
func NewLuaTimestamp(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*LuaTimestamp, error) {
	b, err := newBase(NameLuaTimestamp, client, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return &LuaTimestamp{b}, nil
}

// Acquire runs the lock script, retrying per the configured strategy.
func (r *LuaTimestamp) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, r.cfg.Retry, r.try)
}

func (r *LuaTimestamp) try(ctx context.Context) (lock.Lease, error) {
	start := time.Now()
	now, timeout := r.cfg.WallClock().UnixMilli(), r.ttl.Milliseconds()
	res, err := luaTimestampLock.Run(ctx, r.client, []string{r.key}, now, timeout).Int64()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	switch res {
	case 0:
		return r.lease(strconv.FormatInt(now+timeout, 10), start), nil
	case 2:
		return lock.Lease{}, r.notObtained("key is not a string")
	}
	return lock.Lease{}, r.notObtained("holds an unexpired timestamp by this client's clock (now %d)", now)
}

// begin recovers the client's saved start from a lease.
func (r *LuaTimestamp) begin(l lock.Lease) (int64, error) {
	if err := r.checkLease(l); err != nil {
		return 0, err
	}
	to, err := strconv.ParseInt(l.Value, 10, 64)
	if err != nil {
		return 0, r.notHeld("lease value %q is not this recipe's timestamp", l.Value)
	}
	return to - r.ttl.Milliseconds(), nil
}

// Release runs the unlock script with the lease's start and the TTL.
func (r *LuaTimestamp) Release(ctx context.Context, l lock.Lease) error {
	begin, err := r.begin(l)
	if err != nil {
		return err
	}
	res, err := luaTimestampUnlock.Run(ctx, r.client, []string{r.key}, begin, r.ttl.Milliseconds()).Int64()
	if err != nil {
		return lock.Classify(err, lock.ErrNotHeld)
	}
	if res != 0 {
		return r.notHeld("value is not %s", l.Value)
	}
	return nil
}

// Extend replaces the timestamp if the key still holds the lease's value.
func (r *LuaTimestamp) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	begin, err := r.begin(l)
	if err != nil {
		return lock.Lease{}, err
	}
	start := time.Now()
	now, timeout := r.cfg.WallClock().UnixMilli(), r.ttl.Milliseconds()
	res, err := luaTimestampExtend.Run(ctx, r.client, []string{r.key}, begin, timeout, now).Int64()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotHeld)
	}
	if res != 0 {
		return lock.Lease{}, r.notHeld("value is not %s", l.Value)
	}
	return r.lease(strconv.FormatInt(now+timeout, 10), start), nil
}
