package nemesis

import (
	"fmt"
	"slices"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/workloads"
)

// StepPause arms a client to stop for Pause when it next reaches the lock
// step Step; the arming lasts For.
const StepPause Kind = "step-pause"

type stepPause struct{ kindBase }

func init() { register(100, stepPause{}) }

func (stepPause) kind() Kind { return StepPause }

// traits: it stops a client that reaches the armed step.
func (stepPause) traits() history.TraitSet {
	return history.TraitSet{history.StopsClient, history.ArmsStep}
}

func (stepPause) doc() string {
	return "arms clients to stop (SIGSTOP) for \"pause\" when they next reach the lock step \"step\"; the arming lasts \"for\""
}

func (stepPause) fields() []string { return []string{"clients", "client", "step", "pause"} }

func (stepPause) needs() needs { return needs{clients: true, processClients: true} }

func (stepPause) targets() targetKind { return targetsClients }

func (stepPause) check(c *compiled, _ Setup) error {
	if c.LockStep == "" {
		return field.Errorf("step", "%v is missing: the lock step to arm", field.Self)
	}
	if c.span(c.Pause) <= 0 {
		return field.Errorf("pause", "must be positive, got %q", c.Pause)
	}
	return nil
}

func (stepPause) apply(r *runner, i int, t target) error {
	return r.arm(i, t.clients, workloads.StepAction{Pause: r.steps[i].c.span(r.steps[i].c.Pause)})
}

func (stepPause) describe(c *compiled, t target) string {
	return fmt.Sprintf("arm %s to pause %v at lock step %q (armed for %v)", clientsText(c, t.clients), c.span(c.Pause), c.LockStep, c.dur)
}

// draw: as armDraw says; the pause past the TTL more often than not (that
// is when the lease runs out under it), a third of those for several TTLs:
// a server may keep a grant longer than the TTL while its client is
// stalled at it (Redisson's RedLock takes each node's lock for twice its
// wait time and only sets the lease afterwards), and a GC pause of several
// leases is as real as one of one.
func (stepPause) draw(g *gen, a aim) (Step, bool) {
	st, ok := armDraw(g, a, StepPause)
	switch x := g.rng.Float64(); {
	case x < 0.45:
		st.Pause = TTLs(g.between(1.2, 2.5))
	case x < 0.7:
		st.Pause = TTLs(g.between(2.5, 6))
	default:
		st.Pause = g.mag()
	}
	return st, ok
}

// armDraw is what step-pause and step-crash draw alike: the step (from
// GenOptions.LockSteps) and the target. Aimed at the lock, a step on the
// way to a grant (GenOptions.GrantSteps) arms every client for about a
// hold, so the next client granted — whoever it is — stops there; a later
// step arms the holder of the next grant, which reaches it while it holds
// or as it releases, for one or two TTLs. At random, one client for one or
// two TTLs.
func armDraw(g *gen, a aim, k Kind) (Step, bool) {
	st := Step{Fault: k, StepParams: StepParams{LockStep: g.oneOf(g.o.LockSteps...)}, For: TTLs(float64(1 + g.rng.IntN(2)))}
	switch a {
	case aimLease:
		if slices.Contains(g.o.GrantSteps, st.LockStep) {
			st.Clients, st.For = g.allClients(), g.nextGrant()
			break
		}
		st.Client = Holder
	case aimAny:
		st.Clients = []int{g.rng.IntN(g.o.Clients)}
	default:
		return st, false
	}
	return st, true
}

// StepParams are the lock-step faults' parameters (step-pause, step-crash),
// embedded in Step: the lock step's name, and how long step-pause stops.
type StepParams struct {
	LockStep string `json:"step,omitempty"`
	Pause    Span   `json:"pause,omitzero"`
}
