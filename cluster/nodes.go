package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// node is one data node or Sentinel of a cluster.
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

	// Settings a fault changed and will restore (settings.go).
	squeeze *squeeze
	refusal *refusal
}

// replicaOf makes n, if it runs, the primary (REPLICAOF NO ONE) when it is
// primary, else a replica of primary through its own replication proxy
// (or, in an adopted deployment that routes no replication through
// proxies, where the primary announces itself). n.mu is held.
func (c *Cluster) replicaOf(ctx context.Context, n *node, primary string) error {
	if !n.up {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var err error
	if n.name == primary {
		err = n.admin.Do(cctx, "REPLICAOF", "NO", "ONE").Err()
	} else {
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
}

// replicaOfArgs are the directives that start n as a replica of the node
// it follows, through its replication proxy; none for a primary or before
// the proxies exist.
func (c *Cluster) replicaOfArgs(n *node) []string {
	c.mu.Lock()
	up := n.upstream
	c.mu.Unlock()
	px := c.proxies[ReplicationLink(n.name, up)]
	if up == "" || px == nil {
		return nil
	}
	h, p, _ := net.SplitHostPort(px.addr())
	return []string{"--replicaof", h, p}
}

// waitLinked waits until replica's replication link to primary is up, or
// the deadline passes.
func (c *Cluster) waitLinked(ctx context.Context, replica, primary string, deadline time.Time) error {
	n := c.nodes[replica]
	for {
		info, err := n.admin.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s never linked to %s: %v%s", replica, primary, err, tailOf(c.prov.LogFile(replica)))
		}
		if err := wait.For(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
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
	// An Adopter runs its nodes with their owner's configuration and
	// ignores what follows.
	if n.sentinel {
		s.Config = c.sentinelConfig()
	} else {
		// A full sync starts at once instead of waiting 5 s for more
		// replicas to share it. The kind's directives come before the
		// plan's, which may set a Redis Cluster's timeout.
		s.Args = append(n.persist.args(), "--repl-diskless-sync-delay", "0")
		c.kind.proc(c, n, &s)
		s.Args = append(s.Args, c.spec.NodeArgs...)
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
func (c *Cluster) Pause(name string) error { return c.locked("pause", name, c.prov.Pause) }

// Resume continues a paused node (SIGCONT).
func (c *Cluster) Resume(name string) error { return c.locked("resume", name, c.prov.Resume) }

// locked runs f on the data node or Sentinel called name under its
// lifecycle lock.
func (c *Cluster) locked(op, name string, f func(string) error) error {
	n, err := c.node(op, name, false)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return f(name)
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

// SetClockDrift makes a data node's wall clock drift by d besides its
// offset, so it runs at a rate (clockshim.Rate); the zero Drift stops it.
// It takes effect at the node's next clock read and stays across restarts
// of the node. Needs Spec.Clock and a provider that can (CanDrift).
func (c *Cluster) SetClockDrift(name string, d clockshim.Drift) error {
	n, err := c.node("set clock rate", name, true)
	if err != nil {
		return err
	}
	if !c.spec.Clock {
		return fmt.Errorf("set clock rate of %s: the cluster was started without Spec.Clock, so no clock shim is loaded", name)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return c.prov.SetClockDrift(name, d)
}

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
