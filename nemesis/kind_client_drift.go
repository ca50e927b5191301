package nemesis

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// ClientDrift runs a client's wall clock at Rate for For.
const ClientDrift Kind = "client-drift"

type clientDrift struct{ kindBase }

func init() { register(140, clientDrift{}) }

func (clientDrift) kind() Kind { return ClientDrift }

// traits: it drifts clients' clocks.
func (clientDrift) traits() history.TraitSet {
	return history.TraitSet{history.MovesClientClock}
}

func (clientDrift) doc() string {
	return "runs clients' wall clocks at \"rate\" times the host's pace for \"for\", then steps them back; rates on one client add up"
}

func (clientDrift) fields() []string { return []string{"clients", "client", "rate"} }

func (clientDrift) needs() needs { return needs{clients: true} }

func (clientDrift) targets() targetKind { return targetsClients }

func (clientDrift) check(c *compiled, _ Setup) error { return checkRate(c.Rate) }

func (clientDrift) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	for _, cl := range t.clients {
		st.undo = append(st.undo, func() error { return r.setClientDrift(cl, i, clockshim.Drift{}) })
		if err := r.setClientDrift(cl, i, clockshim.Rate(st.c.Rate, clockshim.Mono())); err != nil {
			return err
		}
	}
	return nil
}

func (clientDrift) describe(c *compiled, t target) string {
	return fmt.Sprintf("run the clock of %s at %s for %v", clientsText(c, t.clients), rateText(c.Rate, c.dur), c.dur)
}

// draw: the holder of the next grant, or a client at random; for one to
// four TTLs.
func (clientDrift) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: ClientDrift, DriftParams: DriftParams{Rate: g.rate()}, For: TTLs(g.between(1, 4))}
	return st, g.aimClient(&st, a)
}

// aimClient aims a client fault: at the holder of the next grant, or at a
// client drawn at random; false for another aim.
func (g *gen) aimClient(st *Step, a aim) bool {
	switch a {
	case aimLease:
		st.Client = Holder
	case aimAny:
		st.Clients = []int{g.rng.IntN(g.o.Clients)}
	default:
		return false
	}
	return true
}
