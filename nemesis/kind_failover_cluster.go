package nemesis

import (
	"context"
	"fmt"
	"strings"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// The failover kind in a Redis Cluster (topology cluster:S+R): it fails
// over one shard — the shard of the node in "nodes", or of the lock key
// in "key" — and finds the shard's primary of the moment at apply time.
// Via kill SIGKILLs that primary and waits for the cluster to promote a
// replica; via coordinated, force or takeover sends CLUSTER FAILOVER to a
// replica (the one in "nodes" if it names a replica, else the shard's
// first replica that is up). cut_replication cuts peer-><primary>, the
// link every replica of the shard replicates through.

func checkShardFailover(c *compiled, s Setup) error {
	switch c.Via {
	case ViaKill, ViaCoordinated, ViaForce, ViaTakeover:
	case ViaSentinel, ViaPromote:
		return field.Errorf("via", "%q is not for a Redis Cluster (topology %s): use %q (the cluster promotes a replica) or CLUSTER FAILOVER via %q, %q or %q", c.Via, s.Topology, ViaKill, ViaCoordinated, ViaForce, ViaTakeover)
	case "":
		return field.Errorf("via", "%v is missing: %q, %q, %q or %q", field.Self, ViaKill, ViaCoordinated, ViaForce, ViaTakeover)
	default:
		return field.Errorf("via", "%q unknown (%s, %s, %s or %s in a Redis Cluster)", c.Via, ViaKill, ViaCoordinated, ViaForce, ViaTakeover)
	}
	if s.Topology.Replicas == 0 {
		return fmt.Errorf("topology %s has no replicas to fail over to (use cluster:%d+1)", s.Topology, s.Topology.N)
	}
	switch {
	case len(c.Nodes) > 1:
		return field.Errorf("nodes", "names %d nodes; a cluster failover takes one, the node whose shard fails over", len(c.Nodes))
	case len(c.Nodes) == 0 && c.Key == "":
		return fmt.Errorf("needs the shard to fail over: a node of it in \"nodes\", or the lock key in \"key\"")
	}
	return checkKillAndLag(c, s)
}

// shardOf is the node naming the step's shard.
func shardOf(c *compiled, t cluster.Topology) string {
	if len(c.Nodes) > 0 {
		return c.Nodes[0]
	}
	n, _ := t.KeyShard(c.Key)
	return n
}

func applyShardFailover(r *runner, i int) error {
	c := r.steps[i].c
	topo := r.setup.Topology
	sc, ok := r.env.Cluster.(shardControl)
	if !ok {
		return fmt.Errorf("the cluster cannot fail a shard over (%T)", r.env.Cluster)
	}
	named := shardOf(c, topo)
	shard, ok := topo.Shard(named)
	if !ok {
		return fmt.Errorf("no node %q in %s", named, topo)
	}
	old, err := sc.PrimaryOf(r.ctx, named)
	if err != nil {
		return err
	}
	var target string
	var candidates []string
	for _, n := range shard {
		if n != old {
			candidates = append(candidates, n)
		}
	}
	if c.Via != ViaKill {
		if len(c.Nodes) > 0 && c.Nodes[0] != old {
			target = c.Nodes[0]
		} else {
			for _, n := range candidates {
				if r.env.Cluster.Up(n) {
					target = n
					break
				}
			}
		}
		if target == "" {
			return fmt.Errorf("no replica of %s is up to take over", old)
		}
		candidates = []string{target}
	}
	var cut []string
	if c.CutReplication {
		cut = []string{cluster.PeerLink(old)}
	}
	cl := r.env.Cluster
	m := move{olds: []string{old}, candidates: candidates, cut: cut, desc: describeShardFailover(c, old, candidates), kills: c.Via == ViaKill, how: "kill"}
	if c.Via != ViaKill {
		m.how = "CLUSTER FAILOVER " + strings.ToUpper(string(c.Via))
	}
	m.start = func(ctx context.Context) (string, error) {
		if c.Via == ViaKill {
			return "", cl.Kill(old)
		}
		return "", sc.ClusterFailover(ctx, target, cluster.ClusterFailoverMode(c.Via))
	}
	return r.startMove(i, m)
}

func describeShardFailover(c *compiled, old string, candidates []string) string {
	primary, replica := "the shard's primary", "a replica"
	if old != "" {
		primary += " " + old
	}
	if len(candidates) > 0 {
		replica = list(candidates)
	}
	var how string
	switch c.Via {
	case ViaKill:
		how = fmt.Sprintf("kill %s and let the cluster promote a replica", primary)
	case ViaCoordinated:
		how = fmt.Sprintf("CLUSTER FAILOVER on %s, replica of %s", replica, primary)
	default:
		how = fmt.Sprintf("CLUSTER FAILOVER %s on %s, replica of %s", strings.ToUpper(string(c.Via)), replica, primary)
	}
	var cut []string
	if old != "" {
		cut = []string{cluster.PeerLink(old)}
	}
	return describeMove(c, how, cut)
}

// drawShardFailover: a kill, force or takeover of the key's shard (a
// random shard when not aimed at the lease), mostly with replication cut
// on the next grant; a coordinated failover now and then, which waits for
// the replica to catch up and so should lose nothing.
func drawShardFailover(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Failover}
	if g.o.Topology.Replicas == 0 {
		return st, false
	}
	vias := []string{string(ViaForce), string(ViaTakeover), string(ViaCoordinated)}
	if g.o.provides(cluster.CanKill) == nil {
		vias = append(vias, string(ViaKill), string(ViaKill))
	}
	st.Via = Via(g.oneOf(vias...))
	if a == aimAny {
		// Aimed at the lease, onGrant names the key, whose shard fails over.
		st.Nodes = []string{g.oneOf(g.o.Topology.Masters()...)}
	}
	return st, g.drawCut(&st, a)
}
