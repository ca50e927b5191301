package reports

import (
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// TestOpsTableShowsPartners: in a history too long to show whole, the
// operations table shows each anomaly's op with the other half of its
// call, paired by the history's rule (history.Partners): however far apart
// the two halves are, and for an extend by owner value, so a watchdog's
// renewal of one lease is not taken for the renewal of another.
func TestOpsTableShowsPartners(t *testing.T) {
	var ops []history.Op
	add := func(p history.Process, typ history.Type, f, value string) int64 {
		i := int64(len(ops))
		ops = append(ops, history.Op{Index: i, Process: p, Client: int(p), Type: typ, F: f, Key: "k", Value: value, Time: i * 1000})
		return i
	}
	acqInv := add(0, history.Invoke, history.Acquire, "a")
	extA := add(0, history.Invoke, history.Extend, "a")
	filler := func(n int) {
		for i := 0; i < n; i++ {
			add(1, history.Invoke, history.Read, "")
			add(1, history.OK, history.Read, "0")
		}
	}
	// More ops than the table shows, and the two halves of an anomaly's
	// calls further apart than the 5,000 ops the table once searched.
	filler(1000)
	extB := add(0, history.Invoke, history.Extend, "b")
	add(0, history.OK, history.Extend, "b")
	filler(2000)
	okA := add(0, history.OK, history.Extend, "a")
	acqOK := add(0, history.OK, history.Acquire, "a")
	ops[acqOK].ValidUntil = ops[acqOK].Time + 1e9

	r := Run{Ops: ops, Result: &checker.Result{Anomalies: []checker.Anomaly{
		{Kind: checker.DoubleGrant, Key: "k", Ops: []int64{acqOK, okA}},
	}}}
	_, shown, _ := newView(r).selectOps()
	for _, want := range []int64{acqInv, extA} {
		if !shown[want] {
			t.Errorf("op %d (the invoke of an anomaly's op) is not in the table", want)
		}
	}
	if shown[extB] {
		t.Errorf("op %d (another lease's renewal) is in the table as a partner", extB)
	}
}
