package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/wait"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/spans"
)

// errCrashed ends a session whose client crashed (in-process mode).
var errCrashed = errors.New("client crashed")

// sink is where a session's effects go: straight to the harness for an
// in-process client, through the pipes for a worker process.
type sink interface {
	// record records a lock operation (or a crash, lost, extend) of the session.
	record(op history.Op)
	// apply sends a resource request (its invoke op) and returns the
	// resource's outcome; the resource records both.
	apply(ctx context.Context, invoke history.Op) (history.Op, error)
	// crash ends the session as a crash: a worker process exits on the spot;
	// an in-process client is muted and crash returns errCrashed.
	crash(reason string) error
	// dead reports whether the session has crashed.
	dead() bool
	// stepAction carries out the action armed (ArmStep) at step of the
	// lock on key, if any, and disarms it. Its error is crash's.
	stepAction(key, step string) error
}

// session is one incarnation of a client: one history process, from its
// start to its stop or crash. The same code runs in-process and in a worker.
type session struct {
	cfg      Config
	client   int
	proc     history.Process
	clock    *history.Clock
	wall     *WallClock
	out      sink
	factory  Factory
	deadline int64         // history ns: no cycle starts after it
	ops      *atomic.Int64 // client operations invoked by this client, across sessions
	crashes  *atomic.Int64 // crashes by Config.Crash, across sessions

	rngMu sync.Mutex
	rng   *rand.Rand

	keys  []string
	prims map[string]lock.Primitive
	// inited: the semaphores set up once already (InitEachCycle).
	inited map[string]bool
	seq    int64 // fenced-write sequence number
	// mode is the current cycle's mode on a read-write lock ("" otherwise):
	// the acquire, release and extend ops carry it.
	mode string

	leaseMu sync.Mutex
	lease   lock.Lease // the held lease, as renewals last updated it
}

func newSession(cfg Config, client int, proc history.Process, clock *history.Clock, wall *WallClock, out sink, f Factory, deadline int64, ops, crashes *atomic.Int64) *session {
	s := &session{
		cfg: cfg, client: client, proc: proc, clock: clock, wall: wall, out: out, factory: f,
		deadline: deadline, ops: ops, crashes: crashes,
		rng:    rand.New(rand.NewPCG(cfg.Seed, uint64(proc))),
		prims:  map[string]lock.Primitive{},
		inited: map[string]bool{},
	}
	for i := 0; i < cfg.Keys; i++ {
		s.keys = append(s.keys, cfg.Key(i))
	}
	return s
}

// run repeats cycles until the time limit, the op limit, a crash or ctx.
// It returns an error only when the client cannot work at all (a factory
// that refuses the key); lock and resource failures are history, not errors.
func (s *session) run(ctx context.Context) error {
	if at := s.cfg.startOf(s.client); at > 0 {
		if wait := at - time.Duration(s.clock.Now()); wait > 0 && !s.sleepUntil(ctx, time.Now().Add(wait)) {
			return nil
		}
	}
	if s.cfg.Kind == Latch {
		return s.runLatch(ctx)
	}
	start := time.Now()
	var issued int64 // ops issued by this session, for the rate limit
	for {
		if ctx.Err() != nil || s.out.dead() || s.clock.Now() >= s.deadline {
			return nil
		}
		if s.cfg.MaxOps > 0 && s.ops.Load() >= int64(s.cfg.MaxOps) {
			return nil
		}
		if s.cfg.Rate > 0 && !s.sleepUntil(ctx, start.Add(time.Duration(float64(issued)/s.cfg.Rate*float64(time.Second)))) {
			return nil
		}
		l, err := s.locker(ctx, s.keys[s.intn(len(s.keys))])
		if err != nil {
			return err
		}
		issued += s.cycle(ctx, l)
		s.mode = ""
		if s.out.dead() {
			return errCrashed
		}
		if !s.sleepUntil(ctx, time.Now().Add(s.draw(s.cfg.think()))) {
			return nil
		}
	}
}

// primitive is the client's lock on key, built on first use. A semaphore
// is set up then (its init is recorded).
func (s *session) primitive(ctx context.Context, key string) (lock.Primitive, error) {
	if p := s.prims[key]; p != nil {
		return p, nil
	}
	// The hook is always there: a step can be armed at any time.
	opts := []lock.Option{lock.WithRenewObserver(s.observer(key)), lock.WithQueueObserver(s.queueObserver(key)),
		lock.WithWallClock(s.wall.Now), lock.WithHook(s.hook(key))}
	if r, ok := s.cfg.retry(); ok {
		opts = append(opts, lock.WithRetry(r))
	}
	p, err := s.factory(key, opts...)
	if err != nil {
		return nil, fmt.Errorf("client %d: lock on %q: %w", s.client, key, err)
	}
	if p == nil {
		return nil, fmt.Errorf("client %d: lock factory returned no lock for %q", s.client, key)
	}
	if sem, ok := p.(lock.Semaphore); ok {
		s.initSemaphore(ctx, sem)
	}
	s.prims[key] = p
	return p, nil
}

// locker is the Locker of this cycle on key: the lock itself, one mode of
// a read-write lock (drawn with ReadFraction; the cycle records it), or a
// semaphore's permits driven as a lock. A latch is not driven by cycles.
func (s *session) locker(ctx context.Context, key string) (lock.Locker, error) {
	p, err := s.primitive(ctx, key)
	if err != nil {
		return nil, err
	}
	switch l := p.(type) {
	case lock.Locker:
		return l, nil
	case lock.ReadWriteLocker:
		if s.float() < s.cfg.readFraction(s.client) {
			s.mode = history.ModeRead
			return l.ReadLock(), nil
		}
		s.mode = history.ModeWrite
		return l.WriteLock(), nil
	case lock.Semaphore:
		if s.cfg.InitEachCycle && s.inited[key] {
			s.initSemaphore(ctx, l)
		}
		s.inited[key] = true
		return permits{l}, nil
	}
	return nil, fmt.Errorf("client %d: the %s workload cannot drive %T on %q (a latch needs the latch workload)", s.client, s.cfg.Kind, p, key)
}

// permits drives a semaphore's permits as a Locker: a permit is acquired
// and released like a lock; only a permit with a lease can be extended.
type permits struct{ lock.Semaphore }

func (p permits) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if e, ok := p.Semaphore.(interface {
		Extend(context.Context, lock.Lease) (lock.Lease, error)
	}); ok {
		return e.Extend(ctx, l)
	}
	return lock.Lease{}, fmt.Errorf("%w: %s: a plain semaphore's permits have no lease to extend", lock.ErrNotHeld, p.Key())
}

// initSemaphore sets the semaphore up (trySetPermits), recorded as an init.
func (s *session) initSemaphore(ctx context.Context, sem lock.Semaphore) {
	inv := s.newOp(history.Invoke, history.Init, sem.Key(), lock.Lease{})
	inv.Value = strconv.Itoa(sem.Permits())
	s.out.record(inv)
	ictx, cancel := context.WithTimeout(ctx, s.cfg.span(s.cfg.OpTimeout))
	set, err := sem.TrySetPermits(ictx)
	cancel()
	s.completeInit(inv, set, err)
}

func (s *session) completeInit(inv history.Op, set bool, err error) {
	if err == nil && !set {
		err = errAlreadySet
	}
	s.complete(inv, err)
}

// errAlreadySet completes an init that found the key set already.
var errAlreadySet = fmt.Errorf("%w: set up already", lock.ErrNotObtained)

// cycle is one acquire (Nest of them), critical section, release (as
// many). It returns the number of operations it invoked.
func (s *session) cycle(ctx context.Context, l lock.Locker) int64 {
	key := l.Key()
	var leases []lock.Lease // innermost last
	defer s.setLease(lock.Lease{})
	for len(leases) < s.cfg.Nest {
		lease, ok := s.acquire(ctx, l)
		if !ok {
			break
		}
		leases = append(leases, lease)
	}
	n := int64(len(leases))
	if len(leases) < s.cfg.Nest {
		n++ // the acquire that failed
	}
	if len(leases) == 0 || s.out.dead() {
		return n
	}
	if len(leases) == s.cfg.Nest {
		if s.step(key, StepAfterAcquire) != nil {
			return n
		}
		n += s.critical(ctx, l, leases[len(leases)-1].Lost)
		if s.out.dead() || s.step(key, StepBeforeRelease) != nil {
			return n
		}
	}
	// Release even when ctx is done: a stopped client should not leave
	// a lock it holds behind; OpTimeout keeps the stop prompt.
	for i := len(leases) - 1; i >= 0; i-- {
		held := leases[i]
		if cur := s.currentLease(); cur.Value == held.Value {
			held = cur // as renewals and extends left it
		}
		rel := s.invoke(history.Release, key, held)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.span(s.cfg.OpTimeout))
		err := l.Release(rctx, held)
		cancel()
		s.complete(rel, err)
		n++
	}
	return n
}

// acquire records one acquire and, if it succeeded, makes its lease the
// current one.
func (s *session) acquire(ctx context.Context, l lock.Locker) (lock.Lease, bool) {
	inv := s.invoke(history.Acquire, l.Key(), lock.Lease{})
	actx, cancel := context.WithTimeout(ctx, s.cfg.span(s.cfg.AcquireTimeout))
	lease, err := l.Acquire(actx)
	cancel()
	if err != nil {
		s.complete(inv, err)
		return lock.Lease{}, false
	}
	ok := inv
	ok.Type, ok.Value, ok.Token, ok.ValidUntil, ok.Time = history.OK, lease.Value, lease.Token, s.clock.Of(lease.ValidUntil), s.clock.Now()
	s.out.record(ok)
	s.setLease(lease)
	return lease, true
}

// critical runs the workload's critical section and returns the number of
// resource operations it invoked.
func (s *session) critical(ctx context.Context, l lock.Locker, lost <-chan struct{}) int64 {
	key := l.Key()
	if s.mode == history.ModeRead {
		// A reader of a read-write lock only holds: readers share the lock,
		// so they must not change the resource.
		s.hold(ctx, l, lost)
		return 0
	}
	switch s.cfg.Kind {
	case FencedWrite:
		if !s.hold(ctx, l, lost) || !s.mayAct(ctx, l, lost) {
			return 0
		}
		if s.step(key, StepBeforeWrite) != nil {
			return 0
		}
		s.seq++
		l := s.currentLease()
		s.resource(ctx, history.Write, key, fmt.Sprintf("%d:%d:%d", s.client, l.Token, s.seq))
		return 1
	case Counter:
		if !s.mayAct(ctx, l, lost) {
			return 0
		}
		read, err := s.resource(ctx, history.Read, key, "")
		if err != nil || read.Type != history.OK {
			return 1
		}
		v, err := strconv.ParseInt(read.Value, 10, 64)
		if err != nil {
			return 1 // not a counter value: the history shows what was read
		}
		if !s.hold(ctx, l, lost) || !s.mayAct(ctx, l, lost) || s.step(key, StepBeforeWrite) != nil {
			return 1
		}
		s.resource(ctx, history.Write, key, strconv.FormatInt(v+1, 10))
		return 2
	default:
		// A lock whose library answers for its lease is asked before the
		// hold, the mutex workload's one action; any other holds as it
		// always did.
		if _, asks := l.(lock.Validator); asks && !s.mayAct(ctx, l, lost) {
			return 0
		}
		s.hold(ctx, l, lost)
		return 0
	}
}

// hold sleeps for a Hold draw, extending the lease every ExtendEvery if
// so configured. It returns false when cut short by ctx, by an extend that
// did not succeed or, for a client that obeys it, by the lock's loss signal.
func (s *session) hold(ctx context.Context, l lock.Locker, lost <-chan struct{}) bool {
	if !s.cfg.ObeyLost {
		lost = nil
	}
	t := time.NewTimer(s.draw(s.cfg.hold()))
	defer t.Stop()
	var extend <-chan time.Time
	if every := s.cfg.span(s.cfg.ExtendEvery); every > 0 {
		tick := time.NewTicker(every)
		defer tick.Stop()
		extend = tick.C
	}
	for {
		select {
		case <-t.C:
			// An extend that fell due too (the client was stopped past
			// both) runs first: a client that extends as it works extends
			// before it acts, whatever order the timers fire in.
			select {
			case <-extend:
				return s.extend(ctx, l)
			default:
			}
			return true
		case <-ctx.Done():
			return false
		case <-lost:
			return false
		case <-extend:
			if !s.extend(ctx, l) {
				return false
			}
		}
	}
}

// invokeUnderLease records the invoke of a call f on the current lease
// (an extend, a valid question): the lease it names, no validity of its
// own.
func (s *session) invokeUnderLease(f, key string) (history.Op, lock.Lease) {
	held := s.currentLease()
	inv := s.newOp(history.Invoke, f, key, held)
	inv.ValidUntil = 0
	s.out.record(inv)
	return inv, held
}

// extend is the client's own extend of its current lease, recorded.
func (s *session) extend(ctx context.Context, l lock.Locker) bool {
	inv, held := s.invokeUnderLease(history.Extend, l.Key())
	ectx, cancel := context.WithTimeout(ctx, s.cfg.span(s.cfg.OpTimeout))
	next, err := l.Extend(ectx, held)
	cancel()
	if err != nil {
		s.complete(inv, err)
		return false
	}
	ok := inv
	ok.Type, ok.ValidUntil, ok.Time = history.OK, s.clock.Of(next.ValidUntil), s.clock.Now()
	if next.Token != 0 {
		ok.Token = next.Token
	}
	s.out.record(ok)
	s.renewed(next)
	return true
}

// mayAct is the client's own judgement before touching the resource. With
// CheckValidity, a lock whose library answers for its leases
// (lock.Validator) is asked, and its answer recorded; any other lock's
// lease is judged by the ValidUntil it carried from its grant.
func (s *session) mayAct(ctx context.Context, l lock.Locker, lost <-chan struct{}) bool {
	if s.out.dead() {
		return false
	}
	if s.cfg.ObeyLost && closed(lost) {
		return false
	}
	if !s.cfg.CheckValidity {
		return true
	}
	if v, ok := l.(lock.Validator); ok {
		return s.askValid(ctx, v)
	}
	return s.currentLease().Valid(time.Now())
}

// errNotValid completes a valid call whose library said the lease is no
// longer valid.
var errNotValid = fmt.Errorf("%w: the library says the lease is no longer valid", lock.ErrNotHeld)

// askValid asks the library whether the current lease is still valid,
// recorded as a valid call (not counted towards MaxOps or Rate, as a
// client's extends are not): true only when it says so.
func (s *session) askValid(ctx context.Context, v lock.Validator) bool {
	inv, held := s.invokeUnderLease(history.Valid, v.Key())
	vctx, cancel := context.WithTimeout(ctx, s.cfg.span(s.cfg.OpTimeout))
	ans, err := v.Valid(vctx, held)
	cancel()
	if err == nil && !ans.Valid {
		err = errNotValid
	}
	if err != nil {
		s.complete(inv, err)
		return false
	}
	ok := inv
	ok.Type, ok.Time = history.OK, s.clock.Now()
	if !ans.Until.IsZero() {
		ok.ValidUntil = s.clock.Of(ans.Until)
	}
	s.out.record(ok)
	return true
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// resource sends a read or write to the resource under the current lease.
func (s *session) resource(ctx context.Context, f, key, value string) (history.Op, error) {
	inv := s.newOp(history.Invoke, f, key, s.currentLease())
	inv.Value = value
	s.ops.Add(1)
	rctx, cancel := context.WithTimeout(ctx, s.cfg.span(s.cfg.OpTimeout))
	defer cancel()
	return s.out.apply(rctx, inv)
}

// hook is the client's lock.StepHook for the lock on key.
func (s *session) hook(key string) lock.StepHook {
	return func(_ context.Context, step string) error { return s.step(key, step) }
}

// step is where an armed action or Config.Crash hits the client; an error
// (a crash, in-process) aborts the lock operation or the cycle.
func (s *session) step(key, step string) error {
	if err := s.out.stepAction(key, step); err != nil {
		return err
	}
	c := s.cfg.Crash
	if c == nil || step != c.Step {
		return nil
	}
	if c.Limit > 0 && s.crashes.Load() >= int64(c.Limit) {
		return nil
	}
	if c.Probability < 1 && s.float() >= c.Probability {
		return nil
	}
	s.crashes.Add(1)
	return s.out.crash(crashReason(step, false))
}

func (s *session) setLease(l lock.Lease) {
	s.leaseMu.Lock()
	s.lease = l
	s.leaseMu.Unlock()
}

// renewed takes a renewal's new validity if it renews the held lease.
func (s *session) renewed(l lock.Lease) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease.Value == "" || s.lease.Value != l.Value {
		return
	}
	lost := s.lease.Lost
	s.lease = l
	if s.lease.Lost == nil {
		s.lease.Lost = lost
	}
}

func (s *session) currentLease() lock.Lease {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	return s.lease
}

// sleepUntil waits until t, ctx or the time limit, whichever is first. It
// returns false if the client should stop instead of going on.
func (s *session) sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	if left := time.Duration(s.deadline - s.clock.Now()); d >= left {
		return false
	}
	return wait.For(ctx, d) == nil
}

// draw is a uniform draw from the absolute range r.
func (s *session) draw(r spans.Range) time.Duration {
	lo, hi := r.Durations()
	if hi <= lo {
		return lo
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

func (s *session) intn(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

func (s *session) float() float64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64()
}
