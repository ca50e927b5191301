package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/tumbler-dev/tumbler/access"
)

// Spec is what Start builds.
type Spec struct {
	Topology Topology
	// Clients is how many clients get their own proxies c0..c(K-1) to every
	// data node. Each workload process is one client.
	Clients int
	// Persistence of every data node at start ("" = PersistNone, or for
	// an external deployment the persistence its config declares).
	Persistence Persistence
	// Clock loads the clock shim into every data node so SetClock works.
	// It needs a C compiler on first use (the library is cached).
	Clock bool
	// Dir, if set, holds the cluster's files (one directory per process
	// with its log and data, toxiproxy.log) and is kept after Close, so a
	// run's report can keep the logs. Empty: a temporary directory,
	// removed by Close.
	Dir string
	// APIAddr, if set, serves toxiproxy's HTTP API there (e.g.
	// "127.0.0.1:8474", or port 0 to pick one; see Cluster.APIAddr) so an
	// operator can inspect the proxies and toxics while a run goes on.
	// An external deployment's proxies are in its own toxiproxy, whose
	// API the config names; APIAddr is not used then.
	APIAddr string
	// NodeArgs are extra redis-server directives for every data node, in
	// command-line form ("--repl-timeout", "5").
	NodeArgs []string
	// DownAfter is Sentinel's down-after-milliseconds (0: 1 s, with which
	// a crashed primary is failed over in about 3 s).
	DownAfter time.Duration
	// FailoverTimeout is Sentinel's failover-timeout (0: DefaultFailoverTimeout).
	FailoverTimeout time.Duration
	// Provider runs the processes; nil is a new ProcessProvider, closed
	// with the cluster. A provider passed in is closed by Close too.
	Provider Provider
	// Access is how the servers authenticate and speak TLS (nil: plain, no
	// AUTH). Servers tumbler starts are configured with it; an external
	// deployment must already be. Secrets are read at Start and never
	// written anywhere under Dir.
	Access *access.Config
	// Server is the software the data nodes and Sentinels run ("": Redis).
	// An external deployment runs what it runs.
	Server Server
	// ClientACL are the rights of the clients' ACL user (Access.Client.User)
	// on the data nodes tumbler starts, in ACL SETUSER form; empty: +@all
	// on every key and channel.
	ClientACL []string
}

// DefaultFailoverTimeout is long on purpose. The harness points replicas at
// their own replication proxies, which is not the address Sentinel knows a
// primary by, and Sentinel "fixes" such a replica failover-timeout after it
// last changed. At 120 s that never happens within a run of under a
// minute. The price: a failover attempt that fails (no eligible replica, a
// split vote) is retried only after twice this.
const DefaultFailoverTimeout = 120 * time.Second

// MasterName is the name the Sentinels monitor the primary under.
const MasterName = "tumbler"

// Cluster is a running topology: data nodes, optional Sentinels, and a
// toxiproxy proxy on every link (see Link). Its methods are safe for
// concurrent use. What depends on the topology's kind — roles, wiring,
// the clients' view, failovers — it asks the kind (topoKind).
type Cluster struct {
	spec   Spec
	topo   Topology
	kind   topoKind
	prov   Provider
	dir    string
	ownDir bool

	tox     *toxiproxy.ApiServer
	toxLog  *os.File
	api     *http.Server
	apiAddr string
	proxies map[string]linkProxy // fixed after Start
	// proxyPorts hold the local proxies' listening ports until Close
	// (makeProxies says why).
	proxyPorts []*portLock
	links      []Link
	// announce maps an adopted deployment's nodes to the addresses they
	// announce, which is where Sentinel says they are (see announceAddr).
	announce map[string]string
	// persistKnown: every data node's persist is its real mode (false for
	// an adopted deployment whose config declares none).
	persistKnown bool

	// sec is how the servers are secured and logged in to; secretDir is the
	// private directory of their secret files ("" if none), outside dir.
	sec       *security
	secretDir string

	nodes map[string]*node // data nodes and Sentinels, fixed after Start
	order []string         // data nodes, topology order

	mu      sync.Mutex // guards primary, groupPrimary and every node's upstream
	primary string     // replicated: the node the harness last made primary
	// groupPrimary: groups, each group's primary by the group's first
	// node's name (n<i> → n<i> or n<i>r).
	groupPrimary map[string]string
	// ids: a Redis Cluster's node IDs → node names, fixed after Start.
	ids map[string]string

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Start builds and starts a cluster. On error nothing is left running.
// It first sweeps processes left by dead owners (SweepOrphans). A spec the
// topology, the provider or this machine cannot run is refused before
// anything starts.
func Start(ctx context.Context, spec Spec) (*Cluster, error) {
	persistenceGiven := spec.Persistence != ""
	spec, err := spec.normal()
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	prepare := prepareHost
	if spec.Provider != nil {
		prepare = spec.Provider.Prepare
	}
	if err := prepare(spec); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	_, _ = SweepOrphans() // best effort: a bad record must not stop a run

	_, adopts := spec.Provider.(Adopter)
	acl := spec.ClientACL
	if len(acl) == 0 {
		acl = []string{"~*", "&*", "+@all"}
	} else {
		acl = append(slices.Clone(acl), spec.Topology.kindOf().clientRights()...)
	}
	sec, err := newSecurity(spec.Access, !adopts, acl)
	if err != nil {
		if spec.Provider != nil {
			_ = spec.Provider.Close()
		}
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{spec: spec, topo: spec.Topology, kind: spec.Topology.kindOf(), prov: spec.Provider, sec: sec,
		nodes: map[string]*node{}, proxies: map[string]linkProxy{}, persistKnown: persistenceGiven || !adopts}
	if err := c.start(ctx, persistenceGiven); err != nil {
		return nil, errors.Join(sec.redactErr(err), c.Close())
	}
	return c, nil
}

// CheckTopology says what of the spec its topology's kind cannot run (TLS
// to a Redis Cluster, say), or nil: the kind's own rule, in its file. Start
// asks it, and so does a plan's validation (runner), so that such a run is
// refused before anything starts and a matrix lists such a row as refused.
// An error about one setting names it by its path in a plan, where the
// spec's settings come from (a field.Error: "access.tls").
func (spec Spec) CheckTopology() error { return spec.Topology.kindOf().checkSpec(spec) }

// normal checks the spec and fills in its defaults.
func (spec Spec) normal() (Spec, error) {
	if err := spec.Topology.Validate(); err != nil {
		return spec, err
	}
	if err := spec.Server.Validate(); err != nil {
		return spec, err
	}
	if spec.Clients < 0 || spec.Clients > 256 {
		return spec, fmt.Errorf("clients must be 0..256, got %d", spec.Clients)
	}
	if _, adopts := spec.Provider.(Adopter); adopts {
		if err := spec.Topology.Adoptable(); err != nil {
			return spec, err
		}
	}
	if err := spec.CheckTopology(); err != nil {
		return spec, err
	}
	if spec.Persistence == "" {
		spec.Persistence = PersistNone
	}
	if err := spec.Persistence.Validate(); err != nil {
		return spec, err
	}
	if spec.DownAfter == 0 {
		spec.DownAfter = time.Second
	}
	if spec.FailoverTimeout == 0 {
		spec.FailoverTimeout = DefaultFailoverTimeout
	}
	if spec.DownAfter < 100*time.Millisecond || spec.FailoverTimeout < time.Second {
		return spec, fmt.Errorf("sentinel down-after %v (min 100ms) or failover-timeout %v (min 1s) too small", spec.DownAfter, spec.FailoverTimeout)
	}
	return spec, nil
}

func (c *Cluster) start(ctx context.Context, persistenceGiven bool) error {
	if err := c.makeDirs(); err != nil {
		return err
	}
	c.order = c.topo.Nodes()
	for _, name := range c.order {
		c.nodes[name] = &node{name: name, dir: filepath.Join(c.dir, name), persist: c.spec.Persistence}
	}
	for _, name := range c.topo.SentinelNames() {
		c.nodes[name] = &node{name: name, sentinel: true, dir: filepath.Join(c.dir, name)}
	}
	if err := c.kind.prepare(c); err != nil {
		return err
	}
	if a, ok := c.prov.(Adopter); ok {
		return c.adopt(ctx, a, persistenceGiven)
	}

	var err error
	c.toxLog, err = os.Create(filepath.Join(c.dir, "toxiproxy.log"))
	if err != nil {
		return fmt.Errorf("toxiproxy log: %w", err)
	}
	logger := zerolog.New(c.toxLog).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	c.tox = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), logger)

	// Data nodes start as plain masters: the proxies they replicate and
	// announce through need their addresses first.
	if err := c.each(c.order, func(n *node) error { return c.startNode(ctx, n) }); err != nil {
		return err
	}
	if err := c.makeProxies(); err != nil {
		return err
	}
	if err := c.kind.wire(ctx, c); err != nil {
		return err
	}
	if c.topo.Sentinels {
		if err := c.startSentinels(ctx); err != nil {
			return err
		}
	}
	if c.spec.APIAddr != "" {
		if err := c.serveAPI(); err != nil {
			return err
		}
	}
	return nil
}

// makeDirs makes the cluster's directory, the provider if none was given,
// and the private directory of the servers' secrets.
func (c *Cluster) makeDirs() error {
	var err error
	if c.spec.Dir != "" {
		// Servers run with their own working directory, so a relative path
		// (the CLI's default store/) would name the wrong place in their
		// configuration.
		if c.dir, err = filepath.Abs(c.spec.Dir); err != nil {
			return fmt.Errorf("cluster dir: %w", err)
		}
		if err = os.MkdirAll(c.dir, 0o755); err != nil {
			return fmt.Errorf("cluster dir: %w", err)
		}
	} else {
		if c.dir, err = os.MkdirTemp("", "tumbler-cluster-"); err != nil {
			return fmt.Errorf("cluster dir: %w", err)
		}
		c.ownDir = true
	}
	if c.prov == nil {
		pp, err := NewProcessProvider()
		if err != nil {
			return err
		}
		c.prov = pp
	}
	r, sweeps := c.prov.(sweeper)
	if sweeps && c.ownDir {
		// A process provider's data, or the containers' bind mounts.
		r.sweepRecord().removeDirOnSweep(c.dir)
	}
	if c.sec.enabled() && c.sec.own {
		// Passwords and keys go to a private directory outside the run's
		// store, so no report, log or copy of the store holds them.
		if c.secretDir, err = os.MkdirTemp("", "tumbler-secret-"); err != nil {
			return fmt.Errorf("private directory: %w", err)
		}
		if sweeps {
			r.sweepRecord().removeDirOnSweep(c.secretDir)
		}
	}
	return nil
}

// each runs f on the named nodes in parallel.
func (c *Cluster) each(names []string, f func(*node) error) error {
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(c.nodes[name])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// makeProxies makes the proxies of the links into running processes that
// have none yet: the data nodes' first, the Sentinels' once they run.
// c.links keeps the topology's order whatever the order of creation.
func (c *Cluster) makeProxies() error {
	host := c.prov.ProxyHost()
	var links []Link
	for _, l := range c.wantedLinks() {
		if c.proxies[l.String()] == nil {
			n := c.nodes[l.To]
			to := n.addr
			if l.From == "bus" {
				to = n.busAddr
			}
			if to != "" {
				// A reserved port rather than one the kernel picks: a proxy
				// re-pointed at a promotion (groups) stops listening and
				// listens again on the same port, and in the kernel's
				// ephemeral range an outgoing connection or another
				// listener could take the port in between ("address already
				// in use"; seen with tests running side by side).
				port, err := reservePort()
				if err != nil {
					return fmt.Errorf("proxy %s: %w", l, err)
				}
				c.proxyPorts = append(c.proxyPorts, port)
				p, err := newLocalProxy(c.tox, l.String(), net.JoinHostPort(host, strconv.Itoa(port.port)), to)
				if err != nil {
					return err
				}
				c.proxies[l.String()] = p
			}
		}
		if c.proxies[l.String()] != nil {
			links = append(links, l)
		}
	}
	c.links = links
	return nil
}

// wantedLinks are the links of the topology, in the order Links lists
// them (Topology.Links).
func (c *Cluster) wantedLinks() []Link { return c.topo.Links(c.spec.Clients) }

func (c *Cluster) serveAPI() error {
	l, err := net.Listen("tcp", c.spec.APIAddr)
	if err != nil {
		return fmt.Errorf("toxiproxy API on %s: %w", c.spec.APIAddr, err)
	}
	c.apiAddr = l.Addr().String()
	c.api = &http.Server{Handler: c.tox.Routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = c.api.Serve(l) }()
	return nil
}

// Close ends every process, proxy and listener of the cluster and removes
// its directory unless Spec.Dir was given. It is idempotent and safe to
// call from a signal handler goroutine while other methods run.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		var errs []error
		if c.api != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := c.api.Shutdown(ctx); err != nil {
				_ = c.api.Close()
			}
			cancel()
		}
		// An adopted deployment's toxiproxy outlives the run: leave no
		// toxic behind.
		errs = append(errs, c.healAll())
		if c.prov != nil {
			if err := c.prov.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if c.tox != nil {
			if err := c.tox.Collection.Clear(); err != nil {
				errs = append(errs, fmt.Errorf("stop proxies: %w", err))
			}
		}
		for _, p := range c.proxyPorts {
			p.release()
		}
		for _, n := range c.nodes {
			if n.admin != nil {
				_ = n.admin.Close()
			}
		}
		if c.toxLog != nil {
			_ = c.toxLog.Close()
		}
		if c.ownDir && c.dir != "" {
			if err := os.RemoveAll(c.dir); err != nil {
				errs = append(errs, err)
			}
		}
		if c.secretDir != "" {
			if err := os.RemoveAll(c.secretDir); err != nil {
				errs = append(errs, err)
			}
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// Controls are the node controls of the cluster's provider.
func (c *Cluster) Controls() Controls { return c.prov.Controls() }

// ProviderName names the cluster's provider: process, docker or external.
func (c *Cluster) ProviderName() string { return c.prov.Name() }

// Topology is the cluster's topology.
func (c *Cluster) Topology() Topology { return c.topo }

// Nodes are the data nodes' names in topology order.
func (c *Cluster) Nodes() []string { return slices.Clone(c.order) }

// Sentinels are the Sentinels' names (s1..s3), or nil.
func (c *Cluster) Sentinels() []string { return c.topo.SentinelNames() }

// Clients is the number of clients with their own proxies.
func (c *Cluster) Clients() int { return c.spec.Clients }

// Addr is the direct address of a data node or Sentinel, bypassing every
// proxy: for the harness's own checks, never for clients under test.
func (c *Cluster) Addr(name string) (string, error) {
	n, err := c.node("addr", name, false)
	if err != nil {
		return "", err
	}
	return n.addr, nil
}

// ClientAddr is the address client i (from 0) uses for a data node or a
// Sentinel: the proxy c<i>-><node>, or for a Sentinel of an external
// deployment that declares no such link, the Sentinel's own address.
func (c *Cluster) ClientAddr(client int, node string) (string, error) {
	if client < 0 || client >= c.spec.Clients {
		return "", fmt.Errorf("client %d: the cluster has clients 0..%d", client, c.spec.Clients-1)
	}
	n, err := c.node("client address", node, false)
	if err != nil {
		return "", err
	}
	if p := c.proxies[ClientLink(client, node)]; p != nil {
		return p.addr(), nil
	}
	if n.sentinel {
		return n.addr, nil
	}
	return "", fmt.Errorf("client address: no link %s", ClientLink(client, node))
}

// SentinelAddrs are the Sentinels' own addresses, bypassing every proxy,
// or nil: for the harness's checks; clients get theirs from ClientView.
func (c *Cluster) SentinelAddrs() []string {
	var out []string
	for _, s := range c.topo.SentinelNames() {
		out = append(out, c.nodes[s].addr)
	}
	return out
}

// Dir is the directory holding the cluster's files.
func (c *Cluster) Dir() string { return c.dir }

// LogFiles maps each process's name to its Redis log file (plus
// "toxiproxy" to the proxies' warnings).
func (c *Cluster) LogFiles() map[string]string {
	out := map[string]string{}
	if c.tox != nil {
		out["toxiproxy"] = filepath.Join(c.dir, "toxiproxy.log")
	}
	for name := range c.nodes {
		if f := c.prov.LogFile(name); f != "" {
			out[name] = f
		}
	}
	return out
}

// APIAddr is where toxiproxy's HTTP API listens, "" if Spec.APIAddr was
// empty; for an external deployment, its toxiproxy's (host:port).
func (c *Cluster) APIAddr() string { return c.apiAddr }
