package workloads_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/tumbler-dev/tumbler/history"
)

type pairKey struct {
	proc          history.Process
	f, key, value string
}

func pairOf(op history.Op) pairKey {
	k := pairKey{proc: op.Process, f: op.F, key: op.Key}
	if op.F == history.Extend {
		k.value = op.Value
	}
	return k
}

// checkWellFormed asserts the history's shape: every invoke completed by
// exactly one ok/fail/info of its process, completions not before their
// invokes, processes numbered Jepsen-style, ok acquires with a validity.
func checkWellFormed(t *testing.T, ops []history.Op, clients int, end int64) {
	t.Helper()
	if len(ops) == 0 {
		t.Fatal("empty history")
	}
	open := map[pairKey]history.Op{}
	for i, op := range ops {
		where := fmt.Sprintf("op %d %v", i, op)
		if op.Index != int64(i) {
			t.Fatalf("%s: index %d", where, op.Index)
		}
		if op.Process < 0 || int(op.Process)%clients != op.Client {
			t.Fatalf("%s: process %d is not client %d's (process %% %d)", where, op.Process, op.Client, clients)
		}
		if op.Time < 0 || op.Time > end {
			t.Fatalf("%s: time %d outside the run [0, %d]", where, op.Time, end)
		}
		k := pairOf(op)
		switch {
		case op.Type == history.Invoke:
			if prev, dup := open[k]; dup {
				t.Fatalf("%s: invoked while %v is still open", where, prev)
			}
			open[k] = op
		case op.F == history.Crash || op.F == history.Lost || op.F == history.Pause:
			if op.Type != history.Info {
				t.Fatalf("%s: %s must be info", where, op.F)
			}
		default:
			inv, ok := open[k]
			if !ok {
				t.Fatalf("%s: completion without an open invoke", where)
			}
			delete(open, k)
			if op.Time < inv.Time {
				t.Fatalf("%s: completes before its invoke %v", where, inv)
			}
			if op.F == history.Acquire && op.Type == history.OK && (op.ValidUntil <= inv.Time || op.Value == "") {
				t.Fatalf("%s: ok acquire without a validity after its invoke (%d) or an owner", where, inv.Time)
			}
			if op.F == history.Release && op.Value == "" {
				t.Fatalf("%s: release without the lease's owner value", where)
			}
		}
	}
	for _, op := range open {
		t.Fatalf("invoke never completed: %v", op)
	}
}

// checkExclusive asserts that on every key, the windows from an ok acquire
// to the holder's release invoke never overlap in time: with a correct
// lock, no faults and holds far below the TTL, they cannot (the ok is
// stamped after Redis granted the lock, the release invoke before the
// release was sent). Index order is no help: worker processes' ops reach
// the recorder through separate pipes.
func checkExclusive(t *testing.T, ops []history.Op) {
	t.Helper()
	type window struct{ from, to history.Op }
	open := map[history.Process]history.Op{}
	byKey := map[string][]window{}
	for _, op := range ops {
		switch {
		case op.F == history.Acquire && op.Type == history.OK:
			open[op.Process] = op
		case op.F == history.Release && op.Type == history.Invoke:
			from, ok := open[op.Process]
			if !ok || from.Key != op.Key {
				t.Fatalf("%v releases a lock its process did not acquire", op)
			}
			delete(open, op.Process)
			byKey[op.Key] = append(byKey[op.Key], window{from, op})
		}
	}
	for _, ws := range byKey {
		sort.Slice(ws, func(i, j int) bool { return ws[i].from.Time < ws[j].from.Time })
		for i := 1; i < len(ws); i++ {
			if prev := ws[i-1]; ws[i].from.Time < prev.to.Time {
				t.Fatalf("%v acquired while %v held it until %v", ws[i].from, prev.from, prev.to)
			}
		}
	}
}

func count(ops []history.Op, f string, typ history.Type) int64 {
	var n int64
	for _, op := range ops {
		if op.F == f && op.Type == typ {
			n++
		}
	}
	return n
}
