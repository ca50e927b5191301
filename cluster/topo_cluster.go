package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// A Redis Cluster topology (cluster:S+R) runs S shards of a primary n<i>
// and R replicas n<i>r<j>, in cluster mode, with the 16384 slots split
// evenly between the shards in order (shard i holds slots
// [(i−1)·16384/S, i·16384/S)). Every node announces its two proxies
// (cluster-announce-ip/-port/-bus-port): peer-><X>, which replicas
// replicate through and clients are redirected to, and bus-><X>, which
// carries every other node's cluster-bus connection to X. A client's own
// proxies stand in for the announced addresses (ClientView.Dialer), so
// MOVED redirections keep to them. The cluster fails a shard over by itself
// when a majority of primaries has lost sight of its primary for
// cluster-node-timeout (DefaultClusterNodeTimeout); ClusterFailover asks a
// replica to take over (CLUSTER FAILOVER, FORCE or TAKEOVER).
//
// Limits. One bus proxy per node: cutting bus-><X> stops the pings of every
// other node to X, but X's own pings still reach the others through their
// proxies, so X hears in their replies that it lost its slots — a shared
// address cannot be cut for one pair of nodes. Replicas of the same shard
// share their primary's peer proxy. Clients speak plain TCP to a cluster
// (no TLS: the announced TLS ports are not proxied yet).

// RedisCluster is the kind of a Redis Cluster.
const RedisCluster Kind = "cluster"

// Limits on a Redis Cluster's size.
const (
	MaxShards    = 5
	MaxShardRepl = 2
)

type redisCluster struct{ topoBase }

func (redisCluster) kind() Kind   { return RedisCluster }
func (redisCluster) form() string { return "cluster:S[+R]" }

// addition: the number of replicas per shard.
func (redisCluster) addition(t *Topology, extra string) error {
	r, err := strconv.Atoi(extra)
	if err != nil {
		return fmt.Errorf("%q after '+' is not a number of replicas per shard", extra)
	}
	t.Replicas = r
	return nil
}

func (redisCluster) check(t Topology) error {
	if err := checkSize(t, MaxShards, "shards"); err != nil {
		return err
	}
	if t.Replicas < 0 || t.Replicas > MaxShardRepl {
		return fmt.Errorf("cluster needs 0 to %d replicas per shard, got %d", MaxShardRepl, t.Replicas)
	}
	if t.Sentinels {
		return fmt.Errorf("a Redis Cluster runs without Sentinels: it fails shards over itself")
	}
	return nil
}

func (redisCluster) suffix(t Topology) string {
	if t.Replicas > 0 {
		return "+" + strconv.Itoa(t.Replicas)
	}
	return ""
}

func (redisCluster) nodes(t Topology) []string {
	var out []string
	for i := 1; i <= t.N; i++ {
		out = append(out, t.shardNodes(i)...)
	}
	return out
}

func (redisCluster) masters(t Topology) []string { return numbered("n", t.N) }

// nodeLinks: replicas replicate from, and the cluster bus reaches, the
// addresses a node announces: one proxy of each per node.
func (r redisCluster) nodeLinks(t Topology) []Link {
	var out []Link
	for _, x := range r.nodes(t) {
		out = append(out, Link{From: "peer", To: x})
	}
	for _, x := range r.nodes(t) {
		out = append(out, Link{From: "bus", To: x})
	}
	return out
}

func (redisCluster) linkForms() string {
	return "peer->node (replication from the node) and bus->node (the cluster bus into it)"
}

// linksBetween: replication from a near node and the cluster bus into it;
// its own bus connections to the others share their proxies.
func (redisCluster) linksBetween(_ Topology, near, _ []string) []string {
	var out []string
	for _, n := range near {
		out = append(out, PeerLink(n), BusLink(n))
	}
	return out
}

func (redisCluster) traits(t Topology) Traits {
	tr := Traits{WaitReplicas: t.Replicas, Slots: true, NodeLinks: true}
	if t.Replicas > 0 {
		tr.Failovers = ByCluster
	}
	return tr
}

func (redisCluster) adoptable(Topology) error {
	return fmt.Errorf("the external provider cannot adopt a Redis Cluster yet; run it with the process or docker provider")
}

// checkSpec: no TLS yet (see Limits above).
func (redisCluster) checkSpec(s Spec) error {
	if s.Access != nil && s.Access.TLS != nil {
		return field.Errorf("access.tls", "TLS to a Redis Cluster (topology %s) is not supported yet (its announced TLS ports are not proxied); use a password or an ACL user", s.Topology)
	}
	return nil
}

// clientRights: a cluster client loads the slot map with CLUSTER SLOTS.
func (redisCluster) clientRights() []string { return []string{"+cluster|slots"} }

// proc: cluster mode, the node timeout, and once its proxies exist the
// addresses it announces.
func (redisCluster) proc(c *Cluster, n *node, s *ProcSpec) {
	s.Cluster = true
	s.Args = append(s.Args, c.clusterArgs(n)...)
}

func (redisCluster) wire(ctx context.Context, c *Cluster) error { return c.wireCluster(ctx) }

// view: the client seeds a cluster client and routes the addresses the
// nodes announce (MOVED redirections) through its own proxies.
func (redisCluster) view(c *Cluster, v *ClientView) {
	c.viewAnnounced(v)
	v.Cluster = true
}

func (redisCluster) promote(_ context.Context, _ *Cluster, name string) error {
	return fmt.Errorf("promote %s: a Redis Cluster promotes a replica by CLUSTER FAILOVER (ClusterFailover), not by hand", name)
}

func (redisCluster) primaryOf(ctx context.Context, c *Cluster, node string) (string, error) {
	return c.clusterPrimaryOf(ctx, node)
}

func (redisCluster) waitFailover(ctx context.Context, c *Cluster, from string) (string, error) {
	return c.waitShardFailover(ctx, from)
}

// shardNodes are shard i's nodes (from 1): its first primary, then its
// replicas.
func (t Topology) shardNodes(i int) []string {
	p := "n" + strconv.Itoa(i)
	return append([]string{p}, numbered(p+"r", t.Replicas)...)
}

// Shard is the shard node belongs to (cluster only): its nodes, the first
// primary first, and whether node is a data node of the cluster. Which of
// them is the primary now is the cluster's to say (Cluster.PrimaryOf).
func (t Topology) Shard(node string) (nodes []string, ok bool) {
	if t.Kind != RedisCluster {
		return nil, false
	}
	for i := 1; i <= t.N; i++ {
		ns := t.shardNodes(i)
		if slices.Contains(ns, node) {
			return ns, true
		}
	}
	return nil, false
}

// DefaultClusterNodeTimeout is the cluster-node-timeout tumbler's clusters
// run with, unless a plan's node_config says otherwise: short, so a shard
// fails over within about two seconds of its primary's death (production
// clusters use 15 s, the default; scale the fault schedule to match).
const DefaultClusterNodeTimeout = time.Second

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// ClusterFailoverMode is how CLUSTER FAILOVER is asked of a replica.
type ClusterFailoverMode string

// The modes of CLUSTER FAILOVER.
const (
	// FailoverCoordinated is CLUSTER FAILOVER with no option (Redis's
	// "default" manual failover): the replica waits for its primary to stop
	// clients and catch it up, then takes over (no writes are lost).
	FailoverCoordinated ClusterFailoverMode = "coordinated"
	// FailoverForce: the replica does not wait for its primary (which may be
	// down) but still needs the votes of a majority of primaries.
	FailoverForce ClusterFailoverMode = "force"
	// FailoverTakeover: the replica takes the slots without any agreement,
	// bumping the config epoch on its own.
	FailoverTakeover ClusterFailoverMode = "takeover"
)

// Validate reports an unknown mode.
func (m ClusterFailoverMode) Validate() error {
	switch m {
	case FailoverCoordinated, FailoverForce, FailoverTakeover:
		return nil
	}
	return fmt.Errorf("unknown cluster failover mode %q, want coordinated, force or takeover", string(m))
}

// ShardSlots is the slot range [lo, hi] of shard i (from 1) of s shards.
func ShardSlots(i, s int) (lo, hi int) {
	return (i - 1) * Slots / s, i*Slots/s - 1
}

// KeySlot is the hash slot of key: CRC16 (XMODEM) of its hash tag, or of the
// whole key when it has none, modulo 16384, as Redis Cluster computes it.
func KeySlot(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// KeyShard is the first primary of the shard whose slots hold key (cluster
// only): n<i>. Failovers move the shard's primary; PrimaryOf says which
// node it is now.
func (t Topology) KeyShard(key string) (string, bool) {
	if t.Kind != RedisCluster {
		return "", false
	}
	slot := KeySlot(key)
	for i := 1; i <= t.N; i++ {
		if lo, hi := ShardSlots(i, t.N); slot >= lo && slot <= hi {
			return "n" + strconv.Itoa(i), true
		}
	}
	return "", false
}

// BusLink names the link the cluster bus reaches node by.
func BusLink(node string) string { return "bus->" + node }

// clusterArgs are the redis-server directives of a cluster node: the node
// timeout, and once its proxies exist the addresses it announces (cluster
// mode itself is ProcSpec.Cluster).
func (c *Cluster) clusterArgs(n *node) []string {
	args := []string{"--cluster-node-timeout", strconv.FormatInt(DefaultClusterNodeTimeout.Milliseconds(), 10)}
	for _, kv := range c.announceDirectives(n) {
		args = append(args, "--"+kv[0], kv[1])
	}
	return args
}

// announceDirectives are the addresses n announces — its peer and bus
// proxies — as directive/value pairs, or nil before the proxies exist.
func (c *Cluster) announceDirectives(n *node) [][2]string {
	peer, bus := c.proxies[PeerLink(n.name)], c.proxies[BusLink(n.name)]
	if peer == nil || bus == nil {
		return nil
	}
	host, port, _ := net.SplitHostPort(peer.addr())
	_, busPort, _ := net.SplitHostPort(bus.addr())
	return [][2]string{{"cluster-announce-ip", host}, {"cluster-announce-port", port}, {"cluster-announce-bus-port", busPort}}
}

// learnBus records where n's cluster bus listens: cluster-port, or Redis's
// default of the port plus 10000.
func (c *Cluster) learnBus(ctx context.Context, n *node) error {
	if n.busAddr != "" {
		return nil
	}
	host, port, err := net.SplitHostPort(n.addr)
	if err != nil {
		return fmt.Errorf("%s: address %q: %w", n.name, n.addr, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	got, err := n.admin.ConfigGet(cctx, "cluster-port").Result()
	if err != nil {
		return fmt.Errorf("%s: CONFIG GET cluster-port: %w", n.name, err)
	}
	bus, _ := strconv.Atoi(got["cluster-port"])
	if bus == 0 {
		p, _ := strconv.Atoi(port)
		bus = p + 10000
	}
	n.busAddr = net.JoinHostPort(host, strconv.Itoa(bus))
	return nil
}

// wireCluster makes the cluster: every node announces its proxies, the
// primaries take their slots, n1 meets every node through its bus proxy,
// the replicas follow their primaries; it returns when every node sees the
// cluster ok with every node known and every replica linked.
func (c *Cluster) wireCluster(ctx context.Context) error {
	err := c.each(c.order, func(n *node) error {
		kvs := c.announceDirectives(n)
		if kvs == nil {
			return fmt.Errorf("%s: no peer or bus proxy", n.name)
		}
		cs := []any{"CONFIG", "SET"}
		for _, kv := range kvs {
			cs = append(cs, kv[0], kv[1])
		}
		if err := n.admin.Do(ctx, cs...).Err(); err != nil {
			return fmt.Errorf("%s: announce its proxies: %w", n.name, err)
		}
		id, err := n.admin.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER MYID: %w", n.name, err)
		}
		n.clusterID = id
		return nil
	})
	if err != nil {
		return err
	}
	c.ids = map[string]string{}
	for _, name := range c.order {
		c.ids[c.nodes[name].clusterID] = name
	}
	primaries := c.topo.Masters()
	for i, p := range primaries {
		n := c.nodes[p]
		// Distinct config epochs, as redis-cli --cluster create sets them,
		// spare the cluster resolving a collision at its first failover.
		if err := n.admin.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", p, err)
		}
		lo, hi := ShardSlots(i+1, len(primaries))
		if err := n.admin.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %w", p, lo, hi, err)
		}
	}
	first := c.nodes[c.order[0]]
	for _, name := range c.order[1:] {
		host, port := c.announced(name)
		_, busPort, _ := net.SplitHostPort(c.proxies[BusLink(name)].addr())
		if err := first.admin.Do(ctx, "CLUSTER", "MEET", host, port, busPort).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %w", first.name, name, err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, name := range c.order {
		shard, _ := c.topo.Shard(name)
		if shard[0] == name {
			continue
		}
		primaryID := c.nodes[shard[0]].clusterID
		n := c.nodes[name]
		for {
			// A replica can follow a primary once gossip has told it of it.
			err := n.admin.Do(ctx, "CLUSTER", "REPLICATE", primaryID).Err()
			if err == nil {
				c.nodes[name].upstream = shard[0]
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: CLUSTER REPLICATE %s: %w%s", name, shard[0], err, tailOf(c.prov.LogFile(name)))
			}
			if err := wait.For(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	for _, name := range c.order {
		n := c.nodes[name]
		var why string
		for {
			why = c.clusterReady(ctx, n)
			if why == "" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster never formed: %s: %s%s", name, why, tailOf(c.prov.LogFile(name)))
			}
			if err := wait.For(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// clusterReady says what n still lacks of a formed cluster, or "": the
// cluster ok, every node known, and for a replica its link up.
func (c *Cluster) clusterReady(ctx context.Context, n *node) string {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := n.admin.ClusterInfo(cctx).Result()
	if err != nil {
		return err.Error()
	}
	fields := InfoFields(info)
	if fields["cluster_state"] != "ok" {
		return "cluster_state " + fields["cluster_state"]
	}
	if want := strconv.Itoa(len(c.order)); fields["cluster_known_nodes"] != want {
		return "knows " + fields["cluster_known_nodes"] + " of " + want + " nodes"
	}
	if n.upstream != "" {
		repl, err := n.admin.Info(cctx, "replication").Result()
		if err != nil {
			return err.Error()
		}
		if InfoFields(repl)["master_link_status"] != "up" {
			return "replication link to " + n.upstream + " not up"
		}
	}
	return ""
}

// clusterNode is one line of CLUSTER NODES, by tumbler's names.
type clusterNode struct {
	name    string
	primary string // the node it replicates, for a replica
	master  bool
	failed  bool // fail or fail? flags
	slots   bool // it serves slots
}

// clusterNodes asks n for CLUSTER NODES.
func (c *Cluster) clusterNodes(ctx context.Context, n *node) (map[string]clusterNode, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	text, err := n.admin.ClusterNodes(cctx).Result()
	if err != nil {
		return nil, err
	}
	out := map[string]clusterNode{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		name, ok := c.ids[f[0]]
		if !ok {
			continue
		}
		cn := clusterNode{name: name, slots: len(f) > 8}
		for _, flag := range strings.Split(f[2], ",") {
			switch flag {
			case "master":
				cn.master = true
			case "fail", "fail?":
				cn.failed = true
			}
		}
		if f[3] != "-" {
			cn.primary = c.ids[f[3]]
		}
		out[name] = cn
	}
	return out, nil
}

// shardPrimary is the node of shard that says it is a master serving
// slots, in its own CLUSTER NODES; "" if none does (yet).
func (c *Cluster) shardPrimary(ctx context.Context, shard []string, not string) string {
	for _, name := range shard {
		n := c.nodes[name]
		if name == not || !c.Up(name) {
			continue
		}
		view, err := c.clusterNodes(ctx, n)
		if err != nil {
			continue
		}
		if me := view[name]; me.master && me.slots {
			return name
		}
	}
	return ""
}

// ClusterFailover asks the replica to take over its shard: CLUSTER
// FAILOVER with the mode's option. It returns once the replica accepted;
// WaitFailover waits for the outcome.
func (c *Cluster) ClusterFailover(ctx context.Context, replica string, mode ClusterFailoverMode) error {
	if !c.topo.Traits().Slots {
		return fmt.Errorf("cluster failover: %s is not a Redis Cluster", c.topo)
	}
	if err := mode.Validate(); err != nil {
		return fmt.Errorf("cluster failover: %w", err)
	}
	n, err := c.node("cluster failover", replica, true)
	if err != nil {
		return err
	}
	args := []any{"CLUSTER", "FAILOVER"}
	if mode != FailoverCoordinated {
		args = append(args, strings.ToUpper(string(mode)))
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := n.admin.Do(cctx, args...).Err(); err != nil {
		return fmt.Errorf("cluster failover %s on %s: %w", mode, replica, err)
	}
	return nil
}

// waitShardFailover waits until a node of from's shard other than from is
// a master serving slots, and returns it.
func (c *Cluster) waitShardFailover(ctx context.Context, from string) (string, error) {
	shard, ok := c.topo.Shard(from)
	if !ok {
		return "", fmt.Errorf("wait for failover: no node %q in %s", from, c.topo)
	}
	for {
		if p := c.shardPrimary(ctx, shard, from); p != "" {
			c.mu.Lock()
			for _, name := range shard {
				if name == p {
					c.nodes[name].upstream = ""
				} else {
					c.nodes[name].upstream = p
				}
			}
			c.mu.Unlock()
			return p, nil
		}
		if err := wait.For(ctx, 50*time.Millisecond); err != nil {
			return "", fmt.Errorf("wait for failover from %s: no other node of its shard took over: %w", from, err)
		}
	}
}

// clusterPrimaryOf is the primary of node's shard now: the node of the
// shard that says it is a master serving slots (a node that is down is not
// asked).
func (c *Cluster) clusterPrimaryOf(ctx context.Context, node string) (string, error) {
	shard, ok := c.topo.Shard(node)
	if !ok {
		return "", fmt.Errorf("primary of %s: no such node in %s", node, c.topo)
	}
	if p := c.shardPrimary(ctx, shard, ""); p != "" {
		return p, nil
	}
	return "", errors.New("primary of " + node + ": no node of its shard serves its slots now")
}
