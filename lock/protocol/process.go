package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/procgroup"
	"github.com/tumbler-dev/tumbler/lock"
)

// MaxLine is the longest line either side may write.
const MaxLine = 1 << 20

// Config is how to run one client program.
type Config struct {
	// Name names the client in errors ("redis-py", or its command).
	Name    string
	Command []string
	// Dir is the program's working directory ("": the harness's).
	Dir string
	// Env is added to the harness's environment.
	Env []string
	// Init is sent at every start of the program; Type and ID are set here.
	Init Init
	// Log receives the program's stderr (nil: discarded).
	Log io.Writer
	// Grace is added to a call's own budget to bound its reply (0:
	// DefaultGrace).
	Grace time.Duration
	// InitTimeout bounds the reply to init (0: 30 s: an interpreter that
	// imports a framework, such as tooz's oslo libraries, took 5.6 s on a
	// 2-core host under a load of 10, and a test suite's parallel packages
	// load it more).
	InitTimeout time.Duration
	// ClockShim is the path of the clock shim library (clockshim.Build);
	// "" runs the program without it (no client clock faults).
	ClockShim string
	// SameGroup keeps the program in this process's group — a client
	// worker's, so that a client pause (SIGSTOP of the group) stops it
	// too and the worker's end kills what it started —; otherwise it runs
	// in a group of its own. Either way every end of the program kills
	// what it started with it (procgroup).
	SameGroup bool
	// Trace, when set, receives every line exchanged with the program, as
	// it went: "> " and the request, "< " and the client's line.
	Trace io.Writer
	// AnswersValid: the program answers the valid request (its manifest's
	// answers_valid); its locks are then lock.Validators.
	AnswersValid bool
}

// Process is the harness's side of one client program: it starts the
// program, sends it init, and carries one call at a time to it and its
// reply back, restarting the program after a crash, a hang or a broken
// line. It is safe for concurrent use; calls queue.
type Process struct {
	cfg Config

	call sync.Mutex // one request at a time

	mu      sync.Mutex
	cur     *child
	nextID  uint64
	library string
	fails   int // consecutive failed starts
	closed  bool
	leases  map[string]Lease // wire leases by lock.Lease.Value
	seq     uint64           // leases without a token of their own
	tail    *tail

	clock    *clockshim.File
	clockDir string
	wall     func() time.Time
	stopTick chan struct{}
}

// child is one run of the program.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// stdout is read by the call in flight, with a deadline on each read,
	// so a reply reaches the caller with no goroutine in between.
	stdout *os.File
	lines  *lineReader
	exited chan struct{} // closed once it exited and was reaped
	status string        // how it exited (after exited)
	kill   sync.Once
	group  bool   // it leads a process group of its own
	forget func() // untracks its group (procgroup.Track)
}

// Start runs the program and initialises it. An error says why it could
// not: the program did not start (ErrCommand), its init failed (ErrInit),
// or it did not answer its init in time.
func Start(cfg Config) (*Process, error) { return StartContext(context.Background(), cfg) }

// StartContext is Start, whose wait for the init's reply also ends, with
// the program killed, when ctx does.
func StartContext(ctx context.Context, cfg Config) (*Process, error) {
	if len(cfg.Command) == 0 {
		return nil, fmt.Errorf("%w: client %s: no command", lock.ErrConfig, cfg.Name)
	}
	if err := cfg.Init.Validate(); err != nil {
		return nil, fmt.Errorf("%w: client %s: %w", lock.ErrConfig, cfg.Name, err)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace(cfg.Init)
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 30 * time.Second
	}
	cfg.Init.Type = TypeInit
	p := &Process{cfg: cfg, leases: map[string]Lease{}, tail: &tail{}}
	if cfg.ClockShim != "" {
		dir, err := os.MkdirTemp("", "tumbler-client-clock-")
		if err != nil {
			return nil, fmt.Errorf("client %s: clock file: %w", cfg.Name, err)
		}
		if p.clock, err = clockshim.Open(filepath.Join(dir, "clock")); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("client %s: %w", cfg.Name, err)
		}
		p.clockDir = dir
	}
	p.call.Lock()
	defer p.call.Unlock()
	if _, err := p.ensure(ctx, true); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// DefaultGrace is how long past a call's own budget a client may take to
// answer: two read timeouts per server it may have to wait on (a library
// that asks nodes one after the other, a Sentinel asked first), plus one
// second. A library that honours its read timeout always answers in time.
func DefaultGrace(in Init) time.Duration {
	servers := max(1, len(in.Sentinels))
	if in.Connect == ConnectNodes {
		servers = len(in.Nodes)
	}
	return time.Duration(2*servers)*time.Duration(in.ReadTimeoutMS)*time.Millisecond + time.Second
}

// ErrInit is a client's refusal of its init: the settings it was given do
// not suit it (a bad input, not a harness failure).
var ErrInit = errors.New("the client refused its init")

// ErrCommand is a client program that cannot start: its command does not
// exist or cannot be run (a bad input, not a harness failure).
var ErrCommand = errors.New("the client's command cannot start")

// Library is what the client said it drives ("redis-py 4.3.4").
func (p *Process) Library() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.library
}

// Close ends the program: stdin closed, then SIGKILL after a second.
func (p *Process) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	c := p.cur
	p.cur = nil
	if p.stopTick != nil {
		close(p.stopTick)
	}
	p.mu.Unlock()
	if c != nil {
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(time.Second):
		}
		c.terminate()
		<-c.exited
	}
	err := p.clock.Close()
	if p.clockDir != "" {
		os.RemoveAll(p.clockDir)
	}
	return err
}

// ensure returns the running program, starting it (and sending init) if
// there is none. The caller holds p.call. first: the program's first
// start, before the run, whose init is bounded by the wall clock and by
// ctx (a restart's is bounded by the time the harness was running, as a
// call is).
func (p *Process) ensure(ctx context.Context, first bool) (*child, error) {
	p.mu.Lock()
	c, closed, fails := p.cur, p.closed, p.fails
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("client %s: closed", p.cfg.Name)
	}
	if c != nil {
		select {
		case <-c.exited: // it died between calls: start it again
			p.drop(c)
		default:
			return c, nil
		}
	}
	if fails > 0 { // back off after failed starts: 100 ms, 200 ms, … 2 s
		time.Sleep(min(100*time.Millisecond<<min(fails-1, 5), 2*time.Second))
	}
	c, err := p.spawn()
	if err == nil {
		err = p.init(ctx, c, first)
		if err != nil {
			c.terminate()
			<-c.exited
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.fails++
		return nil, err
	}
	p.fails, p.cur = 0, c
	return c, nil
}

func (p *Process) spawn() (*child, error) {
	cmd := exec.Command(p.cfg.Command[0], p.cfg.Command[1:]...)
	cmd.Dir = p.cfg.Dir
	cmd.Env = append(os.Environ(), p.cfg.Env...)
	if p.clock != nil {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+p.cfg.ClockShim, clockshim.Env+"="+filepath.Join(p.clockDir, "clock"))
	}
	// In a worker the program stays in the worker's process group, so a
	// client pause (SIGSTOP of the group) stops it too; it dies with its
	// worker. Run by the harness, it leads a group of its own, killed
	// whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: !p.cfg.SameGroup}
	var log io.Writer = p.tail
	if p.cfg.Log != nil {
		log = io.MultiWriter(p.cfg.Log, p.tail)
	}
	// Its stderr is a pipe of our own too, copied here: a process the
	// program started may hold it open after the program ended, and the
	// program's end must not wait for that.
	stderr, ew, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", p.cfg.Name, err)
	}
	cmd.Stderr = ew
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", p.cfg.Name, err)
	}
	// Its stdout is a pipe of our own rather than StdoutPipe, whose reading
	// end Wait closes: the reply a program wrote just before it exited must
	// still be read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", p.cfg.Name, err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	ew.Close()
	if err != nil {
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("%w: client %s: start %q: %w", ErrCommand, p.cfg.Name, strings.Join(p.cfg.Command, " "), err)
	}
	go func() {
		_, _ = io.Copy(log, stderr)
		stderr.Close()
	}()
	c := &child{cmd: cmd, stdin: stdin, stdout: stdout, lines: newLineReader(stdout, stdout), exited: make(chan struct{}),
		group: !p.cfg.SameGroup, forget: func() {}}
	if c.group {
		c.forget = procgroup.Track(cmd.Process.Pid)
	}
	go c.reap()
	return c, nil
}

// reap waits for the program to exit.
func (c *child) reap() {
	werr := c.cmd.Wait()
	c.status = "exited normally"
	if werr != nil {
		c.status = werr.Error()
	}
	close(c.exited)
}

// terminate kills the program and what it started — its process group,
// or in a worker's group its process tree — and stops reading it; it is
// how every child ends.
func (c *child) terminate() {
	c.kill.Do(func() {
		if c.group {
			_ = procgroup.Kill(c.cmd.Process.Pid)
			c.forget()
		} else {
			select {
			case <-c.exited: // reaped: its pid may be another's now
			default:
				procgroup.KillTree(c.cmd.Process.Pid)
			}
		}
		_ = c.cmd.Process.Kill()
		c.stdout.Close()
	})
}

// init sends init and waits for its reply.
func (p *Process) init(ctx context.Context, c *child, first bool) error {
	in := p.cfg.Init
	p.mu.Lock()
	p.nextID++
	in.ID = p.nextID
	p.mu.Unlock()
	req := Request{Type: TypeInit, ID: in.ID}
	if err := p.send(c, in); err != nil {
		return p.fault(req, nil, fmt.Errorf("write init: %w", err))
	}
	rep, err := p.await(c, req, p.cfg.InitTimeout, nil, ctx, first)
	if err != nil {
		return err
	}
	switch rep.Type {
	case TypeOK:
		p.mu.Lock()
		p.library = rep.Library
		p.mu.Unlock()
		return nil
	case TypeFail:
		return fmt.Errorf("%w: client %s: %s", ErrInit, p.cfg.Name, rep.Error)
	}
	return fmt.Errorf("client %s: init answered %s: %s", p.cfg.Name, rep.Type, rep.Error)
}

// send writes v to c as one line.
func (p *Process) send(c *child, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.trace("> ", b)
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// trace writes one line of the transcript (Config.Trace).
func (p *Process) trace(dir string, line []byte) {
	if p.cfg.Trace != nil {
		_, _ = p.cfg.Trace.Write(append(append([]byte(dir), line...), '\n'))
	}
}

// do sends req and waits for its reply: within the call's budget (ctx's
// deadline) plus the grace, handing the client's steps to hook (the
// workload's, which may pause it or crash it by returning an error). Any
// failure is an *Error (an unknown outcome).
func (p *Process) do(ctx context.Context, req Request, hook lock.StepHook) (Reply, error) {
	p.call.Lock()
	defer p.call.Unlock()
	c, err := p.ensure(ctx, false)
	if err != nil {
		return Reply{}, p.fault(req, nil, fmt.Errorf("could not (re)start the client: %w", err))
	}
	p.syncClock()
	p.mu.Lock()
	p.nextID++
	req.ID = p.nextID
	p.mu.Unlock()
	budget := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		budget = max(0, time.Until(d))
	}
	if err := p.send(c, req); err != nil {
		p.drop(c)
		return Reply{}, p.fault(req, nil, fmt.Errorf("write the request: %w (%s)", err, p.exitStatus(c)))
	}
	return p.await(c, req, budget+p.cfg.Grace, hook, ctx, false)
}

// await reads the program's lines until the reply to req, handing steps to
// hook. bound counts only time the harness was running: a pause of the
// client's process group (which stops the harness's worker too) does not
// count against the client. A first init's bound (first) is wall time —
// no pause comes before the run — and ends with ctx.
func (p *Process) await(c *child, req Request, bound time.Duration, hook lock.StepHook, ctx context.Context, first bool) (Reply, error) {
	const tick = 20 * time.Millisecond
	awake, last := time.Duration(0), time.Now()
	for {
		line, err := c.lines.next(time.Now().Add(tick))
		now := time.Now()
		gap := now.Sub(last)
		last = now
		if gap > 5*tick && !first { // the harness itself was stopped meanwhile
			gap = tick
		}
		awake += gap
		if first && ctx.Err() != nil {
			p.drop(c)
			return Reply{}, p.fault(req, nil, fmt.Errorf("interrupted while waiting for the reply to init: %w", ctx.Err()))
		}
		timeout := errors.Is(err, os.ErrDeadlineExceeded)
		if err != nil && !timeout {
			return Reply{}, p.ended(c, req, err)
		}
		var rep Reply
		if !timeout {
			p.trace("< ", line)
			if err := json.Unmarshal(line, &rep); err != nil {
				p.drop(c)
				return Reply{}, p.fault(req, line, fmt.Errorf("not a JSON object: %v", err))
			}
			if err := rep.check(req); err != nil {
				p.drop(c)
				return Reply{}, p.fault(req, line, err)
			}
			if rep.Type != TypeStep {
				return rep, nil
			}
			if armed := p.cfg.Init.Steps; armed != nil && !slices.Contains(*armed, rep.Step) {
				p.drop(c)
				return Reply{}, p.fault(req, line, fmt.Errorf("reported step %q, which its init did not arm (init's steps: %s): a client reports only the steps its init names", rep.Step, orNone(*armed)))
			}
		}
		if awake >= bound { // silence, or steps without end
			p.drop(c)
			if req.Type == TypeInit {
				return Reply{}, p.fault(req, nil, fmt.Errorf("no reply to init within %v: killed (a client answers its init within %v: clients/PROTOCOL.md; it reads one request a line on stdin, writes one reply a line on stdout and flushes it)", bound.Round(time.Millisecond), bound.Round(time.Millisecond)))
			}
			return Reply{}, p.fault(req, nil, fmt.Errorf("no reply within %v (the call's budget plus a grace of %v): killed", bound.Round(time.Millisecond), p.cfg.Grace))
		}
		if timeout {
			continue
		}
		if hook != nil {
			if err := hook(ctx, rep.Step); err != nil {
				p.drop(c) // the client crashed at its step
				return Reply{}, err
			}
		}
		last = time.Now() // a pause at the step is not the client's time
		if err := p.send(c, Request{Type: TypeContinue, InReplyTo: rep.ID}); err != nil {
			p.drop(c)
			return Reply{}, p.fault(req, nil, fmt.Errorf("write continue: %w", err))
		}
	}
}

// ended is the fault of a program whose stdout ended (err: io.EOF when it
// closed it) while req was in flight.
func (p *Process) ended(c *child, req Request, err error) error {
	if !errors.Is(err, io.EOF) {
		c.terminate()
	}
	select { // it closed its stdout: give it a moment to exit
	case <-c.exited:
	case <-time.After(time.Second):
	}
	p.drop(c)
	<-c.exited
	why := "closed its stdout"
	if !errors.Is(err, io.EOF) {
		why = err.Error()
	}
	return p.fault(req, nil, fmt.Errorf("%s (%s); its stderr ends: %s", why, c.status, p.tail.last()))
}

// drop kills c and forgets it: the next call starts the program again.
func (p *Process) drop(c *child) {
	c.terminate()
	p.mu.Lock()
	if p.cur == c {
		p.cur = nil
	}
	p.mu.Unlock()
}

func (p *Process) exitStatus(c *child) string {
	select {
	case <-c.exited:
		return c.status
	case <-time.After(100 * time.Millisecond):
		return "still running"
	}
}

// Error is a call the client did not answer properly: its outcome is
// unknown (it unwraps to lock.ErrUnknown, so the history records info).
type Error struct {
	Client  string
	Request string // "request 7 (acquire tumbler:0)"
	Line    string // the offending line, clipped; "" if none
	Err     error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("client %s: %s: %v", e.Client, e.Request, e.Err)
	if e.Line != "" {
		s += fmt.Sprintf("; line %q", e.Line)
	}
	return s
}

// Unwrap makes the error an unknown outcome.
func (e *Error) Unwrap() []error { return []error{lock.ErrUnknown, e.Err} }

func (p *Process) fault(req Request, line []byte, err error) error {
	what := req.Type
	if req.Key != "" {
		what += " " + req.Key
	}
	return &Error{Client: p.cfg.Name, Request: fmt.Sprintf("request %d (%s)", req.ID, what), Line: clip(line), Err: err}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// setWall makes the program's wall clock follow now (the workload's clock
// for this client, which a client-clock fault shifts): before every call,
// and every few milliseconds in between, for libraries that read the clock
// on their own threads.
func (p *Process) setWall(now func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clock == nil || now == nil || p.wall != nil || p.closed {
		return
	}
	p.wall = now
	p.stopTick = make(chan struct{})
	go func(stop <-chan struct{}) {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.syncClock()
			}
		}
	}(p.stopTick)
}

func (p *Process) syncClock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wall == nil || p.closed {
		return
	}
	off := p.wall().Sub(time.Now()).Round(time.Microsecond)
	if p.clock.Get() != off {
		p.clock.Set(off)
	}
}

// tail keeps the last lines a program wrote to stderr, for errors.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if n := len(t.buf); n > 4096 {
		t.buf = append([]byte(nil), t.buf[n-2048:]...)
	}
	return len(b), nil
}

// last is the end of the stderr, up to 3 lines.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(t.buf), "\n"), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	s := strings.Join(lines, " | ")
	if s == "" {
		return "(nothing)"
	}
	return s
}
