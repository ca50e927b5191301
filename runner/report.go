package runner

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/tumbler-dev/tumbler/reports"
)

// writeReport renders the run's report into dir from what was recorded
// and how the run was judged.
func (r *run) writeReport(dir string, out *Outcome, checkErr string) (reports.Files, error) {
	p := r.plan
	logs := r.logs
	if r.cluster != nil {
		logs = r.cluster.LogFiles()
	}
	acc := r.access // an external deployment's own, when the plan has none
	if acc == nil {
		acc = p.Access
	}
	started := r.started
	if started.IsZero() {
		started = r.began
	}
	return reports.Write(dir, reports.Run{
		Name: p.Name, Description: p.Description, Source: r.opts.Source,
		Seed: p.Seed, Started: started, Elapsed: out.Elapsed,
		Command: r.opts.Command, Plan: p.JSON(), Params: append(p.params(), reports.Param{Key: "server", Value: cmp.Or(r.version, p.Server.Name())}, reports.Param{Key: "access", Value: acc.String()}),
		TTL: p.ttl(), Ops: r.ops, Check: p.checkConfig(), Result: r.result, CheckError: checkErr,
		Judgement: out.Judgement, Logs: logs, Interrupted: r.interrupted, Coverage: out.Coverage,
	})
}

// params are the plan's settings as the report shows them, most telling first.
func (p Plan) params() []reports.Param {
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
	if w.ClientReadFraction != nil {
		knobs = append(knobs, fmt.Sprintf("read fraction by client %v", w.ClientReadFraction))
	} else if w.ReadFraction != nil {
		knobs = append(knobs, fmt.Sprintf("%.0f%% read cycles", 100**w.ReadFraction))
	}
	if w.ClientStart != nil {
		knobs = append(knobs, fmt.Sprintf("start by client %v", w.ClientStart))
	}
	if l := w.Latch; l != nil {
		knobs = append(knobs, fmt.Sprintf("latch rounds of %s: count %d, %d counters", l.Round, l.Count, l.Counters))
	}
	if len(knobs) == 0 {
		knobs = []string{"none"}
	}
	return []reports.Param{
		{Key: "topology", Value: p.Topology.String() + " (" + p.Provider + ")" + nodeConfig(p.NodeConfig)},
		{Key: "lock", Value: p.LockDesc()},
		{Key: "ttl", Value: p.TTL.String()},
		{Key: "workload", Value: fmt.Sprintf("%s, %d clients (%s), %d keys, hold %s–%s, %s acquires", w.Kind, w.Clients, w.Mode, w.Keys, w.Hold[0], w.Hold[1], w.Retry)},
		{Key: "client knobs", Value: strings.Join(knobs, ", ")},
		{Key: "faults", Value: strings.Join(faults, ", ")},
		{Key: "time limit", Value: p.TimeLimit.String()},
		{Key: "seed", Value: fmt.Sprint(p.Seed)},
	}
}

// nodeConfig describes a plan's NodeConfig for the report.
func nodeConfig(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+" "+m[k])
	}
	if len(parts) == 0 {
		return ""
	}
	return ", nodes with " + strings.Join(parts, ", ")
}
