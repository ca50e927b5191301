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
)

// ErrUnsupported is wrapped by every error for a fault or control that a
// provider cannot carry out (an external deployment cannot be paused, say).
// Test it with errors.Is; the message names the fault and the provider.
var ErrUnsupported = errors.New("not supported")

// Unsupported is the error a Provider returns for a fault it cannot take.
func Unsupported(fault, provider string) error {
	return fmt.Errorf("%s: %w by the %s provider", fault, ErrUnsupported, provider)
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
	// LogFile is the path of the process's Redis log on this machine, or
	// "" if the provider keeps none.
	LogFile(name string) string
	// Close ends every process the provider started. It is idempotent.
	Close() error
}

// ProcSpec describes one process to a Provider.
type ProcSpec struct {
	// Name is unique within the provider: n1, p, r1, s1, ….
	Name string
	// Sentinel runs redis-sentinel instead of redis-server.
	Sentinel bool
	// Dir is the process's own directory on this machine, for its data,
	// log and config file. Created if missing.
	Dir string
	// Args are extra redis-server directives in command-line form
	// ("--appendonly", "yes"). The provider adds the port, bind address,
	// data dir and log file itself, before these.
	Args []string
	// Config are the lines of a Sentinel's config file, written on its first
	// start only: Sentinel rewrites the file as it learns, and a restarted
	// Sentinel must resume from what it wrote.
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
}

func (p ProcSpec) binary() string {
	if p.Sentinel {
		return "redis-sentinel"
	}
	return "redis-server"
}

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
	if s.Sentinel {
		conf := filepath.Join(s.Dir, "sentinel.conf")
		if _, err := os.Stat(conf); errors.Is(err, os.ErrNotExist) {
			if err := os.WriteFile(conf, []byte(strings.Join(s.Config, "\n")+"\n"), 0o644); err != nil {
				return fmt.Errorf("start %s: sentinel config: %w", s.Name, err)
			}
		}
	}
	return nil
}

// redisArgs is the command line after the binary's name for a process
// whose directory (as layout made it) is dir as the process sees it.
func redisArgs(s ProcSpec, dir, bind string, port int) []string {
	var args []string
	if s.Sentinel {
		args = append(args, path.Join(dir, "sentinel.conf"))
	}
	args = append(args,
		"--port", strconv.Itoa(port), "--bind", bind,
		"--dir", path.Join(dir, "data"), "--logfile", path.Join(dir, s.logName()),
		"--daemonize", "no", "--protected-mode", "no")
	if !s.Sentinel {
		// No RDB file is ever written: no snapshots, and replicas load the
		// sync payload straight from the socket. So "none" really restarts
		// empty and an AOF restart loads exactly the AOF.
		args = append(args, "--save", "", "--repl-diskless-load", "swapdb")
	}
	return append(args, s.Args...)
}
