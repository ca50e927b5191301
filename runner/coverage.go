package runner

import (
	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/nemesis"
)

// CoverageSetup is what the dangerous windows need to know of the plan's
// lock and topology (coverage.Setup), derived from the lock's traits
// (variants.Info) and the topology's (cluster.Traits), with the traits of
// kinds, the fault kinds the run or the hunt draws from (none: the plan's
// own; a plan without faults reaches what it reaches, and every window
// counts).
func (p Plan) CoverageSetup(kinds []nemesis.Kind) coverage.Setup {
	info, _ := p.Lock.Info() // an unknown lock: Validate says so
	tr := p.Topology.Traits()
	ttl := p.ttl()
	d := lock.DefaultOptions()
	if p.Lock.DriftFactor != nil {
		d.DriftFactor = *p.Lock.DriftFactor
	}
	s := coverage.Setup{
		TTL: ttl, Validity: ttl - d.Drift(ttl),
		Leases:   p.lockKind() != lock.KindLatch,
		Quorum:   info.AllNodes && tr.IndependentMasters,
		Nodes:    p.Topology.Nodes(),
		Failover: tr.Failovers != 0,
		Renews:   info.Renews || !p.Workload.ExtendEvery.IsZero(),
	}
	switch masters := p.Topology.Masters(); {
	case s.Quorum, tr.OnePrimary, len(masters) == 1:
		// Every lease rests on each master it could reach: all of them for
		// a lock over every node, the one primary otherwise.
		s.LeaseNodes = masters
	}
	if len(kinds) == 0 {
		for _, st := range p.Faults {
			kinds = append(kinds, st.Fault)
		}
	}
	for _, k := range kinds {
		s.Traits = s.Traits.With(k.Traits()...)
	}
	return s
}

// judgeCoverage is the run's coverage of the dangerous windows, judged from
// its history and the faults as they ran; nil when nothing was recorded.
func (r *run) judgeCoverage() *coverage.Run {
	if len(r.ops) == 0 {
		return nil
	}
	in := coverage.Input{Setup: r.plan.CoverageSetup(nil), Ops: r.ops}
	cfg := r.plan.checkConfig()
	if holds, err := checker.Holds(r.ops, cfg); err == nil {
		in.Holds = holds
	}
	if r.result != nil {
		in.Faults, in.Anomalies = r.result.Faults, r.result.Anomalies
	}
	return coverage.Judge(in)
}
