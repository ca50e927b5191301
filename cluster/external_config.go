package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	// Config lets the harness change the data nodes' settings while a run
	// goes on (CanConfig: CONFIG SET of maxmemory and its policy, of
	// "dir" and "save", REPLICAOF), for the memory and refused-writes
	// faults; each is restored at the fault's heal. Moving "dir" needs
	// the nodes to run with enable-protected-configs. Off: those faults
	// are refused.
	Config bool `json:"config,omitempty"`
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
	if err := cfg.Topology.Adoptable(); err != nil {
		return err
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
		if !slices.Contains(cfg.Topology.Links(0), lk) {
			return fmt.Errorf("%s: not a link of topology %s (only a replicated topology has peer and replication links)", name, cfg.Topology)
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
	if cfg.Config {
		c |= CanConfig
	}
	return c
}
