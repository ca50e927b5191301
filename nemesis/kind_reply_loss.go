package nemesis

import (
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// ReplyLoss loses (or, with Latency, delays) the replies on every
// client's link to the nodes for For: the commands run, their answers
// never arrive, or arrive late.
const ReplyLoss Kind = "reply-loss"

type replyLoss struct{ kindBase }

func init() { register(180, replyLoss{}) }

func (replyLoss) kind() Kind { return ReplyLoss }

// traits: it loses (or delays) the replies on the nodes' client links.
func (replyLoss) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.LosesReplies}
}

func (replyLoss) doc() string {
	return "loses the replies on every client's link to nodes for \"for\" — the commands run, their answers never arrive — or, with \"latency\", delays them by that ± \"jitter\": a client that sends a command again after a timeout (go-redis's MaxRetries, lock.redis_retries) runs it twice"
}

func (replyLoss) fields() []string { return []string{"nodes", "node", "latency", "jitter"} }

func (replyLoss) targets() targetKind { return targetsNodes }

func (replyLoss) needs() needs { return needs{clients: true} }

// check: the shape is the nodes' client links, replies only; a cut is a
// blackhole (the replies are dropped, the connections stay open).
func (replyLoss) check(c *compiled, s Setup) error {
	if err := c.compileShape(s); err != nil {
		return err
	}
	c.dir, c.mode = cluster.Downstream, cluster.Blackhole
	switch {
	case c.Latency.IsZero() && !c.Jitter.IsZero():
		return field.Errorf("jitter", "needs a %v: without one the replies are lost, not delayed", field.Ref("latency"))
	case c.Latency.IsZero():
	case c.span(c.Latency) < minDelay:
		return field.Errorf("latency", "must be at least %v (toxiproxy works in milliseconds), got %q", minDelay, c.Latency)
	case c.span(c.Jitter) < 0 || c.span(c.Jitter) > c.span(c.Latency):
		return field.Errorf("jitter", "%q must be between 0 and the latency %q", c.Jitter, c.Latency)
	}
	return nil
}

func (replyLoss) apply(r *runner, i int, t target) error { return r.applyLinks(i, t) }

func (replyLoss) describe(c *compiled, t target) string { return describeLinks(c, world{}, t, nil) }

// draw: aimed at the lease, the node it rests on (the primary,
// replicated) from the next grant until a little after its holder
// releases, so that the release and the next client's acquire both lose
// their replies; at random, one node for a magnitude of the TTL. A third
// of the time the replies are delayed by a magnitude of the TTL instead.
func (replyLoss) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: ReplyLoss}
	switch {
	case g.o.Clients == 0:
		return st, false
	case a == aimLease:
		hold := float64(g.o.Hold.Max().Resolve(0)) / float64(g.o.TTL)
		st.Node, st.For = g.leaseNode(), TTLs(g.between(hold, hold+0.5))
	case a == aimAny:
		st.Nodes, st.For = g.nodes(1), g.mag()
	default:
		return st, false
	}
	if g.rng.IntN(3) == 0 {
		st.Latency = TTLs(Magnitudes[1+g.rng.IntN(len(Magnitudes)-1)])
	}
	return st, true
}
