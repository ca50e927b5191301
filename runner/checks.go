package runner

import (
	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/workloads"
)

// checkConfig is the checkers' configuration for this plan. What the
// history is of (checker.Subject) comes from the lock's declared kind and
// grants (variants.Info) and the workload's kind; each checker decides
// from it whether it applies.
func (p Plan) checkConfig() checker.Config {
	info, _ := p.Lock.Info() // an unknown lock: Validate says so
	return checker.Config{
		TTL: p.ttl(), LivenessK: p.Check.LivenessK,
		LinearizabilityTimeout: p.span(p.Check.Linearizability.Timeout),
		LinearizabilityMemory:  int64(p.Check.Linearizability.Memory),
		Subject: checker.Subject{
			Shape:     p.lockKind(),
			Permits:   p.permits(),
			Reentrant: info.Reentrant,
			Fenced:    p.Workload.Kind == workloads.FencedWrite && info.Tokens,
			Fair:      info.Fair,
			Counter:   p.Workload.Kind == workloads.Counter,
		},
		Skip: p.Check.Skip,
	}
}
