package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A replicated topology (replicated:R, replicated:R+sentinels) runs a
// primary p and R replicas r1..rR. Every node announces its peer proxy
// (replica-announce-ip/port), which is where Sentinel says it is; each
// replica replicates from the primary through its own replication proxy
// (r1->p), so replication can be cut replica by replica. With Sentinels
// (sentinel.go), three redis-sentinel processes watch the primary and
// elect a replica when it dies or when asked; without, the primary moves
// only by hand (Promote). Clients take p's proxy, or with Sentinels ask
// them for the primary and route its announced address through their own
// proxies (ClientView.Dialer).

// Replicated is the kind of one primary and its replicas.
const Replicated Kind = "replicated"

// MaxReplicas is the most replicas a replicated topology runs.
const MaxReplicas = 8

type replicated struct{ topoBase }

func (replicated) kind() Kind   { return Replicated }
func (replicated) form() string { return "replicated:R[+sentinels]" }

func (replicated) check(t Topology) error {
	return errors.Join(checkSize(t, MaxReplicas, "replicas"), checkShardReplicas(t))
}

func (replicated) nodes(t Topology) []string { return append([]string{"p"}, numbered("r", t.N)...) }
func (replicated) masters(Topology) []string { return []string{"p"} }

// nodeLinks: the replication links of every ordered pair of nodes (any
// node may become the primary), then each node's peer link.
func (r replicated) nodeLinks(t Topology) []Link {
	var out []Link
	for _, a := range r.nodes(t) {
		for _, b := range r.nodes(t) {
			if a != b {
				out = append(out, Link{From: a, To: b})
			}
		}
	}
	for _, x := range r.nodes(t) {
		out = append(out, Link{From: "peer", To: x})
	}
	return out
}

func (replicated) linkForms() string { return "replica->node and peer->node" }

func (replicated) linksBetween(_ Topology, near, far []string) []string {
	var out []string
	for _, n := range near {
		out = append(out, PeerLink(n))
		for _, x := range far {
			if x != n {
				out = append(out, ReplicationLink(x, n), ReplicationLink(n, x))
			}
		}
	}
	return out
}

func (replicated) traits(t Topology) Traits {
	tr := Traits{WaitReplicas: t.N, OnePrimary: true, Failovers: ByHand, NodeLinks: true, ReplicaLinks: true, Splittable: true}
	if t.Sentinels {
		tr.Failovers |= BySentinel
	}
	return tr
}

func (r replicated) promoteGroups(t Topology) [][]string { return [][]string{r.nodes(t)} }

func (replicated) prepare(c *Cluster) error {
	c.primary = "p"
	return nil
}

// proc: the node announces its peer proxy and, as a replica, replicates
// through its own replication proxy; neither before the proxies exist.
func (replicated) proc(c *Cluster, n *node, s *ProcSpec) {
	if c.proxies[PeerLink(n.name)] == nil {
		return
	}
	host, port := c.announced(n.name)
	s.Args = append(s.Args, "--replica-announce-ip", host, "--replica-announce-port", port)
	s.Args = append(s.Args, c.replicaOfArgs(n)...)
}

// wire: every node announces its peer proxy, the replicas replicate from
// p through their own replication proxies; it returns once every link is
// up.
func (replicated) wire(ctx context.Context, c *Cluster) error {
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
		if err := c.waitLinked(ctx, name, c.primary, deadline); err != nil {
			return err
		}
	}
	return nil
}

// adopted sets the harness's view of the roles from the deployment's:
// exactly one data node must say it is a master.
func (replicated) adopted(ctx context.Context, c *Cluster) error {
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

// view: a client following the Sentinels routes the addresses they report
// through its own proxies.
func (replicated) view(c *Cluster, v *ClientView) { c.viewAnnounced(v) }

// promote makes a replica the primary by hand, the way an operator would
// without Sentinel: REPLICAOF NO ONE on it, every other running data node
// re-pointed at it through its replication proxy (nodes that are down
// follow it when they start). Watching Sentinels would undo this about
// 8 s later, so each is told first to forget the old primary (SENTINEL
// REMOVE) and afterwards to watch the new one (SENTINEL MONITOR).
func (replicated) promote(ctx context.Context, c *Cluster, name string) error {
	n, err := c.node("promote", name, true)
	if err != nil {
		return err
	}
	if !c.Up(name) {
		return fmt.Errorf("promote %s: node is down", name)
	}
	var errs []error
	sentinels := c.topo.SentinelNames()
	for _, s := range sentinels {
		if err := c.sentinelDo(ctx, s, "SENTINEL", "REMOVE", MasterName); err != nil && !strings.Contains(err.Error(), "No such master") {
			errs = append(errs, err)
		}
	}
	if err := c.follow(ctx, n.name); err != nil {
		errs = append(errs, err)
	}
	host, port := c.announced(n.name)
	for _, s := range sentinels {
		if err := c.sentinelDo(ctx, s, "SENTINEL", "MONITOR", MasterName, host, port, strconv.Itoa(sentinelQuorum)); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.sentinelDo(ctx, s, "SENTINEL", "SET", MasterName,
			"down-after-milliseconds", strconv.FormatInt(c.spec.DownAfter.Milliseconds(), 10),
			"failover-timeout", strconv.FormatInt(c.spec.FailoverTimeout.Milliseconds(), 10)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("promote %s: %w", name, err)
	}
	return nil
}

func (replicated) primaryOf(ctx context.Context, c *Cluster, _ string) (string, error) {
	return c.Primary(ctx)
}

func (replicated) waitFailover(ctx context.Context, c *Cluster, from string) (string, error) {
	return c.waitSentinelFailover(ctx, from)
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
		return c.replicaOf(ctx, n, primary)
	})
	if err != nil {
		return fmt.Errorf("make %s primary: %w", primary, err)
	}
	return nil
}
