// Package redlock is the Redlock algorithm of the Redis documentation
// ("Distributed Locks with Redis") as that page describes it, on N independent
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
// The docs send requests one node after the other; here they go out to
// every node before any reply is read (see conn.go: one pipelined
// connection per node, replies in send order), and Acquire, Release and
// Extend return as soon as a quorum succeeded, without waiting for the
// other nodes; a failure waits for every node (or the node timeout). A lock
// with a node served through go-redis (see New) waits for every node, as
// there a node's commands may take different pooled connections and a
// release could overtake a late SET. What the nodes not waited for do
// afterwards cannot change the answer:
//
//   - Acquire: a late grant puts our fresh random value on one more node.
//     The lease's ValidUntil counts from before the first request, and every
//     node's copy expires a TTL after that node applied it, so it is no less
//     safe than a grant that came in time. Release sends the
//     compare-and-delete to every node, and on a node's connection it is
//     written after the SET, so the server applies the SET first and the
//     delete removes the late grant. A holder that never releases leaves
//     it until it expires, as with any grant.
//   - Release: success means a quorum deleted the key, so no quorum can
//     carry our value any more whatever the rest do; a straggler that fails
//     leaves our key until it expires (a liveness cost, as when a node times
//     out).
//   - Extend: a late renewal prolongs a key that carries our value; the new
//     lease counts from before the extend was sent.
//
// Two deviations from the docs, both strictly narrower: a failed acquire
// releases only the nodes that granted it or whose answer is unknown — a
// node that answered "held" cannot carry our fresh random value — and a
// node's timeout is enforced by the fan-out itself, whatever the client's
// settings, so a straggler may still apply its command after the call
// returned. For a SET that straggler leaves our key until it expires or a
// later release of this process removes it (a liveness cost only); for a
// compare-and-pexpire or compare-and-delete it is harmless.
//
// Errors of a failed Acquire: ErrUnknown when the nodes that may still
// carry our value after the cleanup (granted or undecided, and not
// confirmed released) could form a quorum — we may be the de facto holder
// until the TTL runs out; ErrNotObtained otherwise. A release confirms a
// node only if it is known to have been applied after the SET: the SET had
// answered, or both went out on the same connection. Release returns nil
// when a quorum deleted the key; ErrUnknown when the nodes that failed to
// answer (anything but "not ours") could complete a quorum; ErrNotHeld
// otherwise. Extend returns the new lease with a quorum in time; ErrUnknown
// when the nodes whose reply was lost could complete a quorum; ErrNotHeld
// otherwise, also for a quorum that came too late.
//
// What Redlock cannot survive is the subject of the scenarios: a node of the
// holder's majority that restarts empty, a forward clock jump on a node, a
// holder paused past its validity (Kleppmann vs antirez).
package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	clients []redis.UniversalClient
	// direct[i] is clients[i] when the pipelined transport serves it, nil
	// when requests go through go-redis (see directClient).
	direct []*redis.Client
	// early: every node is on the pipelined transport, so a fan-out may
	// answer at quorum (see the package comment).
	early       bool
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
//
// Requests to a *redis.Client go through a pipelined connection of the
// lock's own, dialled with the client's options (see conn.go), not through
// the client's pool: hooks added with AddHook do not see them, and closing
// the client does not close that connection (it closes after 5 s unused).
// Other clients, and clients with OnConnect, a credentials provider, a
// Limiter or TLS, are used through go-redis, one goroutine per node
// request, and the lock then waits for every node's answer.
func New(clients []redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	n := len(clients)
	if n == 0 {
		return nil, fmt.Errorf("%w: no redis clients: Redlock needs an odd number of independent primaries", lock.ErrConfig)
	}
	if n%2 == 0 {
		return nil, fmt.Errorf("%w: %d nodes is even: its quorum %d tolerates %d failed nodes, no more than %d nodes would, and a contest can split %d to %d with no winner; use an odd number", lock.ErrConfig, n, n/2+1, n/2-1, n-1, n/2, n/2)
	}
	seen := make(map[redis.UniversalClient]int, n)
	direct := make([]*redis.Client, n)
	early := true
	for i, c := range clients {
		if err := single.CheckClient(c); err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		if j, dup := seen[c]; dup {
			return nil, fmt.Errorf("%w: clients %d and %d are the same client: one node would vote twice", lock.ErrConfig, j, i)
		}
		seen[c] = i
		direct[i] = directClient(c)
		early = early && direct[i] != nil
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, err
	}
	l := &Lock{clients: clients, direct: direct, early: early, key: key, ttl: ttl, quorum: n/2 + 1, cfg: config{lock.DefaultOptions()}}
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
	res, gen := l.fanout(ctx, request{op: opSet, key: l.key, value: value, ttl: l.ttl}, nil, l.quorum)
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
			l.cleanup(ctx, value, maybe, res, gen)
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
	if left := l.cleanup(ctx, value, maybe, res, gen); left >= l.quorum {
		return lock.Lease{}, fmt.Errorf("%w: %q: %s, and %d nodes may still carry our value after the cleanup", lock.ErrUnknown, l.key, why, left)
	}
	return lock.Lease{}, fmt.Errorf("%w: %q: %s", lock.ErrNotObtained, l.key, why)
}

// cleanup releases value on the nodes marked in on and returns how many of
// them may still carry it; set and setGen are the acquire's results and
// connections. A node is clear when the compare-and-delete ran and was
// applied after the SET: the SET had answered (set[i] is not unknown), or
// the two went out on the same connection, whose commands the server
// applies in order. A delete that overtook a SET still in flight proves
// nothing. The cleanup waits for every node (or the node timeout) and runs
// even when the caller's context is done.
func (l *Lock) cleanup(ctx context.Context, value string, on []bool, set []error, setGen []uint64) int {
	res, gen := l.fanout(context.WithoutCancel(ctx), request{op: opRelease, key: l.key, value: value}, on, len(on)+1)
	left := 0
	for i, err := range res {
		if !on[i] {
			continue
		}
		ran := err == nil || errors.Is(err, single.ErrNotOwner)
		ordered := !errors.Is(set[i], lock.ErrUnknown) || (gen[i] != 0 && gen[i] == setGen[i])
		if !ran || !ordered {
			left++
		}
	}
	return left
}

// Release deletes the key on every node that still holds the lease's value.
func (l *Lock) Release(ctx context.Context, lease lock.Lease) error {
	res, _ := l.fanout(ctx, request{op: opRelease, key: l.key, value: lease.Value}, nil, l.quorum)
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
	res, _ := l.fanout(ctx, request{op: opExtend, key: l.key, value: lease.Value, ttl: l.ttl}, nil, l.quorum)
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

// errNotAwaited marks a node whose answer the fan-out did not wait for,
// because a quorum had already succeeded.
var errNotAwaited = fmt.Errorf("%w: not awaited (a quorum had already answered)", lock.ErrUnknown)

// round is one fan-out in flight: the transports deliver each node's
// result, and the caller is woken once, when need nodes succeeded or every
// node answered. Results delivered after the caller stopped waiting are
// dropped.
type round struct {
	mu       sync.Mutex
	res      []error
	answered []bool
	pending  int // nodes sent to and not answered
	ok, need int
	closed   bool
	wake     chan struct{} // buffered: deliver never blocks
}

func (r *round) deliver(i int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.answered[i] {
		return
	}
	r.res[i], r.answered[i] = err, true
	r.pending--
	if err == nil {
		r.ok++
	}
	if r.pending == 0 || r.ok == r.need {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// fanout sends req to the nodes marked in only (all when only is nil) and
// waits until need of them succeeded, every one answered, the node timeout
// ran out or ctx ended; need > len(nodes) waits for every answer, and so
// does a lock with a node on the go-redis transport. It
// returns each node's result in node order — a node without an answer gets
// errNotAwaited, errNodeTimeout or the context's end, all unknown — and the
// generation of the connection each request went out on: two requests to a
// node with the same non-zero generation are applied in the order sent
// (zero: the go-redis transport, no order known).
func (l *Lock) fanout(ctx context.Context, req request, only []bool, need int) ([]error, []uint64) {
	n := len(l.clients)
	if !l.early {
		need = n + 1
	}
	r := &round{res: make([]error, n), answered: make([]bool, n), need: need, wake: make(chan struct{}, 1)}
	gen := make([]uint64, n)
	for i := range n {
		if only == nil || only[i] {
			r.pending++
		}
	}
	if r.pending == 0 {
		return r.res, gen
	}
	if err := ctx.Err(); err != nil {
		for i := range n {
			if only == nil || only[i] {
				r.res[i] = fmt.Errorf("%w: not sent: %w", req.op.definite(), err)
			}
		}
		return r.res, gen
	}
	sctx := ctx
	if !l.early { // requests through go-redis: bounded by the node timeout
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, l.nodeTimeout)
		defer cancel()
	}
	for i := range n {
		if only == nil || only[i] {
			gen[i] = l.send(sctx, i, req, r)
		}
	}
	t := time.NewTimer(l.nodeTimeout)
	why := errNotAwaited
	select {
	case <-r.wake:
	case <-t.C:
		why = errNodeTimeout
	case <-ctx.Done():
		why = fmt.Errorf("%w: %w", lock.ErrUnknown, context.Cause(ctx))
	}
	t.Stop()
	r.mu.Lock()
	r.closed = true // r.res is the caller's from here on
	for i := range n {
		if (only == nil || only[i]) && !r.answered[i] {
			r.res[i] = why
		}
	}
	r.mu.Unlock()
	return r.res, gen
}

// send puts req for node i of r on its transport and returns the
// connection's generation (see fanout). Only the go-redis transport uses
// ctx: a goroutine per node request runs the command with it.
func (l *Lock) send(ctx context.Context, i int, req request, r *round) uint64 {
	if c := l.direct[i]; c != nil {
		return send(c, req, r, i)
	}
	c := l.clients[i]
	spawn(func() { r.deliver(i, viaGoRedis(ctx, c, req)) })
	return 0
}

// viaGoRedis runs req on c with package single's commands.
func viaGoRedis(ctx context.Context, c redis.UniversalClient, req request) error {
	switch req.op {
	case opSet:
		_, err := single.SetNX(ctx, c, req.key, req.value, req.ttl)
		return err
	case opRelease:
		return single.Release(ctx, c, req.key, req.value)
	default:
		return single.Extend(ctx, c, req.key, req.value, req.ttl)
	}
}

// idle hands work to goroutines parked after an earlier fan-out through
// go-redis. A fresh goroutine per node request grows its stack through
// go-redis's call depth every time: runtime.newstack was a tenth of a
// Redlock cycle's CPU, and a parked goroutine keeps its grown stack.
// Parked goroutines exit after idleFor without work.
var idle = make(chan func())

func spawn(f func()) {
	select {
	case idle <- f:
	default:
		go serve(f)
	}
}

func serve(f func()) {
	t := time.NewTimer(idleFor())
	defer t.Stop()
	for {
		f()
		t.Reset(idleFor())
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
