package shrink

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
)

const found = `{
  "name": "found", "seed": 7, "topology": "independent:5", "ttl": "1s",
  "lock": {"variant": "redlock"},
  "workload": {"kind": "fenced-write", "clients": 6, "keys": 2},
  "time_limit": "20s",
  "faults": [
    {"at": "1s", "fault": "pause", "nodes": ["n1"], "for": "2s"},
    {"at": "2s", "fault": "partition", "nodes": ["n4", "n5"], "for": "4s"},
    {"at": "3s", "fault": "latency", "nodes": ["n2"], "latency": "50ms", "for": "1s"},
    {"at": "4s", "fault": "restart", "nodes": ["n3"], "persistence": "none"},
    {"at": "5s", "fault": "kill", "nodes": ["n2"], "for": "2s"},
    {"at": "12s", "fault": "pause", "nodes": ["n1"], "for": "3s"}
  ]
}`

func foundPlan(t *testing.T) runner.Plan {
	t.Helper()
	p, err := runner.ParsePlan([]byte(found), "found")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fake is a deterministic stand-in for runner.Run: a plan fails (a double
// grant at 5 s) exactly when it cuts a minority and restarts a node empty,
// the cut lasts at least 2 s, the run lasts at least 6 s, and at least two
// clients contend. The known minimum is the partition and the restart,
// the partition 2 s long, 3 clients or fewer (not below 2), one key.
func fake(calls *atomic.Int64) RunFunc {
	return fakeRun(calls, func(p runner.Plan) bool {
		var cut, restart bool
		for _, s := range p.Faults {
			cut = cut || s.Fault == nemesis.Partition && s.For.Resolve(time.Second) >= 2*time.Second
			restart = restart || s.Fault == nemesis.Restart
		}
		return cut && restart
	})
}

// fakeRun fails a plan as fake does when fails says so, the run lasts at
// least 6 s and at least two clients contend.
func fakeRun(calls *atomic.Int64, fails func(runner.Plan) bool) RunFunc {
	return func(_ context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
		calls.Add(1)
		dir := filepath.Join(o.Store, p.Name, time.Now().Format("150405.000000000"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		res := &checker.Result{Verdict: checker.Valid}
		if fails(p) && p.TimeLimit.Resolve(time.Second) >= 6*time.Second && p.Workload.Clients >= 2 {
			res = &checker.Result{Verdict: checker.Invalid, Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant, At: int64(5 * time.Second)}},
				Faults: []checker.FaultWindow{{ID: "f1", Desc: "partition n4, n5 from everything", Start: int64(2 * time.Second)}, {ID: "f2", Desc: "restart n3 empty", Start: int64(4 * time.Second)}}}
		}
		return &runner.Outcome{Dir: dir, Plan: p, Result: res, Judgement: outcome.Judgement{Verdict: res.Verdict}}, nil
	}
}

func TestShrinkFindsTheKnownMinimum(t *testing.T) {
	var calls atomic.Int64
	dir := t.TempDir()
	res, err := Shrink(context.Background(), foundPlan(t), Options{
		Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: dir, Budget: time.Hour, Run: fake(&calls), Found: "found by tumbler hunt, seed 7",
	})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Minimal
	var kinds []nemesis.Kind
	for _, s := range m.Faults {
		kinds = append(kinds, s.Fault)
	}
	if !res.Reproduced || !slices.Equal(kinds, []nemesis.Kind{nemesis.Partition, nemesis.Restart}) {
		t.Fatalf("minimal faults %v, want partition and restart; candidates:\n%+v", kinds, res.Candidates)
	}
	if got := m.Faults[0].For.Resolve(time.Second); got != 2*time.Second {
		t.Errorf("partition lasts %v, want it halved to the 2 s minimum", got)
	}
	if m.Workload.Clients != 2 || m.Workload.Keys != 1 {
		t.Errorf("clients %d keys %d, want 2 and 1", m.Workload.Clients, m.Workload.Keys)
	}
	if tl := m.TimeLimit.Resolve(time.Second); tl < 6*time.Second || tl > 7*time.Second {
		t.Errorf("time limit %v, want cut to just past the anomaly (6 s)", tl)
	}
	if res.Exhausted || m.Seed != 7 {
		t.Errorf("exhausted %v seed %d", res.Exhausted, m.Seed)
	}
	// Every kept candidate failed twice in at most three replays, every
	// rejected one was stopped as soon as it could not reach two.
	for _, c := range res.Candidates {
		if c.Kept != (c.Failed >= 2) || c.Replayed > 3 || (c.Kept && c.Replayed != 2) || (!c.Kept && c.Replayed != 2) {
			t.Errorf("candidate %q: %d of %d failed, kept %v", c.Change, c.Failed, c.Replayed, c.Kept)
		}
	}
	// The directory: the summary, the minimal plan, a row that parses as a
	// catalog row and names the hunt, a failing replay's report; rejected
	// candidates' reports are gone.
	row, err := scenarios.Load(filepath.Join(dir, RowFile))
	if err != nil {
		t.Fatal(err)
	}
	if row.Expect.Kind != checker.DoubleGrant || row.Source != "found by tumbler hunt, seed 7" || len(row.Plan.Faults) != 2 {
		t.Errorf("row: %+v", row)
	}
	if _, err := runner.LoadPlan(filepath.Join(dir, PlanFile)); err != nil {
		t.Error(err)
	}
	if st, err := os.Stat(filepath.Join(dir, res.Report)); err != nil || !st.IsDir() {
		t.Errorf("report %q: %v", res.Report, err)
	}
	for i, c := range res.Candidates {
		_, err := os.Stat(filepath.Join(dir, "candidate-"+pad(i)))
		if c.Kept == errors.Is(err, os.ErrNotExist) {
			t.Errorf("candidate %d (kept %v): its directory: %v", i, c.Kept, err)
		}
	}
}

func pad(i int) string { return string([]byte{byte('0' + i/10), byte('0' + i%10)}) }

// A plan that fails only one time in three is not shrunk with k = 2 of R = 3.
func TestShrinkNeedsKOfR(t *testing.T) {
	var calls atomic.Int64
	inner := fake(&calls)
	flaky := func(ctx context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
		out, err := inner(ctx, p, o)
		if calls.Load()%3 != 1 && out != nil {
			out.Result = &checker.Result{Verdict: checker.Valid}
			out.Judgement.Verdict = checker.Valid
		}
		return out, err
	}
	res, err := Shrink(context.Background(), foundPlan(t), Options{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: t.TempDir(), Run: flaky})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reproduced || len(res.Candidates) != 1 || res.Candidates[0].Replayed != 3 || res.Row != nil || len(res.Minimal.Faults) != 6 {
		t.Fatalf("a 1-in-3 failure was shrunk: %+v", res)
	}
	// With k = 1 it is.
	calls.Store(0)
	res, err = Shrink(context.Background(), foundPlan(t), Options{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: t.TempDir(), Run: flaky, Need: 1})
	if err != nil || !res.Reproduced || len(res.Minimal.Faults) >= 6 {
		t.Fatalf("k=1: %v %+v", err, res)
	}
}

func TestShrinkRefuses(t *testing.T) {
	p := foundPlan(t)
	for _, o := range []Options{
		{Like: outcome.Like{}, Dir: "x"},
		{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: "x", Replays: 2, Need: 3},
		{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: "x", Replays: -1},
		{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: "x", Budget: -time.Second},
	} {
		if _, err := Shrink(context.Background(), p, o); !errors.Is(err, outcome.ErrInput) {
			t.Errorf("%+v: %v, want bad input", o, err)
		}
	}
	valid := t.TempDir()
	if err := os.WriteFile(filepath.Join(valid, reports.ResultsFile), []byte(`{"verdict": "valid", "result": {"verdict": "valid"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LikeOf(valid); !errors.Is(err, ErrNotFailing) || !errors.Is(err, outcome.ErrInput) {
		t.Errorf("a valid run: %v", err)
	}
	if _, err := LikeOf(t.TempDir()); !errors.Is(err, outcome.ErrInput) {
		t.Errorf("no run at all: %v", err)
	}
}

func TestShrinkBudget(t *testing.T) {
	var calls atomic.Int64
	res, err := Shrink(context.Background(), foundPlan(t), Options{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: t.TempDir(), Run: fake(&calls), Budget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	// The plan as found is always replayed; nothing after it.
	if !res.Exhausted || len(res.Candidates) != 1 {
		t.Fatalf("exhausted %v, %d candidates", res.Exhausted, len(res.Candidates))
	}
}

// A shrink halves every span of a step but its start — a clock fault's
// strobe, a latency's jitter, a trigger's timeout too — and keeps only
// halves the step's kind accepts (a strobe shorter than the fault, a jitter
// within the latency).
func TestShrinkHalvesEverySpan(t *testing.T) {
	p, err := runner.ParsePlan([]byte(`{
  "name": "spans", "seed": 3, "topology": "independent:3", "ttl": "1s",
  "lock": {"variant": "redlock"},
  "workload": {"kind": "fenced-write", "clients": 2, "keys": 1},
  "time_limit": "8s",
  "faults": [
    {"at": "1s", "fault": "clock", "nodes": ["n1"], "offset": "0.8ttl", "strobe": "400ms", "for": "2s"},
    {"at": "1s", "fault": "latency", "nodes": ["n2"], "latency": "80ms", "jitter": "60ms", "for": "1s"},
    {"at": "0s", "trigger": "grant", "key": "tumbler:0", "timeout": "2s", "fault": "kill", "node": "lease", "for": "1s"}
  ]
}`), "spans")
	if err != nil {
		t.Fatal(err)
	}
	// Any magnitude fails, as long as the three faults are there.
	var calls atomic.Int64
	run := fakeRun(&calls, func(p runner.Plan) bool { return len(p.Faults) == 3 })
	res, err := Shrink(context.Background(), p, Options{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: t.TempDir(), Budget: time.Hour, Run: run, Replays: 1, Need: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"step 1 (clock): strobe 400ms → 200ms", "step 2 (latency): jitter 60ms → 30ms", "step 3 (kill): timeout 2s → 1s"} {
		if !slices.ContainsFunc(res.Candidates, func(c Candidate) bool { return c.Change == want && c.Kept }) {
			t.Errorf("no kept candidate %q", want)
		}
	}
	m := res.Minimal
	clock, lat, kill := m.Faults[0], m.Faults[1], m.Faults[2]
	if s := clock.Strobe.Resolve(time.Second); s <= 0 || s >= 200*time.Millisecond || s >= clock.For.Resolve(time.Second) {
		t.Errorf("strobe %v (for %v): want halved more than once, positive and shorter than the fault", s, clock.For)
	}
	if j := lat.Jitter.Resolve(0); j <= 0 || j >= 30*time.Millisecond || j > lat.Latency.Resolve(0) {
		t.Errorf("jitter %v (latency %v): want halved more than once and within the latency", j, lat.Latency)
	}
	if to := kill.Timeout.Resolve(0); to <= 0 || to >= time.Second {
		t.Errorf("timeout %v: want halved more than once", to)
	}
	if clock.At.String() != "1s" || lat.At.String() != "1s" || kill.At.String() != "0s" {
		t.Errorf("a step's start was halved: %s, %s, %s", clock.At, lat.At, kill.At)
	}
	if err := m.Validate(); err != nil {
		t.Errorf("the minimal plan does not validate: %v", err)
	}
	for _, c := range res.Candidates {
		if strings.Contains(c.Change, "): at ") {
			t.Errorf("candidate %q moves a step's start", c.Change)
		}
	}
}

// TestShrinkFromAConfirmedReplay: a caller that replayed the plan as found
// already (a hunt) hands over a failing replay; the shrink starts from it,
// replays the plan as found no more, and finds the same minimum.
func TestShrinkFromAConfirmedReplay(t *testing.T) {
	root := t.TempDir()
	confirmed := filepath.Join(root, "replays", "seed-7", "t")
	if err := os.MkdirAll(confirmed, 0o755); err != nil {
		t.Fatal(err)
	}
	results := `{"result": {"verdict": "invalid", "anomalies": [{"kind": "double-grant", "at": 5000000000}],
	  "faults": [{"id": "f2", "desc": "restart n3 empty", "start": 4000000000}]}}`
	if err := os.WriteFile(filepath.Join(confirmed, "results.json"), []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	plan := foundPlan(t).Normalize()
	var asFound int
	run := fake(&calls)
	counting := func(ctx context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
		q := p
		q.Name = plan.Name
		if string(q.JSON()) == string(plan.JSON()) {
			asFound++
		}
		return run(ctx, p, o)
	}
	dir := filepath.Join(root, "shrink")
	res, err := Shrink(context.Background(), plan, Options{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: dir, Budget: time.Hour, Run: counting, Confirmed: confirmed})
	if err != nil {
		t.Fatal(err)
	}
	if asFound != 0 || !res.Reproduced || len(res.Minimal.Faults) != 2 || res.Candidates[0].Dir != "../replays/seed-7/t" {
		t.Fatalf("plan as found replayed %d times, reproduced %v, minimal %d steps, first candidate %+v", asFound, res.Reproduced, len(res.Minimal.Faults), res.Candidates[0])
	}
	// A confirmation that shows no such anomaly is refused.
	if err := os.WriteFile(filepath.Join(confirmed, "results.json"), []byte(`{"result": {"verdict": "valid"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Shrink(context.Background(), plan, Options{Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, Dir: filepath.Join(root, "s2"), Run: counting, Confirmed: confirmed}); !errors.Is(err, outcome.ErrInput) {
		t.Errorf("a confirmation without the anomaly: %v, want bad input", err)
	}
}

// TestShrinkKeepsTheWayItFails: the find's double grant followed a
// restart empty; without the restart the plan still gives a double grant,
// but one that follows only a holder cut off past its lease. Held to the
// find's Like (the window it followed), the shrink keeps the restart; held
// to the anomaly kind alone it drops it and shrinks into a failure of
// another way.
func TestShrinkKeepsTheWayItFails(t *testing.T) {
	run := func(_ context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
		dir := filepath.Join(o.Store, p.Name, time.Now().Format("150405.000000000"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		var cut, restart bool
		for _, s := range p.Faults {
			cut = cut || s.Fault == nemesis.Partition
			restart = restart || s.Fault == nemesis.Restart
		}
		res := &checker.Result{Verdict: checker.Valid}
		var cov *coverage.Run
		if cut && p.Workload.Clients >= 2 {
			dg := checker.Anomaly{Kind: checker.DoubleGrant, At: int64(5 * time.Second)}
			res = &checker.Result{Verdict: checker.Invalid, Anomalies: []checker.Anomaly{dg}}
			windows := []string{coverage.HolderStopped}
			if restart {
				windows = append(windows, coverage.RestartEmpty)
			}
			cov = &coverage.Run{Anomalies: []coverage.Followed{{Kind: dg.Kind, At: dg.At, Windows: windows}}}
		}
		return &runner.Outcome{Dir: dir, Plan: p, Result: res, Coverage: cov, Judgement: outcome.Judgement{Verdict: res.Verdict}}, nil
	}
	kinds := []checker.Kind{checker.DoubleGrant}
	for _, c := range []struct {
		like        outcome.Like
		keepRestart bool
	}{
		{outcome.Like{Kinds: kinds, Windows: []string{coverage.RestartEmpty}}, true},
		{outcome.Like{Kinds: kinds}, false},
	} {
		res, err := Shrink(context.Background(), foundPlan(t), Options{Like: c.like, Dir: t.TempDir(), Budget: time.Hour, Run: run, Replays: 1, Need: 1})
		if err != nil {
			t.Fatal(err)
		}
		restart := slices.ContainsFunc(res.Minimal.Faults, func(s nemesis.Step) bool { return s.Fault == nemesis.Restart })
		if restart != c.keepRestart {
			t.Errorf("like %s: the minimal plan keeps the restart: %v, want %v (%d steps)", c.like, restart, c.keepRestart, len(res.Minimal.Faults))
		}
	}
}
