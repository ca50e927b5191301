package scenarios

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/workloads"
)

func invalidRow() Scenario {
	return Scenario{Name: "row", Expect: reports.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant, Text: "invalid: double grant"}}
}

func doubleGrant() *checker.Result {
	return &checker.Result{
		Verdict:   checker.Invalid,
		Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant, From: 3_420_000_000, To: 3_500_000_000, At: 3_420_000_000, Faults: []string{"f1"}}},
		Faults:    []checker.FaultWindow{{ID: "f1", Kind: "restart", Desc: "restart n1 empty", Start: 3_000_000_000}},
	}
}

// TestJudge: a run matches when its verdict meets the expectation, and
// not when it was slow, interrupted or failed, each saying why.
func TestJudge(t *testing.T) {
	s := invalidRow()
	out := &runner.Outcome{Dir: "d", Result: doubleGrant(), Elapsed: 12 * time.Second}
	j := Judge(s, 4, out, nil)
	if !j.Matched || j.Seed != 4 || j.Observed != checker.Invalid || j.FirstAnomaly != 3_420_000_000 || j.ReportDir != "d" ||
		len(j.Faults) != 1 || j.Faults[0].Desc != "restart n1 empty" {
		t.Fatalf("matching run: %+v", j)
	}
	line := Describe(s, j)
	for _, w := range []string{"row: reproduced", "invalid: double grant as documented", "3.42 s", "f1 restart n1 empty"} {
		if !strings.Contains(line, w) {
			t.Errorf("Describe = %q, want %q in it", line, w)
		}
	}

	slow := *out
	slow.Elapsed = MaxRunTime + time.Second
	if j := Judge(s, 4, &slow, nil); j.Matched || !strings.Contains(j.Why, "30s") || j.Observed != checker.Invalid {
		t.Fatalf("slow run: %+v", j)
	}
	cut := *out
	cut.Interrupted = true
	if j := Judge(s, 4, &cut, nil); j.Matched || !strings.Contains(j.Why, "interrupted") {
		t.Fatalf("interrupted run: %+v", j)
	}
	valid := *out
	valid.Result = &checker.Result{Verdict: checker.Valid}
	j = Judge(s, 4, &valid, nil)
	if j.Matched || j.Error != "" || !strings.Contains(Describe(s, j), "NOT reproduced") {
		t.Fatalf("valid run of an invalid row: %+v / %s", j, Describe(s, j))
	}
	j = Judge(s, 4, nil, errors.New("redis-server not found"))
	if j.Matched || j.Error == "" || j.Observed != "" || !strings.Contains(Describe(s, j), "redis-server not found") {
		t.Fatalf("failed run: %+v", j)
	}
	withFaults := invalidRow()
	withFaults.Plan.Faults = []nemesis.Step{{Fault: nemesis.Restart, Nodes: []string{"n1"}}}
	unnamed := *out
	unnamed.Result = doubleGrant()
	unnamed.Result.Anomalies[0].Faults = nil
	if j := Judge(withFaults, 4, &unnamed, nil); j.Matched || !strings.Contains(j.Why, "names no fault") {
		t.Fatalf("an anomaly tied to no fault in a row with faults: %+v", j)
	}
	if j := Judge(withFaults, 4, out, nil); !j.Matched {
		t.Fatalf("an anomaly tied to its fault: %+v", j)
	}
	// A valid row whose fault did nothing shows nothing.
	validRow := Scenario{Name: "vrow", Expect: reports.Expectation{Verdict: checker.Valid}}
	validRow.Plan.Faults = []nemesis.Step{{Fault: nemesis.StepPause, Clients: []int{0}}}
	for name, tc := range map[string]struct {
		w    checker.FaultWindow
		want string // "" for a match
	}{
		"fired":   {checker.FaultWindow{ID: "f1", Kind: string(nemesis.StepPause), Arms: true, Fired: 1}, ""},
		"unfired": {checker.FaultWindow{ID: "f1", Kind: string(nemesis.StepPause), Arms: true, Desc: "arm client 0"}, "f1 (arm client 0) was idle: no client reached the armed step"},
		"skipped": {checker.FaultWindow{ID: "f1", Kind: string(nemesis.Restart), Desc: "restart n1", Skipped: true}, "f1 (restart n1) was idle: skipped"},
		"a pause": {checker.FaultWindow{ID: "f1", Kind: string(nemesis.ClientPause), Desc: "pause client 0"}, ""},
	} {
		run := *out
		run.Result = &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{tc.w}}
		j := Judge(validRow, 4, &run, nil)
		if j.Matched != (tc.want == "") || !strings.Contains(j.Why, tc.want) {
			t.Errorf("%s: matched %v, why %q; want %q", name, j.Matched, j.Why, tc.want)
		}
	}

	s.NotReproduced = "flaky on 2 of 10 seeds"
	if d := Describe(s, j); !strings.Contains(d, "not reproduced: flaky") {
		t.Fatalf("Describe of a row known not to reproduce: %q", d)
	}
}

// quickBaseline is single-baseline shortened, with in-process clients.
func quickBaseline(t *testing.T) Scenario {
	s, err := Get("single-baseline")
	if err != nil {
		t.Fatal(err)
	}
	s.Plan.Workload.Mode = workloads.InProcess
	if s.Plan.TimeLimit, err = nemesis.ParseSpan("2s"); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRunMatrixShard: a shard runs only its share of the row×seed runs
// and the matrix holds their judged results.
func TestRunMatrixShard(t *testing.T) {
	s := quickBaseline(t)
	store := t.TempDir()
	var events []MatrixProgress
	m, err := RunMatrix(context.Background(), []Scenario{s}, []int64{1, 2}, &reports.Shard{Index: 1, Count: 2},
		runner.Options{Store: store}, func(p MatrixProgress) { events = append(events, p) })
	if err != nil {
		t.Fatal(err)
	}
	if m.SeedsPerRow != 2 || m.Shard == nil || len(m.Rows) != 1 || len(m.Rows[0].Seeds) != 1 {
		t.Fatalf("matrix: %+v", m)
	}
	r := m.Rows[0].Seeds[0]
	if r.Seed != 1 || !r.Matched || r.Observed != checker.Valid || r.Error != "" || m.Rows[0].Status != reports.Holds {
		t.Fatalf("seed result: %+v (status %s)", r, m.Rows[0].Status)
	}
	if _, err := os.Stat(filepath.Join(r.ReportDir, reports.IndexFile)); err != nil {
		t.Fatalf("report of the run: %v", err)
	}
	if len(events) != 2 || events[0].Result != nil || events[1].Result == nil || events[1].Total != 1 || events[1].Outcome == nil {
		t.Fatalf("progress events: %+v", events)
	}
	if err := reports.WriteMatrixJSON(filepath.Join(t.TempDir(), "matrix.json"), m); err != nil {
		t.Fatalf("the matrix does not write: %v", err)
	}

	// The other shard owns seed 2 only; a cancelled context runs nothing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m, err = RunMatrix(ctx, []Scenario{s}, []int64{1, 2}, &reports.Shard{Index: 2, Count: 2}, runner.Options{Store: store}, nil)
	if !errors.Is(err, context.Canceled) || len(m.Rows) != 0 {
		t.Fatalf("cancelled: %v, %+v", err, m)
	}
	if _, err := RunMatrix(context.Background(), []Scenario{s}, []int64{1}, &reports.Shard{Index: 3, Count: 2}, runner.Options{}, nil); !errors.Is(err, runner.ErrPlan) {
		t.Fatalf("impossible shard: %v", err)
	}
	// Two shards of one row on one seed: the second has nothing to run.
	m, err = RunMatrix(context.Background(), []Scenario{s}, []int64{1}, &reports.Shard{Index: 2, Count: 2}, runner.Options{Store: store}, nil)
	if err != nil || len(m.Rows) != 0 {
		t.Fatalf("empty shard: %v, %+v", err, m)
	}
}
