package recipes

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// GiveUpRenew is a lock watchdog that gives up at the first failed renewal,
// as Redisson's did (issue #775; its renewal task logged "Can't update
// lock … expiration" and did not schedule itself again, and issues #2515
// and #3332 and the retry added after them are about the same): SET k v NX
// PX ttl, and a timer that every TTL/3 extends the lease with the correct
// compare-and-pexpire script, released by the compare-and-delete.
//
// Flaw: a renewal that fails — a timeout, a refused connection, a brief
// network blip shorter than the lease — stops the timer for good, and the
// holder is not told (Redisson's lock() gives no lease to watch). The key
// expires TTL after the last renewal that worked while the holder goes on
// working, and another client acquires. One retry would have kept it.
//
// Each renewal is reported through lock.Options.Renewed: "invoke", then
// "ok" with the lease renewed from before the script (ValidUntil: that
// start + TTL − drift), or "fail" (the key was not ours) or "info" (an
// unknown outcome: a timeout, a connection lost) with the error, after
// which nothing more is reported: the client's lease is what the last renewal that worked
// left it. Extend runs the same script once. ValidUntil of the acquired
// lease: start + TTL − drift from before the SET.
//
// A lease's timer stops at its first failed renewal, when it is released
// (whatever the outcome) or when Close is called.
type GiveUpRenew struct{ renewer }

// NewGiveUpRenew returns the give-up-renew recipe on key.
func NewGiveUpRenew(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*GiveUpRenew, error) {
	b, err := newBase(NameGiveUpRenew, client, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	r := &GiveUpRenew{renewer{base: b, timers: map[string]*renewTimer{}}}
	r.renew = r.once
	return r, nil
}

// once is one renewal; the timer goes on only if it worked.
func (r *GiveUpRenew) once(ctx context.Context, l lock.Lease) (lock.Lease, bool) {
	r.cfg.Renewed(lock.RenewEvent{Phase: "invoke", Lease: l, Time: time.Now()})
	rctx, cancel := context.WithTimeout(ctx, r.ttl)
	defer cancel()
	next, err := r.luaExtend(rctx, l)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return l, false // released meanwhile: not a failure of the renewal
		}
		phase := "fail"
		if errors.Is(err, lock.ErrUnknown) {
			phase = "info" // a timeout, a connection lost: it may have renewed
		}
		r.cfg.Renewed(lock.RenewEvent{Phase: phase, Lease: l, Err: err, Time: time.Now()})
		return l, false
	}
	r.cfg.Renewed(lock.RenewEvent{Phase: "ok", Lease: next, Time: time.Now()})
	return next, true
}

// Extend extends the lease once with compare-and-pexpire.
func (r *GiveUpRenew) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	return r.luaExtend(ctx, l)
}
