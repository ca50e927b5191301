package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/tumbler-dev/tumbler/internal/wait"
)

// A groups topology (Groups) runs G independent groups, each a primary and
// a replica that replicates from it through its replication proxy
// (n<i>r->n<i>). Clients reach group i through their proxies c<k>->n<i>,
// which lead to the group's primary of the moment: when Promote makes a
// group's replica its primary, the harness re-points those proxies to it,
// as a virtual IP or a DNS name moves in a deployment, and the clients'
// connections through them are closed, as a failover closes them. The
// proxies c<k>->n<i>r lead to the replica node itself.

// wireGroups makes every group's replica replicate from its primary and
// waits until each link is up.
func (c *Cluster) wireGroups(ctx context.Context) error {
	for _, g := range c.topo.Masters() {
		if err := c.followGroup(ctx, g, g); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, g := range c.topo.Masters() {
		n := c.nodes[g+"r"]
		for {
			info, err := n.admin.Info(ctx, "replication").Result()
			if err == nil && strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("replica %s never linked to %s: %v%s", n.name, g, err, tailOf(c.prov.LogFile(n.name)))
			}
			if err := wait.For(ctx, 5*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// followGroup makes primary the primary of group g (REPLICAOF NO ONE) and
// the group's other node, if it runs, its replica through its own
// replication proxy; a node that is down follows when it starts.
func (c *Cluster) followGroup(ctx context.Context, g, primary string) error {
	_, other, _ := c.topo.GroupOf(primary)
	c.mu.Lock()
	c.groupPrimary[g] = primary
	c.nodes[primary].upstream = ""
	c.nodes[other].upstream = primary
	c.mu.Unlock()
	for _, n := range []*node{c.nodes[primary], c.nodes[other]} {
		n.mu.Lock()
		err := func() error {
			if !n.up {
				return nil
			}
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if n.name == primary {
				return n.admin.Do(cctx, "REPLICAOF", "NO", "ONE").Err()
			}
			host, port, _ := net.SplitHostPort(c.proxies[ReplicationLink(n.name, primary)].addr())
			return n.admin.Do(cctx, "REPLICAOF", host, port).Err()
		}()
		n.mu.Unlock()
		if err != nil {
			return fmt.Errorf("group %s: %s: REPLICAOF: %w", g, n.name, err)
		}
	}
	return nil
}

// PrimaryOf is the primary of node's group: in a groups topology the
// group's, in a Redis Cluster the shard's (the node that serves its slots
// now), in a replicated one the topology's (Primary).
func (c *Cluster) PrimaryOf(ctx context.Context, node string) (string, error) {
	if c.topo.Kind == RedisCluster {
		return c.clusterPrimaryOf(ctx, node)
	}
	g, _, ok := c.topo.GroupOf(node)
	if !ok {
		return c.Primary(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groupPrimary[g], nil
}

// promoteInGroup makes name the primary of its group, its partner its
// replica, and re-points the clients' proxies of the group to it.
func (c *Cluster) promoteInGroup(ctx context.Context, name string) error {
	g, _, _ := c.topo.GroupOf(name)
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
