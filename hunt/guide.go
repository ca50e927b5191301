package hunt

import (
	"errors"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// DefaultGuided is whether a hunt guides its schedules unless told
// (hunt --guided); docs/measurements.md, "Guided hunts", has the figures
// it was chosen from.
const DefaultGuided = false

// GuidedShard refuses a guided hunt that is one shard of a larger one: a
// guided attempt is weighed by the attempts of its own hunt that had
// ended, and a shard has only its own, so it cannot draw the plans one
// guided hunt over all the seeds draws, and its merge would not be that
// hunt. Nil when shard is nil or guided false; callers wrap the error as
// bad input (runner.ErrPlan), naming what they were given.
func GuidedShard(shard *matrix.Shard, guided bool) error {
	if shard == nil || !guided {
		return nil
	}
	return errors.New("a guided hunt cannot be split into shards: a guided shard weighs only its own attempts, so it cannot draw the plans one guided hunt over all the seeds draws; run the guided hunt whole, or shard an unguided one")
}

// guided is a guided hunt's Drawer: the template with a schedule drawn
// from draw for the seed, each scene weighed (runner.Draw.Prefer) by
// coverage.Tally.Weight of its steps' shapes against what the attempts
// finished so far reached (Attempt.Reached). Attempt N's schedule so
// depends on the attempts before it that had finished when it was drawn;
// its plan is saved (plans/seed-N.json) and replays exactly like any
// other. Guidance needs evidence: an attempt drawn before any had
// finished (the first, or the first wave of --parallel N) is drawn
// unweighed, the same plan an unguided hunt draws for its seed.
func guided(template runner.Plan, draw runner.Draw) Drawer {
	setup := template.CoverageSetup(draw.Kinds)
	return func(seed int64, finished []Attempt) (runner.Plan, error) {
		if len(finished) == 0 {
			return template.WithDrawnFaults(seed, draw)
		}
		t := coverage.NewTally(setup)
		for _, a := range finished {
			r := &coverage.Run{}
			for name, n := range a.Reached {
				r.Windows = append(r.Windows, coverage.Result{Heading: coverage.Heading{Name: name}, Reached: n})
			}
			t.Add(r)
		}
		d := draw
		d.Prefer = func(scene []nemesis.Step) float64 {
			shapes := make([]coverage.Shape, len(scene))
			for i, st := range scene {
				shapes[i] = shapeOf(template, st)
			}
			return t.Weight(shapes, setup)
		}
		return template.WithDrawnFaults(seed, d)
	}
}

// shapeOf is what a planned step looks like to the windows: its kind's
// traits and the magnitudes its fields give.
func shapeOf(p runner.Plan, st nemesis.Step) coverage.Shape {
	ttl := p.TTL.Resolve(0)
	sh := coverage.Shape{
		Traits: st.Fault.Traits(), Nodes: st.Nodes,
		Lease:          st.Node == nemesis.NodeLease || st.Node == nemesis.NodePrimary,
		Holder:         st.Client == nemesis.Holder || len(st.Clients) > 1 && len(st.Clients) == p.Workload.Clients,
		Offset:         st.Offset.Resolve(ttl),
		Rate:           st.Rate,
		Stop:           max(st.Pause.Resolve(ttl), st.For.Resolve(ttl)),
		Delay:          st.Latency.Resolve(ttl),
		CutReplication: st.CutReplication || st.Shape == nemesis.ShapeReplication,
	}
	if sh.Traits.Has(history.ArmsStep) {
		sh.Stop = st.Pause.Resolve(ttl) // armed for For, stopped for Pause
		if info, err := p.Lock.Info(); err == nil {
			for _, ls := range info.Steps {
				sh.Acquiring = sh.Acquiring || ls.Acquiring && ls.Name == st.LockStep
			}
		}
	}
	persist := st.Persistence
	if persist == "" {
		persist = p.Persistence
	}
	sh.Empty = persist == "" || persist == cluster.PersistNone
	if sh.Traits.Has(history.IsolatesNode) && (st.Shape == "" || st.Shape == nemesis.ShapeNodes) {
		sh.Cut = len(st.Nodes)
	}
	return sh
}
