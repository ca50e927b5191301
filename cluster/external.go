package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tumbler-dev/tumbler/access"
)

// ExternalConfig describes a Redis deployment that tumbler does not run,
// and the toxiproxy its owner runs next to it: the file behind
// `--provider external`, read by LoadExternalConfig. JSON, for example
// (deploy/external.json is a complete one):
//
//	{
//	  "topology": "independent:3",
//	  "nodes": {"n1": {"addr": "10.0.0.11:6379"}, ...},
//	  "toxiproxy": "http://10.0.0.5:8474",
//	  "links": {"c0->n1": {"proxy": "c0_n1", "addr": "10.0.0.5:21001"}, ...},
//	  "persistence": "none",
//	  "hooks": {"kill": "ssh {host} 'pkill -KILL redis-server'", ...}
//	}
type ExternalConfig struct {
	// Topology is the deployment's shape in ParseTopology's form; it names
	// the nodes (n1..nN, or p, r1..rR and s1..s3).
	Topology Topology `json:"topology"`
	// Nodes gives every data node and Sentinel of the topology.
	Nodes map[string]ExternalNode `json:"nodes"`
	// Toxiproxy is the URL of the toxiproxy HTTP API holding the links'
	// proxies, e.g. "http://10.0.0.5:8474".
	Toxiproxy string `json:"toxiproxy"`
	// Links maps link names (see Link) to proxies in that toxiproxy. The
	// client links c<i>-><node> of every client a run uses are required;
	// client links to the Sentinels c<i>->s<j> (without them clients reach
	// the Sentinels directly), replication links <replica>-><primary> and
	// peer links peer-><node> are optional, and faults on links that are
	// not declared are refused.
	Links map[string]ExternalLink `json:"links"`
	// Persistence the data nodes run with, if known ("none",
	// "aof-everysec", "aof-always"). A run then restarts nodes in that mode
	// unless told otherwise, and restarts in another mode are refused.
	Persistence Persistence `json:"persistence,omitempty"`
	// Hooks are the shell commands that disturb nodes; a fault without
	// its hook is refused (ErrUnsupported).
	Hooks ExternalHooks `json:"hooks,omitempty"`
	// HookTimeout bounds each hook, as a Go duration ("30s" if empty).
	HookTimeout string `json:"hook_timeout,omitempty"`
	// Access is how to log in to the deployment: the clients' and the
	// harness's credentials (secrets as files or environment variables)
	// and TLS. A run's own access settings take precedence.
	Access *access.Config `json:"access,omitempty"`
}

// ExternalNode is one node of an external deployment.
type ExternalNode struct {
	// Addr is where the harness reaches the node directly, for its own
	// checks (ROLE, PING after a start): host:port.
	Addr string `json:"addr"`
	// Announce is the address a data node announces to Sentinel
	// (replica-announce-ip/port), which is what Sentinel reports as the
	// primary's address, or the address a Sentinel announces to the other
	// Sentinels (sentinel announce-ip/port); empty means Addr. Clients
	// following a failover map it to their own proxy to the node.
	Announce string `json:"announce,omitempty"`
}

// ExternalLink is one link's proxy in the user's toxiproxy.
type ExternalLink struct {
	// Proxy is the proxy's name in toxiproxy; empty means the link's name.
	Proxy string `json:"proxy,omitempty"`
	// Addr is what the link's connecting side dials; empty means the
	// proxy's listen address, with 0.0.0.0 replaced by the API's host.
	Addr string `json:"addr,omitempty"`
}

// ExternalHooks are shell command templates (run with /bin/sh -c). In
// each, {node} is the node's name, {addr} its address, {host} and {port}
// the parts of it; the clock hook also gets {offset_ms}, the wall-clock
// offset from true time in milliseconds (negative: behind). The same values
// are in the environment as TUMBLER_NODE, TUMBLER_ADDR and
// TUMBLER_OFFSET_MS. A hook fails if it exits non-zero or outlives
// HookTimeout.
type ExternalHooks struct {
	// Kill ends the node at once, like SIGKILL; the harness then waits
	// (within HookTimeout) until the node no longer answers, as a hook
	// may return as soon as the signal is sent.
	Kill string `json:"kill,omitempty"`
	// Start starts a killed node again at the same address; the harness
	// then waits until it answers PING.
	Start string `json:"start,omitempty"`
	// Wipe deletes a killed node's data, so the next start is empty.
	Wipe string `json:"wipe,omitempty"`
	// Pause freezes the node (SIGSTOP, docker pause); Resume undoes it.
	Pause  string `json:"pause,omitempty"`
	Resume string `json:"resume,omitempty"`
	// Clock sets the node's wall-clock offset.
	Clock string `json:"clock,omitempty"`
}

// DefaultHookTimeout bounds a hook when ExternalConfig.HookTimeout is empty.
const DefaultHookTimeout = 30 * time.Second

var placeholder = regexp.MustCompile(`\{[^{}\s]*\}`)

// LoadExternalConfig reads and checks an ExternalConfig from a JSON file.
// Unknown fields are errors, so a misspelt key is not silently ignored.
func LoadExternalConfig(path string) (ExternalConfig, error) {
	var cfg ExternalConfig
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return cfg, fmt.Errorf("external config %s: YAML is not read; write the same keys as JSON", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("external config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("external config %s: %w", path, jsonErr(b, err))
	}
	if dec.More() {
		return cfg, fmt.Errorf("external config %s: more than one JSON value", path)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("external config %s: %w", path, err)
	}
	return cfg, nil
}

// jsonErr adds the line of a JSON error.
func jsonErr(b []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off > int64(len(b)) {
		return err
	}
	return fmt.Errorf("line %d: %w", bytes.Count(b[:off], []byte("\n"))+1, err)
}

// Validate reports everything wrong with the config, if anything.
func (cfg ExternalConfig) Validate() error {
	if err := cfg.Topology.Validate(); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	var errs []error
	data := cfg.Topology.Nodes()
	all := append(slices.Clone(data), cfg.Topology.SentinelNames()...)
	for _, name := range all {
		n, ok := cfg.Nodes[name]
		if !ok {
			errs = append(errs, fmt.Errorf("nodes: %s is missing (topology %s has %s)", name, cfg.Topology, strings.Join(all, ", ")))
			continue
		}
		if err := checkHostPort(n.Addr); err != nil {
			errs = append(errs, fmt.Errorf("nodes: %s: addr: %w", name, err))
		}
		if n.Announce != "" {
			if err := checkHostPort(n.Announce); err != nil {
				errs = append(errs, fmt.Errorf("nodes: %s: announce: %w", name, err))
			}
		}
	}
	for _, name := range sortedKeys(cfg.Nodes) {
		if !slices.Contains(all, name) {
			errs = append(errs, fmt.Errorf("nodes: %q is not a node of topology %s (it has %s)", name, cfg.Topology, strings.Join(all, ", ")))
		}
	}
	if cfg.Toxiproxy == "" {
		errs = append(errs, errors.New("toxiproxy: the URL of the toxiproxy HTTP API is required, e.g. http://127.0.0.1:8474"))
	} else if u, err := url.Parse(cfg.Toxiproxy); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("toxiproxy: %q is not an http(s) URL like http://127.0.0.1:8474", cfg.Toxiproxy))
	}
	if len(cfg.Links) == 0 {
		errs = append(errs, errors.New("links: none declared; at least the client links c0-><node> are needed"))
	}
	for _, name := range sortedKeys(cfg.Links) {
		if err := cfg.checkLink(name, cfg.Links[name]); err != nil {
			errs = append(errs, fmt.Errorf("links: %w", err))
		}
	}
	if cfg.Persistence != "" {
		if err := cfg.Persistence.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("persistence: %w", err))
		}
	}
	for _, h := range cfg.Hooks.list() {
		allowed := []string{"{node}", "{addr}", "{host}", "{port}"}
		if h.name == "clock" {
			allowed = append(allowed, "{offset_ms}")
		}
		for _, p := range placeholder.FindAllString(h.cmd, -1) {
			if !slices.Contains(allowed, p) {
				errs = append(errs, fmt.Errorf("hooks: %s: unknown placeholder %s (known: %s)", h.name, p, strings.Join(allowed, " ")))
			}
		}
	}
	if _, err := cfg.hookTimeout(); err != nil {
		errs = append(errs, err)
	}
	if err := cfg.Access.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("access: %w", err))
	}
	return errors.Join(errs...)
}

func (cfg ExternalConfig) checkLink(name string, l ExternalLink) error {
	lk, err := ParseLink(name)
	if err != nil {
		return err
	}
	data := cfg.Topology.Nodes()
	sentinels := cfg.Topology.SentinelNames()
	if slices.Contains(sentinels, lk.To) {
		if !isClient(lk.From) {
			return fmt.Errorf("%s: only clients have links to a Sentinel", name)
		}
	} else if !slices.Contains(data, lk.To) {
		return fmt.Errorf("%s: %q is not a data node or Sentinel of %s (%s)", name, lk.To, cfg.Topology, strings.Join(append(data, sentinels...), ", "))
	}
	switch {
	case isClient(lk.From):
	case lk.From == "peer" || slices.Contains(data, lk.From):
		if cfg.Topology.Kind != Replicated || lk.From == lk.To {
			return fmt.Errorf("%s: only a replicated topology has peer and replication links", name)
		}
	default:
		return fmt.Errorf("%s: %q is neither a client c<i>, a data node nor peer", name, lk.From)
	}
	if l.Addr != "" {
		if err := checkHostPort(l.Addr); err != nil {
			return fmt.Errorf("%s: addr: %w", name, err)
		}
	}
	return nil
}

func isClient(from string) bool {
	i, err := strconv.Atoi(strings.TrimPrefix(from, "c"))
	return strings.HasPrefix(from, "c") && err == nil && i >= 0 && strconv.Itoa(i) == from[1:]
}

func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: port %q is not 1..65535", addr, port)
	}
	// Hosts go into hook command lines: no shell metacharacters.
	if host == "" || strings.ContainsFunc(host, func(r rune) bool {
		return !(r == '.' || r == '-' || r == '_' || r == ':' || r == '%' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) {
		return fmt.Errorf("%q: bad host %q", addr, host)
	}
	return nil
}

func (cfg ExternalConfig) hookTimeout() (time.Duration, error) {
	if cfg.HookTimeout == "" {
		return DefaultHookTimeout, nil
	}
	d, err := time.ParseDuration(cfg.HookTimeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("hook_timeout: %q is not a positive duration like 30s", cfg.HookTimeout)
	}
	return d, nil
}

type hook struct{ name, cmd string }

func (h ExternalHooks) list() []hook {
	return []hook{{"kill", h.Kill}, {"start", h.Start}, {"wipe", h.Wipe}, {"pause", h.Pause}, {"resume", h.Resume}, {"clock", h.Clock}}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

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

// Name is "external".
func (e *ExternalProvider) Name() string { return "external" }

// Controls are what the config has hooks for: kill/start needs both hooks,
// pause/resume both, clock its hook; wipe needs the wipe hook unless the
// deployment runs without persistence (a start is empty anyway). The
// deployment keeps its own persistence mode.
func (e *ExternalProvider) Controls() Controls { return e.cfg.controls() }

func (cfg ExternalConfig) controls() Controls {
	h := cfg.Hooks
	var c Controls
	if h.Kill != "" && h.Start != "" {
		c |= CanKill
	}
	if h.Wipe != "" || cfg.Persistence == PersistNone {
		c |= CanWipe
	}
	if h.Pause != "" && h.Resume != "" {
		c |= CanPause
	}
	if h.Clock != "" {
		c |= CanClock
	}
	return c
}

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
	return fmt.Errorf("%w: %s", Unsupported(fault, "external"), why)
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
// with the links in a toxiproxy of the owner's (ExternalProvider).
type adopter interface {
	adopt(topo Topology, clients int) (*adoption, error)
}

type adoption struct {
	proxies  map[string]linkProxy // by link name
	announce map[string]string    // data node → the address it announces
	// sentinelAnnounce: Sentinel → the address it announces to the other
	// Sentinels, which is where a client that asks them finds it.
	sentinelAnnounce map[string]string
	persistence      Persistence // declared, or ""
	apiAddr          string
}

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
// answer), and for a replicated one the primary it has now.
func (c *Cluster) adopt(ctx context.Context, a adopter, persistenceGiven bool) error {
	ad, err := a.adopt(c.topo, c.spec.Clients)
	if err != nil {
		return err
	}
	c.remote, c.announce, c.apiAddr = true, ad.announce, ad.apiAddr
	c.proxies = ad.proxies
	for _, l := range c.wantedLinks() {
		if c.proxies[l.String()] != nil {
			c.links = append(c.links, l)
		}
	}
	for name, a := range ad.sentinelAnnounce {
		c.announce[name] = a
	}
	if !persistenceGiven && ad.persistence != "" {
		c.persistKnown = true
		c.spec.Persistence = ad.persistence
		for _, name := range c.order {
			c.nodes[name].persist = ad.persistence
		}
	}
	all := append(c.Nodes(), c.Sentinels()...)
	if err := c.each(all, func(n *node) error { return c.startNode(ctx, n) }); err != nil {
		return err
	}
	if c.topo.Kind == Replicated {
		return c.findPrimary(ctx)
	}
	return nil
}

// findPrimary sets the harness's view of the roles from the deployment's:
// exactly one data node must say it is a master.
func (c *Cluster) findPrimary(ctx context.Context) error {
	var masters []string
	for _, name := range c.order {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		role, err := c.nodes[name].admin.Do(rctx, "ROLE").Slice()
		cancel()
		if err != nil {
			return fmt.Errorf("%s: ROLE: %w", name, err)
		}
		if len(role) > 0 && role[0] == "master" {
			masters = append(masters, name)
		}
	}
	if len(masters) != 1 {
		return fmt.Errorf("external deployment: want exactly one primary among %s, found %d (%s)", strings.Join(c.order, ", "), len(masters), strings.Join(masters, ", "))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.primary = masters[0]
	for _, name := range c.order {
		c.nodes[name].upstream = ""
		if name != c.primary {
			c.nodes[name].upstream = c.primary
		}
	}
	return nil
}
