package runner

import (
	"fmt"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Draw is what a random fault schedule is drawn from: the fault kinds (a
// kind may repeat to weigh it), the mean interval between two scenes (zero:
// the TTL) and how many faults may be active at once (zero:
// nemesis.DefaultConcurrency).
type Draw struct {
	Kinds       []nemesis.Kind
	Interval    time.Duration
	Concurrency int
}

// errNoFaultFits: the time limit leaves no room for a single fault.
type errNoFaultFits struct{ limit time.Duration }

func (e errNoFaultFits) Error() string {
	return fmt.Sprintf("no fault fits in the time limit %v after the lead-in of half the interval", e.limit)
}

// WithDrawnFaults is the plan with seed and a fault schedule drawn from d
// for that seed (nemesis.Generate, aimed at the plan's contended key and
// its lock), in place of the plan's own. The same plan, seed and draw give
// the same schedule. It is how "tumbler run --nemesis" and "tumbler hunt"
// make their schedules. Errors wrap ErrPlan.
func (p Plan) WithDrawnFaults(seed int64, d Draw) (Plan, error) {
	p = p.withDefaults()
	p.Seed = seed
	info, err := variants.Lookup(p.Lock.Variant)
	if err != nil {
		return Plan{}, fmt.Errorf("%w: lock: %w", ErrPlan, err)
	}
	if p.Faults, err = p.drawFaults(d, info.AllNodes); err != nil {
		return Plan{}, fmt.Errorf("%w: faults: %w", ErrPlan, err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// drawFaults draws the schedule; quorum says the lock takes a majority of
// independent masters.
func (p Plan) drawFaults(d Draw, quorum bool) ([]nemesis.Step, error) {
	if len(d.Kinds) == 0 {
		return nil, fmt.Errorf("no fault kinds to draw from")
	}
	if d.Concurrency == 0 {
		d.Concurrency = nemesis.DefaultConcurrency
	}
	cfg, err := p.workloadConfig(nil)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	setup, err := p.probeSetup()
	if err != nil {
		return nil, err
	}
	setup.NodeClock = slices.ContainsFunc(d.Kinds, nemesis.Kind.NeedsNodeClock)
	// The workload's own steps exist whatever the lock; the variants do
	// not list theirs (a plan file can name one).
	steps := []string{workloads.StepAfterAcquire, workloads.StepBeforeRelease}
	if cfg.Kind != workloads.Mutex {
		steps = append(steps, workloads.StepBeforeWrite)
	}
	limit := p.span(p.TimeLimit)
	np, err := nemesis.Generate(p.Seed, d.Kinds, nemesis.GenOptions{
		Setup: setup, TTL: p.ttl(), TimeLimit: limit, Interval: d.Interval,
		Concurrency: d.Concurrency,
		// The contended key: faults aim at its holder and its lease.
		Key:       cfg.Key(0),
		LockSteps: steps,
		Hold:      cfg.Hold,
		Quorum:    quorum && p.Topology.Kind == cluster.Independent,
		// A persistence the plan fixes is not overridden by the faults.
		Persistence: p.Persistence,
	})
	if err != nil {
		return nil, err
	}
	if len(np.Steps) == 0 {
		return nil, errNoFaultFits{limit}
	}
	return np.Steps, nil
}
