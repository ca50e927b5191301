package nemesis

import (
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// Clock shifts the nodes' wall clocks by Offset for For (heal: back to 0);
// with Strobe, the offset alternates with 0 every Strobe interval.
const Clock Kind = "clock"

type clock struct{ kindBase }

func init() { register(60, clock{}) }

func (clock) kind() Kind { return Clock }

// traits: it steps nodes' clocks.
func (clock) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.MovesNodeClock}
}

func (clock) doc() string {
	return "shifts nodes' wall clocks by \"offset\" for \"for\", or with \"strobe\" flips between that and 0 every strobe; offsets on one node add up"
}

func (clock) targets() targetKind { return targetsNodes }

func (clock) fields() []string { return []string{"nodes", "node", "offset", "strobe"} }

func (clock) needs() needs { return needs{nodeClock: true, controls: cluster.CanClock} }

func (clock) sharing() sharing { return sharing{forgets: true} }

func (clock) check(c *compiled, _ Setup) error {
	switch {
	case c.span(c.Offset) == 0:
		return field.Errorf("offset", "must be non-zero (\"+2ttl\" ahead, \"-500ms\" behind)")
	case c.Strobe.IsZero():
	case c.span(c.Strobe) <= 0 || c.span(c.Strobe) >= c.dur:
		return field.Errorf("strobe", "%q must be positive and shorter than %v %q", c.Strobe, field.Ref("for"), c.For)
	}
	return nil
}

func (clock) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	c := st.c
	st.strobeOn = true
	st.nodes = t.nodes
	for _, n := range t.nodes {
		st.undo = append(st.undo, func() error { return r.setNodeOffset(n, i, 0) })
		if err := r.setNodeOffset(n, i, c.span(c.Offset)); err != nil {
			return err
		}
	}
	if c.span(c.Strobe) > 0 {
		r.push(event{at: st.base + int64(c.span(c.Strobe)), kind: evTick, step: i})
	}
	return nil
}

// tick flips a strobing clock between its offset and 0.
func (clock) tick(r *runner, i int) {
	st := r.steps[i]
	c := st.c
	if st.phase != active {
		return
	}
	st.strobeOn = !st.strobeOn
	d := time.Duration(0)
	if st.strobeOn {
		d = c.span(c.Offset)
	}
	for _, n := range st.nodes {
		if err := r.setNodeOffset(n, i, d); err != nil {
			st.errs = append(st.errs, err)
		}
	}
	st.toggles++
	if next := st.base + int64(st.toggles+1)*int64(c.span(c.Strobe)); next < st.healAt {
		r.push(event{at: next, kind: evTick, step: i})
	}
}

func (clock) describe(c *compiled, t target) string {
	nodes := nodesText(c, t)
	if c.span(c.Strobe) > 0 {
		return fmt.Sprintf("strobe %s's clock between 0 and %s every %v for %v", nodes, signed(c.span(c.Offset)), c.span(c.Strobe), c.dur)
	}
	return fmt.Sprintf("jump %s's clock by %s for %v", nodes, signed(c.span(c.Offset)), c.dur)
}

// draw: aimed at the lease, a node it rests on (the primary, replicated)
// on the next grant, mostly jumping forward past the TTL (the node expires
// the lease at once); at random, one node or several (for a lock on a
// majority, a whole majority a third of the time), jumping forward past
// the TTL more often than not, else a little forward or backward. A fifth
// strobe.
func (clock) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Clock, For: g.mag()}
	past := 0.6
	switch a {
	case aimLease:
		st.Node = g.leaseNode()
		st.For = TTLs(g.between(0.5, 2))
		past = 0.85
	case aimAny:
		st.Nodes = g.someNodes()
	default:
		return st, false
	}
	switch x := g.rng.Float64(); {
	case x < past:
		st.Offset = TTLs(g.between(1.1, 2.5))
	case x < past+(1-past)/3:
		st.Offset = TTLs(g.between(0.1, 0.9))
	default:
		st.Offset = TTLs(-g.between(0.2, 2))
	}
	if g.rng.IntN(5) == 0 {
		st.For, st.Strobe = TTLs(float64(1+g.rng.IntN(2))), TTLs(0.1)
	}
	return st, true
}

// ClockParams are the clock faults' parameters, embedded in Step: how far a
// clock moves (clock, client-clock) and how often it strobes (clock; for
// memory, how often the node is pushed over).
type ClockParams struct {
	Offset Span `json:"offset,omitzero"`
	Strobe Span `json:"strobe,omitzero"`
}
