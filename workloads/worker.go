package workloads

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// workerOutFd is where a worker writes its messages: cmd.ExtraFiles[0].
const workerOutFd = 3

// IsWorker reports whether this process was started as a workload worker.
func IsWorker() bool { return os.Getenv(WorkerEnv) == "1" }

// WorkerMain runs this process as a workload worker and exits; it never
// returns. Call it first thing in main or TestMain when IsWorker is true,
// after the lock builders are registered (init functions are).
func WorkerMain() {
	os.Exit(workerMain())
}

func workerMain() int {
	ws := &workerSink{
		out:     bufio.NewWriter(os.NewFile(workerOutFd, "harness")),
		waiting: map[uint64]chan history.Op{},
		armed:   map[string]armedStep{},
		resumed: map[uint64]chan struct{}{},
		quit:    make(chan struct{}),
		begin:   make(chan workerBegin, 1),
	}
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(os.Stderr, "tumbler worker: no config from the harness: %v\n", err)
		return 1
	}
	var init workerInit
	if err := json.Unmarshal(line, &init); err != nil {
		ws.fatal(fmt.Errorf("bad worker config: %w", err))
		return 1
	}
	if os.Getppid() != init.ParentPid {
		return 1 // the harness died before Pdeathsig could take hold
	}
	cfg := init.Config
	if err := cfg.Validate(); err != nil {
		ws.fatal(err)
		return 1
	}
	cfg = cfg.withDefaults()
	for _, a := range init.Armed {
		ws.armed[a.Step] = a
	}
	f, closeFn, err := build(cfg.Lock.Builder, cfg.spec(init.Client))
	if err != nil {
		ws.fatal(err)
		return 1
	}
	defer closeFn()

	var wall WallClock
	wall.SetOffset(init.Offset)
	wall.SetDrift(init.Drift)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ws.readControl(in, &wall, cancel)
	if init.Wait {
		ws.send(message{Ready: true})
		select {
		case b := <-ws.begin:
			init.ClockStart, init.Deadline = b.ClockStart, b.Deadline
		case <-ws.quit: // stopped before time zero
			ws.send(message{Done: true})
			return 0
		}
	}

	var ops, crashes atomic.Int64
	ops.Store(init.Ops)
	crashes.Store(init.Crashes)
	s := newSession(cfg, init.Client, init.Process, history.ClockFrom(init.ClockStart), &wall, ws, f, init.Deadline, &ops, &crashes)
	if err := s.run(ctx); err != nil {
		ws.fatal(err)
		return 1
	}
	ws.send(message{Done: true})
	return 0
}

// workerSink is a worker session's side of the pipes.
type workerSink struct {
	mu  sync.Mutex
	out *bufio.Writer

	wmu     sync.Mutex
	nextID  uint64
	waiting map[uint64]chan history.Op
	armed   map[string]armedStep
	resumed map[uint64]chan struct{} // pauses waiting for the harness

	quit  chan struct{}    // closed when the harness stops talking to us
	begin chan workerBegin // a held worker's time zero
}

// send writes one message and flushes it at once: an op still in a buffer
// when the worker is killed would vanish from the history.
func (w *workerSink) send(m message) {
	b, err := json.Marshal(m)
	if err != nil {
		panic("workloads: marshal a worker message: " + err.Error()) // plain data; cannot fail
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(b)
	w.out.WriteByte('\n')
	if err := w.out.Flush(); err != nil {
		os.Exit(1) // the harness is gone; there is nobody to work for
	}
}

// fatal reports why the session cannot run, with the registered kinds the
// error is (RegisterErrorKind), which the harness's error keeps.
func (w *workerSink) fatal(err error) { w.send(message{Fatal: err.Error(), Kinds: kindsOf(err)}) }

func (w *workerSink) record(op history.Op) { w.send(message{Op: &op}) }

func (w *workerSink) apply(ctx context.Context, inv history.Op) (history.Op, error) {
	ch := make(chan history.Op, 1)
	w.wmu.Lock()
	w.nextID++
	id := w.nextID
	w.waiting[id] = ch
	w.wmu.Unlock()
	defer func() {
		w.wmu.Lock()
		delete(w.waiting, id)
		w.wmu.Unlock()
	}()
	w.send(message{Req: &inv, ID: id})
	select {
	case done := <-ch:
		return done, nil
	case <-ctx.Done():
		return history.Op{}, fmt.Errorf("no answer from the resource: %w", ctx.Err())
	}
}

// crash reports the crash and exits on the spot: no release, no deferred
// cleanup, the watchdog dies with the process and the kernel closes the
// sockets.
func (w *workerSink) crash(reason string) error {
	w.send(message{Crash: reason})
	os.Exit(crashExit)
	return nil
}

func (w *workerSink) dead() bool { return false }

// stepAction carries out what is armed at step. A pause asks the harness
// to stop this whole process and blocks until the harness says it has
// continued it, so nothing of the step runs on before the stop.
func (w *workerSink) stepAction(key, step string) error {
	w.wmu.Lock()
	a, ok := w.armed[step]
	delete(w.armed, step)
	var resumed chan struct{}
	if ok && !a.Action.Crash {
		resumed = make(chan struct{})
		w.resumed[a.ID] = resumed
	}
	w.wmu.Unlock()
	if !ok {
		return nil
	}
	a.Key = key
	if a.Action.Crash {
		w.send(message{Fired: &a, Crash: crashReason(step, true)})
		os.Exit(crashExit)
	}
	w.send(message{Fired: &a})
	select {
	case <-resumed:
	case <-w.quit:
	}
	return nil
}

// readControl handles the harness's messages. When the harness closes the
// pipe (it stopped, or died) the session is cancelled.
func (w *workerSink) readControl(in *bufio.Reader, wall *WallClock, cancel context.CancelFunc) {
	defer cancel()
	defer close(w.quit)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			fmt.Fprintf(os.Stderr, "tumbler worker: bad line from the harness %q: %v\n", line, err)
			return
		}
		switch {
		case m.Resp != nil:
			w.wmu.Lock()
			ch := w.waiting[m.ID]
			w.wmu.Unlock()
			if ch != nil {
				select {
				case ch <- *m.Resp:
				default: // a duplicate answer
				}
			}
		case m.Offset != nil:
			wall.SetOffset(time.Duration(*m.Offset))
		case m.Drift != nil:
			wall.SetDrift(*m.Drift)
		case m.Arm != nil:
			w.wmu.Lock()
			if m.Arm.Action == (StepAction{}) {
				delete(w.armed, m.Arm.Step) // disarmed
			} else {
				w.armed[m.Arm.Step] = *m.Arm
			}
			w.wmu.Unlock()
		case m.Resumed != 0:
			w.wmu.Lock()
			if ch := w.resumed[m.Resumed]; ch != nil {
				close(ch)
				delete(w.resumed, m.Resumed)
			}
			w.wmu.Unlock()
		case m.Begin != nil:
			select {
			case w.begin <- *m.Begin:
			default: // a duplicate
			}
		case m.Stop:
			return
		}
	}
}
