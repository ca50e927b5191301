package nemesis

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// Kill SIGKILLs the nodes, keeps them down for For, then starts them with
// Persistence ("" keeps each node's mode).
const Kill Kind = "kill"

type kill struct{ kindBase }

func init() { register(30, kill{}) }

func (kill) kind() Kind { return Kill }

// traits: it stops nodes, then starts them with the persistence asked: none comes back empty.
func (kill) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.StopsNode, history.RestartsNode, history.LosesKey}
}

func (kill) doc() string {
	return "SIGKILLs nodes and starts them again after \"for\" (\"persistence\" is the mode they run in from then on: none comes back empty, an AOF mode loads the AOF a node wrote before the kill, if it wrote one; by default the node's own)"
}

func (kill) targets() targetKind { return targetsNodes }

func (kill) fields() []string { return []string{"nodes", "node", "persistence"} }

func (kill) needs() needs { return needs{controls: cluster.CanKill} }

func (kill) sharing() sharing {
	return sharing{allowance: startAllowance, forgets: true}
}

func (kill) check(c *compiled, s Setup) error { return checkWipe(c, s) }

// checkWipe refuses a start in a persistence mode the provider cannot
// start a node in: empty needs a wipe, an AOF mode the persistence control.
func checkWipe(c *compiled, s Setup) error {
	need := cluster.CanPersist
	switch c.Persistence {
	case "":
		return nil
	case cluster.PersistNone:
		need = cluster.CanWipe
	}
	if err := s.provides(need); err != nil {
		return field.Errorf("persistence", "%q: %w", c.Persistence, err)
	}
	return nil
}

func (kill) apply(r *runner, i int, t target) error {
	return r.down(i, t.nodes, r.steps[i].c.Persistence)
}

func (kill) describe(c *compiled, t target) string {
	return fmt.Sprintf("kill %s for %v, then start it again %s", nodesText(c, t), c.dur, startText(c, t))
}

// draw: aimed at the lease, a node it rests on (the primary, replicated)
// on the next grant, down briefly so it is back while the holder still
// holds; at random, up to a majority of the nodes for a magnitude of the
// TTL. The persistence of the start is drawn, unless the run fixed it.
func (kill) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Kill, RestartParams: RestartParams{Persistence: g.persistence(a)}}
	switch a {
	case aimLease:
		st.Node, st.For = g.leaseNode(), g.brief()
	case aimAny:
		st.Nodes, st.For = g.someNodes(), g.mag()
	default:
		return st, false
	}
	return st, true
}
