package reports

import (
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
	v := &view{run: r, verdict: r.Judgement.Verdict, end: int64(1e6), byIndex: make(map[int64]int, len(r.Ops))}
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
		v.faults = checker.FaultWindows(r.Ops)
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
