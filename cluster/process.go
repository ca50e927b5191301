package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// ProcessProvider runs redis-server and redis-sentinel (or Valkey's, see
// ProcSpec.Server) from PATH as child
// processes on 127.0.0.1. Every process leads its own process group and is
// started with Pdeathsig=SIGKILL, so it dies with the harness even if the
// harness panics or is killed; the processes are also listed in a record
// under StateDir() so that SweepOrphans can end them should that fail.
// Ports come from reservePort and stay with a process across restarts.
//
// The zero value is not usable; call NewProcessProvider.
type ProcessProvider struct {
	mu     sync.Mutex
	procs  map[string]*proc
	rec    *record
	closed bool
}

type proc struct {
	served
	port *portLock
	bus  *portLock // a cluster node's bus port

	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited and been waited for
	paused bool
}

// NewProcessProvider returns a provider with no processes yet.
func NewProcessProvider() (*ProcessProvider, error) {
	rec, err := newRecord()
	if err != nil {
		return nil, err
	}
	return &ProcessProvider{procs: map[string]*proc{}, rec: rec}, nil
}

// Name is "process".
func (p *ProcessProvider) Name() string { return processKind.Name }

// Controls is every control: the processes are the harness's children.
func (p *ProcessProvider) Controls() Controls { return AllControls }

// Prepare implements Provider: prepareHost.
func (p *ProcessProvider) Prepare(s Spec) error { return prepareHost(s) }

// prepareHost checks that this machine can run s's processes: the server's
// binaries (and the Sentinel's, if any) on PATH, and the clock shim built
// when s needs it.
func prepareHost(s Spec) error {
	if _, err := lookBinary(s.Server.Binary(false)); err != nil {
		return err
	}
	if s.Topology.Sentinels {
		if _, err := lookBinary(s.Server.Binary(true)); err != nil {
			return err
		}
	}
	if s.Clock {
		if _, err := clockshim.Build(); err != nil {
			return err
		}
	}
	return nil
}

func (p *ProcessProvider) sweepRecord() *record { return p.rec }

// ProxyHost is 127.0.0.1.
func (p *ProcessProvider) ProxyHost() string { return "127.0.0.1" }

// readyTimeout bounds how long a process may take to answer PING (a node
// loading a large AOF takes longer; ours are small).
const readyTimeout = 15 * time.Second

// Start implements Provider.
func (p *ProcessProvider) Start(ctx context.Context, s ProcSpec) (string, error) {
	if s.Name == "" || s.Dir == "" {
		return "", fmt.Errorf("start: process needs a name and a directory")
	}
	// The server's working directory is s.Dir, so paths in its
	// configuration must not be relative to ours.
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	s.Dir = dir
	bin, err := lookBinary(s.binary())
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", fmt.Errorf("start %s: provider closed", s.Name)
	}
	pr := p.procs[s.Name]
	if pr == nil {
		pr = &proc{served: served{name: s.Name, dir: s.Dir}}
		p.procs[s.Name] = pr
	}
	p.mu.Unlock()

	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.running() {
		return "", fmt.Errorf("start %s: already running", s.Name)
	}
	if err := pr.prepare(s); err != nil {
		return "", err
	}
	for attempt := 0; ; attempt++ {
		fresh := pr.port == nil
		if fresh {
			if pr.port, err = reservePort(); err != nil {
				return "", fmt.Errorf("start %s: %w", s.Name, err)
			}
		}
		err = p.launch(ctx, pr, bin, s)
		if err == nil {
			return pr.addr(), nil
		}
		// Someone outside tumbler may have bound the port between our
		// check and the server's bind; a first start can move elsewhere.
		if !fresh || attempt >= 4 || !strings.Contains(err.Error(), "Address already in use") {
			return "", err
		}
		pr.port.release()
		pr.port = nil
	}
}

func lookBinary(name string) (string, error) {
	bin, err := exec.LookPath(name)
	if err != nil {
		hint := ""
		if strings.HasPrefix(name, "valkey") {
			hint = "; on Debian bookworm it is in bookworm-backports, which scripts/setup adds"
		}
		return "", fmt.Errorf("%s not found on PATH: install the Debian package %s (apt-get install %s)%s", name, name, name, hint)
	}
	return bin, nil
}

func (pr *proc) running() bool {
	if pr.done == nil {
		return false
	}
	select {
	case <-pr.done:
		return false
	default:
		return true
	}
}

func (pr *proc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(pr.port.port)) }

// prepare lays out the process's directory (layout) and its clock file.
func (pr *proc) prepare(s ProcSpec) error {
	if err := layout(s); err != nil {
		return err
	}
	pr.log = filepath.Join(pr.dir, s.logName())
	if s.Clock && pr.clk == nil {
		clk, err := clockshim.Open(filepath.Join(pr.dir, "clock"))
		if err != nil {
			return fmt.Errorf("start %s: %w", s.Name, err)
		}
		pr.clk = clk
	}
	return nil
}

func (p *ProcessProvider) launch(ctx context.Context, pr *proc, bin string, s ProcSpec) error {
	args := redisArgs(s, pr.dir, s.SecretDir, "127.0.0.1", pr.port.port)
	if s.Cluster {
		// Ports come from a range that may end above 55535, where the
		// default bus port (port+10000) does not exist.
		if pr.bus == nil {
			bus, err := reservePort()
			if err != nil {
				return fmt.Errorf("start %s: bus port: %w", s.Name, err)
			}
			pr.bus = bus
		}
		args = append(args, "--cluster-port", strconv.Itoa(pr.bus.port))
	}

	cmd := exec.Command(bin, args...)
	cmd.Dir = pr.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Redis writes config errors to stderr before its log file is open.
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.Env = os.Environ()
	if s.Clock {
		lib, err := clockshim.Build()
		if err != nil {
			return fmt.Errorf("start %s: %w", s.Name, err)
		}
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+lib, clockshim.Env+"="+filepath.Join(pr.dir, "clock"))
	}
	logStart := fileSize(pr.log)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	pr.cmd, pr.done, pr.paused = cmd, done, false
	p.rec.add(s.Name, cmd.Process.Pid)

	if err := waitPing(ctx, pr.addr(), s.Login, done); err != nil {
		pr.kill()
		<-done
		p.rec.remove(cmd.Process.Pid)
		return fmt.Errorf("start %s on %s: %w%s", s.Name, pr.addr(), err, s.Login.Redact(logTail(pr.log, logStart, stderr.String())))
	}
	return nil
}

// waitPing waits until addr answers PING with PONG (not LOADING), the
// process exits, or the time is up. A refused login or TLS handshake ends
// the wait at once: it will not get better.
func waitPing(ctx context.Context, addr string, login access.Login, exited <-chan struct{}) error {
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, PoolSize: 1, DisableIdentity: true, Protocol: 2}
	login.Apply(o)
	c := redis.NewClient(o)
	defer c.Close()
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		last = c.Ping(pctx).Err()
		cancel()
		if last == nil {
			return nil
		}
		if accessError(last) {
			return fmt.Errorf("%w: cannot log in (%s): %s", ErrAccess, login, login.Redact(last.Error()))
		}
		select {
		case <-exited:
			return errors.New("process exited before it answered PING")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer to PING after %v: %w", readyTimeout, last)
		}
	}
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logTail is what this start wrote to the log and stderr, for an error.
func logTail(path string, from int64, stderr string) string {
	var b []byte
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		if _, err := f.Seek(from, 0); err == nil {
			b = make([]byte, 4096)
			n, _ := f.Read(b)
			b = b[:n]
		}
	}
	out := strings.TrimSpace(string(b) + "\n" + stderr)
	if out == "" {
		return ""
	}
	return "; log: " + out
}

func (pr *proc) kill() {
	if pr.cmd != nil && pr.cmd.Process != nil {
		_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *ProcessProvider) get(name string) (*proc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.procs[name]
	if pr == nil {
		return nil, fmt.Errorf("no process %q", name)
	}
	return pr, nil
}

// Kill implements Provider: SIGKILL to the process group, then wait.
func (p *ProcessProvider) Kill(name string) error {
	pr, err := p.get(name)
	if err != nil {
		return err
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return p.killLocked(pr)
}

func (p *ProcessProvider) killLocked(pr *proc) error {
	if !pr.running() {
		return nil
	}
	pr.kill()
	select {
	case <-pr.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill %s: process %d still there 10s after SIGKILL", pr.name, pr.cmd.Process.Pid)
	}
	p.rec.remove(pr.cmd.Process.Pid)
	pr.paused = false
	return nil
}

// Pause implements Provider with SIGSTOP.
func (p *ProcessProvider) Pause(name string) error { return p.signal(name, "pause", syscall.SIGSTOP) }

// Resume implements Provider with SIGCONT.
func (p *ProcessProvider) Resume(name string) error { return p.signal(name, "resume", syscall.SIGCONT) }

func (p *ProcessProvider) signal(name, op string, sig syscall.Signal) error {
	pr, err := p.get(name)
	if err != nil {
		return err
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if !pr.running() {
		return fmt.Errorf("%s %s: not running", op, name)
	}
	if err := syscall.Kill(-pr.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	pr.paused = sig == syscall.SIGSTOP
	return nil
}

// SetClock implements Provider.
func (p *ProcessProvider) SetClock(name string, offset time.Duration) error {
	pr, err := p.get(name)
	if err != nil {
		return err
	}
	return pr.setClock(offset)
}

// SetClockDrift implements Provider.
func (p *ProcessProvider) SetClockDrift(name string, d clockshim.Drift) error {
	pr, err := p.get(name)
	if err != nil {
		return err
	}
	return pr.setDrift(d)
}

// LogFile implements Provider.
func (p *ProcessProvider) LogFile(name string) string {
	pr, err := p.get(name)
	if err != nil {
		return ""
	}
	return pr.logFile()
}

// Pid is the process id of a running process, 0 if it is not running.
func (p *ProcessProvider) Pid(name string) int {
	pr, err := p.get(name)
	if err != nil {
		return 0
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if !pr.running() {
		return 0
	}
	return pr.cmd.Process.Pid
}

// Paused reports whether the process is stopped by Pause.
func (p *ProcessProvider) Paused(name string) bool {
	pr, err := p.get(name)
	if err != nil {
		return false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.running() && pr.paused
}

// Close implements Provider: kills every process, releases the ports and
// removes the record. Idempotent.
func (p *ProcessProvider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	procs := slices.Collect(maps.Values(p.procs))
	p.mu.Unlock()

	// SIGKILL everything first, then wait, so Close takes one process's
	// exit time, not the sum.
	for _, pr := range procs {
		pr.mu.Lock()
		if pr.running() {
			pr.kill()
		}
	}
	var errs []error
	for _, pr := range procs {
		if err := p.killLocked(pr); err != nil {
			errs = append(errs, err)
		}
		pr.port.release()
		pr.bus.release()
		if err := pr.clk.Close(); err != nil {
			errs = append(errs, err)
		}
		pr.mu.Unlock()
	}
	if len(errs) == 0 {
		p.rec.delete()
	}
	return errors.Join(errs...)
}
