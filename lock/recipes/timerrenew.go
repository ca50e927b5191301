package recipes

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// timerRenewScript is the timer-renewal blog recipe's script. The lock is a string
// (SET k uuid NX EX), so HEXISTS fails with WRONGTYPE while the key exists
// and returns 0 once it is gone: the PEXPIRE never runs. The published typo
// KEY[1] (which fails too) and its EXPIRE in seconds are corrected so that
// the HEXISTS is the one flaw.
var timerRenewScript = redis.NewScript(`if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`)

// TimerRenew is the blog recipe of renewal by a timer: SET k uuid NX PX ttl,
// and a timer that every TTL/3 runs a renewal script meant to push the TTL
// out while the holder works; released by the Lua compare-and-delete.
//
// Flaw: the renewal script calls HEXISTS on the string lock key, so it never
// renews, and the recipe does not look at the result (in the published recipe a failed
// renewal kills the java.util.Timer thread without a word). The key expires
// under a holder that believes it is renewed, and another client acquires.
//
// Because the client believes every renewal worked, each timer tick is
// reported through lock.Options.Renewed as "invoke" then "ok" with a lease
// whose ValidUntil is pushed out to tick + TTL − drift; Err is never set.
// Extend runs the same script with the same blind trust. ValidUntil of the
// acquired lease: start + TTL − drift from before the SET.
//
// A lease's timer stops when it is released (whatever the outcome) or when
// Close is called; a client that neither releases nor closes keeps ticking.
type TimerRenew struct{ renewer }

// NewTimerRenew returns the timer-renew recipe on key.
func NewTimerRenew(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*TimerRenew, error) {
	b, err := newBase(NameTimerRenew, client, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	r := &TimerRenew{renewer{base: b, timers: map[string]*renewTimer{}}}
	r.renew = r.blind
	return r, nil
}

// blind runs the renewal script and, like the published client, trusts it:
// the timer goes on.
func (r *TimerRenew) blind(ctx context.Context, l lock.Lease) (lock.Lease, bool) {
	r.cfg.Renewed(lock.RenewEvent{Phase: "invoke", Lease: l, Time: time.Now()})
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, r.ttl)
	defer cancel()
	_ = timerRenewScript.Run(rctx, r.client, []string{r.key}, l.Value, r.ttl.Milliseconds()).Err()
	l = r.lease(l.Value, start)
	r.cfg.Renewed(lock.RenewEvent{Phase: "ok", Lease: l, Time: time.Now()})
	return l, true
}

// Extend runs the renewal script and reports success, as the recipe's
// client believes it.
func (r *TimerRenew) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if err := r.checkLease(l); err != nil {
		return lock.Lease{}, err
	}
	next, _ := r.blind(ctx, l)
	return next, nil
}

// renewer is what the timer recipes share: SET NX PX, a renewal timer per
// lease ticking every TTL/3 and running renew until it says to stop, and
// the Lua compare-and-delete release.
type renewer struct {
	base
	renew  func(ctx context.Context, l lock.Lease) (next lock.Lease, goOn bool)
	mu     sync.Mutex
	timers map[string]*renewTimer // by lease value
}

type renewTimer struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Acquire sends SET NX PX and starts the lease's renewal timer.
func (r *renewer) Acquire(ctx context.Context) (lock.Lease, error) {
	l, err := lock.Retry(ctx, r.cfg.Retry, r.setNXPX)
	if err != nil {
		return l, err
	}
	tctx, cancel := context.WithCancel(context.Background())
	t := &renewTimer{cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	r.timers[l.Value] = t
	r.mu.Unlock()
	go r.run(tctx, t, l)
	return l, nil
}

func (r *renewer) run(ctx context.Context, t *renewTimer, l lock.Lease) {
	defer close(t.done)
	tick := time.NewTicker(r.ttl / 3)
	defer tick.Stop()
	for goOn := true; goOn; {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l, goOn = r.renew(ctx, l)
	}
}

// Release stops the lease's timer, then deletes the key if it still holds
// the lease's value (Lua).
func (r *renewer) Release(ctx context.Context, l lock.Lease) error {
	r.stop(l.Value)
	return r.luaRelease(ctx, l)
}

// Close stops every renewal timer of this lock without releasing anything,
// as a crashed client would.
func (r *renewer) Close() {
	r.mu.Lock()
	values := make([]string, 0, len(r.timers))
	for v := range r.timers {
		values = append(values, v)
	}
	r.mu.Unlock()
	for _, v := range values {
		r.stop(v)
	}
}

func (r *renewer) stop(value string) {
	r.mu.Lock()
	t := r.timers[value]
	delete(r.timers, value)
	r.mu.Unlock()
	if t != nil {
		t.cancel()
		<-t.done
	}
}
