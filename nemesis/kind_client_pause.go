package nemesis

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/history"
)

// ClientPause stops a client process (SIGSTOP) for For.
const ClientPause Kind = "client-pause"

type clientPause struct{ kindBase }

func init() { register(80, clientPause{}) }

func (clientPause) kind() Kind { return ClientPause }

// traits: it stops client processes.
func (clientPause) traits() history.TraitSet {
	return history.TraitSet{history.StopsClient}
}

func (clientPause) doc() string {
	return "stops client processes (SIGSTOP: workload, watchdog and sockets) for \"for\"; pauses of one client are counted"
}

func (clientPause) fields() []string { return []string{"clients", "client"} }

func (clientPause) needs() needs { return needs{clients: true, processClients: true} }

func (clientPause) targets() targetKind { return targetsClients }

// apply counts pauses per client: it resumes when the last one heals.
func (clientPause) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	for _, cl := range t.clients {
		if r.clientPause[cl]++; r.clientPause[cl] == 1 {
			if err := r.env.Clients.Pause(cl); err != nil {
				r.clientPause[cl]--
				return fmt.Errorf("pause client %d: %w", cl, err)
			}
		}
		st.undo = append(st.undo, func() error {
			if r.clientPause[cl]--; r.clientPause[cl] == 0 {
				delete(r.clientPause, cl)
				if err := r.env.Clients.Resume(cl); err != nil {
					return fmt.Errorf("resume client %d: %w", cl, err)
				}
			}
			return nil
		})
	}
	return nil
}

func (clientPause) describe(c *compiled, t target) string {
	return fmt.Sprintf("pause %s (SIGSTOP) for %v", clientsText(c, t.clients), c.dur)
}

// draw: the holder of the next grant (stopping a holder is the pause that
// matters), or a client at random; for a magnitude of the TTL.
func (clientPause) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: ClientPause, For: g.mag()}
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
