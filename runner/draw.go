package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Draw is what a random fault schedule is drawn from, in the plan's JSON
// style (a hunt's hunt.json keeps it as "draw"): the fault kinds (a kind
// may repeat to weigh it), the mean interval between two scenes (a span,
// absolute or relative to the plan's TTL like the plan's own; zero: the
// TTL) and how many faults may be active at once (zero: DefaultConcurrency,
// filled in by Normalize).
type Draw struct {
	Kinds       []nemesis.Kind `json:"kinds,omitempty"`
	Interval    spans.Span     `json:"interval,omitzero"`
	Concurrency int            `json:"concurrency,omitempty"`
	// Prefer, when set, weighs the scenes drawn (nemesis.GenOptions.Prefer:
	// a guided hunt's weights); it changes what is drawn, and the drawn
	// plan replays as any other.
	Prefer func([]nemesis.Step) float64 `json:"-"`
}

// Normalize is the draw with its default filled in: at most
// DefaultConcurrency faults at once unless told. It is the one place the
// draw's default is declared, beside the plan's (Plan.Normalize); a
// schedule is drawn from the normalized draw, and a hunt records it.
func (d Draw) Normalize() Draw {
	if d.Concurrency == 0 {
		d.Concurrency = DefaultConcurrency
	}
	return d
}

// UnmarshalJSON reads a draw as it is written, and as hunt.json files
// written before it had JSON names hold it: Go's field names, the interval
// in nanoseconds ({"Kinds":["kill"],"Interval":0,"Concurrency":2}).
func (d *Draw) UnmarshalJSON(b []byte) error {
	// encoding/json matches a key to a field's name case-insensitively, so
	// "Kinds" and "kinds" both land here; only the interval's number needs
	// reading apart.
	var v struct {
		Kinds       []nemesis.Kind  `json:"kinds"`
		Interval    json.RawMessage `json:"interval"`
		Concurrency int             `json:"concurrency"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*d = Draw{Kinds: v.Kinds, Concurrency: v.Concurrency}
	var ns int64
	switch {
	case len(v.Interval) == 0 || string(v.Interval) == "null":
	case json.Unmarshal(v.Interval, &ns) == nil:
		d.Interval = spans.Fixed(time.Duration(ns))
	default:
		if err := json.Unmarshal(v.Interval, &d.Interval); err != nil {
			return fmt.Errorf("draw interval: %w", err)
		}
	}
	return nil
}

// Validate checks the draw: known kinds, an interval and a concurrency
// that are not negative, and an interval only with kinds. A problem names
// the draw's field ("draw.interval"); errors wrap ErrPlan.
func (d Draw) Validate() error {
	var err error
	for _, k := range d.Kinds {
		if _, kerr := nemesis.ParseKind(string(k)); kerr != nil && err == nil {
			err = field.Errorf("draw.kinds", "%w", kerr)
		}
	}
	switch {
	case err != nil:
	case d.Interval.Negative():
		err = field.Errorf("draw.interval", "%v is negative", d.Interval)
	case !d.Interval.IsZero() && len(d.Kinds) == 0:
		err = field.Errorf("draw.interval", "needs %v", field.Ref("draw.kinds"))
	case d.Concurrency < 0:
		err = field.Errorf("draw.concurrency", "%d: at least one fault must be able to run at a time", d.Concurrency)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPlan, err)
	}
	return nil
}

// WithDrawnFaults is the plan with seed and a fault schedule drawn from d
// for that seed (nemesis.Generate, aimed at the plan's contended key and
// its lock), in place of the plan's own. The same plan, seed and draw give
// the same schedule. It is how "tumbler run --nemesis" and "tumbler hunt"
// make their schedules, from a normalized plan (Normalize): the draw reads
// its TTL, time limit, hold and liveness bound as they are, and d
// normalized (Draw.Normalize). Errors wrap ErrPlan and name the field
// at fault ("draw.kinds", "time_limit").
func (p Plan) WithDrawnFaults(seed int64, d Draw) (Plan, error) {
	if err := d.Validate(); err != nil {
		return Plan{}, err
	}
	p.Seed = seed
	var err error
	if p.Faults, err = p.drawFaults(d); errors.Is(err, ErrPlan) {
		return Plan{}, err
	} else if err != nil {
		return Plan{}, fmt.Errorf("%w: %w", ErrPlan, err)
	}
	// The plan was normalized (see above): validated as it is.
	if err := p.validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// drawFaults draws the schedule for the plan's lock: a lock on all nodes
// takes a majority of independent masters, and the steps it reports are
// where step faults may stop a client.
func (p Plan) drawFaults(d Draw) ([]nemesis.Step, error) {
	d = d.Normalize()
	if len(d.Kinds) == 0 {
		return nil, field.Errorf("draw.kinds", "no fault kinds to draw from")
	}
	info, err := p.Lock.Info() // a wrapper reports the steps of the lock it wraps
	if err != nil {
		return nil, field.Errorf("lock.variant", "%w", err)
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
	if p.Workload.Kind != workloads.Mutex {
		steps = append(steps, workloads.StepBeforeWrite)
	}
	limit := p.span(p.TimeLimit)
	// A quiet end long enough for the liveness checker to see a key
	// nobody can take (more than K TTLs, counted from a TTL after the
	// last fault), where it costs no more than a quarter of the run.
	var quiet time.Duration
	if q := time.Duration((p.Check.LivenessK + 2) * float64(p.ttl())); q <= limit/4 {
		quiet = q
	}
	// A latch grants nothing (its clients count down and wait): there is
	// no grant to wait for and no holder to aim at, so its faults are
	// drawn unaimed.
	// Its waiters that never pass show only in a quiet end, so every latch
	// plan leaves one.
	key := workloads.Config{Options: p.Workload}.Key(0)
	latch := p.lockKind() == lock.KindLatch
	if latch {
		key = ""
	}
	np, err := nemesis.Generate(p.Seed, d.Kinds, nemesis.GenOptions{
		Setup: setup, TTL: p.ttl(), TimeLimit: limit, Quiet: quiet, QuietAlways: latch, Interval: d.Interval.Resolve(p.ttl()),
		Concurrency: d.Concurrency,
		// The contended key: faults aim at its holder and its lease.
		Key:        key,
		LockSteps:  steps,
		GrantSteps: grant,
		Hold:       p.Workload.Hold.Resolve(p.ttl()),
		Quorum:     info.AllNodes && p.Topology.Traits().IndependentMasters,
		// A persistence the plan fixes is not overridden by the faults.
		Persistence: p.Persistence,
		Prefer:      d.Prefer,
	})
	if err != nil {
		return nil, field.Errorf("draw.kinds", "%w", err)
	}
	if len(np.Steps) == 0 {
		return nil, field.Errorf("time_limit", "no fault fits in %v after the lead-in of half %v: lengthen the one or shorten the other",
			p.TimeLimit, field.Ref("draw.interval"))
	}
	return np.Steps, nil
}

// probeSetup is the nemesis setup with the answer of the plan's provider
// where building it is cheap and starts nothing (cluster.ProviderKind.Probe:
// the process provider, and the external one, which reads its
// configuration and contacts the deployment only when the cluster starts).
// Another (the docker provider, which may have an image to build) is held
// to the controls its kind declares, and asked by Run, which checks the
// faults again before it starts anything.
func (p Plan) probeSetup() (nemesis.Setup, error) {
	k, err := p.providerKind()
	if err != nil {
		return nemesis.Setup{}, err
	}
	if !k.Probe {
		s := p.nemesisSetup(nil)
		s.Provider, s.Controls = k.Name, k.Controls
		return s, nil
	}
	prov, _, err := newProvider(context.Background(), p)
	if err != nil {
		return nemesis.Setup{}, err
	}
	defer prov.Close()
	return p.nemesisSetup(prov), nil
}
