package reports

import (
	"cmp"
	"math"
	"slices"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// view is a run with what every file of its report derives from it.
type view struct {
	run     Run
	verdict checker.Verdict
	// end is the last time in the history (at least 1 ms, so that scales
	// never divide by zero).
	end    int64
	faults []checker.FaultWindow
	// byIndex finds an op by its history index.
	byIndex map[int64]int
}

func newView(r Run) *view {
	v := &view{run: r, verdict: verdict(r), end: int64(1e6), byIndex: make(map[int64]int, len(r.Ops))}
	for i, o := range r.Ops {
		v.end = max(v.end, o.Time)
		if _, dup := v.byIndex[o.Index]; !dup {
			v.byIndex[o.Index] = i
		}
	}
	if r.Result != nil {
		v.end = max(v.end, r.Result.End)
		v.faults = r.Result.Faults
	} else {
		v.faults = faultWindows(r.Ops)
	}
	for _, f := range v.faults {
		v.end = max(v.end, f.Stop)
	}
	return v
}

// op returns the op with history index i.
func (v *view) op(i int64) (history.Op, bool) {
	p, ok := v.byIndex[i]
	if !ok {
		return history.Op{}, false
	}
	return v.run.Ops[p], true
}

// faultWindows pairs the nemesis records when the checker could not (it
// rejected the history): the report still shows what was injected when.
func faultWindows(ops []history.Op) []checker.FaultWindow {
	var end int64
	for _, o := range ops {
		end = max(end, o.Time)
	}
	byID := map[string]*checker.FaultWindow{}
	var order []string
	for _, o := range ops {
		if !o.IsNemesis() || o.Fault == nil || (o.F != history.Start && o.F != history.Stop) {
			continue
		}
		fw := byID[o.Fault.ID]
		if fw == nil {
			fw = &checker.FaultWindow{ID: o.Fault.ID, Kind: o.Fault.Kind, Targets: o.Fault.Targets, Desc: o.Fault.Desc,
				Start: math.MaxInt64, Stop: -1, StartOp: -1, StopOp: -1}
			byID[o.Fault.ID] = fw
			order = append(order, o.Fault.ID)
		}
		if o.F == history.Start && o.Time < fw.Start {
			fw.Start, fw.StartOp = o.Time, o.Index
		}
		if o.F == history.Stop && o.Time >= fw.Stop {
			fw.Stop, fw.StopOp, fw.Healed = o.Time, o.Index, true
		}
	}
	var out []checker.FaultWindow
	for _, id := range order {
		fw := *byID[id]
		if fw.StartOp < 0 {
			fw.Start = fw.Stop
		}
		if !fw.Healed {
			fw.Stop = end
		}
		out = append(out, fw)
	}
	slices.SortStableFunc(out, func(a, b checker.FaultWindow) int { return cmp.Compare(a.Start, b.Start) })
	return out
}
