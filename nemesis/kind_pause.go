package nemesis

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
)

// Pause freezes the nodes (SIGSTOP) for For.
const Pause Kind = "pause"

type pause struct{ kindBase }

func init() { register(50, pause{}) }

func (pause) kind() Kind { return Pause }

// traits: it a frozen node answers nothing until the heal, then everything it was sent.
func (pause) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.StopsNode, history.FreezesNode}
}

func (pause) doc() string {
	return "freezes nodes (SIGSTOP: connections stay open, nothing is answered) for \"for\""
}

func (pause) targets() targetKind { return targetsNodes }

func (pause) fields() []string { return []string{"nodes", "node"} }

func (pause) needs() needs { return needs{controls: cluster.CanPause} }

func (pause) sharing() sharing { return sharing{forgets: true} }

// apply counts pauses per node: it resumes when the last one heals.
func (pause) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	for _, n := range t.nodes {
		if o, ok := r.owner[n]; ok {
			return fmt.Errorf("%s is down or restarting by %s", n, r.steps[o].c.name())
		}
		if r.failover >= 0 {
			return fmt.Errorf("%s is failing over", r.steps[r.failover].c.name())
		}
	}
	for _, n := range t.nodes {
		if r.nodePaused[n]++; r.nodePaused[n] == 1 {
			if err := r.env.Cluster.Pause(n); err != nil {
				r.nodePaused[n]--
				return err
			}
		}
		st.undo = append(st.undo, func() error {
			if r.nodePaused[n]--; r.nodePaused[n] == 0 {
				delete(r.nodePaused, n)
				return r.env.Cluster.Resume(n)
			}
			return nil
		})
	}
	return nil
}

func (pause) describe(c *compiled, t target) string {
	return fmt.Sprintf("pause %s (SIGSTOP) for %v", nodesText(c, t), c.dur)
}

// draw: aimed at the lease, a node it rests on (the primary, replicated)
// on the next grant; at random, up to a majority of the nodes; for a
// magnitude of the TTL.
func (pause) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Pause, For: g.mag()}
	switch a {
	case aimLease:
		st.Node = g.leaseNode()
	case aimAny:
		st.Nodes = g.someNodes()
	default:
		return st, false
	}
	return st, true
}
