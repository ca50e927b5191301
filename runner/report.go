package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/reports"
)

// writeReport renders the run's report directory from what was recorded.
func (r *run) writeReport(checkErr string) (reports.Files, error) {
	p := r.plan
	logs := r.logs
	if r.cluster != nil {
		logs = r.cluster.LogFiles()
	}
	started := r.started
	if started.IsZero() {
		started = r.began
	}
	return reports.Write(r.dir, reports.Run{
		Name: p.Name, Description: p.Description, Source: r.opts.Source,
		Seed: p.Seed, Started: started, Elapsed: time.Since(r.began),
		Command: r.opts.Command, Plan: p.JSON(), Params: p.params(),
		TTL: p.ttl(), Ops: r.ops, Check: p.checkConfig(), Result: r.result, CheckError: checkErr,
		Expected: r.opts.Expected, Logs: logs, Interrupted: r.interrupted,
	})
}

// params are the plan's settings as the report shows them, most telling first.
func (p Plan) params() []reports.Param {
	lockDesc := p.Lock.Variant
	if p.Lock.Inner != "" {
		lockDesc += " (" + p.Lock.Inner + ")"
	}
	if p.Lock.WaitReplicas > 0 {
		lockDesc += fmt.Sprintf(", WAIT %d", p.Lock.WaitReplicas)
	}
	if p.Lock.SetNXOnExtend {
		lockDesc += ", SetNXOnExtend"
	}
	w := p.Workload
	var faults []string
	for _, s := range p.Faults {
		faults = append(faults, string(s.Fault))
	}
	if len(faults) == 0 {
		faults = []string{"none"}
	}
	knobs := []string{}
	if w.CheckValidity {
		knobs = append(knobs, "check validity")
	}
	if w.ObeyLost {
		knobs = append(knobs, "obey loss signal")
	}
	if !w.ExtendEvery.IsZero() {
		knobs = append(knobs, "extend every "+w.ExtendEvery.String())
	}
	if w.Nest > 1 {
		knobs = append(knobs, fmt.Sprintf("nest %d", w.Nest))
	}
	if len(knobs) == 0 {
		knobs = []string{"none"}
	}
	return []reports.Param{
		{Key: "topology", Value: p.Topology.String() + " (" + p.Provider + ")"},
		{Key: "lock", Value: lockDesc},
		{Key: "ttl", Value: p.TTL.String()},
		{Key: "workload", Value: fmt.Sprintf("%s, %d clients (%s), %d keys, hold %s–%s, %s acquires", w.Kind, w.Clients, w.Mode, w.Keys, w.Hold[0], w.Hold[1], w.Retry)},
		{Key: "client knobs", Value: strings.Join(knobs, ", ")},
		{Key: "faults", Value: strings.Join(faults, ", ")},
		{Key: "time limit", Value: p.TimeLimit.String()},
		{Key: "seed", Value: fmt.Sprint(p.Seed)},
	}
}
