package nemesis

import "github.com/tumbler-dev/tumbler/history"

// ClientPartition cuts a client from every node and closes its gate to
// the protected resource for For.
const ClientPartition Kind = "client-partition"

type clientPartition struct{ kindBase }

func init() { register(120, clientPartition{}) }

func (clientPartition) kind() Kind { return ClientPartition }

// traits: it cuts clients off from every node.
func (clientPartition) traits() history.TraitSet {
	return history.TraitSet{history.IsolatesClient}
}

func (clientPartition) doc() string {
	return "cuts clients from every node and holds back their writes to the protected resource until the heal, as TCP would, for \"for\""
}

func (clientPartition) fields() []string { return []string{"clients", "client", "mode", "direction"} }

func (clientPartition) needs() needs { return needs{clients: true} }

func (clientPartition) targets() targetKind { return targetsClients }

func (clientPartition) sharing() sharing { return sharing{gates: true} }

func (clientPartition) check(c *compiled, _ Setup) error {
	c.shape = ShapeClient
	return nil
}

func (clientPartition) apply(r *runner, i int, t target) error {
	if err := r.applyLinks(i, t); err != nil {
		return err
	}
	st := r.steps[i]
	for _, cl := range t.clients {
		if err := r.setGate(cl, +1); err != nil {
			return err
		}
		st.undo = append(st.undo, func() error { return r.setGate(cl, -1) })
	}
	return nil
}

func (clientPartition) describe(c *compiled, t target) string {
	return describeLinks(c, world{}, t, nil)
}

// draw: the holder of the next grant, or a client at random.
func (clientPartition) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: ClientPartition, For: g.mag()}
	switch a {
	case aimLease:
		st.Client = Holder
	case aimAny:
		st.Clients = []int{g.rng.IntN(g.o.Clients)}
	default:
		return st, false
	}
	g.cut(&st)
	return st, true
}
