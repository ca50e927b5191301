package recipes

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// SetNXExpire is the "setnx + expire" recipe of copied blog posts (and
// the first attempt of many): SETNX k v, then PEXPIRE k ttl as a second
// command.
//
// Flaw: the two commands are not atomic. A client that crashes after SETNX
// and before PEXPIRE leaves a key with no TTL that nobody can ever take. The
// hook sees StepAfterSetNX between them; a hook error is that crash.
//
// The safe Lua compare-and-delete / compare-and-pexpire (the Redis documentation,
// 001) release and extend it, so that the crash window is its only flaw.
// PEXPIRE rather than the published EXPIRE: EXPIRE counts whole seconds, and a
// sub-second TTL would round to a delete.
//
// ValidUntil: start + TTL − drift, counted from before SETNX, as its client
// believes; after a crash at StepAfterSetNX the key never expires.
type SetNXExpire struct{ base }

// NewSetNXExpire returns the setnx-expire recipe on key.
func NewSetNXExpire(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*SetNXExpire, error) {
	b, err := newBase(NameSetNXExpire, client, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return &SetNXExpire{b}, nil
}

// Acquire sends SETNX, then PEXPIRE, retrying per the configured strategy.
func (r *SetNXExpire) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, r.cfg.Retry, r.try)
}

func (r *SetNXExpire) try(ctx context.Context) (lock.Lease, error) {
	value := r.cfg.NewValue()
	start := time.Now()
	set, err := r.client.Do(ctx, "setnx", r.key, value).Int64()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	if set == 0 {
		return lock.Lease{}, r.notObtained("held by another client")
	}
	if err := r.step(ctx, StepAfterSetNX); err != nil {
		return lock.Lease{}, err
	}
	ok, err := r.client.PExpire(ctx, r.key, r.ttl).Result()
	if err != nil {
		// SETNX took the key: whatever PEXPIRE did, the caller may own a
		// key without a TTL.
		return lock.Lease{}, fmt.Errorf("%w: %s: SETNX took the key, PEXPIRE failed: %w", lock.ErrUnknown, r.key, err)
	}
	if !ok {
		return lock.Lease{}, r.notObtained("key vanished between SETNX and PEXPIRE")
	}
	return r.lease(value, start), nil
}

// Release deletes the key if it still holds the lease's value (Lua).
func (r *SetNXExpire) Release(ctx context.Context, l lock.Lease) error { return r.luaRelease(ctx, l) }

// Extend sets the TTL again if the key still holds the lease's value (Lua).
func (r *SetNXExpire) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	return r.luaExtend(ctx, l)
}

// SetNXDel is the recipe of blog posts (release by plain DEL) and many first
// attempt: SET k v NX PX ttl (atomic), released by a plain DEL.
//
// Flaw: DEL does not check the owner. A holder that outlives its TTL (a GC
// pause, a slow request) deletes the next holder's lock, and anyone can
// release anyone's lock. Extend is the same owner-blind PEXPIRE a user of
// this recipe would write: it renews whoever holds the key. The stored value
// is a fresh random string only so tests can tell holders apart; the recipe
// never reads it.
//
// ValidUntil: start + TTL − drift, counted from before the SET.
type SetNXDel struct{ base }

// NewSetNXDel returns the setnx-del recipe on key.
func NewSetNXDel(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*SetNXDel, error) {
	b, err := newBase(NameSetNXDel, client, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return &SetNXDel{b}, nil
}

// Acquire sends SET NX PX, retrying per the configured strategy.
func (r *SetNXDel) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, r.cfg.Retry, r.setNXPX)
}

// Release sends DEL, whoever holds the key. ErrNotHeld only when there was
// no key to delete.
func (r *SetNXDel) Release(ctx context.Context, l lock.Lease) error {
	if err := r.checkLease(l); err != nil {
		return err
	}
	return r.del(ctx, "key is gone")
}

// Extend sends PEXPIRE, whoever holds the key. ErrNotHeld only when there
// was no key.
func (r *SetNXDel) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if err := r.checkLease(l); err != nil {
		return lock.Lease{}, err
	}
	return r.pexpire(ctx, l, time.Now(), "key is gone")
}

// CheckThenDel is the "UUID 防误删" recipe of blog posts: SET k uuid NX
// PX ttl, released by GET, a comparison in the client, then DEL.
//
// Flaw: GET and DEL are two commands. If the lease expires between them and
// another client acquires, the DEL frees the new holder's lock. The hook
// sees StepBetweenGetAndDel there. Extend follows the same pattern (GET,
// compare, PEXPIRE) with the same window.
//
// ValidUntil: start + TTL − drift, counted from before the SET.
type CheckThenDel struct{ base }

// NewCheckThenDel returns the check-then-del recipe on key.
func NewCheckThenDel(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*CheckThenDel, error) {
	b, err := newBase(NameCheckThenDel, client, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	return &CheckThenDel{b}, nil
}

// Acquire sends SET NX PX, retrying per the configured strategy.
func (r *CheckThenDel) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, r.cfg.Retry, r.setNXPX)
}

// Release sends GET, compares the value in the client, then sends DEL.
func (r *CheckThenDel) Release(ctx context.Context, l lock.Lease) error {
	return r.getCompareDel(ctx, l)
}

// Extend sends GET, compares the value in the client, then sends PEXPIRE.
func (r *CheckThenDel) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if err := r.checkLease(l); err != nil {
		return lock.Lease{}, err
	}
	start := time.Now()
	if err := r.getCompare(ctx, l); err != nil {
		return lock.Lease{}, err
	}
	return r.pexpire(ctx, l, start, "key vanished between GET and PEXPIRE")
}
