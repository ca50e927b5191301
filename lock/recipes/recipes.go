// Package recipes holds the broken Redis lock recipes of blog posts people copy,
// implemented faithfully so that their flaws are real: tumbler runs them to
// show, with a history and a verdict, why each one fails (ARCHITECTURE.md, "The failure modes and their sources").
//
// Do not use these locks to protect anything. Each type documents the source it
// comes from, the flaw, the step names a StepHook sees (so a workload can
// crash or stall a client exactly where its source warns), and what ValidUntil
// means for it: always what that recipe's client believes, never what Redis
// guarantees.
package recipes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// Names of the recipes, as plans and the command line spell them.
const (
	NameSetNXExpire     = "setnx-expire"
	NameSetNXDel        = "setnx-del"
	NameCheckThenDel    = "check-then-del"
	NameGetSetTimestamp = "getset-timestamp"
	NameLuaTimestamp    = "lua-timestamp"
	NameTimerRenew      = "timer-renew"
	NameGiveUpRenew     = "give-up-renew"
)

// Names lists every recipe New accepts.
var Names = []string{NameSetNXExpire, NameSetNXDel, NameCheckThenDel, NameGetSetTimestamp, NameLuaTimestamp, NameTimerRenew, NameGiveUpRenew}

// Step names passed to lock.Options.Hook. A hook error aborts the operation
// there, as a crash of the client would, leaving Redis as the crash would.
const (
	// StepAfterSetNX: setnx-expire, after SETNX succeeded, before PEXPIRE.
	StepAfterSetNX = "after-setnx"
	// StepBetweenGetAndDel: check-then-del and getset-timestamp releases,
	// after GET matched the owner value, before DEL.
	StepBetweenGetAndDel = "between-get-and-del"
	// StepBeforeGetSet: getset-timestamp acquire, after GET found an
	// expired-looking timestamp, before GETSET.
	StepBeforeGetSet = "before-getset"
)

// New returns the recipe called name (one of Names) on key.
func New(name string, client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (lock.Locker, error) {
	switch name {
	case NameSetNXExpire:
		return NewSetNXExpire(client, key, ttl, opts...)
	case NameSetNXDel:
		return NewSetNXDel(client, key, ttl, opts...)
	case NameCheckThenDel:
		return NewCheckThenDel(client, key, ttl, opts...)
	case NameGetSetTimestamp:
		return NewGetSetTimestamp(client, key, ttl, opts...)
	case NameLuaTimestamp:
		return NewLuaTimestamp(client, key, ttl, opts...)
	case NameTimerRenew:
		return NewTimerRenew(client, key, ttl, opts...)
	case NameGiveUpRenew:
		return NewGiveUpRenew(client, key, ttl, opts...)
	}
	return nil, fmt.Errorf("%w: unknown recipe %q (known: %v)", lock.ErrConfig, name, Names)
}

// base is what every recipe shares: one client, one key, one TTL.
type base struct {
	client redis.UniversalClient
	key    string
	ttl    time.Duration
	cfg    lock.Options
}

func newBase(name string, client redis.UniversalClient, key string, ttl time.Duration, opts []lock.Option) (base, error) {
	if client == nil {
		return base{}, fmt.Errorf("%w: %s: nil redis client", lock.ErrConfig, name)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return base{}, fmt.Errorf("%s: %w", name, err)
	}
	b := base{client: client, key: key, ttl: ttl, cfg: lock.DefaultOptions()}
	if err := lock.Apply(&b.cfg, opts); err != nil {
		return base{}, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// Key is the Redis key this lock guards.
func (b *base) Key() string { return b.key }

// lease is the lease the recipe's client believes in: TTL counted from
// before the first request, minus the drift allowance.
func (b *base) lease(value string, start time.Time) lock.Lease {
	return lock.Lease{Key: b.key, Value: value, Start: start, TTL: b.ttl, ValidUntil: b.cfg.ValidUntil(start, b.ttl)}
}

func (b *base) checkLease(l lock.Lease) error {
	if l.Key != b.key {
		return fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, l.Key, b.key)
	}
	return nil
}

func (b *base) notObtained(why string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", lock.ErrNotObtained, b.key, fmt.Sprintf(why, args...))
}

func (b *base) notHeld(why string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", lock.ErrNotHeld, b.key, fmt.Sprintf(why, args...))
}

// step runs the hook. Its error means the client "crashed" at step: what it
// had sent stays in Redis, so the outcome is unknown to the caller.
func (b *base) step(ctx context.Context, step string) error {
	if err := b.cfg.Step(ctx, step); err != nil {
		return fmt.Errorf("%w: %s: aborted at step %q: %w", lock.ErrUnknown, b.key, step, err)
	}
	return nil
}

// setNXPX is the atomic acquire most recipes end up with (SET k v NX PX ttl).
func (b *base) setNXPX(ctx context.Context) (lock.Lease, error) {
	value := b.cfg.NewValue()
	start := time.Now()
	ok, err := b.client.SetNX(ctx, b.key, value, b.ttl).Result()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	if !ok {
		return lock.Lease{}, b.notObtained("held by another client")
	}
	return b.lease(value, start), nil
}

// The safe Lua scripts (the Redis documentation and blog posts), used by recipes
// whose flaw lies elsewhere so that each recipe shows only its own flaw.
var (
	compareAndDelete  = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	compareAndPExpire = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
)

func (b *base) luaRelease(ctx context.Context, l lock.Lease) error {
	if err := b.checkLease(l); err != nil {
		return err
	}
	n, err := compareAndDelete.Run(ctx, b.client, []string{b.key}, l.Value).Int64()
	if err != nil {
		return lock.Classify(err, lock.ErrNotHeld)
	}
	if n == 0 {
		return b.notHeld("owner value %q not found", l.Value)
	}
	return nil
}

func (b *base) luaExtend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if err := b.checkLease(l); err != nil {
		return lock.Lease{}, err
	}
	start := time.Now()
	n, err := compareAndPExpire.Run(ctx, b.client, []string{b.key}, l.Value, b.ttl.Milliseconds()).Int64()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotHeld)
	}
	if n == 0 {
		return lock.Lease{}, b.notHeld("owner value %q not found", l.Value)
	}
	return b.lease(l.Value, start), nil
}

// getCompare is the client-side ownership check of the GET-then-act
// recipes: GET, then compare with the lease's value in the client. Being a
// separate command, it proves nothing about the key a moment later.
func (b *base) getCompare(ctx context.Context, l lock.Lease) error {
	cur, err := b.client.Get(ctx, b.key).Result()
	if errors.Is(err, redis.Nil) {
		return b.notHeld("key is gone")
	}
	if err != nil {
		return lock.Classify(err, lock.ErrNotHeld)
	}
	if cur != l.Value {
		return b.notHeld("holds %q, not the lease's %q", cur, l.Value)
	}
	return nil
}

// del sends a plain DEL, whoever holds the key; gone is the reason given
// when there was nothing to delete.
func (b *base) del(ctx context.Context, gone string) error {
	n, err := b.client.Del(ctx, b.key).Result()
	if err != nil {
		return lock.Classify(err, lock.ErrNotHeld)
	}
	if n == 0 {
		return b.notHeld("%s", gone)
	}
	return nil
}

// pexpire sends a plain PEXPIRE of the TTL, whoever holds the key, and
// returns l renewed from start; gone is the reason given when there was no
// key.
func (b *base) pexpire(ctx context.Context, l lock.Lease, start time.Time, gone string) (lock.Lease, error) {
	ok, err := b.client.PExpire(ctx, b.key, b.ttl).Result()
	if err != nil {
		return lock.Lease{}, lock.Classify(err, lock.ErrNotHeld)
	}
	if !ok {
		return lock.Lease{}, b.notHeld("%s", gone)
	}
	return b.lease(l.Value, start), nil
}

// getCompareDel is the client-side release of check-then-del and
// getset-timestamp: GET, compare in the client, DEL. Nothing stops the key
// from changing hands between the GET and the DEL.
func (b *base) getCompareDel(ctx context.Context, l lock.Lease) error {
	if err := b.checkLease(l); err != nil {
		return err
	}
	if err := b.getCompare(ctx, l); err != nil {
		return err
	}
	if err := b.step(ctx, StepBetweenGetAndDel); err != nil {
		return err
	}
	return b.del(ctx, "key vanished between GET and DEL")
}
