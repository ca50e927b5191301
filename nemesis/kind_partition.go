package nemesis

import (
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
)

// Partition cuts links (see Shape) for For.
const Partition Kind = "partition"

type partition struct{ kindBase }

func init() { register(10, partition{}) }

func (partition) kind() Kind { return Partition }

// traits: it cuts links: a shape of nodes cuts data nodes off (from the clients, or replication), a shape of a client cuts it off from every node.
func (partition) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.IsolatesNode, history.IsolatesClient}
}

func (partition) doc() string {
	return "cuts links — the shape's: clients from nodes, a client from every node, replication, a bridge, a split, named links — for \"for\", dropping packets (blackhole) or refusing connections (reset), one way or both"
}

func (partition) fields() []string {
	return []string{"shape", "nodes", "node", "clients", "client", "links", "mode", "direction"}
}

func (partition) needs() needs { return needs{links: true} }

func (partition) targets() targetKind { return targetsLinks }

func (partition) check(c *compiled, s Setup) error { return c.compileShape(s) }

func (partition) apply(r *runner, i int, t target) error { return r.applyLinks(i, t) }

func (partition) describe(c *compiled, t target) string { return describeLinks(c, world{}, t, c.Links) }

// draw: at random, a shape the setup offers; aimed at the lease, the
// holder cut from every node or, with Sentinels, half the time a split of
// the primary and the holder from everything else, long enough for the
// Sentinels to promote a replica on the far side; as the setup of a bare majority, N/2 nodes
// cut from every client, so the next lease rests on exactly a majority,
// healed a little before that holder would release.
func (partition) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Partition}
	switch a {
	case aimCut:
		if !g.bareMajority() {
			return st, false
		}
		n := len(g.o.Topology.Nodes())
		st.Nodes, st.For = g.nodes(n/2), g.cutFor()
		// Mostly reset: a client such as redsync waits for every node, and
		// behind a blackhole each of its acquires would outlast the cut.
		// Both directions: a cut of the replies only would let the next
		// acquire's SETs through.
		st.Mode = cluster.Reset
		if g.rng.IntN(3) == 0 {
			st.Mode = cluster.Blackhole
		}
		return st, true
	case aimLease:
		if g.o.Clients == 0 {
			return st, false
		}
		if g.o.Topology.Traits().Failovers.Has(cluster.BySentinel) && g.o.Clients >= 2 && g.rng.IntN(2) == 0 {
			// The primary and the holder on one side, the Sentinels,
			// the replicas and the other clients on the other, for as
			// long as the Sentinels take to promote a replica and a
			// hold or more after that.
			st.Shape, st.Node, st.Client = ShapeSplit, NodePrimary, Holder
			lo := round2(float64(failoverAllowance+g.o.Hold.Max().Resolve(0)) / float64(g.o.TTL))
			st.For = TTLs(g.between(lo, lo+1.5))
			st.Mode = cluster.Blackhole
			if g.rng.IntN(3) == 0 {
				st.Mode = cluster.Reset
			}
			return st, true
		}
		st.Shape, st.Client, st.For = ShapeClient, Holder, g.mag()
	default:
		shapes := g.shapes(Partition)
		if len(shapes) == 0 {
			return st, false
		}
		st.For = g.mag()
		g.shape(&st, g.oneOf(shapes...))
	}
	g.cut(&st)
	return st, true
}
