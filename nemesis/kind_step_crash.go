package nemesis

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/workloads"
)

// StepCrash arms a client to crash when it next reaches the lock step
// Step; the arming lasts For.
const StepCrash Kind = "step-crash"

type stepCrash struct{ kindBase }

func init() { register(110, stepCrash{}) }

func (stepCrash) kind() Kind { return StepCrash }

// traits: it crashes a client that reaches the armed step.
func (stepCrash) traits() history.TraitSet {
	return history.TraitSet{history.CrashesClient, history.ArmsStep}
}

func (stepCrash) doc() string {
	return "arms clients to crash when they next reach the lock step \"step\"; the arming lasts \"for\""
}

func (stepCrash) fields() []string { return []string{"clients", "client", "step"} }

func (stepCrash) needs() needs { return needs{clients: true} }

func (stepCrash) targets() targetKind { return targetsClients }

func (stepCrash) check(c *compiled, _ Setup) error {
	if c.LockStep == "" {
		return field.Errorf("step", "%v is missing: the lock step to arm", field.Self)
	}
	return nil
}

func (stepCrash) apply(r *runner, i int, t target) error {
	return r.arm(i, t.clients, workloads.StepAction{Crash: true})
}

func (stepCrash) describe(c *compiled, t target) string {
	return fmt.Sprintf("arm %s to crash at lock step %q (armed for %v)", clientsText(c, t.clients), c.LockStep, c.dur)
}

// draw: as step-pause, without the pause.
func (stepCrash) draw(g *gen, a aim) (Step, bool) { return armDraw(g, a, StepCrash) }
