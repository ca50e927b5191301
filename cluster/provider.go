package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// ErrUnsupported is wrapped by every error for a fault or control that a
// provider cannot carry out (an external deployment cannot be paused, say).
// Test it with errors.Is; the message names the fault and the provider.
var ErrUnsupported = errors.New("not supported")

// Unsupported is the error a Provider returns for a fault it cannot take.
func Unsupported(fault, provider string) error {
	return fmt.Errorf("%s: %w by the %s provider", fault, ErrUnsupported, provider)
}

// Controls is a set of the ways a provider can disturb the nodes it runs,
// beyond starting them and closing them all. A fault that needs a control
// the provider lacks is refused before the run starts.
type Controls uint8

// The node controls.
const (
	// CanKill: Kill a node and Start it again at the same address.
	CanKill Controls = 1 << iota
	// CanWipe: Start a killed data node empty (ProcSpec.Wipe).
	CanWipe
	// CanPause: Pause a node and Resume it.
	CanPause
	// CanClock: SetClock on the data nodes.
	CanClock
	// CanPersist: Start a data node in another persistence mode than the
	// one it runs (ProcSpec.Args).
	CanPersist
	// CanDrift: SetClockDrift on the data nodes (a clock at a rate).
	CanDrift
	// CanConfig: change a data node's settings while it runs — its memory
	// limit and eviction policy, where it saves, whom it replicates from —
	// with CONFIG SET and REPLICAOF through the harness's admin connection
	// (Squeeze, RefuseWrites). The nodes tumbler starts allow it,
	// including the protected "dir"; a deployment it adopts only when its
	// config says so (a managed service that renames or forbids CONFIG
	// cannot).
	CanConfig

	// AllControls is every control.
	AllControls = CanKill | CanWipe | CanPause | CanClock | CanPersist | CanDrift | CanConfig
)

var controlNames = []struct {
	c    Controls
	name string
}{{CanKill, "kill/start"}, {CanWipe, "wipe"}, {CanPause, "pause/resume"}, {CanClock, "clock"}, {CanPersist, "persistence"}, {CanDrift, "clock rate"}, {CanConfig, "config"}}

// Has reports whether every control in x is in c.
func (c Controls) Has(x Controls) bool { return c&x == x }

// String lists the controls, "kill/start, wipe, pause/resume, clock,
// persistence", or "none".
func (c Controls) String() string {
	var out []string
	for _, n := range controlNames {
		if c.Has(n.c) {
			out = append(out, n.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Provider runs the Redis processes of a cluster: redis-server data nodes
// and redis-sentinel processes. The Cluster owns the topology, the proxies
// and the roles; a provider only starts, stops and disturbs processes by
// name. The process provider (NewProcessProvider) is the default; docker
// and external providers implement the same interface. Methods that a
// provider cannot carry out return an error from Unsupported.
//
// Implementations must be safe for concurrent use on different names.
type Provider interface {
	// Name names the provider in errors: "process", "docker", "external".
	Name() string
	// ProxyHost is the host the cluster's proxies listen on. The processes
	// reach the proxies there too: replicas replicate through them and
	// nodes announce them to Sentinel.
	ProxyHost() string
	// Start starts the process p.Name — for the first time or again after
	// Kill, keeping its address — and returns the address the harness
	// reaches it at once it answers PING.
	Start(ctx context.Context, p ProcSpec) (addr string, err error)
	// Kill ends the process at once, like SIGKILL: no shutdown, no save.
	// Killing a process that is not running is not an error.
	Kill(name string) error
	// Pause freezes the process (SIGSTOP); Resume lets it go on (SIGCONT).
	Pause(name string) error
	Resume(name string) error
	// SetClock shifts the process's wall clock by offset from the host's.
	// Only processes started with ProcSpec.Clock can be shifted.
	SetClock(name string, offset time.Duration) error
	// SetClockDrift makes the process's wall clock drift by d besides its
	// offset (the zero Drift: none), so it runs at a rate.
	SetClockDrift(name string, d clockshim.Drift) error
	// LogFile is the path of the process's Redis log on this machine, or
	// "" if the provider keeps none.
	LogFile(name string) string
	// Controls are the node controls the provider can carry out, so a
	// fault schedule can be checked before anything starts. It is known as
	// soon as the provider is built and does not change.
	Controls() Controls
	// Prepare makes this machine ready to run s, or says why it cannot,
	// before anything starts: the process provider needs the server's
	// binaries on PATH and, for clock faults, the clock shim (built here);
	// a container image or an adopted deployment brings its own.
	Prepare(s Spec) error
	// Close ends every process the provider started. It is idempotent.
	Close() error
}

// Adopter is a Provider that adopts servers their owner runs and wires,
// instead of starting them (ExternalProvider): its first Start of a node
// checks that it answers and ignores Args and Config, and the links are
// proxies in a toxiproxy of the owner's. A cluster on an Adopter makes no
// proxies and configures no server: it takes the links and the addresses
// the adoption declares, adopts each node, and asks the topology's kind
// for the roles the deployment has. A topology that cannot be adopted
// (Topology.Adoptable) is refused before anything starts.
type Adopter interface {
	Provider
	adopt(topo Topology, clients int) (*adoption, error)
}

// sweeper is a Provider that keeps a record of what it starts under
// StateDir(), so SweepOrphans can end it should the harness die first.
type sweeper interface {
	sweepRecord() *record
}

// ProcSpec describes one process to a Provider.
type ProcSpec struct {
	// Name is unique within the provider: n1, p, r1, s1, ….
	Name string
	// Sentinel runs a Sentinel (redis-sentinel) instead of a data node.
	Sentinel bool
	// Dir is the process's own directory on this machine, for its data,
	// log and config file. Created if missing.
	Dir string
	// Args are extra redis-server directives in command-line form
	// ("--appendonly", "yes"). The provider adds the port, bind address,
	// data dir and log file itself, before these. An Adopter ignores them.
	Args []string
	// Config are the lines of a Sentinel's config file, written on its first
	// start only: Sentinel rewrites the file as it learns, and a restarted
	// Sentinel must resume from what it wrote. An Adopter ignores them.
	Config []string
	// Wipe removes the data files before starting, so the node comes up
	// empty.
	Wipe bool
	// Persistence is the data node's mode, which Args already carry: for
	// a provider that cannot pass Args (an external deployment) to check
	// that the node runs the mode asked for. Empty for a Sentinel.
	Persistence Persistence
	// Clock loads the clock shim so SetClock works on this process.
	Clock bool
	// Secret are configuration directives that hold secrets (passwords):
	// the provider gives them to the process in a file in SecretDir, never
	// on its command line or in Dir, which a run's report keeps.
	Secret []string
	// SecretDir is the process's private directory on this machine (mode
	// 0700, outside Dir, removed with the cluster): Secret, the TLS files,
	// and a Sentinel's config file, which Sentinel rewrites with the
	// passwords it was given. Empty when the process has no secrets.
	SecretDir string
	// TLS, if set, makes the process serve TLS only (on its port).
	TLS *ServerTLS
	// Login is how the provider logs in to see the process answer PING.
	Login access.Login
	// Server is the software: redis-server or valkey-server and their
	// Sentinels.
	Server Server
	// Cluster runs a data node in cluster mode, its cluster state in
	// nodes.conf beside data/ (so a wipe keeps the node's identity, as a
	// machine that lost its dataset but not its configuration would). The
	// provider picks the bus port: Redis's default of port+10000, or a
	// cluster-port of its own.
	Cluster bool
}

func (p ProcSpec) binary() string { return p.Server.Binary(p.Sentinel) }

// logName is the name of the process's log file in its directory.
func (p ProcSpec) logName() string { return p.binary() + ".log" }

// layout prepares a process's directory on this machine: data/, Redis's
// working directory (emptied on Wipe), and a Sentinel's config file,
// written on its first start only.
func layout(s ProcSpec) error {
	data := filepath.Join(s.Dir, "data")
	if s.Wipe {
		if err := os.RemoveAll(data); err != nil {
			return fmt.Errorf("start %s: wipe data: %w", s.Name, err)
		}
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	if err := writeSecrets(s); err != nil {
		return err
	}
	if s.Sentinel {
		conf := filepath.Join(s.confDir(), "sentinel.conf")
		if _, err := os.Stat(conf); errors.Is(err, os.ErrNotExist) {
			lines := append(append([]string(nil), s.Config...), s.Secret...)
			if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				return fmt.Errorf("start %s: sentinel config: %w", s.Name, err)
			}
		}
	}
	return nil
}

// confDir is where a Sentinel's config file lives on this machine: the
// private directory when it has secrets.
func (p ProcSpec) confDir() string {
	if p.SecretDir != "" {
		return p.SecretDir
	}
	return p.Dir
}

// redisArgs is the command line after the binary's name for a process
// whose directory (as layout made it) is dir and whose private directory
// is secretDir, as the process sees them.
func redisArgs(s ProcSpec, dir, secretDir, bind string, port int) []string {
	var args []string
	switch {
	case s.Sentinel && s.SecretDir != "":
		args = append(args, path.Join(secretDir, "sentinel.conf"))
	case s.Sentinel:
		args = append(args, path.Join(dir, "sentinel.conf"))
	case len(s.Secret) > 0:
		args = append(args, path.Join(secretDir, secretConf))
	}
	ports := []string{"--port", strconv.Itoa(port)}
	if s.TLS != nil {
		ports = append([]string{"--port", "0", "--tls-port", strconv.Itoa(port)}, s.TLS.args(secretDir, s.Sentinel)...)
	}
	args = append(args, ports...)
	args = append(args, "--bind", bind,
		"--dir", path.Join(dir, "data"), "--logfile", path.Join(dir, s.logName()),
		"--daemonize", "no", "--protected-mode", "no")
	if !s.Sentinel {
		// No RDB file is ever written: no snapshots, and replicas load the
		// sync payload straight from the socket. So "none" really restarts
		// empty and an AOF restart loads exactly the AOF.
		args = append(args, "--save", "", "--repl-diskless-load", "swapdb")
		// The harness may move "dir" (a refused-writes fault makes a save
		// fail so): Redis 7 protects it unless told otherwise.
		args = append(args, "--enable-protected-configs", "yes")
	}
	if s.Cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", path.Join(dir, "nodes.conf"))
	}
	return append(args, s.Args...)
}
