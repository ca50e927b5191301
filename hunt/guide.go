package hunt

import (
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/runner"
)

// DefaultGuided is whether a hunt guides its schedules unless told
// (hunt --guided); docs/measurements.md, "Guided hunts", has the figures
// it was chosen from.
const DefaultGuided = false

// guide is a guided hunt's weight of a scene: coverage.Tally.Weight of the
// scene's steps' shapes, against the hunt's tally so far. Attempt N's
// schedule so depends on what attempts before it reached; its plan is
// saved (plans/seed-N.json) and replays exactly like any other.
func guide(template runner.Plan, t *coverage.Tally, s coverage.Setup) func([]nemesis.Step) float64 {
	return func(scene []nemesis.Step) float64 {
		shapes := make([]coverage.Shape, len(scene))
		for i, st := range scene {
			shapes[i] = shapeOf(template, st)
		}
		return t.Weight(shapes, s)
	}
}

// shapeOf is what a planned step looks like to the windows.
func shapeOf(p runner.Plan, st nemesis.Step) coverage.Shape {
	ttl := p.TTL.Resolve(0)
	sh := coverage.Shape{
		Kind: string(st.Fault), Nodes: st.Nodes,
		Lease:          st.Node == nemesis.NodeLease || st.Node == nemesis.NodePrimary,
		Holder:         st.Client == nemesis.Holder || len(st.Clients) > 1 && len(st.Clients) == p.Workload.Clients,
		Offset:         st.Offset.Resolve(ttl),
		Stop:           max(st.Pause.Resolve(ttl), st.For.Resolve(ttl)),
		CutReplication: st.CutReplication || st.Shape == nemesis.ShapeReplication,
	}
	if st.Fault == nemesis.StepPause {
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
	if st.Fault == nemesis.Partition && (st.Shape == "" || st.Shape == nemesis.ShapeNodes) {
		sh.Cut = len(st.Nodes)
	}
	return sh
}
