package nemesis

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// ClientClock shifts a client's wall clock by Offset for For.
const ClientClock Kind = "client-clock"

type clientClock struct{ kindBase }

func init() { register(90, clientClock{}) }

func (clientClock) kind() Kind { return ClientClock }

// traits: it steps clients' clocks.
func (clientClock) traits() history.TraitSet {
	return history.TraitSet{history.MovesClientClock}
}

func (clientClock) doc() string {
	return "shifts clients' wall clocks by \"offset\" for \"for\"; offsets on one client add up"
}

func (clientClock) fields() []string { return []string{"clients", "client", "offset"} }

func (clientClock) needs() needs { return needs{clients: true} }

func (clientClock) targets() targetKind { return targetsClients }

func (clientClock) check(c *compiled, _ Setup) error {
	if c.span(c.Offset) == 0 {
		return field.Errorf("offset", "must be non-zero (\"+2ttl\" ahead, \"-500ms\" behind)")
	}
	return nil
}

func (clientClock) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	for _, cl := range t.clients {
		st.undo = append(st.undo, func() error { return r.setClientOffset(cl, i, 0) })
		if err := r.setClientOffset(cl, i, st.c.span(st.c.Offset)); err != nil {
			return err
		}
	}
	return nil
}

func (clientClock) describe(c *compiled, t target) string {
	return fmt.Sprintf("shift the clock of %s by %s for %v", clientsText(c, t.clients), signed(c.span(c.Offset)), c.dur)
}

// draw: the holder of the next grant, or a client at random; an offset of
// a magnitude of the TTL either way.
func (clientClock) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: ClientClock, ClockParams: ClockParams{Offset: g.signedMag()}, For: g.mag()}
	switch a {
	case aimLease:
		st.Client = Holder
	case aimAny:
		st.Clients = []int{g.rng.IntN(g.o.Clients)}
	default:
		return st, false
	}
	return st, true
}
