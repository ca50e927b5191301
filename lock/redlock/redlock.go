// Package redlock is the Redlock algorithm of the Redis documentation
// ("Distributed Locks with Redis") and of seed 000, on N independent
// primaries:
//
//  1. note the start time; send SET key value NX PX ttl (package single's
//     command) to every node at once, each bounded by a per-node timeout
//     small against the TTL, so a dead node cannot eat the validity;
//  2. the lock is held only if a quorum (N/2+1) of nodes granted it AND
//     time is left: now < start + TTL − drift (lock.Options.ValidUntil);
//  3. otherwise give it back everywhere it may have been set and fail;
//     Acquire retries through lock.Retry after the strategy's delay plus a
//     random share of its Jitter — give it one, so that contenders that
//     split the vote do not collide again in lockstep (default: try once).
//
// Release sends the compare-and-delete to every node; Extend needs a quorum
// of compare-and-pexpire finishing within the new validity.
//
// The docs send requests one node after the other; here they go out in
// parallel (as redsync does), so the fan-out costs the slowest answer, not
// the sum. Two deviations from the docs, both strictly narrower: a failed
// acquire releases only the nodes that granted it or whose answer was lost
// — a node that answered "held" cannot carry our fresh random value — and a
// node's timeout is enforced by the fan-out itself, whatever the client's
// settings, so a straggler may still apply its command after the call
// returned. For a SET that straggler leaves our key until it expires (a
// liveness cost only); for a compare-and-pexpire or compare-and-delete it is
// harmless.
//
// Errors of a failed Acquire: ErrUnknown when the nodes that may still
// carry our value after the cleanup (granted or undecided, and not
// confirmed released) could form a quorum — we may be the de facto holder
// until the TTL runs out; ErrNotObtained otherwise. Release returns nil when
// a quorum deleted the key; ErrUnknown when the nodes that failed to answer
// (anything but "not ours") could complete a quorum; ErrNotHeld otherwise.
// Extend returns the new lease with a quorum in time; ErrUnknown when the
// nodes whose reply was lost could complete a quorum; ErrNotHeld otherwise,
// also for a quorum that came too late.
//
// What Redlock cannot survive is the subject of the scenarios: a node of the
// holder's majority that restarts empty, a forward clock jump on a node, a
// holder paused past its validity (Kleppmann vs antirez).
package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// DefaultNodeTimeout is the per-node timeout for ttl when none is set: the
// Redis docs' "5-50 ms for a 10 s TTL" taken at its upper end (TTL/200),
// but never below 50 ms, since a scheduling hiccup on a loaded two-core
// machine easily exceeds a few milliseconds and would fail healthy nodes,
// and never above TTL/10: requests run in parallel, so even a node that
// never answers costs at most a tenth of the validity.
func DefaultNodeTimeout(ttl time.Duration) time.Duration {
	return min(max(ttl/200, 50*time.Millisecond), ttl/10)
}

type config struct{ lock.Options }

// Lock is a Redlock on one key over N independent primaries. It is safe for
// concurrent use.
type Lock struct {
	clients     []redis.UniversalClient
	key         string
	ttl         time.Duration
	quorum      int
	nodeTimeout time.Duration
	cfg         config
	attempt     func(context.Context) (lock.Lease, error)
}

// New returns the Redlock on key over clients, one per independent
// primary. N must be odd: with an even N the quorum N/2+1 tolerates no
// more failed nodes than N−1 nodes would, and a contest can split N/2 to
// N/2 with nobody winning.
func New(clients []redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	n := len(clients)
	if n == 0 {
		return nil, fmt.Errorf("%w: no redis clients: Redlock needs an odd number of independent primaries", lock.ErrConfig)
	}
	if n%2 == 0 {
		return nil, fmt.Errorf("%w: %d nodes is even: its quorum %d tolerates %d failed nodes, no more than %d nodes would, and a contest can split %d to %d with no winner; use an odd number", lock.ErrConfig, n, n/2+1, n/2-1, n-1, n/2, n/2)
	}
	seen := make(map[redis.UniversalClient]int, n)
	for i, c := range clients {
		if err := single.CheckClient(c); err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		if j, dup := seen[c]; dup {
			return nil, fmt.Errorf("%w: clients %d and %d are the same client: one node would vote twice", lock.ErrConfig, j, i)
		}
		seen[c] = i
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, err
	}
	l := &Lock{clients: clients, key: key, ttl: ttl, quorum: n/2 + 1, cfg: config{lock.DefaultOptions()}}
	if err := lock.Apply(&l.cfg, opts); err != nil {
		return nil, err
	}
	if l.nodeTimeout = l.cfg.NodeTimeout; l.nodeTimeout == 0 {
		l.nodeTimeout = DefaultNodeTimeout(ttl)
	}
	if d := l.cfg.Drift(ttl); d >= ttl {
		return nil, fmt.Errorf("%w: drift allowance %v leaves no validity of the TTL %v", lock.ErrConfig, d, ttl)
	}
	l.attempt = l.tryAcquire
	return l, nil
}

// Key is the Redis key of the lock on every node.
func (l *Lock) Key() string { return l.key }

// Quorum is the number of nodes that must agree: N/2+1.
func (l *Lock) Quorum() int { return l.quorum }

// NodeTimeout is the bound on one request to one node.
func (l *Lock) NodeTimeout() time.Duration { return l.nodeTimeout }

// Acquire tries to take the lock on a quorum, following the retry strategy.
func (l *Lock) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, l.cfg.Retry, l.attempt)
}

func (l *Lock) tryAcquire(ctx context.Context) (lock.Lease, error) {
	value := l.cfg.NewValue()
	start := time.Now()
	res := l.fanout(ctx, nil, func(ctx context.Context, c redis.UniversalClient) error {
		_, err := single.SetNX(ctx, c, l.key, value, l.ttl)
		return err
	})
	granted, maybe := 0, make([]bool, len(res))
	for i, err := range res {
		if errors.Is(err, redis.Nil) {
			res[i] = errHeld
		} else {
			res[i] = lock.Classify(err, lock.ErrNotObtained)
		}
		if err == nil {
			granted++
		}
		maybe[i] = err == nil || errors.Is(res[i], lock.ErrUnknown)
	}
	if granted >= l.quorum {
		if err := l.cfg.Step(ctx, lock.StepGranted); err != nil {
			l.cleanup(ctx, value, maybe)
			return lock.Lease{}, fmt.Errorf("%w: %q: %w", lock.ErrUnknown, l.key, err)
		}
	}
	end := time.Now()
	validUntil := l.cfg.ValidUntil(start, l.ttl)
	if granted >= l.quorum && end.Before(validUntil) {
		return lock.Lease{Key: l.key, Value: value, Start: start, TTL: l.ttl, ValidUntil: validUntil}, nil
	}
	var why string
	if granted >= l.quorum {
		why = fmt.Sprintf("quorum reached after %v, past the validity (TTL %v − drift %v)", end.Sub(start), l.ttl, l.cfg.Drift(l.ttl))
	} else {
		why = fmt.Sprintf("granted by %d of %d nodes, quorum %d (%s)", granted, len(res), l.quorum, summary(res))
	}
	if left := l.cleanup(ctx, value, maybe); left >= l.quorum {
		return lock.Lease{}, fmt.Errorf("%w: %q: %s, and %d nodes may still carry our value after the cleanup", lock.ErrUnknown, l.key, why, left)
	}
	return lock.Lease{}, fmt.Errorf("%w: %q: %s", lock.ErrNotObtained, l.key, why)
}

// cleanup releases value on the nodes marked in on and returns how many of
// them may still carry it. It runs even when the caller's context is done.
func (l *Lock) cleanup(ctx context.Context, value string, on []bool) int {
	some := false
	for _, b := range on {
		some = some || b
	}
	if !some {
		return 0
	}
	res := l.fanout(context.WithoutCancel(ctx), on, func(ctx context.Context, c redis.UniversalClient) error {
		return single.Release(ctx, c, l.key, value)
	})
	left := 0
	for i, err := range res {
		if on[i] && err != nil && !errors.Is(err, single.ErrNotOwner) {
			left++
		}
	}
	return left
}

// Release deletes the key on every node that still holds the lease's value.
func (l *Lock) Release(ctx context.Context, lease lock.Lease) error {
	res := l.fanout(ctx, nil, func(ctx context.Context, c redis.UniversalClient) error {
		return single.Release(ctx, c, l.key, lease.Value)
	})
	done, undecided := count(res, func(err error) bool { return !errors.Is(err, single.ErrNotOwner) })
	switch {
	case done >= l.quorum:
		return nil
	case done+undecided >= l.quorum:
		return fmt.Errorf("%w: %q released on %d of %d nodes, %d undecided (quorum %d): %s", lock.ErrUnknown, l.key, done, len(res), undecided, l.quorum, summary(res))
	default:
		return fmt.Errorf("%w: %q was held on only %d of %d nodes (quorum %d): %s", lock.ErrNotHeld, l.key, done, len(res), l.quorum, summary(res))
	}
}

// Extend renews the lease on every node that still holds its value. It
// succeeds with a quorum of renewals that finished within the new validity.
func (l *Lock) Extend(ctx context.Context, lease lock.Lease) (lock.Lease, error) {
	start := time.Now()
	res := l.fanout(ctx, nil, func(ctx context.Context, c redis.UniversalClient) error {
		return single.Extend(ctx, c, l.key, lease.Value, l.ttl)
	})
	end := time.Now()
	validUntil := l.cfg.ValidUntil(start, l.ttl)
	done, undecided := count(res, func(err error) bool { return errors.Is(err, lock.ErrUnknown) })
	switch {
	case done >= l.quorum && end.Before(validUntil):
		lease.Start, lease.TTL, lease.ValidUntil = start, l.ttl, validUntil
		return lease, nil
	case done >= l.quorum:
		return lock.Lease{}, fmt.Errorf("%w: %q: the extend took %v, past the new validity", lock.ErrNotHeld, l.key, end.Sub(start))
	case done+undecided >= l.quorum:
		return lock.Lease{}, fmt.Errorf("%w: %q extended on %d of %d nodes, %d undecided (quorum %d): %s", lock.ErrUnknown, l.key, done, len(res), undecided, l.quorum, summary(res))
	default:
		return lock.Lease{}, fmt.Errorf("%w: %q held on only %d of %d nodes (quorum %d): %s", lock.ErrNotHeld, l.key, done, len(res), l.quorum, summary(res))
	}
}

// count splits per-node results: done where the script succeeded,
// undecided where the error leaves the question open. For a release the
// question is "did this node hold our value", open unless the script said
// no; for an extend it is "did the renewal take", open only when the reply
// was lost.
func count(res []error, open func(error) bool) (done, undecided int) {
	for _, err := range res {
		switch {
		case err == nil:
			done++
		case open(err):
			undecided++
		}
	}
	return done, undecided
}

// errHeld is a node's "held by someone else" answer to the SET NX.
var errHeld = fmt.Errorf("%w: held by another owner", lock.ErrNotObtained)

// errNodeTimeout marks a node that did not answer within the node timeout.
var errNodeTimeout = fmt.Errorf("%w: no answer within the node timeout", lock.ErrUnknown)

// round is one fan-out in flight. Each node's goroutine fills its own slot
// and marks it done; the last one to finish wakes the caller, which is
// thus woken once per fan-out rather than once per node.
type round struct {
	res  []error
	done []atomic.Bool
	left atomic.Int32
	all  chan struct{}
}

// fanout runs op on the nodes marked in only (all when only is nil) in
// parallel and returns each node's error, in node order. It returns when
// every node answered or the node timeout (or ctx) ran out; a node that has
// not answered by then gets errNodeTimeout, and its goroutine finishes on
// its own.
func (l *Lock) fanout(ctx context.Context, only []bool, op func(context.Context, redis.UniversalClient) error) []error {
	n := len(l.clients)
	r := &round{res: make([]error, n), done: make([]atomic.Bool, n), all: make(chan struct{})}
	nctx, cancel := context.WithTimeout(ctx, l.nodeTimeout)
	defer cancel()
	sent := int32(0)
	for i := range l.clients {
		if only == nil || only[i] {
			sent++
		}
	}
	r.left.Store(sent)
	for i, c := range l.clients {
		if only != nil && !only[i] {
			continue
		}
		spawn(func() {
			r.res[i] = op(nctx, c)
			r.done[i].Store(true)
			if r.left.Add(-1) == 0 {
				close(r.all)
			}
		})
	}
	select {
	case <-r.all:
		return r.res // every writer is done
	case <-nctx.Done():
	}
	// Stragglers may still write their slots: copy what is done.
	res := make([]error, n)
	for i := range res {
		switch {
		case only != nil && !only[i]:
		case r.done[i].Load():
			res[i] = r.res[i]
		default:
			res[i] = errNodeTimeout
		}
	}
	return res
}

// idle hands work to goroutines parked after an earlier fan-out. A fresh
// goroutine per node request grows its stack through go-redis's call depth
// every time: runtime.newstack was a tenth of a Redlock cycle's CPU, and a
// parked goroutine keeps its grown stack. Parked goroutines exit after
// idleFor without work.
var idle = make(chan func())

const idleFor = 5 * time.Second

func spawn(f func()) {
	select {
	case idle <- f:
	default:
		go serve(f)
	}
}

func serve(f func()) {
	t := time.NewTimer(idleFor)
	defer t.Stop()
	for {
		f()
		t.Reset(idleFor)
		select {
		case f = <-idle:
		case <-t.C:
			return
		}
	}
}

// summary renders the per-node errors for an error message.
func summary(res []error) string {
	s := ""
	for i, err := range res {
		if err == nil {
			continue
		}
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("node %d: %v", i, err)
	}
	if s == "" {
		return "no node errors"
	}
	return s
}

var _ lock.Locker = (*Lock)(nil)
