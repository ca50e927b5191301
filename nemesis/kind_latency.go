package nemesis

import (
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// Latency delays links by Latency ± Jitter for For.
const Latency Kind = "latency"

type latency struct{ kindBase }

func init() { register(20, latency{}) }

func (latency) kind() Kind { return Latency }

// traits: it slows the links of the nodes or clients it names.
func (latency) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.SlowsLinks}
}

func (latency) doc() string {
	return "delays the shape's links by \"latency\" ± \"jitter\" for \"for\", one way or both"
}

func (latency) fields() []string {
	return []string{"shape", "nodes", "node", "clients", "client", "links", "direction", "latency", "jitter"}
}

func (latency) needs() needs { return needs{links: true} }

func (latency) targets() targetKind { return targetsLinks }

func (latency) check(c *compiled, s Setup) error {
	if err := c.compileShape(s); err != nil {
		return err
	}
	switch {
	case c.shape == ShapeBridge || c.shape == ShapeSplit:
		return field.Errorf("shape", "a %s is a partition shape", c.shape)
	case c.span(c.Latency) < minDelay:
		return field.Errorf("latency", "must be at least %v (toxiproxy works in milliseconds), got %q", minDelay, c.Latency)
	case c.span(c.Jitter) < 0 || c.span(c.Jitter) > c.span(c.Latency):
		return field.Errorf("jitter", "%q must be between 0 and the latency %q", c.Jitter, c.Latency)
	}
	return nil
}

func (latency) apply(r *runner, i int, t target) error { return r.applyLinks(i, t) }

func (latency) describe(c *compiled, t target) string { return describeLinks(c, world{}, t, c.Links) }

// draw: at random, a shape the setup offers; aimed at the lease, the
// holder's links. The delay is a magnitude of the TTL, half the time with
// half as much jitter.
func (latency) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Latency, For: g.mag()}
	switch a {
	case aimLease:
		if g.o.Clients == 0 {
			return st, false
		}
		st.Shape, st.Client = ShapeClient, Holder
	case aimAny:
		shapes := g.shapes(Latency)
		if len(shapes) == 0 {
			return st, false
		}
		g.shape(&st, g.oneOf(shapes...))
	default:
		return st, false
	}
	x := Magnitudes[g.rng.IntN(len(Magnitudes))]
	st.Latency = TTLs(x)
	if g.rng.IntN(2) == 0 {
		st.Jitter = TTLs(x / 2)
	}
	return st, true
}
