package nemesis

import (
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// ClockDrift runs the nodes' wall clocks at Rate for For (heal: back to the
// host's time): a clock that drifts rather than jumps.
const ClockDrift Kind = "drift"

// maxRate bounds a clock's rate: ten times the host's pace is far past any
// drift a quartz or a VM's clock shows, so a larger rate is a typo.
const maxRate = 10

type clockDrift struct{ kindBase }

func init() { register(130, clockDrift{}) }

func (clockDrift) kind() Kind { return ClockDrift }

// traits: it drifts nodes' clocks.
func (clockDrift) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.MovesNodeClock}
}

func (clockDrift) doc() string {
	return "runs nodes' wall clocks at \"rate\" times the host's pace for \"for\" (the clock shim's drift: a node at 1.5 gains half a second a second and expires keys after TTL/1.5), then steps them back to the host's time; rates on one node add up"
}

func (clockDrift) targets() targetKind { return targetsNodes }

func (clockDrift) fields() []string { return []string{"nodes", "node", "rate"} }

func (clockDrift) needs() needs {
	return needs{nodeClock: true, controls: cluster.CanClock | cluster.CanDrift}
}

func (clockDrift) sharing() sharing { return sharing{forgets: true} }

func (clockDrift) check(c *compiled, _ Setup) error { return checkRate(c.Rate) }

// checkRate is the rule of a clock's rate.
func checkRate(rate float64) error {
	switch {
	case rate == 0:
		return field.Errorf("rate", "%v is missing: give one other than 1 in (0, %d] (1.5 runs half as fast again as the host, 0.5 half as fast)", field.Self, maxRate)
	case rate == 1:
		return field.Errorf("rate", "1 is the host's pace: give a rate other than 1 in (0, %d]", maxRate)
	case rate < 0 || rate > maxRate:
		return field.Errorf("rate", "%g is not in (0, %d]", rate, maxRate)
	}
	return nil
}

// apply starts each node's share of drift at once: a clock at the rate from
// now on. The heal removes the share, and the node's clock steps back by
// what the share gained.
func (clockDrift) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	st.nodes = t.nodes
	for _, n := range t.nodes {
		st.undo = append(st.undo, func() error { return r.setNodeDrift(n, i, clockshim.Drift{}) })
		if err := r.setNodeDrift(n, i, clockshim.Rate(st.c.Rate, clockshim.Mono())); err != nil {
			return err
		}
	}
	return nil
}

func (clockDrift) describe(c *compiled, t target) string {
	return fmt.Sprintf("run %s's clock at %s for %v", nodesText(c, t), rateText(c.Rate, c.dur), c.dur)
}

// rateText says a rate and what it gains or loses over d.
func rateText(rate float64, d time.Duration) string {
	gain := time.Duration((rate - 1) * float64(d)).Round(time.Millisecond)
	return fmt.Sprintf("%g× the host's pace (%s by the heal, then stepped back)", rate, signed(gain))
}

// draw: a drift lasts a few TTLs and outlives leases. Aimed at the lock,
// it runs the clocks a lease rests on, from the next grant: the primary of
// a replicated topology, a majority of a lock on a majority (one node's
// clock cannot undo a lease on a majority), else one node; at random, the
// nodes of a node fault. Two thirds run fast (past the TTL's share of a
// drift factor: keys expire early), the others slow.
func (clockDrift) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: ClockDrift, For: TTLs(g.between(2, 5)), DriftParams: DriftParams{Rate: g.rate()}}
	switch {
	case a == aimLease && g.o.Topology.Traits().OnePrimary:
		st.Node = NodePrimary
	case a == aimLease && g.o.Quorum && g.o.Topology.Traits().IndependentNodes:
		st.Nodes = g.nodes(len(g.o.Topology.Nodes())/2 + 1)
	case a == aimLease || a == aimAny:
		st.Nodes = g.someNodes()
	default:
		return st, false
	}
	return st, true
}

// rate draws a clock's rate: two thirds fast, in [1.05, 2], the others
// slow, in [0.3, 0.95].
func (g *gen) rate() float64 {
	if g.rng.IntN(3) < 2 {
		return round2(1.05 + g.rng.Float64()*0.95)
	}
	return round2(0.3 + g.rng.Float64()*0.65)
}

// setNodeDrift sets step i's share of node's drift; the node's clock drifts
// by the sum of the shares of the drift faults active on it.
func (r *runner) setNodeDrift(node string, i int, d clockshim.Drift) error {
	return r.env.Cluster.SetClockDrift(node, setDriftShare(r.nodeDrift, node, i, d, clockshim.Mono()))
}

// setClientDrift is setNodeDrift for client cl's clock.
func (r *runner) setClientDrift(cl, i int, d clockshim.Drift) error {
	if err := r.env.Clients.SetClockDrift(cl, setDriftShare(r.clientDrift, cl, i, d, clockshim.Mono())); err != nil {
		return fmt.Errorf("set client %d's clock rate: %w", cl, err)
	}
	return nil
}

// setDriftShare sets step i's drift d on target (the zero Drift removes
// it) and returns the drift target runs at: the sum of its shares,
// anchored at mono.
func setDriftShare[T comparable](shares map[T]map[int]clockshim.Drift, target T, i int, d clockshim.Drift, mono int64) clockshim.Drift {
	m := shares[target]
	if m == nil {
		m = map[int]clockshim.Drift{}
		shares[target] = m
	}
	if d.IsZero() {
		delete(m, i)
	} else {
		m[i] = d
	}
	sum := clockshim.Drift{Anchor: mono}
	for _, v := range m {
		sum = sum.Plus(v, mono)
	}
	return sum
}

// DriftParams are the clock rates' parameter (drift, client-drift),
// embedded in Step: the pace of the target's clock against the host's
// (1.5: half as fast again; 0.5: half as fast).
type DriftParams struct {
	Rate float64 `json:"rate,omitempty"`
}
