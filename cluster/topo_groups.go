package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// A groups topology (groups:G) runs G independent groups, each a primary
// n<i> and a replica n<i>r that replicates from it through its
// replication proxy (n<i>r->n<i>): Redlock's masters as they run in
// practice, each with a replica that can be promoted in its place. Clients
// reach group i through their proxies c<k>->n<i>, which lead to the
// group's primary of the moment: when Promote makes a group's replica its
// primary, the harness re-points those proxies to it, as a virtual IP or a
// DNS name moves in a deployment, and the clients' connections through
// them are closed, as a failover closes them. The proxies c<k>->n<i>r lead
// to the replica node itself. Only the harness's own proxies can be
// re-pointed, so an adopted deployment cannot run groups.

// Groups is the kind of independent groups of a primary and a replica.
const Groups Kind = "groups"

// MaxGroups is the most groups a groups topology runs.
const MaxGroups = 7

type groups struct{ topoBase }

func (groups) kind() Kind   { return Groups }
func (groups) form() string { return "groups:G" }

func (groups) check(t Topology) error {
	if t.Sentinels {
		return fmt.Errorf("groups run without Sentinels: a group's replica is promoted by hand")
	}
	return errors.Join(checkSize(t, MaxGroups, "groups"), checkShardReplicas(t))
}

func (groups) nodes(t Topology) []string {
	var out []string
	for _, g := range numbered("n", t.N) {
		out = append(out, g, g+"r")
	}
	return out
}

func (groups) masters(t Topology) []string { return numbered("n", t.N) }

// nodeLinks: each group's replica replicates from its primary, and back
// after a promotion.
func (groups) nodeLinks(t Topology) []Link {
	var out []Link
	for _, g := range numbered("n", t.N) {
		out = append(out, Link{From: g + "r", To: g}, Link{From: g, To: g + "r"})
	}
	return out
}

func (groups) linkForms() string {
	return "replica->node and node->replica within a group (n1r->n1, n1->n1r)"
}

func (groups) traits(Topology) Traits {
	return Traits{IndependentMasters: true, EveryNodeLocksOnly: true, Failovers: ByHand}
}

func (groups) promoteGroups(t Topology) [][]string {
	var out [][]string
	for _, g := range numbered("n", t.N) {
		out = append(out, []string{g, g + "r"})
	}
	return out
}

func (groups) adoptable(Topology) error {
	return fmt.Errorf("a group's clients follow its primary through proxies the harness re-points at a promotion, which an adopted deployment's are not: run it with the process or docker provider")
}

func (g groups) prepare(c *Cluster) error {
	c.groupPrimary = map[string]string{}
	for _, m := range g.masters(c.topo) {
		c.groupPrimary[m] = m
		c.nodes[m+"r"].upstream = m
	}
	return nil
}

// proc: a replica replicates through its own replication proxy, once the
// proxies exist.
func (groups) proc(c *Cluster, n *node, s *ProcSpec) { s.Args = append(s.Args, c.replicaOfArgs(n)...) }

// wire makes every group's replica replicate from its primary and waits
// until each link is up.
func (g groups) wire(ctx context.Context, c *Cluster) error {
	for _, m := range g.masters(c.topo) {
		if err := c.followGroup(ctx, m, m); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, m := range g.masters(c.topo) {
		if err := c.waitLinked(ctx, m+"r", m, deadline); err != nil {
			return err
		}
	}
	return nil
}

// view: a client takes each group's first node, whose proxies lead to the
// group's primary of the moment.
func (g groups) view(c *Cluster, v *ClientView) { v.Nodes = g.masters(c.topo) }

// promote makes name the primary of its group, its partner its replica,
// and re-points the clients' proxies of the group to it.
func (groups) promote(ctx context.Context, c *Cluster, name string) error {
	if _, err := c.node("promote", name, true); err != nil {
		return err
	}
	group, _ := c.topo.PromoteGroup(name)
	g := group[0]
	if !c.Up(name) {
		return fmt.Errorf("promote %s: node is down", name)
	}
	if err := c.followGroup(ctx, g, name); err != nil {
		return fmt.Errorf("promote %s: %w", name, err)
	}
	to := c.nodes[name].addr
	for i := 0; i < c.spec.Clients; i++ {
		lp, ok := c.proxies[ClientLink(i, g)].(localProxy)
		if !ok {
			return fmt.Errorf("promote %s: proxy %s is not the harness's own", name, ClientLink(i, g))
		}
		if err := lp.p.Update(&toxiproxy.Proxy{Name: lp.p.Name, Listen: lp.p.Listen, Upstream: to, Enabled: true}); err != nil {
			return fmt.Errorf("promote %s: re-point %s: %w", name, ClientLink(i, g), err)
		}
	}
	return nil
}

// primaryOf is the primary of node's group.
func (groups) primaryOf(ctx context.Context, c *Cluster, node string) (string, error) {
	group, ok := c.topo.PromoteGroup(node)
	if !ok {
		return "", fmt.Errorf("primary of %s: no such node in %s", node, c.topo)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groupPrimary[group[0]], nil
}

// followGroup makes primary the primary of group g (REPLICAOF NO ONE) and
// the group's other node, if it runs, its replica through its own
// replication proxy; a node that is down follows when it starts.
func (c *Cluster) followGroup(ctx context.Context, g, primary string) error {
	other := g
	if primary == g {
		other = g + "r"
	}
	c.mu.Lock()
	c.groupPrimary[g] = primary
	c.nodes[primary].upstream = ""
	c.nodes[other].upstream = primary
	c.mu.Unlock()
	for _, n := range []*node{c.nodes[primary], c.nodes[other]} {
		n.mu.Lock()
		err := c.replicaOf(ctx, n, primary)
		n.mu.Unlock()
		if err != nil {
			return fmt.Errorf("group %s: %w", g, err)
		}
	}
	return nil
}
