package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// ExternalProvider adopts a running deployment described by an
// ExternalConfig: Start leaves the nodes as they are, the links are the
// proxies of the user's toxiproxy (driven through its HTTP API), and node
// faults run the config's hooks. Faults without a hook are refused with
// an error wrapping ErrUnsupported. Close puts back what the run changed
// as far as the hooks allow: it resumes paused nodes, resets shifted
// clocks and starts killed nodes; the cluster removes the toxics it added.
// It never stops the deployment.
type ExternalProvider struct {
	cfg     ExternalConfig
	timeout time.Duration

	mu      sync.Mutex
	adopted map[string]bool
	down    map[string]bool
	paused  map[string]bool
	shifted map[string]bool
	closed  bool
}

// NewExternalProvider checks cfg and returns a provider for it. It does
// not contact the deployment yet; Start does.
func NewExternalProvider(cfg ExternalConfig) (*ExternalProvider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("external config: %w", err)
	}
	d, _ := cfg.hookTimeout()
	return &ExternalProvider{cfg: cfg, timeout: d, adopted: map[string]bool{}, down: map[string]bool{},
		paused: map[string]bool{}, shifted: map[string]bool{}}, nil
}

// Prepare implements Provider: the deployment runs already.
func (e *ExternalProvider) Prepare(Spec) error { return nil }

// Name is "external".
func (e *ExternalProvider) Name() string { return externalKind.Name }

// Controls are what the config has hooks for: kill/start needs both hooks,
// pause/resume both, clock its hook; wipe needs the wipe hook unless the
// deployment runs without persistence (a start is empty anyway). The
// deployment keeps its own persistence mode.
func (e *ExternalProvider) Controls() Controls { return e.cfg.controls() }

// ProxyHost is the host of the user's toxiproxy API. The cluster makes no
// proxies of its own for an external deployment.
func (e *ExternalProvider) ProxyHost() string {
	u, _ := url.Parse(e.cfg.Toxiproxy)
	return u.Hostname()
}

func (e *ExternalProvider) node(name string) (ExternalNode, error) {
	n, ok := e.cfg.Nodes[name]
	if !ok {
		return n, fmt.Errorf("no node %q in the external config", name)
	}
	return n, nil
}

// Start implements Provider. The first start of a node adopts it: no hook
// runs, the node must answer PING. A start after Kill runs the wipe hook
// if the node must come back empty, then the start hook. The data node's
// Args are not used (the deployment has its own configuration), so a
// persistence other than the config's is refused.
func (e *ExternalProvider) Start(ctx context.Context, s ProcSpec) (string, error) {
	n, err := e.node(s.Name)
	if err != nil {
		return "", fmt.Errorf("start: %w", err)
	}
	e.mu.Lock()
	closed, adopted := e.closed, e.adopted[s.Name]
	e.mu.Unlock()
	if closed {
		return "", fmt.Errorf("start %s: provider closed", s.Name)
	}
	if adopted {
		if err := e.checkRestart(s); err != nil {
			return "", err
		}
		if s.Wipe && e.cfg.Hooks.Wipe != "" {
			if err := e.run(ctx, "wipe", e.cfg.Hooks.Wipe, s.Name, ""); err != nil {
				return "", err
			}
		}
		if err := e.run(ctx, "start", e.cfg.Hooks.Start, s.Name, ""); err != nil {
			return "", err
		}
	}
	if err := waitPing(ctx, n.Addr, s.Login, nil); err != nil {
		return "", fmt.Errorf("start %s: %s: %w", s.Name, n.Addr, err)
	}
	e.mu.Lock()
	e.adopted[s.Name], e.down[s.Name] = true, false
	e.mu.Unlock()
	return n.Addr, nil
}

func unsupportedExternal(fault, why string) error {
	return fmt.Errorf("%w: %s", Unsupported(fault, externalKind.Name), why)
}

// restartChecker is a Provider that can tell, before anything is killed,
// that it could not start the process again as s asks.
type restartChecker interface {
	checkRestart(s ProcSpec) error
}

// checkRestart refuses a restart the deployment cannot do as asked.
func (e *ExternalProvider) checkRestart(s ProcSpec) error {
	for _, h := range []hook{{"kill", e.cfg.Hooks.Kill}, {"start", e.cfg.Hooks.Start}} {
		if h.cmd == "" {
			return unsupportedExternal("restart "+s.Name, "the config has no "+h.name+" hook")
		}
	}
	have := e.cfg.Persistence
	if s.Sentinel || s.Persistence == "" || have == "" {
		return nil
	}
	switch {
	case s.Wipe && have != PersistNone && e.cfg.Hooks.Wipe == "":
		return unsupportedExternal("restart "+s.Name+" empty", "the deployment persists with "+string(have)+" and the config has no wipe hook")
	case !s.Wipe && have != s.Persistence:
		return unsupportedExternal("restart "+s.Name+" with persistence "+string(s.Persistence), "the deployment runs with "+string(have))
	}
	return nil
}

// Kill implements Provider with the kill hook.
func (e *ExternalProvider) Kill(name string) error {
	if _, err := e.node(name); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	e.mu.Lock()
	down := e.down[name]
	e.mu.Unlock()
	if down {
		return nil
	}
	if e.cfg.Hooks.Kill == "" {
		return unsupportedExternal("kill "+name, "the config has no kill hook")
	}
	if err := e.run(context.Background(), "kill", e.cfg.Hooks.Kill, name, ""); err != nil {
		return err
	}
	if err := e.waitDown(name); err != nil {
		return err
	}
	e.mu.Lock()
	e.down[name], e.paused[name] = true, false
	e.mu.Unlock()
	return nil
}

// waitDown waits, within the hook timeout, until node name no longer
// answers: a kill hook may return as soon as the signal is sent ("kill
// -KILL" does), before the process is gone, and a start hook run then
// would find its port still taken. Answering means replying to a PING sent
// in plain text, whatever the reply (-NOAUTH too); a node behind TLS never
// answers so, and is not waited for.
func (e *ExternalProvider) waitDown(name string) error {
	addr := e.cfg.Nodes[name].Addr
	deadline := time.Now().Add(e.timeout)
	for answers(addr) {
		if time.Now().After(deadline) {
			return fmt.Errorf("kill %s: the kill hook succeeded, but %s still answers after %v", name, addr, e.timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// answers says whether a Redis server at addr replies to a plain-text PING
// within 300 ms.
func answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	if conn.SetDeadline(time.Now().Add(300*time.Millisecond)) != nil {
		return false
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	var b [1]byte
	n, err := conn.Read(b[:])
	return err == nil && n == 1 && (b[0] == '+' || b[0] == '-')
}

// Pause implements Provider with the pause hook.
func (e *ExternalProvider) Pause(name string) error { return e.pauseResume(name, true) }

// Resume implements Provider with the resume hook.
func (e *ExternalProvider) Resume(name string) error { return e.pauseResume(name, false) }

func (e *ExternalProvider) pauseResume(name string, pause bool) error {
	op, cmd := "resume", e.cfg.Hooks.Resume
	if pause {
		op, cmd = "pause", e.cfg.Hooks.Pause
	}
	if _, err := e.node(name); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if cmd == "" {
		return unsupportedExternal(op+" "+name, "the config has no "+op+" hook")
	}
	if err := e.run(context.Background(), op, cmd, name, ""); err != nil {
		return err
	}
	e.mu.Lock()
	e.paused[name] = pause
	e.mu.Unlock()
	return nil
}

// SetClockDrift implements Provider: the clock hook takes an offset, not a
// rate, so an external deployment cannot drift a clock.
func (e *ExternalProvider) SetClockDrift(name string, _ clockshim.Drift) error {
	return unsupportedExternal("clock rate on "+name, "the clock hook sets an offset, not a rate")
}

// SetClock implements Provider with the clock hook.
func (e *ExternalProvider) SetClock(name string, offset time.Duration) error {
	if _, err := e.node(name); err != nil {
		return fmt.Errorf("set clock: %w", err)
	}
	if e.cfg.Hooks.Clock == "" {
		return unsupportedExternal("clock offset on "+name, "the config has no clock hook")
	}
	if err := e.run(context.Background(), "clock", e.cfg.Hooks.Clock, name, strconv.FormatInt(offset.Milliseconds(), 10)); err != nil {
		return err
	}
	e.mu.Lock()
	e.shifted[name] = offset != 0
	e.mu.Unlock()
	return nil
}

// LogFile is "": the deployment keeps its logs.
func (e *ExternalProvider) LogFile(string) string { return "" }

// Close implements Provider: it resumes the nodes the run paused, resets
// the clocks it shifted and starts the nodes it killed, with the hooks.
// Idempotent.
func (e *ExternalProvider) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	paused, shifted, down := trueKeys(e.paused), trueKeys(e.shifted), trueKeys(e.down)
	e.mu.Unlock()
	var errs []error
	for _, name := range paused {
		errs = append(errs, e.Resume(name))
	}
	for _, name := range shifted {
		errs = append(errs, e.SetClock(name, 0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*e.timeout)
	defer cancel()
	for _, name := range down {
		_, err := e.Start(ctx, ProcSpec{Name: name})
		errs = append(errs, err)
	}
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("external deployment not put back as found: %w", err)
	}
	return nil
}

func trueKeys(m map[string]bool) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		if m[k] {
			out = append(out, k)
		}
	}
	return out
}

// run runs one hook for node in its own process group, killed with the
// group when it outlives the hook timeout.
func (e *ExternalProvider) run(ctx context.Context, op, tmpl, node, offsetMS string) error {
	n := e.cfg.Nodes[node]
	host, port, _ := net.SplitHostPort(n.Addr)
	line := strings.NewReplacer("{node}", node, "{addr}", n.Addr, "{host}", host, "{port}", port, "{offset_ms}", offsetMS).Replace(tmpl)
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.Env = append(os.Environ(), "TUMBLER_NODE="+node, "TUMBLER_ADDR="+n.Addr, "TUMBLER_OFFSET_MS="+offsetMS)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %v", ctx.Err(), e.timeout)
		}
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		return fmt.Errorf("%s %s: hook %q failed: %v; output: %s", op, node, line, err, msg)
	}
	return nil
}

// adopter is a Provider whose processes run already, wired by their owner,

func (e *ExternalProvider) adopt(topo Topology, clients int) (*adoption, error) {
	if topo != e.cfg.Topology {
		return nil, fmt.Errorf("the cluster's topology %s is not the external deployment's %s", topo, e.cfg.Topology)
	}
	var missing []string
	for i := 0; i < clients; i++ {
		for _, x := range topo.Nodes() {
			if _, ok := e.cfg.Links[ClientLink(i, x)]; !ok {
				missing = append(missing, ClientLink(i, x))
			}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("external config: a run with %d clients needs client links %s, which are not declared", clients, strings.Join(missing, ", "))
	}
	dial := map[string]string{}
	for name, l := range e.cfg.Links {
		if lk, _ := ParseLink(name); isClient(lk.From) {
			if i, _ := strconv.Atoi(lk.From[1:]); i > clients {
				continue
			}
		}
		dial[e.proxyName(name)] = l.Addr
	}
	remote, err := remoteProxies(e.cfg.Toxiproxy, dial)
	if err != nil {
		return nil, err
	}
	ad := &adoption{proxies: map[string]linkProxy{}, announce: map[string]string{}, persistence: e.cfg.Persistence}
	for name := range e.cfg.Links {
		if p := remote[e.proxyName(name)]; p != nil {
			ad.proxies[name] = p
		}
	}
	ad.sentinelAnnounce = map[string]string{}
	for _, x := range topo.Nodes() {
		n := e.cfg.Nodes[x]
		ad.announce[x] = n.Addr
		if n.Announce != "" {
			ad.announce[x] = n.Announce
		}
	}
	for _, x := range topo.SentinelNames() {
		n := e.cfg.Nodes[x]
		ad.sentinelAnnounce[x] = n.Addr
		if n.Announce != "" {
			ad.sentinelAnnounce[x] = n.Announce
		}
	}
	u, _ := url.Parse(e.cfg.Toxiproxy)
	ad.apiAddr = u.Host
	return ad, nil
}

func (e *ExternalProvider) proxyName(link string) string {
	if p := e.cfg.Links[link].Proxy; p != "" {
		return p
	}
	return link
}

// adopt takes over a running deployment: its links, its nodes (which must
