package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

// What the nemesis sees of a live run (nemesis.Env): the workload's
// clients, and an oracle over the history as it is recorded.

// clientControls gives the nemesis the workload's clients.
type clientControls struct{ w *workloads.Workload }

func (c clientControls) client(i int) (*workloads.Client, error) {
	cs := c.w.Clients()
	if i < 0 || i >= len(cs) {
		return nil, fmt.Errorf("client %d: the workload has clients 0..%d", i, len(cs)-1)
	}
	return cs[i], nil
}

func (c clientControls) Count() int { return len(c.w.Clients()) }

func (c clientControls) Pause(i int) error { return c.do(i, (*workloads.Client).Pause) }

func (c clientControls) Resume(i int) error { return c.do(i, (*workloads.Client).Resume) }

func (c clientControls) SetClockOffset(i int, d time.Duration) error {
	return c.do(i, func(cl *workloads.Client) error { return cl.SetClockOffset(d) })
}

func (c clientControls) SetClockDrift(i int, d clockshim.Drift) error {
	return c.do(i, func(cl *workloads.Client) error { return cl.SetClockDrift(d) })
}

func (c clientControls) ArmStep(i int, step string, a workloads.StepAction) error {
	return c.do(i, func(cl *workloads.Client) error {
		return cl.ArmStep(step, a)
	})
}

func (c clientControls) GateResource(i int, closed bool) error {
	return c.do(i, func(cl *workloads.Client) error { return cl.GateResource(closed) })
}

func (c clientControls) do(i int, f func(*workloads.Client) error) error {
	cl, err := c.client(i)
	if err != nil {
		return err
	}
	return f(cl)
}

// oracle answers the nemesis's questions about the live history, and
// counts the double grants so far for the status line.
type oracle struct {
	tracker *history.Tracker
	mutex   *checker.MutexMonitor
	mu      sync.Mutex
	waiters map[string][]chan nemesis.Grant
	granted int64
}

func newOracle(cfg checker.Config) *oracle {
	return &oracle{tracker: history.NewTracker(), mutex: checker.NewMutexMonitor(cfg), waiters: map[string][]chan nemesis.Grant{}}
}

// observe runs under the recorder's lock: it must stay quick.
func (o *oracle) observe(op history.Op) {
	o.tracker.Observe(op)
	o.mutex.Observe(op)
	if op.IsNemesis() || op.F != history.Acquire || op.Type != history.OK {
		return
	}
	o.mu.Lock()
	o.granted++
	for _, ch := range o.waiters[op.Key] {
		ch <- nemesis.Grant{Client: op.Client, Value: op.Value}
	}
	delete(o.waiters, op.Key)
	o.mu.Unlock()
}

func (o *oracle) grants() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.granted
}

func (o *oracle) Holder(key string) (nemesis.Grant, bool) {
	h, ok := o.tracker.Holder(key)
	return nemesis.Grant{Client: h.Client, Value: h.Value}, ok
}

func (o *oracle) WaitGrant(ctx context.Context, key string) (nemesis.Grant, error) {
	ch := make(chan nemesis.Grant, 1)
	o.mu.Lock()
	o.waiters[key] = append(o.waiters[key], ch)
	o.mu.Unlock()
	select {
	case g := <-ch:
		return g, nil
	case <-ctx.Done():
		return nemesis.Grant{}, ctx.Err()
	}
}
