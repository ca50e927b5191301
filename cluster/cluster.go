package cluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/internal/wait"
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
// concurrent use.
type Cluster struct {
	spec   Spec
	topo   Topology
	prov   Provider
	dir    string
	ownDir bool

	tox     *toxiproxy.ApiServer
	toxLog  *os.File
	api     *http.Server
	apiAddr string
	proxies map[string]linkProxy // fixed after Start
	links   []Link
	// remote: an adopted deployment (ExternalProvider) whose links are in
	// the user's toxiproxy; announce maps its nodes to the addresses they
	// announce, which is where Sentinel says they are.
	remote   bool
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

type node struct {
	name     string
	sentinel bool
	dir      string
	addr     string // direct, bypassing every proxy; fixed after first start

	mu       sync.Mutex // serialises lifecycle operations on this node
	up       bool
	persist  Persistence
	upstream string // replicated: the node it replicates from; "" if primary
	admin    *redis.Client

	// A cluster node's bus address (direct) and its node ID, fixed after
	// its first start.
	busAddr   string
	clusterID string
}

// Start builds and starts a cluster. On error nothing is left running.
// It first sweeps processes left by dead owners (SweepOrphans).
func Start(ctx context.Context, spec Spec) (*Cluster, error) {
	if err := spec.Topology.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := spec.Server.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if spec.Clients < 0 || spec.Clients > 256 {
		return nil, fmt.Errorf("cluster: clients must be 0..256, got %d", spec.Clients)
	}
	if spec.Topology.Kind == RedisCluster {
		if _, adopted := spec.Provider.(adopter); adopted {
			return nil, fmt.Errorf("cluster: topology %s: the external provider cannot adopt a Redis Cluster yet; run it with the process or docker provider", spec.Topology)
		}
		if spec.Access != nil && spec.Access.TLS != nil {
			return nil, fmt.Errorf("cluster: topology %s: TLS to a Redis Cluster is not supported yet (its announced TLS ports are not proxied); use a password or an ACL user", spec.Topology)
		}
	}
	persistenceGiven := spec.Persistence != ""
	if !persistenceGiven {
		spec.Persistence = PersistNone
	}
	if err := spec.Persistence.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if spec.DownAfter == 0 {
		spec.DownAfter = time.Second
	}
	if spec.FailoverTimeout == 0 {
		spec.FailoverTimeout = DefaultFailoverTimeout
	}
	if spec.DownAfter < 100*time.Millisecond || spec.FailoverTimeout < time.Second {
		return nil, fmt.Errorf("cluster: sentinel down-after %v (min 100ms) or failover-timeout %v (min 1s) too small", spec.DownAfter, spec.FailoverTimeout)
	}
	// Only processes on this machine need Redis and the shim here; a
	// container image or a deployment brings its own.
	if _, local := spec.Provider.(*ProcessProvider); spec.Provider == nil || local {
		if _, err := lookBinary(spec.Server.Binary(false)); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if spec.Topology.Sentinels {
			if _, err := lookBinary(spec.Server.Binary(true)); err != nil {
				return nil, fmt.Errorf("cluster: %w", err)
			}
		}
		if spec.Clock {
			if _, err := clockshim.Build(); err != nil {
				return nil, fmt.Errorf("cluster: %w", err)
			}
		}
	}
	_, _ = SweepOrphans() // best effort: a bad record must not stop a run

	_, adopted := spec.Provider.(adopter)
	acl := spec.ClientACL
	if len(acl) == 0 {
		acl = []string{"~*", "&*", "+@all"}
	} else if spec.Topology.Kind == RedisCluster {
		// A cluster client loads the slot map with CLUSTER SLOTS.
		acl = append(slices.Clone(acl), "+cluster|slots")
	}
	sec, err := newSecurity(spec.Access, !adopted, acl)
	if err != nil {
		if spec.Provider != nil {
			_ = spec.Provider.Close()
		}
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Cluster{spec: spec, topo: spec.Topology, prov: spec.Provider, sec: sec, nodes: map[string]*node{}, proxies: map[string]linkProxy{},
		persistKnown: persistenceGiven || !adopted}
	if err := c.start(ctx, persistenceGiven); err != nil {
		return nil, errors.Join(sec.redactErr(err), c.Close())
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, persistenceGiven bool) error {
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
	if r := c.record(); r != nil && c.ownDir {
		// A process provider's data, or the containers' bind mounts.
		r.removeDirOnSweep(c.dir)
	}

	if c.sec.enabled() && c.sec.own {
		// Passwords and keys go to a private directory outside the run's
		// store, so no report, log or copy of the store holds them.
		if c.secretDir, err = os.MkdirTemp("", "tumbler-secret-"); err != nil {
			return fmt.Errorf("private directory: %w", err)
		}
		if r := c.record(); r != nil {
			r.removeDirOnSweep(c.secretDir)
		}
	}
	c.order = c.topo.Nodes()
	for _, name := range c.order {
		c.nodes[name] = &node{name: name, dir: filepath.Join(c.dir, name), persist: c.spec.Persistence}
	}
	for _, name := range c.topo.SentinelNames() {
		c.nodes[name] = &node{name: name, sentinel: true, dir: filepath.Join(c.dir, name)}
	}
	if c.topo.Kind == Replicated {
		c.primary = "p"
	}
	if c.topo.Kind == Groups {
		// A group's clients follow its primary through proxies the
		// harness re-points (Promote): only the embedded toxiproxy can.
		if _, local := c.prov.(*ProcessProvider); !local {
			return fmt.Errorf("topology %s needs the process provider, not %T", c.topo, c.prov)
		}
		c.groupPrimary = map[string]string{}
		for _, g := range c.topo.Masters() {
			c.groupPrimary[g] = g
			c.nodes[g+"r"].upstream = g
		}
	}
	if a, ok := c.prov.(adopter); ok {
		return c.adopt(ctx, a, persistenceGiven)
	}

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
	if c.topo.Kind == Replicated {
		if err := c.wire(ctx); err != nil {
			return err
		}
	}
	if c.topo.Kind == Groups {
		if err := c.wireGroups(ctx); err != nil {
			return err
		}
	}
	if c.topo.Kind == RedisCluster {
		if err := c.wireCluster(ctx); err != nil {
			return err
		}
	}
	if c.topo.Sentinels {
		if err := c.each(c.topo.SentinelNames(), func(n *node) error { return c.startNode(ctx, n) }); err != nil {
			return err
		}
		// Clients reach the Sentinels through their own proxies too.
		if err := c.makeProxies(); err != nil {
			return err
		}
		if err := c.waitSentinels(ctx); err != nil {
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
				p := toxiproxy.NewProxy(c.tox, l.String(), net.JoinHostPort(host, "0"), to)
				if err := c.tox.Collection.Add(p, true); err != nil {
					return fmt.Errorf("proxy %s: %w", l, err)
				}
				c.proxies[l.String()] = localProxy{p}
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

// wire makes the replicated topology: every node announces its peer proxy,
// replicas replicate from p through their own replication proxies.
func (c *Cluster) wire(ctx context.Context) error {
	err := c.each(c.order, func(n *node) error {
		host, port := c.announced(n.name)
		if err := n.admin.ConfigSet(ctx, "replica-announce-ip", host).Err(); err != nil {
			return fmt.Errorf("%s: set replica-announce-ip: %w", n.name, err)
		}
		if err := n.admin.ConfigSet(ctx, "replica-announce-port", port).Err(); err != nil {
			return fmt.Errorf("%s: set replica-announce-port: %w", n.name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := c.follow(ctx, c.primary); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, name := range c.order[1:] {
		n := c.nodes[name]
		for {
			info, err := n.admin.Info(ctx, "replication").Result()
			if err == nil && strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("replica %s never linked to %s: %v%s", name, c.primary, err, tailOf(c.prov.LogFile(name)))
			}
			if err := wait.For(ctx, 5*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// announced is the address node announces: its peer proxy.
func (c *Cluster) announced(name string) (host, port string) {
	h, p, _ := net.SplitHostPort(c.announceAddr(name))
	return h, p
}

// announceAddr is the address a data node announces, which is where
// Sentinel says it is: its peer proxy, or what an external deployment's
// config says. "" if there is none.
//
// A Sentinel announces its own address to the other Sentinels (with no
// sentinel announce-ip, the address it has on its link to the primary,
// which is its own), and that is what SENTINEL SENTINELS tells a client.
func (c *Cluster) announceAddr(name string) string {
	if a := c.announce[name]; a != "" {
		return a
	}
	if n := c.nodes[name]; n != nil && n.sentinel {
		return n.addr
	}
	if p := c.proxies[PeerLink(name)]; p != nil {
		return p.addr()
	}
	return ""
}

// follow makes primary the primary: REPLICAOF NO ONE on it, and every
// other running data node replicates from it through its own replication
// proxy. Nodes that are down follow when they start. It returns the nodes
// it could not reach, as an error, after doing the rest.
func (c *Cluster) follow(ctx context.Context, primary string) error {
	c.mu.Lock()
	c.primary = primary
	for _, name := range c.order {
		if name == primary {
			c.nodes[name].upstream = ""
		} else {
			c.nodes[name].upstream = primary
		}
	}
	c.mu.Unlock()
	err := c.each(c.order, func(n *node) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		if !n.up {
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		if n.name == primary {
			err = n.admin.Do(cctx, "REPLICAOF", "NO", "ONE").Err()
		} else {
			// An external deployment may not route replication through
			// proxies: then replicas go where the primary announces.
			to := c.announceAddr(primary)
			if p := c.proxies[ReplicationLink(n.name, primary)]; p != nil {
				to = p.addr()
			}
			host, port, _ := net.SplitHostPort(to)
			err = n.admin.Do(cctx, "REPLICAOF", host, port).Err()
		}
		if err != nil {
			return fmt.Errorf("%s: REPLICAOF: %w", n.name, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("make %s primary: %w", primary, err)
	}
	return nil
}

// record is the provider's record of what to sweep, if it keeps one.
func (c *Cluster) record() *record {
	switch p := c.prov.(type) {
	case *ProcessProvider:
		return p.rec
	case *DockerProvider:
		return p.rec
	}
	return nil
}

// startNode starts n with its current persistence and role.
func (c *Cluster) startNode(ctx context.Context, n *node) error {
	s := ProcSpec{Name: n.name, Sentinel: n.sentinel, Dir: n.dir, Login: c.sec.admin, Server: c.spec.Server}
	if !n.sentinel {
		s.Clock = c.spec.Clock
		s.Wipe = n.persist == PersistNone
		s.Persistence = n.persist
	}
	if c.secretDir != "" {
		s.SecretDir = filepath.Join(c.secretDir, n.name)
		s.TLS = c.sec.serverTLS()
		if n.sentinel {
			s.Secret = c.sec.sentinelSecrets()
		} else {
			s.Secret = c.sec.nodeSecrets()
		}
	}
	switch {
	case c.remote:
		// An external deployment runs with its owner's configuration.
	case n.sentinel:
		s.Config = c.sentinelConfig()
	default:
		// A full sync starts at once instead of waiting 5 s for more
		// replicas to share it.
		s.Args = append(n.persist.args(), "--repl-diskless-sync-delay", "0")
		if c.topo.Kind == RedisCluster {
			// Before the plan's directives, which may set the timeout.
			s.Cluster = true
			s.Args = append(s.Args, c.clusterArgs(n)...)
		}
		s.Args = append(s.Args, c.spec.NodeArgs...)
		if c.topo.Kind == Groups {
			c.mu.Lock()
			up := n.upstream
			c.mu.Unlock()
			if px := c.proxies[ReplicationLink(n.name, up)]; up != "" && px != nil {
				h, p, _ := net.SplitHostPort(px.addr())
				s.Args = append(s.Args, "--replicaof", h, p)
			}
		}
		if c.topo.Kind == Replicated && c.proxies[PeerLink(n.name)] != nil {
			host, port := c.announced(n.name)
			s.Args = append(s.Args, "--replica-announce-ip", host, "--replica-announce-port", port)
			c.mu.Lock()
			up := n.upstream
			c.mu.Unlock()
			if up != "" {
				h, p, _ := net.SplitHostPort(c.proxies[ReplicationLink(n.name, up)].addr())
				s.Args = append(s.Args, "--replicaof", h, p)
			}
		}
	}
	addr, err := c.prov.Start(ctx, s)
	if err != nil {
		return err
	}
	if n.addr == "" {
		n.addr = addr
		n.admin = redis.NewClient(adminOptions(addr, c.sec.admin))
		if s.Cluster {
			if err := c.learnBus(ctx, n); err != nil {
				_ = c.prov.Kill(n.name)
				return err
			}
		}
	} else if addr != n.addr {
		// A provider that cannot keep the address (a new container, say)
		// would strand the proxies; refuse rather than misroute.
		_ = c.prov.Kill(n.name)
		return fmt.Errorf("start %s: came back at %s, not %s, and the proxies point at the old address", n.name, addr, n.addr)
	}
	n.up = true
	return nil
}

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
		if c.remote {
			// The user's toxiproxy outlives the run: leave no toxic behind.
			errs = append(errs, c.healAll())
		}
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

// node returns the data node or Sentinel called name.
func (c *Cluster) node(op, name string, dataOnly bool) (*node, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("%s %s: cluster closed", op, name)
	}
	n := c.nodes[name]
	if n == nil || (dataOnly && n.sentinel) {
		what := "data nodes " + strings.Join(c.order, ", ")
		if !dataOnly && c.topo.Sentinels {
			what += "; sentinels " + strings.Join(c.topo.SentinelNames(), ", ")
		}
		return nil, fmt.Errorf("%s: no node %q in %s (%s)", op, name, c.topo, what)
	}
	return n, nil
}

// Kill ends a data node or Sentinel at once (SIGKILL): no shutdown, no
// save, clients see their connections drop. Killing a node that is down
// is not an error.
func (c *Cluster) Kill(name string) error {
	n, err := c.node("kill", name, false)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := c.prov.Kill(name); err != nil {
		return fmt.Errorf("kill %s: %w", name, err)
	}
	n.up = false
	return nil
}

// StartNode starts a node that is down, with its current persistence (a
// PersistNone node comes back empty) and, for a data node of a replicated
// topology, as a replica of the node it last followed — as a restarted
// server with its config file would. A Sentinel resumes from the config it
// rewrote.
func (c *Cluster) StartNode(ctx context.Context, name string) error {
	n, err := c.node("start", name, false)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.up {
		return fmt.Errorf("start %s: already running", name)
	}
	return c.startNode(ctx, n)
}

// RestartOptions say how Restart brings a node back.
type RestartOptions struct {
	// Persistence the node runs with after the restart; "" keeps its
	// mode. PersistNone comes back empty; an AOF mode loads the AOF the
	// node wrote before the kill, if it wrote one.
	Persistence Persistence
	// Delay holds the node down this long after the kill.
	Delay time.Duration
}

// Restart kills the node (SIGKILL), waits o.Delay and starts it again. It
// returns when the node answers PING, or when ctx ends (the node is then
// left down).
func (c *Cluster) Restart(ctx context.Context, name string, o RestartOptions) error {
	n, err := c.node("restart", name, false)
	if err != nil {
		return err
	}
	if o.Persistence != "" {
		if err := o.Persistence.Validate(); err != nil {
			return fmt.Errorf("restart %s: %w", name, err)
		}
		if n.sentinel {
			return fmt.Errorf("restart %s: a Sentinel has no persistence mode", name)
		}
	}
	if o.Delay < 0 {
		return fmt.Errorf("restart %s: negative delay %v", name, o.Delay)
	}
	if rc, ok := c.prov.(restartChecker); ok {
		// Refuse before the kill, so a refused restart changes nothing.
		s := ProcSpec{Name: name, Sentinel: n.sentinel}
		if !n.sentinel {
			n.mu.Lock()
			s.Persistence = n.persist
			n.mu.Unlock()
			if o.Persistence != "" {
				s.Persistence = o.Persistence
			}
			s.Wipe = s.Persistence == PersistNone
		}
		if err := rc.checkRestart(s); err != nil {
			return err
		}
	}
	if err := c.Kill(name); err != nil {
		return err
	}
	if err := wait.For(ctx, o.Delay); err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.up {
		return fmt.Errorf("restart %s: started by someone else during the delay", name)
	}
	if o.Persistence != "" {
		n.persist = o.Persistence
	}
	return c.startNode(ctx, n)
}

// Pause freezes a data node or Sentinel (SIGSTOP): connections stay open,
// nothing is answered, its timers stop.
func (c *Cluster) Pause(name string) error {
	n, err := c.node("pause", name, false)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return c.prov.Pause(name)
}

// Resume continues a paused node (SIGCONT).
func (c *Cluster) Resume(name string) error {
	n, err := c.node("resume", name, false)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return c.prov.Resume(name)
}

// SetClock sets a data node's wall clock to the host's plus offset
// (negative: behind). It takes effect at the node's next clock read and
// stays across restarts of the node. Needs Spec.Clock.
func (c *Cluster) SetClock(name string, offset time.Duration) error {
	n, err := c.node("set clock", name, true)
	if err != nil {
		return err
	}
	if !c.spec.Clock {
		return fmt.Errorf("set clock of %s: the cluster was started without Spec.Clock, so no clock shim is loaded", name)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return c.prov.SetClock(name, offset)
}

// Controls are the node controls of the cluster's provider.
func (c *Cluster) Controls() Controls { return c.prov.Controls() }

// ProviderName names the cluster's provider: process, docker or external.
func (c *Cluster) ProviderName() string { return c.prov.Name() }

// readValue reads a key of any type: a string's value, "" for a key of
// another type (a reentrant lock's hash), nil when there is none.
var readValue = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return false end
if t == 'string' then return redis.call('GET', KEYS[1]) end
return ''`)

// Values reads key on every data node, in parallel, through the
// harness's own connections (no proxy: a partition does not hide a node):
// node → the key's value, "" for a key that is not a string. Nodes without
// the key, down, or not answering within timeout (a paused node) are left
// out; Values returns by then, and a read still waiting ends on its own
// within the connections' read timeout. It tells which nodes a lease rests
// on.
func (c *Cluster) Values(ctx context.Context, key string, timeout time.Duration) map[string]string {
	type answer struct {
		node, value string
		ok          bool
	}
	ch := make(chan answer, len(c.order))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	asked := 0
	for _, name := range c.order {
		// admin is set by the node's first start, within Start, and never
		// again; n.mu is not taken, so a node being restarted does not hold
		// the read up (it fails at once, as for a node that is down).
		admin := c.nodes[name].admin
		if admin == nil || c.closed.Load() {
			continue
		}
		asked++
		go func() {
			// An error is redis.Nil (no key) or no answer.
			v, err := readValue.Run(ctx, admin, []string{key}).Text()
			ch <- answer{name, v, err == nil}
		}()
	}
	out := map[string]string{}
	for ; asked > 0; asked-- {
		select {
		case a := <-ch:
			if a.ok {
				out[a.node] = a.value
			}
		case <-ctx.Done():
			return out
		}
	}
	return out
}

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

// Up reports whether a node is running (started and not killed).
func (c *Cluster) Up(name string) bool {
	n := c.nodes[name]
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

// Persistence is the mode data node name runs with now (it changes when a
// restart names another), and whether that is known: an adopted deployment
// whose config declares no persistence is taken as "none" for the harness's
// own restarts, but what it really writes is not known.
func (c *Cluster) Persistence(name string) (Persistence, bool) {
	n := c.nodes[name]
	if n == nil || n.sentinel {
		return "", false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.persist, c.persistKnown
}

func tailOf(path string) string {
	if path == "" {
		return ""
	}
	return logTail(path, max(0, fileSize(path)-2048), "")
}
