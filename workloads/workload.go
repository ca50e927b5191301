// Package workloads runs the concurrent clients of a tumbler run: each
// client takes locks through a lock.Locker, acts on a protected Resource
// owned by the harness inside its critical section, and records everything
// it invoked and saw as history.Op values (ARCHITECTURE.md, "The history contract").
//
// Clients run as goroutines (InProcess) or each as its own OS process
// (Processes), with the same history; the second is what a real client pause
// needs. A program that uses process mode must call, first thing in main
// (or TestMain):
//
//	if workloads.IsWorker() {
//		workloads.WorkerMain()
//		return
//	}
//
// Histories follow Jepsen's conventions: every invoke is completed by
// exactly one ok, fail or info of the same process (pair them by process,
// f, key, and for background renewals by owner value too); a client that
// crashes records a crash op and continues as a new process
// (process += clients); lost and crash ops are info ops without an invoke,
// and so are the two pause ops that mark the start and the end of a pause
// armed with ArmStep. A client's own extends (Config.ExtendEvery) are
// recorded like a watchdog's renewals.
//
// Besides the Config, the harness controls each running Client: Pause and
// Resume (a SIGSTOP in process mode), Kill, SetClockOffset, ArmStep (a
// one-shot pause or crash at a named step of its lock) and GateResource
// (hold its requests to the Resource, as a partition would).
package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// Harness is what a workload needs from the harness besides its Config.
type Harness struct {
	// Clock is the run's history clock; workers get its Start.
	Clock *history.Clock
	// Recorder receives the clients' ops (the Resource records its own).
	Recorder Recorder
	// Resource is required by FencedWrite (fenced) and Counter.
	Resource *Resource
	// WorkerLog receives worker processes' stderr (default os.Stderr).
	WorkerLog io.Writer
}

// ErrNeedsProcessMode is returned by client controls that only a client
// running as its own process can honour.
var ErrNeedsProcessMode = errors.New("needs clients in process mode")

// Workload is a running workload.
type Workload struct {
	cfg      Config
	h        Harness
	rec      *counter
	clients  []*Client
	deadline int64 // history ns: no cycle starts after it
	started  time.Time

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	hold   *holding // Prepare's clients wait for Begin

	stats Stats
	err   error
}

// Run runs a workload to its end (time limit, op limit or ctx) and returns
// what it recorded. Nothing it started outlives it.
func Run(ctx context.Context, cfg Config, h Harness) (Stats, error) {
	w, err := Start(ctx, cfg, h)
	if err != nil {
		return Stats{}, err
	}
	defer w.Close()
	return w.Wait()
}

// Start starts the clients and returns at once; the nemesis controls them
// through Clients. Cancelling ctx stops every client promptly: each releases
// a lock it holds (bounded by OpTimeout) and nothing else; worker processes
// still running after that are killed.
func Start(ctx context.Context, cfg Config, h Harness) (*Workload, error) {
	return start(ctx, cfg, h, false)
}

// start starts the clients; with hold, as Prepare does.
func start(ctx context.Context, cfg Config, h Harness, hold bool) (*Workload, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	switch {
	case hold && h.Recorder == nil:
		return nil, fmt.Errorf("workload harness has no recorder")
	case !hold: // a prepared workload's clock and resource come with Begin
		if err := h.check(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Mode == Processes {
		if IsWorker() {
			// Starting workers from a worker would recurse without end.
			return nil, fmt.Errorf("this process is itself a workload worker (%s=1): it must call workloads.WorkerMain first thing, not start workloads", WorkerEnv)
		}
		if _, err := os.Executable(); err != nil {
			return nil, fmt.Errorf("process mode re-executes this program, but its path is unknown: %w", err)
		}
		if h.WorkerLog == nil {
			h.WorkerLog = os.Stderr
		}
		h.WorkerLog = &lockedWriter{w: h.WorkerLog}
	}
	w := &Workload{cfg: cfg, h: h, rec: newCounter(h.Recorder), started: time.Now(), done: make(chan struct{}),
		hold: newHolding(hold, cfg.Clients)}
	if hold {
		w.ctx, w.cancel = context.WithCancel(ctx) // Begin starts the time limit
	} else {
		w.deadline = h.Clock.Now() + int64(cfg.TimeLimit)
		// A cycle started just before the time limit may still run for a
		// grace; past it everything is stopped the hard way.
		w.ctx, w.cancel = context.WithTimeout(ctx, cfg.TimeLimit+cfg.grace())
	}
	var wg sync.WaitGroup
	for i := 0; i < cfg.Clients; i++ {
		c := &Client{w: w, id: i, done: make(chan struct{}), armed: map[string]armedStep{}, link: newResourceLink(w)}
		c.wall.SetOffset(cfg.span(cfg.ClockOffset))
		w.clients = append(w.clients, c)
	}
	for _, c := range w.clients {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.run()
			if c.err != nil {
				w.cancel() // a client that cannot work makes the run meaningless
			}
		}()
		go func() {
			defer wg.Done()
			c.link.run(c.done)
		}()
	}
	go func() {
		wg.Wait()
		w.cancel()
		w.finish()
		close(w.done)
	}()
	return w, nil
}

func (h Harness) check(cfg Config) error {
	switch {
	case h.Clock == nil:
		return fmt.Errorf("workload harness has no history clock")
	case h.Recorder == nil:
		return fmt.Errorf("workload harness has no recorder")
	case cfg.Kind != Mutex && cfg.Kind != Latch && h.Resource == nil:
		return fmt.Errorf("workload %q needs a Resource", cfg.Kind)
	case cfg.Kind == FencedWrite && !h.Resource.Fenced():
		return fmt.Errorf("workload %q needs a fenced Resource (NewResource(…, fenced=true))", cfg.Kind)
	}
	return nil
}

func (w *Workload) finish() {
	w.hold.stopLimit()
	w.stats = w.rec.stats()
	w.stats.Elapsed = time.Since(w.started)
	var errs []error
	for _, c := range w.clients {
		w.stats.Processes += c.incarnations
		if c.err != nil {
			errs = append(errs, c.err)
		}
	}
	w.err = errors.Join(errs...)
}

// Clients are the running clients' handles, by client number.
func (w *Workload) Clients() []*Client { return w.clients }

// Done is closed when every client has stopped for good.
func (w *Workload) Done() <-chan struct{} { return w.done }

// Wait waits for the workload's end and returns its stats and the errors
// of clients that could not work (a bad lock spec, a failed worker).
func (w *Workload) Wait() (Stats, error) {
	<-w.done
	return w.stats, w.err
}

// Close stops the workload as a cancelled ctx would and waits for it.
// It is safe to call more than once and after Wait.
func (w *Workload) Close() {
	w.cancel()
	<-w.done
}

// checkRequest refuses a client's resource request that the Resource
// could not decide, before it is sent on its way.
func (w *Workload) checkRequest(inv history.Op) error {
	if w.h.Resource == nil {
		return fmt.Errorf("a %s workload has no resource, but a client sent %v", w.cfg.Kind, inv)
	}
	return checkRequest(inv)
}

// decide has the Resource decide a checked request, and counts it.
func (w *Workload) decide(inv history.Op) history.Op {
	done := w.h.Resource.decide(inv)
	w.rec.count(inv)
	w.rec.count(done)
	return done
}

// Client is the harness's handle on one client, valid for the client's
// whole life: across crashes and restarts it keeps its number while its
// history process changes.
type Client struct {
	w    *Workload
	id   int
	wall WallClock
	// ops and crashes survive the client's restarts (MaxOps, Crash.Limit).
	ops, crashes atomic.Int64
	incarnations int  // owned by run
	ready        bool // its first session is ready (holding.mu)

	link *resourceLink

	mu         sync.Mutex
	proc       history.Process
	local      *localSink // running in-process session
	worker     *worker    // running worker process
	paused     bool       // stopped by Pause
	stepPaused bool       // stopped by an armed step's pause
	armed      map[string]armedStep
	armSeq     uint64

	done chan struct{}
	err  error
}

// ID is the client number.
func (c *Client) ID() int { return c.id }

// Process is the history process the client currently runs as.
func (c *Client) Process() history.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc
}

// Pid is the client's worker process id, 0 when it has none (in-process
// mode, or between a crash and the restart).
func (c *Client) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.worker == nil {
		return 0
	}
	return c.worker.pid
}

// Done is closed when the client has stopped for good.
func (c *Client) Done() <-chan struct{} { return c.done }

// Wait waits until the client has stopped for good and returns why it
// could not work, if so.
func (c *Client) Wait() error {
	<-c.done
	return c.err
}

// ClockOffset is the client's current wall-clock offset.
func (c *Client) ClockOffset() time.Duration { return c.wall.Offset() }

// SetClockOffset shifts the client's wall clock (the one the timestamp
// recipes read) to host time + d, now and after restarts.
func (c *Client) SetClockOffset(d time.Duration) error {
	c.wall.SetOffset(d)
	c.mu.Lock()
	wk := c.worker
	c.mu.Unlock()
	if wk == nil {
		return nil
	}
	ns := int64(d)
	return wk.send(message{Offset: &ns})
}

// SetClockDrift makes the client's wall clock drift by d besides its
// offset (clockshim.Rate: a clock at a rate; the zero Drift stops it), now
// and after restarts.
func (c *Client) SetClockDrift(d clockshim.Drift) error {
	c.wall.SetDrift(d)
	c.mu.Lock()
	wk := c.worker
	c.mu.Unlock()
	if wk == nil {
		return nil
	}
	return wk.send(message{Drift: &d})
}

// Pause stops the client's worker process (SIGSTOP of its process group):
// its workload, its watchdog and its sockets all stand still. It returns
// once every thread has stopped, so nothing the worker stamps afterwards
// predates the return; messages it sent before may still be recorded.
func (c *Client) Pause() error { return c.signalWorker("pause", true) }

// Resume continues a paused client (SIGCONT).
func (c *Client) Resume() error { return c.signalWorker("resume", false) }

// Kill crashes the client now: its worker process is SIGKILLed, or an
// in-process client abandons everything without releasing. Like any crash it
// is recorded, and the client restarts as a new process after RestartDelay.
func (c *Client) Kill() error {
	c.mu.Lock()
	local, wk := c.local, c.worker
	c.mu.Unlock()
	switch {
	case local != nil:
		local.crash("killed by the harness")
		return nil
	case wk != nil:
		return wk.kill()
	default:
		return fmt.Errorf("client %d is not running (stopped, or restarting after a crash)", c.id)
	}
}

// run runs the client's sessions: one, then one more after each crash.
func (c *Client) run() {
	defer close(c.done)
	w := c.w
	for {
		c.mu.Lock()
		c.proc = history.Process(c.id + c.incarnations*w.cfg.Clients)
		proc := c.proc
		c.mu.Unlock()
		hold := w.hold.on && c.incarnations == 0
		c.incarnations++
		var crashed bool
		if w.cfg.Mode == Processes {
			crashed, c.err = c.runWorker(proc, hold)
		} else {
			crashed, c.err = c.runLocal(proc, hold)
		}
		if hold && c.err == nil && w.ctx.Err() == nil && !w.hold.isReady(c) {
			c.err = c.errNeverReady(crashed)
		}
		if !crashed || c.err != nil || w.ctx.Err() != nil {
			return
		}
		if left := time.Duration(w.deadline - w.h.Clock.Now()); left <= c.w.cfg.span(c.w.cfg.RestartDelay) {
			return
		}
		t := time.NewTimer(w.cfg.span(w.cfg.RestartDelay))
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return
		}
	}
}

// runLocal runs one in-process session and reports whether it crashed.
func (c *Client) runLocal(proc history.Process, hold bool) (bool, error) {
	w := c.w
	f, closeFn, err := build(w.cfg.Lock.Builder, w.cfg.spec(c.id))
	if err != nil {
		return false, fmt.Errorf("client %d: %w", c.id, err)
	}
	if hold && !c.waitBegin() {
		if cerr := closeFn(); cerr != nil {
			return false, fmt.Errorf("client %d: closing the lock factory: %w", c.id, cerr)
		}
		return false, nil
	}
	log := newProcLog(w.rec, w.h.Clock, proc, c.id)
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	ls := &localSink{c: c, log: log, ctx: ctx, cancel: cancel}
	c.mu.Lock()
	c.local = ls
	c.mu.Unlock()
	s := newSession(w.cfg, c.id, proc, w.h.Clock, &c.wall, ls, f, w.deadline, &c.ops, &c.crashes)
	err = s.run(ctx)
	c.mu.Lock()
	c.local = nil
	c.mu.Unlock()
	crashed := ls.dead()
	log.end("client stopped", false)
	cancel() // before closing: a crashed client's watchdogs must not outlive it
	if cerr := closeFn(); cerr != nil && err == nil && !crashed {
		err = fmt.Errorf("closing the lock factory: %w", cerr)
	}
	if errors.Is(err, errCrashed) {
		err = nil
	}
	if err != nil {
		return crashed, fmt.Errorf("client %d: %w", c.id, err)
	}
	return crashed, nil
}

// localSink connects an in-process session to the harness.
type localSink struct {
	c       *Client
	log     *procLog
	ctx     context.Context // the session's
	cancel  context.CancelFunc
	crashed atomic.Bool
}

func (l *localSink) record(op history.Op) { l.log.record(op) }

func (l *localSink) apply(ctx context.Context, inv history.Op) (history.Op, error) {
	if l.dead() {
		return history.Op{}, errCrashed
	}
	inv.Process, inv.Client = l.log.proc, l.log.client
	if err := l.c.w.checkRequest(inv); err != nil {
		return history.Op{}, err
	}
	answer := make(chan history.Op, 1) // the link never waits for a client that gave up
	l.c.link.send(inv, func(done history.Op) { answer <- done })
	select {
	case done := <-answer:
		return done, nil
	case <-ctx.Done():
		return history.Op{}, fmt.Errorf("no answer from the resource: %w", ctx.Err())
	}
}

// stepAction carries out what is armed at step: a crash, or a sleep in
// the step (not a real stop: the client's other goroutines run on).
func (l *localSink) stepAction(key, step string) error {
	a, ok := l.c.takeArmed(step)
	if !ok {
		return nil
	}
	if a.Action.Crash {
		return l.crash(crashReason(step, true))
	}
	a.Key = key
	begin := time.Now()
	l.record(pauseBegin(a, l.c.w.h.Clock.Now()))
	t := time.NewTimer(a.Action.Pause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.ctx.Done(): // the workload ends, or the client was killed
	}
	l.record(pauseEnd(a, time.Since(begin), l.c.w.h.Clock.Now()))
	if l.dead() {
		return errCrashed
	}
	return nil
}

// crash abandons the session: from now on nothing it does is recorded,
// its open invokes become info, and its context ends without any release.
func (l *localSink) crash(reason string) error {
	if l.crashed.CompareAndSwap(false, true) {
		l.log.end(reason, true)
		l.cancel()
	}
	return errCrashed
}

func (l *localSink) dead() bool { return l.crashed.Load() }

// lockedWriter serialises worker processes' stderr copies.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
