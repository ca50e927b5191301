package runner

import (
	"cmp"
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

// defaultLivenessK is checker.Config's LivenessK when a plan gives none.
const defaultLivenessK = 3

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
	if _, err := variants.Lookup(p.Lock.Variant); err != nil {
		return Plan{}, fmt.Errorf("%w: lock: %w", ErrPlan, err)
	}
	var err error
	if p.Faults, err = p.drawFaults(d); err != nil {
		return Plan{}, fmt.Errorf("%w: faults: %w", ErrPlan, err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// drawFaults draws the schedule for the plan's lock: a lock on all nodes
// takes a majority of independent masters, and the steps it reports are
// where step faults may stop a client.
func (p Plan) drawFaults(d Draw) ([]nemesis.Step, error) {
	if len(d.Kinds) == 0 {
		return nil, fmt.Errorf("no fault kinds to draw from")
	}
	info, err := p.Lock.Info() // a wrapper reports the steps of the lock it wraps
	if err != nil {
		return nil, err
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
	// The lock's own steps, where its sources warn, and the workload's,
	// which exist whatever the lock. A client reaches the lock's acquiring
	// steps and the workload's after-acquire on its way to a grant.
	var steps, grant []string
	for _, s := range info.Steps {
		steps = append(steps, s.Name)
		if s.Acquiring {
			grant = append(grant, s.Name)
		}
	}
	steps = append(steps, workloads.StepAfterAcquire, workloads.StepBeforeRelease)
	grant = append(grant, workloads.StepAfterAcquire)
	if cfg.Kind != workloads.Mutex {
		steps = append(steps, workloads.StepBeforeWrite)
	}
	limit := p.span(p.TimeLimit)
	// A quiet end long enough for the liveness checker to see a key
	// nobody can take (more than K TTLs, counted from a TTL after the
	// last fault), where it costs no more than a quarter of the run.
	var quiet time.Duration
	if q := time.Duration((cmp.Or(p.Check.LivenessK, defaultLivenessK) + 2) * float64(p.ttl())); q <= limit/4 {
		quiet = q
	}
	// A latch grants nothing (its clients count down and wait): there is
	// no grant to wait for and no holder to aim at, so its faults are
	// drawn unaimed.
	// Its waiters that never pass show only in a quiet end, so every latch
	// plan leaves one.
	key := cfg.Key(0)
	latch := p.lockKind() == variants.KindLatch
	if latch {
		key = ""
	}
	np, err := nemesis.Generate(p.Seed, d.Kinds, nemesis.GenOptions{
		Setup: setup, TTL: p.ttl(), TimeLimit: limit, Quiet: quiet, QuietAlways: latch, Interval: d.Interval,
		Concurrency: d.Concurrency,
		// The contended key: faults aim at its holder and its lease.
		Key:        key,
		LockSteps:  steps,
		GrantSteps: grant,
		Hold:       p.Workload.Hold.Resolve(p.ttl()),
		Quorum:     info.AllNodes && (p.Topology.Kind == cluster.Independent || p.Topology.Kind == cluster.Groups),
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
