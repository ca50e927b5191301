package nemesis

import (
	"context"
	"fmt"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// Restart kills the nodes and starts them again after Delay with
// Persistence. It takes no For: it ends when the nodes answer again.
const Restart Kind = "restart"

type restart struct{ kindBase }

func init() { register(40, restart{}) }

func (restart) kind() Kind { return Restart }

// traits: it as kill, at once or after a delay.
func (restart) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.StopsNode, history.RestartsNode, history.LosesKey}
}

func (restart) doc() string {
	return "SIGKILLs nodes and starts them again at once or after \"delay\" (\"persistence\" as for kill); it ends when they answer"
}

func (restart) targets() targetKind { return targetsNodes }

func (restart) fields() []string { return []string{"nodes", "node", "persistence", "delay"} }

func (restart) duration() forRule { return forZero }

func (restart) needs() needs { return needs{controls: cluster.CanKill} }

func (restart) sharing() sharing {
	return sharing{allowance: startAllowance, forgets: true}
}

func (restart) check(c *compiled, s Setup) error { return checkWipe(c, s) }

func (restart) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	if err := r.down(i, t.nodes, st.c.Persistence); err != nil {
		return err
	}
	st.settling = true
	up, delay := st.slow, st.c.span(st.c.Delay)
	r.async(func(ctx context.Context) event {
		err := wait.For(ctx, delay)
		if err == nil {
			err = up(ctx)
		}
		// Once the nodes answer, nothing is left to heal.
		return event{kind: evApplied, step: i, err: err, up: err == nil}
	})
	return nil
}

func (restart) describe(c *compiled, t target) string {
	how := startText(c, t)
	if c.span(c.Delay) > 0 {
		return fmt.Sprintf("restart %s after %v down, %s", nodesText(c, t), c.span(c.Delay), how)
	}
	return fmt.Sprintf("restart %s %s", nodesText(c, t), how)
}

// draw: aimed at the lease, a node it rests on (the primary, replicated)
// on the next grant, at once or after a brief delay; at random, up to a
// majority of the nodes, half the time after a magnitude of the TTL down.
// The persistence is drawn, unless the run fixed it.
func (restart) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Restart, RestartParams: RestartParams{Persistence: g.persistence(a)}}
	switch a {
	case aimLease:
		st.Node = g.leaseNode()
		if g.rng.IntN(3) == 0 {
			st.Delay = g.brief()
		}
	case aimAny:
		st.Nodes = g.someNodes()
		if g.rng.IntN(2) == 0 {
			st.Delay = g.mag()
		}
	default:
		return st, false
	}
	return st, true
}

// RestartParams are kill's and restart's parameters, embedded in Step: the
// persistence the node starts again with, and how long it stays down.
type RestartParams struct {
	Persistence cluster.Persistence `json:"persistence,omitempty"`
	Delay       Span                `json:"delay,omitzero"`
}
