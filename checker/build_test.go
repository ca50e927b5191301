package checker

import (
	"cmp"
	"slices"
	"testing"

	"github.com/tumbler-dev/tumbler/history"
)

// A tiny language for synthetic histories. Times are in milliseconds; build
// orders the records by time (stable) and numbers them.

func ns(ms float64) int64 { return int64(ms * 1e6) }

type part []history.Op

// mod changes both records of a call.
type mod func(inv, done *history.Op)

func vu(ms float64) mod { return func(_, d *history.Op) { d.ValidUntil = ns(ms) } }
func tok(t int64) mod   { return func(i, d *history.Op) { i.Token, d.Token = t, t } }
func val(v string) mod  { return func(i, d *history.Op) { i.Value, d.Value = v, v } }
func wvu(ms float64) mod {
	return func(i, _ *history.Op) { i.ValidUntil = ns(ms) }
}

// op is a call of process proc (client proc) invoked at call and completed
// with typ at ret; ret < 0 leaves it without completion.
func op(proc int, f, key string, call, ret float64, typ history.Type, mods ...mod) part {
	inv := history.Op{Process: history.Process(proc), Client: proc, Type: history.Invoke, F: f, Key: key, Time: ns(call)}
	if ret < 0 {
		for _, m := range mods {
			m(&inv, &history.Op{})
		}
		return part{inv}
	}
	done := inv
	done.Type, done.Time = typ, ns(ret)
	for _, m := range mods {
		m(&inv, &done)
	}
	return part{inv, done}
}

func acq(proc int, key string, call, ret float64, typ history.Type, mods ...mod) part {
	return op(proc, history.Acquire, key, call, ret, typ, mods...)
}
func rel(proc int, key string, call, ret float64, typ history.Type) part {
	return op(proc, history.Release, key, call, ret, typ)
}
func ext(proc int, key string, call, ret float64, typ history.Type, mods ...mod) part {
	return op(proc, history.Extend, key, call, ret, typ, mods...)
}
func write(proc int, key string, call, ret float64, typ history.Type, mods ...mod) part {
	return op(proc, history.Write, key, call, ret, typ, mods...)
}
func read(proc int, key string, call, ret float64, value string) part {
	return op(proc, history.Read, key, call, ret, history.OK, func(_, d *history.Op) { d.Value = value })
}

func single(proc int, f, key string, at float64) part {
	return part{{Process: history.Process(proc), Client: proc, Type: history.Info, F: f, Key: key, Time: ns(at)}}
}

func fault(id, kind, desc string, start, stop float64, traits ...history.Trait) part {
	f := &history.Fault{ID: id, Kind: kind, Desc: desc, Traits: traits}
	p := part{{Process: history.NemesisProcess, Type: history.Info, F: history.Start, Time: ns(start), Fault: f}}
	if stop >= 0 {
		p = append(p, history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.Stop, Time: ns(stop), Fault: f})
	}
	return p
}

func build(parts ...part) []history.Op {
	var ops []history.Op
	for _, p := range parts {
		ops = append(ops, p...)
	}
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.Time, b.Time) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

func check(t *testing.T, ops []history.Op, cfg Config) *Result {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = 1e9
	}
	res, err := Check(ops, cfg)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return res
}

// verdicts is the expected verdict per checker; checkers left out must be
// valid (or skipped).
type verdicts map[string]Verdict

func expect(t *testing.T, res *Result, want verdicts) {
	t.Helper()
	overall := Valid
	for _, c := range res.Checkers {
		w, ok := want[c.Name]
		if !ok {
			w = Valid
		}
		if c.Verdict != w {
			t.Errorf("%s: got %s (%s), want %s", c.Name, c.Verdict, c.Reason, w)
		}
		overall = merge(overall, c.Verdict)
	}
	if res.Verdict != overall {
		t.Errorf("overall verdict %s does not merge the checkers' (%s)", res.Verdict, overall)
	}
	if t.Failed() {
		for _, a := range res.Anomalies {
			t.Logf("anomaly: %s", a.Explanation)
		}
		for _, a := range res.Warnings {
			t.Logf("warning: %s", a.Explanation)
		}
	}
}

func kinds(as []Anomaly) []Kind {
	var ks []Kind
	for _, a := range as {
		ks = append(ks, a.Kind)
	}
	return ks
}
