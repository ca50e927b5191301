package nemesis

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// ShutdownHealTimeout bounds the heals Run does after its context ends.
const ShutdownHealTimeout = 30 * time.Second

// FailoverTimeout bounds how long a failover step waits for Sentinel.
const FailoverTimeout = 30 * time.Second

// Run executes plan against env and records every fault's start and stop in
// sink (see the package documentation for the records). Step times count
// from the start of env.Clock; call Run right after the run starts.
//
// Run returns when every step has been applied and healed, or — when ctx
// ends first — after healing every fault still active, so the cluster and
// the clients are as they were (bar the permanent effects of a failover and
// of what was lost in a kill). It starts no goroutine that outlives it.
// Its error is the plan's validation error, or the join of every apply and
// heal that failed, each naming its step; skipped steps are not errors.
// Cancellation is not an error either.
func Run(ctx context.Context, plan Plan, env Env, sink Sink) error {
	switch {
	case env.Cluster == nil:
		return errors.New("nemesis: env has no cluster")
	case env.Clock == nil:
		return errors.New("nemesis: env has no history clock")
	case sink == nil:
		return errors.New("nemesis: no sink for the fault records")
	}
	setup := env.Setup()
	steps, err := plan.compile(setup)
	if err != nil {
		return err
	}
	for _, c := range steps {
		if (c.triggered() || c.holder() || c.Node == NodeLease) && env.Oracle == nil {
			return fmt.Errorf("%s: a trigger, or the %q client or %q node, needs env.Oracle", c.name(), Holder, NodeLease)
		}
		if c.kind.targets() == targetsClients && env.Clients == nil {
			return fmt.Errorf("%s: a client fault needs env.Clients", c.name())
		}
	}
	r := newRunner(env, setup, sink, steps)
	return r.run(ctx)
}

type evKind int

// At one instant heals go before applies, so back-to-back faults on one
// target do not collide.
const (
	evHeal evKind = iota
	evApply
	evTick      // a kind's own timer (a strobing clock's flip)
	evTriggered // async: a trigger fired (or timed out)
	evApplied   // async: the slow part of an apply finished
	evHealed    // async: the slow part of a heal finished
)

type event struct {
	at   int64 // history ns
	kind evKind
	step int
	seq  uint64
	hit  hit // evTriggered: what the trigger found
	// up: evApplied of a restart whose nodes answer again, so its heal has
	// nothing left to do.
	up   bool
	note string
	err  error
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if c := cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.kind, b.kind), cmp.Compare(a.step, b.step)); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type phase int

const (
	pending phase = iota
	waiting       // for its trigger
	active
	healing // the slow part of its heal runs
	done
)

// stepRun is a step's life in a run. Everything here, and every table of
// the runner, is touched only by the loop goroutine; the goroutines that do
// slow work (waiting for a grant, starting a node, a failover) only call
// the cluster, the clients or the oracle and post an event with the result.
type stepRun struct {
	c      *compiled
	phase  phase
	fault  history.Fault
	client int   // Op.Client of the records: the first client hit
	base   int64 // For counts from here: At, or the trigger's firing
	healAt int64
	// undo are the inline heal actions, run last first.
	undo []func() error
	// slow is the part of the heal that only calls the cluster (bring a
	// node up); it is idempotent, so a heal cut short can run it again.
	slow func(ctx context.Context) error
	// settling: the slow part of the apply (restart, failover) runs.
	settling bool
	errs     []error // for the stop record
	skip     error   // the step was skipped after it started (failover)
	note     string  // the stop record's Value: what came of it
	strobeOn bool
	toggles  int
	nodes    []string // the nodes it hit, as resolved
	clients  []int    // the clients it hit, for a kind with timers (client-starve)
}

type runner struct {
	env   Env
	setup Setup
	sink  Sink
	clock *history.Clock
	steps []*stepRun

	queue    eventQueue
	seq      uint64
	posts    chan event
	inflight int // goroutines whose event is still to come
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	started  []int // steps in the order they started, for the final heal

	links       *linkTable
	owner       map[string]int // node → step that has it down (kill, restart, failover by kill)
	nodePaused  map[string]int // node → pause count
	nodeClock   map[string]map[int]time.Duration
	failover    int // step with a failover going on, or -1
	clientPause map[int]int
	clientClock map[int]map[int]time.Duration
	nodeDrift   map[string]map[int]clockshim.Drift
	clientDrift map[int]map[int]clockshim.Drift
	gates       map[int]int
	armed       map[armKey]int

	errs []error

	settleOnce sync.Once // Env.Settled
}

// settle calls Env.Settled, once.
func (r *runner) settle() {
	r.settleOnce.Do(func() {
		if r.env.Settled != nil {
			r.env.Settled()
		}
	})
}

type armKey struct {
	client int
	step   string
}

func newRunner(env Env, setup Setup, sink Sink, steps []*compiled) *runner {
	r := &runner{
		env: env, setup: setup, sink: sink, clock: env.Clock,
		posts:       make(chan event),
		links:       newLinkTable(env.Cluster),
		owner:       map[string]int{},
		nodePaused:  map[string]int{},
		nodeClock:   map[string]map[int]time.Duration{},
		failover:    -1,
		clientPause: map[int]int{},
		clientClock: map[int]map[int]time.Duration{},
		nodeDrift:   map[string]map[int]clockshim.Drift{},
		clientDrift: map[int]map[int]clockshim.Drift{},
		gates:       map[int]int{},
		armed:       map[armKey]int{},
	}
	for _, c := range steps {
		r.steps = append(r.steps, &stepRun{c: c})
	}
	return r
}

func (r *runner) now() int64 { return r.clock.Now() }

func (r *runner) push(e event) {
	r.seq++
	e.seq = r.seq
	heap.Push(&r.queue, e)
}

// async runs f in a goroutine and posts the event it returns, stamped with
// the time it arrives.
func (r *runner) async(f func(ctx context.Context) event) {
	r.inflight++
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		e := f(r.ctx)
		select {
		case r.posts <- e:
		case <-r.ctx.Done():
		}
	}()
}

func (r *runner) run(parent context.Context) error {
	r.ctx, r.cancel = context.WithCancel(parent)
	defer r.cancel()
	for i, st := range r.steps {
		r.push(event{at: int64(st.c.at), kind: evApply, step: i})
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for len(r.queue) > 0 || r.inflight > 0 {
		if parent.Err() != nil {
			r.shutdown(parent)
			break
		}
		var tick <-chan time.Time
		if len(r.queue) > 0 {
			wait := time.Until(r.clock.Time(r.queue[0].at))
			if wait <= 0 {
				r.handle(heap.Pop(&r.queue).(event))
				continue
			}
			timer.Reset(wait)
			tick = timer.C
		}
		r.settle() // nothing is due now
		select {
		case <-tick:
		case e := <-r.posts:
			r.inflight--
			e.at = r.now()
			r.push(e)
		case <-parent.Done():
		}
		timer.Stop()
	}
	r.settle()
	return errors.Join(r.errs...)
}

func (r *runner) handle(e event) {
	st := r.steps[e.step]
	switch e.kind {
	case evApply:
		c := st.c
		if o, ok := c.kind.(triggerOwner); c.triggered() && !(ok && o.ownsTrigger(c)) {
			st.phase = waiting
			r.async(func(ctx context.Context) event {
				h, err := r.waitGrant(ctx, c)
				return event{kind: evTriggered, step: e.step, hit: h, err: err}
			})
			return
		}
		st.base = int64(c.at)
		r.start(e.step, hit{})
	case evTriggered:
		if e.err != nil {
			r.skip(e.step, e.err)
			return
		}
		st.base = e.at
		r.start(e.step, e.hit)
	case evApplied:
		r.settled(e.step, e)
	case evTick:
		if t, ok := st.c.kind.(ticker); ok {
			t.tick(r, e.step)
		}
	case evHeal:
		r.heal(e.step)
	case evHealed:
		if e.err != nil {
			st.errs = append(st.errs, e.err)
		}
		r.finish(e.step)
	}
}

// errSkip marks a step that could not find its target or event.
type errSkip struct{ why string }

func (e errSkip) Error() string { return "skipped: " + e.why }

// triggerOwner is a kind that waits for its trigger itself, inside its
// apply (a failover that cuts replication first).
type triggerOwner interface{ ownsTrigger(c *compiled) bool }

// ticker is a kind with timers of its own while active (evTick).
type ticker interface{ tick(r *runner, i int) }

// waitGrant waits for step c's grant; for a "lease" node it then reads at
// once which nodes the lease rests on. It runs beside the loop.
func (r *runner) waitGrant(ctx context.Context, c *compiled) (hit, error) {
	tctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	g, err := r.env.Oracle.WaitGrant(tctx, c.Key)
	if err != nil {
		if ctx.Err() == nil && tctx.Err() != nil {
			if c.OnTimeout == OnTimeoutApply {
				return hit{}, nil // no grant came: apply without a granted client
			}
			return hit{}, errSkip{fmt.Sprintf("no grant of %q within %v", c.Key, c.timeout)}
		}
		return hit{}, fmt.Errorf("waiting for a grant of %q: %w", c.Key, err)
	}
	if g.Client < 0 || g.Client >= r.setup.Clients {
		return hit{}, fmt.Errorf("the oracle says client %d was granted %q, but clients are 0..%d", g.Client, c.Key, r.setup.Clients-1)
	}
	h := hit{granted: true, grant: g}
	if c.Node == NodeLease {
		h.lease, h.leaseRead = r.leaseNodes(ctx, c.Key, g.Value), true
	}
	if d := c.span(c.After); d > 0 && wait.For(ctx, d) != nil {
		return hit{}, errSkip{fmt.Sprintf("the run ended within %v of the grant", d)}
	}
	return h, nil
}

// skip records a step that never took effect: a start and a stop of type
// fail.
func (r *runner) skip(i int, why error) {
	st := r.steps[i]
	if _, ok := why.(errSkip); !ok {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", st.c.name(), why))
	}
	if st.fault.ID == "" {
		st.fault = r.plannedFault(st.c)
	}
	t := r.now()
	r.record(st, history.Start, history.Fail, t, why, "")
	r.record(st, history.Stop, history.Fail, t, nil, "")
	st.phase = done
}

// start applies step i, with what its trigger found.
func (r *runner) start(i int, h hit) {
	st := r.steps[i]
	c := st.c
	t0 := r.now()
	st.fault = r.plannedFault(c)
	err := r.apply(i, h)
	var skipped errSkip
	if errors.As(err, &skipped) && len(st.undo) == 0 && st.slow == nil {
		r.skip(i, skipped)
		return
	}
	st.phase = active
	r.started = append(r.started, i)
	r.record(st, history.Start, history.Info, t0, err, "")
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", c.name(), err))
		st.settling = false
		r.heal(i) // undo what did apply
		return
	}
	if st.settling {
		return // settled schedules the heal
	}
	st.healAt = st.base + int64(c.dur)
	r.push(event{at: st.healAt, kind: evHeal, step: i})
}

// settled takes the outcome of a slow apply and schedules the heal.
func (r *runner) settled(i int, e event) {
	st := r.steps[i]
	st.settling = false
	st.note = e.note
	var skipped errSkip
	switch {
	case errors.As(e.err, &skipped):
		st.skip = skipped
	case e.err != nil:
		st.errs = append(st.errs, e.err)
		r.errs = append(r.errs, fmt.Errorf("%s: %w", st.c.name(), e.err))
	case e.up:
		st.slow = nil // the nodes are up: nothing left to heal
	}
	st.healAt = max(st.base+int64(st.c.dur), e.at)
	r.push(event{at: st.healAt, kind: evHeal, step: i})
}

func (r *runner) heal(i int) {
	st := r.steps[i]
	if st.phase != active || st.settling {
		return
	}
	st.errs = append(st.errs, r.undo(st)...)
	if st.slow != nil {
		st.phase = healing
		slow := st.slow
		r.async(func(ctx context.Context) event {
			return event{kind: evHealed, step: i, err: slow(ctx)}
		})
		return
	}
	r.finish(i)
}

func (r *runner) undo(st *stepRun) []error {
	var errs []error
	for k := len(st.undo) - 1; k >= 0; k-- {
		if err := st.undo[k](); err != nil {
			errs = append(errs, err)
		}
	}
	st.undo = nil
	return errs
}

// finish records the stop and releases what the step held.
func (r *runner) finish(i int) {
	st := r.steps[i]
	for n, o := range r.owner {
		if o == i {
			delete(r.owner, n)
		}
	}
	if r.failover == i {
		r.failover = -1
	}
	err := errors.Join(st.errs...)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: heal: %w", st.c.name(), err))
	}
	if st.skip != nil {
		err = errors.Join(st.skip, err)
	}
	r.record(st, history.Stop, history.Info, r.now(), err, st.note)
	st.phase = done
}

// shutdown heals, last started first, everything still active once the
// run's context has ended.
func (r *runner) shutdown(parent context.Context) {
	r.cancel()
	r.wg.Wait()
	r.inflight = 0
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), ShutdownHealTimeout)
	defer cancel()
	for k := len(r.started) - 1; k >= 0; k-- {
		i := r.started[k]
		st := r.steps[i]
		if st.phase != active && st.phase != healing {
			continue
		}
		st.errs = append(st.errs, r.undo(st)...)
		if st.slow != nil {
			if err := st.slow(ctx); err != nil {
				st.errs = append(st.errs, err)
			}
		}
		r.finish(i)
	}
	r.queue = nil
}

func (r *runner) record(st *stepRun, f string, t history.Type, at int64, err error, note string) {
	fault := st.fault
	fault.Targets = append([]string(nil), fault.Targets...)
	op := history.Op{
		Process: history.NemesisProcess,
		Client:  st.client,
		Type:    t,
		F:       f,
		Time:    max(at, 0),
		Value:   note,
		Fault:   &fault,
	}
	if err != nil {
		op.Error = err.Error()
	}
	// A recorder keeps its own error for whoever closes it; the nemesis
	// has nothing better to do with it.
	_, _ = r.sink.Record(op)
}
