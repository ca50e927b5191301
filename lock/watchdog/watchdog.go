// Package watchdog keeps a lease alive while its holder works, as
// Redisson's lock watchdog does and as blog posts on Redis locks recommend for work of
// unknown length ("每个持有锁的客户端都启动一个后台线程…不断地刷新"): after
// Acquire a goroutine extends the lease every TTL/3 through the wrapped
// lock's own Extend (package single's compare-and-pexpire, Redlock's quorum
// extend, …), so it wraps any variant.
//
// What Redisson's watchdog does not do, and this one does, is tell the
// holder when the lease is gone. Lease.Lost is closed
//   - as soon as a renewal fails definitively (ErrNotHeld: the key expired
//     or belongs to someone else), or
//   - when the lease's validity (ValidUntil) runs out without a successful
//     renewal: after an unknown outcome the watchdog keeps trying until
//     then, and a timer closes Lost at ValidUntil even while a renewal is
//     stuck in flight. Times are monotonic, so a holder stopped (SIGSTOP,
//     a long GC pause) past its validity finds Lost closed on resume and
//     its watchdog does not renew: the renewal checks validity first, and
//     its compare-and-pexpire cannot revive a key that expired meanwhile.
//
// A holder that does not watch Lost is the watchdog-gc-pause scenario
// (Redisson #2665): renewal does not make a paused process safe.
//
// Every renewal step is reported to lock.Options.OnRenew (phases invoke,
// ok, fail, info, lost) so a workload can put renewals in its history.
// Release stops the renewal goroutine and waits for it to exit before
// releasing the latest lease, so no renewal reaches Redis after Release
// returns.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/lock"
)

type config struct{ lock.Options }

// Watchdog is a lock.Locker that renews the leases of the lock it wraps
// until they are released or lost. It is safe for concurrent use.
type Watchdog struct {
	inner lock.Locker
	cfg   config

	mu   sync.Mutex
	held map[string]*renewal // by owner value
}

// New wraps inner. Of the common options only lock.WithRenewObserver
// matters here (OnRenew may be called from several goroutines and must not
// block); retry, drift and timeouts belong to the inner lock.
func New(inner lock.Locker, opts ...lock.Option) (*Watchdog, error) {
	if inner == nil {
		return nil, fmt.Errorf("%w: nil inner lock", lock.ErrConfig)
	}
	if v := reflect.ValueOf(inner); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("%w: nil inner lock (%T)", lock.ErrConfig, inner)
	}
	w := &Watchdog{inner: inner, cfg: config{lock.DefaultOptions()}, held: map[string]*renewal{}}
	if err := lock.Apply(&w.cfg, opts); err != nil {
		return nil, err
	}
	return w, nil
}

// Key is the inner lock's key.
func (w *Watchdog) Key() string { return w.inner.Key() }

// Acquire acquires through the inner lock and starts renewing. The lease's
// Lost channel reports its loss.
func (w *Watchdog) Acquire(ctx context.Context) (lock.Lease, error) {
	lease, err := w.inner.Acquire(ctx)
	if err != nil {
		return lease, err
	}
	r := &renewal{w: w, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	lease.Lost = r.lost
	r.lease = lease
	w.mu.Lock()
	w.held[lease.Value] = r
	w.mu.Unlock()
	r.mu.Lock()
	r.expiry = time.AfterFunc(time.Until(lease.ValidUntil), r.checkExpiry)
	r.mu.Unlock()
	go r.run()
	return lease, nil
}

// Current returns the latest lease of l (its ValidUntil moves with every
// renewal), or l itself when the watchdog does not renew it.
func (w *Watchdog) Current(l lock.Lease) lock.Lease {
	if r := w.lookup(l.Value); r != nil {
		return r.current()
	}
	return l
}

// Release stops renewing l, waits for the renewal goroutine to exit, then
// releases the latest lease through the inner lock. Lost is not closed by
// a release.
func (w *Watchdog) Release(ctx context.Context, l lock.Lease) error {
	w.mu.Lock()
	r := w.held[l.Value]
	delete(w.held, l.Value)
	w.mu.Unlock()
	if r == nil {
		return w.inner.Release(ctx, l)
	}
	r.halt()
	return w.inner.Release(ctx, r.current())
}

// Extend extends l now through the inner lock, besides the background
// renewals. A lease already lost stays lost: ErrNotHeld.
func (w *Watchdog) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	r := w.lookup(l.Value)
	if r == nil {
		return w.inner.Extend(ctx, l)
	}
	if r.isLost() {
		return lock.Lease{}, fmt.Errorf("%w: %q: the watchdog already lost this lease", lock.ErrNotHeld, l.Key)
	}
	next, err := w.inner.Extend(ctx, r.current())
	switch {
	case err == nil:
		return r.renewed(next), nil
	case errors.Is(err, lock.ErrNotHeld):
		r.lose(r.current(), err)
	}
	return lock.Lease{}, err
}

func (w *Watchdog) lookup(value string) *renewal {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held[value]
}

// renewal is the background renewal of one lease.
type renewal struct {
	w *Watchdog

	mu     sync.Mutex
	lease  lock.Lease  // latest, Lost set
	expiry *time.Timer // closes lost at lease.ValidUntil unless renewed

	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

func (r *renewal) current() lock.Lease {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}

func (r *renewal) isLost() bool {
	select {
	case <-r.lost:
		return true
	default:
		return false
	}
}

// renewed records next if it is newer than the lease held (a manual Extend
// and a renewal may race) and moves the expiry timer.
func (r *renewal) renewed(next lock.Lease) lock.Lease {
	next.Lost = r.lost
	r.mu.Lock()
	defer r.mu.Unlock()
	if next.Start.After(r.lease.Start) {
		r.lease = next
		if !r.isLost() {
			r.expiry.Reset(time.Until(next.ValidUntil))
		}
	}
	return r.lease
}

// checkExpiry runs at ValidUntil: the lease is lost unless a renewal moved
// the validity on in the meantime.
func (r *renewal) checkExpiry() {
	cur := r.current()
	if !cur.Valid(time.Now()) {
		r.lose(cur, fmt.Errorf("validity ran out at %v without a successful renewal", cur.ValidUntil.Format(time.StampMicro)))
	}
}

func (r *renewal) lose(l lock.Lease, why error) {
	r.lostOnce.Do(func() {
		r.mu.Lock()
		r.expiry.Stop()
		r.mu.Unlock()
		// The event first: whoever sees Lost closed can rely on the
		// observer having been told why.
		r.event("lost", l, why)
		close(r.lost)
	})
}

func (r *renewal) event(phase string, l lock.Lease, err error) {
	r.w.cfg.Renewed(lock.RenewEvent{Phase: phase, Lease: l, Err: err, Time: time.Now()})
}

// halt stops the renewal goroutine and waits for it to exit.
func (r *renewal) halt() {
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
	r.mu.Lock()
	r.expiry.Stop()
	r.mu.Unlock()
}

// sleepUntil waits for t; false when the renewal was stopped or lost.
func (r *renewal) sleepUntil(t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-r.stop:
		return false
	case <-r.lost:
		return false
	case <-timer.C:
		return true
	}
}

func (r *renewal) run() {
	defer close(r.done)
	cur := r.current()
	next := cur.Start.Add(cur.TTL / 3)
	for r.sleepUntil(next) {
		cur = r.current()
		// After a stop (SIGSTOP, GC) the timer fires late: renewing a lease
		// whose validity is gone would hide the gap from the holder.
		if now := time.Now(); !cur.Valid(now) {
			r.lose(cur, fmt.Errorf("validity ran out %v before the renewal could run", now.Sub(cur.ValidUntil)))
			return
		}
		r.event("invoke", cur, nil)
		ctx, cancel := context.WithDeadline(context.Background(), cur.ValidUntil)
		ext, err := r.w.inner.Extend(ctx, cur)
		cancel()
		switch {
		case err == nil:
			if r.isLost() {
				// Declared lost while the renewal was in flight: keep the
				// newer lease for Release, but a lost lease stays lost.
				r.renewed(ext)
				return
			}
			cur = r.renewed(ext)
			r.event("ok", cur, nil)
			next = cur.Start.Add(cur.TTL / 3)
		case errors.Is(err, lock.ErrNotHeld):
			r.event("fail", cur, err)
			r.lose(cur, err)
			return
		default:
			// Unknown: the key may or may not have been renewed. Try again
			// soon; the expiry timer declares the loss at ValidUntil.
			r.event("info", cur, err)
			next = time.Now().Add(cur.TTL / 10)
		}
	}
}

var _ lock.Locker = (*Watchdog)(nil)
