package workloads

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/procgroup"
)

// WorkerEnv is the environment variable that marks a worker process.
const WorkerEnv = "TUMBLER_WORKER"

// crashExit is a worker's exit status after a Config.Crash crash.
const crashExit = 3

// message is one JSON line between the harness and a worker. Worker →
// harness (on the worker's fd 3): Ready (a held worker), Op, Req (+ID),
// Fired (+Crash), Crash, Fatal (+Kinds), Done. Harness → worker (on its
// stdin): first a workerInit line, then Begin (a held worker, once it said
// Ready), Resp (+ID), Offset, Drift, Arm, Resumed, Stop.
//
// An armed pause is a handshake: the worker sends Fired and blocks until
// Resumed, which the harness sends only after it has stopped the worker
// (SIGSTOP), waited and continued it (SIGCONT).
type message struct {
	Op      *history.Op      `json:"op,omitempty"`
	Req     *history.Op      `json:"req,omitempty"`
	Resp    *history.Op      `json:"resp,omitempty"`
	ID      uint64           `json:"id,omitempty"`
	Offset  *int64           `json:"offset,omitempty"`
	Drift   *clockshim.Drift `json:"drift,omitempty"`
	Arm     *armedStep       `json:"arm,omitempty"`
	Fired   *armedStep       `json:"fired,omitempty"`
	Resumed uint64           `json:"resumed,omitempty"` // the Fired pause's ID
	Stop    bool             `json:"stop,omitempty"`
	Crash   string           `json:"crash,omitempty"`
	Fatal   string           `json:"fatal,omitempty"`
	Kinds   []string         `json:"kinds,omitempty"` // Fatal's (RegisterErrorKind)
	Done    bool             `json:"done,omitempty"`
	Ready   bool             `json:"ready,omitempty"` // a held worker's locks are built
	Begin   *workerBegin     `json:"begin,omitempty"` // time zero, for a held worker
}

// workerBegin starts a worker held by workerInit.Wait.
type workerBegin struct {
	ClockStart int64 `json:"clock_start"`
	Deadline   int64 `json:"deadline"`
}

// workerInit is everything a worker needs to run one session.
type workerInit struct {
	Config     Config          `json:"config"`
	Client     int             `json:"client"`
	Process    history.Process `json:"process"`
	ClockStart int64           `json:"clock_start"`
	Deadline   int64           `json:"deadline"`
	Offset     time.Duration   `json:"offset"`
	Drift      clockshim.Drift `json:"drift,omitzero"`
	Ops        int64           `json:"ops"`
	Crashes    int64           `json:"crashes"`
	ParentPid  int             `json:"parent_pid"`
	Armed      []armedStep     `json:"armed,omitempty"`
	// Wait: build the locks, say Ready, and wait for Begin's clock start
	// and deadline (ClockStart and Deadline are then unset).
	Wait bool `json:"wait,omitempty"`
}

// worker is the harness's side of one worker process.
type worker struct {
	cmd   *exec.Cmd
	pid   int
	stdin *os.File
	out   *os.File

	sendMu sync.Mutex

	killOnce sync.Once
	killed   chan struct{} // closed by kill
	forget   func()        // untracks its process group (procgroup.Track)

	mu    sync.Mutex
	crash string   // why it said it crashed
	fatal string   // why it said it could not run
	kinds []string // the kinds of its fatal error (RegisterErrorKind)
	done  bool     // it said its session ended normally
}

// runWorker runs one session in a worker process and reports whether it
// crashed.
func (c *Client) runWorker(proc history.Process, hold bool) (bool, error) {
	w := c.w
	var clock *history.Clock // a held worker's log gets it at Begin
	if !hold {
		clock = w.h.Clock
	}
	log := newProcLog(w.rec, clock, proc, c.id)
	wk, err := c.spawn(proc, hold)
	if err != nil {
		log.end("worker could not start", false)
		return false, fmt.Errorf("client %d: %w", c.id, err)
	}
	stopped := make(chan struct{})
	go c.stopOnCancel(wk, stopped)
	readErr := c.serve(wk, log)
	if readErr != nil {
		_ = wk.kill() // a worker that speaks garbage cannot be trusted to stop
	}
	waitErr := wk.cmd.Wait()
	// What the worker's lock client program started may outlive both in
	// the worker's group: the group ends with its worker.
	_ = procgroup.Kill(wk.pid)
	wk.forget()
	close(stopped)
	c.mu.Lock()
	c.worker, c.paused = nil, false
	c.mu.Unlock()

	wk.mu.Lock()
	crashMsg, fatal, kinds, done := wk.crash, wk.fatal, wk.kinds, wk.done
	wk.mu.Unlock()
	switch {
	case fatal != "":
		log.end("worker failed: "+fatal, false)
		return false, fmt.Errorf("client %d: worker: %w", c.id, workerError(fatal, kinds))
	case readErr != nil:
		log.end("worker broke the protocol", true)
		return false, fmt.Errorf("client %d: worker protocol: %w", c.id, readErr)
	case done: // whatever ended the process after that, its session was over
		log.end("worker exited", false)
		return false, nil
	case waitErr == nil:
		log.end("worker exited without running", false)
		return false, fmt.Errorf("client %d: worker %d exited without running a session: does this program call workloads.WorkerMain first thing when workloads.IsWorker()?", c.id, wk.pid)
	case crashMsg != "":
		log.end(crashMsg, true)
		return true, nil
	default:
		log.end("worker process ended: "+waitErr.Error(), true)
		return true, nil
	}
}

func (c *Client) spawn(proc history.Process, hold bool) (*worker, error) {
	w := c.w
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(exe)
	if name, err := os.Executable(); err == nil {
		cmd.Args[0] = name // what ps shows
	}
	cmd.Env = append(os.Environ(), WorkerEnv+"=1")
	if _, set := os.LookupEnv("GORACE"); !set {
		// A race-enabled worker would otherwise sleep 1 s at every exit.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	// Messages travel on fd 3, so a stray print on stdout cannot corrupt them.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, w.h.WorkerLog, w.h.WorkerLog
	cmd.ExtraFiles = []*os.File{outW}
	// Own process group: Pause/Kill signal the worker and nothing else.
	// Pdeathsig: a worker never outlives the harness.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start worker %s: %w", exe, err)
	}
	wk := &worker{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, out: outR, killed: make(chan struct{}), forget: procgroup.Track(cmd.Process.Pid)}
	init := workerInit{
		Config: w.cfg, Client: c.id, Process: proc, Offset: c.wall.Offset(),
		Drift: c.wall.Drift(),
		Ops:   c.ops.Load(), Crashes: c.crashes.Load(), ParentPid: os.Getpid(),
		Wait: hold,
	}
	if !hold {
		init.ClockStart, init.Deadline = w.h.Clock.Start(), w.deadline
	}
	// What is armed goes with the config and the worker becomes the
	// client's in one step, so an ArmStep racing with the start reaches it
	// one way or the other.
	c.mu.Lock()
	init.Armed = c.armedSteps()
	err = wk.sendJSON(init)
	if err == nil {
		c.worker, c.paused = wk, false
	}
	c.mu.Unlock()
	if err != nil {
		_ = wk.kill()
		_ = cmd.Wait()
		wk.forget()
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("send the worker its config: %w", err)
	}
	return wk, nil
}

// serve reads the worker's messages until it closes its output.
func (c *Client) serve(wk *worker, log *procLog) error {
	defer wk.out.Close()
	defer wk.stdin.Close()
	r := bufio.NewReaderSize(wk.out, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return nil // EOF: the worker exited or was killed
		}
		var m message
		if jerr := json.Unmarshal(line, &m); jerr != nil {
			return fmt.Errorf("bad line from worker %d: %q: %w", wk.pid, line, jerr)
		}
		switch {
		case m.Op != nil:
			if isClientOp(*m.Op) {
				c.ops.Add(1)
			}
			log.record(*m.Op)
		case m.Req != nil:
			req := *m.Req
			req.Process, req.Client = log.proc, log.client
			if err := c.w.checkRequest(req); err != nil {
				return fmt.Errorf("worker %d: %w", wk.pid, err)
			}
			c.ops.Add(1)
			id := m.ID
			c.link.send(req, func(done history.Op) {
				_ = wk.send(message{Resp: &done, ID: id}) // a dead worker needs no answer
			})
		case m.Fired != nil:
			c.disarm(*m.Fired)
			if m.Crash != "" { // an armed crash: not Config.Crash's to count
				wk.mu.Lock()
				wk.crash = m.Crash
				wk.mu.Unlock()
			} else {
				c.stepPause(wk, log, *m.Fired)
			}
		case m.Crash != "":
			c.crashes.Add(1)
			wk.mu.Lock()
			wk.crash = m.Crash
			wk.mu.Unlock()
		case m.Fatal != "":
			wk.mu.Lock()
			wk.fatal, wk.kinds = m.Fatal, m.Kinds
			wk.mu.Unlock()
		case m.Done:
			wk.mu.Lock()
			wk.done = true
			wk.mu.Unlock()
		case m.Ready:
			go c.beginWorker(wk, log)
		default:
			return fmt.Errorf("empty message from worker %d: %q", wk.pid, line)
		}
	}
}

// beginWorker holds a ready worker until Begin, then gives it and its log
// the run's clock.
func (c *Client) beginWorker(wk *worker, log *procLog) {
	if !c.waitBegin() {
		return // stopped first: stopOnCancel tells the worker
	}
	w := c.w
	log.setClock(w.h.Clock)
	_ = wk.send(message{Begin: &workerBegin{ClockStart: w.h.Clock.Start(), Deadline: w.deadline}})
}

// isClientOp reports whether op is a client operation counted by MaxOps
// (background renewals are not the client's doing).
func isClientOp(op history.Op) bool {
	return op.Type == history.Invoke && (op.F == history.Acquire || op.F == history.Release)
}

// stopOnCancel stops the worker when the workload is cancelled: politely
// (it releases what it holds), then, after a grace, by SIGKILL.
func (c *Client) stopOnCancel(wk *worker, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	case <-c.w.ctx.Done():
	}
	c.mu.Lock()
	paused := c.paused
	c.mu.Unlock()
	if !paused { // a stopped worker cannot read; do not let it act again
		_ = wk.send(message{Stop: true})
		t := time.NewTimer(c.w.cfg.span(c.w.cfg.OpTimeout) + time.Second)
		defer t.Stop()
		select {
		case <-exited:
			return
		case <-t.C:
		}
	}
	_ = wk.kill()
}

func (c *Client) signalWorker(what string, pause bool) error {
	if c.w.cfg.Mode != Processes {
		return fmt.Errorf("client %d: %s %w", c.id, what, ErrNeedsProcessMode)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.worker == nil {
		return fmt.Errorf("client %d: cannot %s: no worker process (stopped, or restarting after a crash)", c.id, what)
	}
	if c.stepPaused {
		return fmt.Errorf("client %d: cannot %s: the client is stopped by an armed step pause", c.id, what)
	}
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(-c.worker.pid, sig); err != nil {
		return fmt.Errorf("client %d: %s worker %d: %w", c.id, what, c.worker.pid, err)
	}
	if pause {
		waitStopped(c.worker.pid)
	}
	c.paused = pause
	return nil
}

// kill SIGKILLs the worker's process group.
func (wk *worker) kill() error {
	wk.killOnce.Do(func() { close(wk.killed) })
	if err := syscall.Kill(-wk.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill worker %d: %w", wk.pid, err)
	}
	return nil
}

func (wk *worker) send(m message) error { return wk.sendJSON(m) }

// sendJSON writes one line to the worker. The deadline keeps a stopped
// worker with a full pipe from blocking the harness.
func (wk *worker) sendJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	wk.sendMu.Lock()
	defer wk.sendMu.Unlock()
	if err := wk.stdin.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	_, err = wk.stdin.Write(b)
	return err
}

// selfExe is the program a worker runs: this very binary. On Linux that is
// /proc/self/exe, which names the running file even after a rebuild
// replaced it at its path — a worker started from the path would then run
// the new build against this one's configuration.
func selfExe() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find this program to start a worker: %w", err)
	}
	return exe, nil
}
