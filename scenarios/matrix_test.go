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
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
	"github.com/tumbler-dev/tumbler/workloads"
)

func invalidRow() Scenario {
	return Scenario{Name: "row", Expect: outcome.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant, Text: "invalid: double grant"}}
}

func doubleGrant() *checker.Result {
	return &checker.Result{
		Verdict:   checker.Invalid,
		Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant, From: 3_420_000_000, To: 3_500_000_000, At: 3_420_000_000, Faults: []string{"f1"}}},
		Faults:    []checker.FaultWindow{{ID: "f1", Kind: "restart", Desc: "restart n1 empty", Start: 3_000_000_000}},
	}
}

// TestSeedRunOf: a row's run as reproduce and the matrix show it is the
// run engine's judgement, taken as is — never judged again — and
// Describe says it in a sentence.
func TestSeedRunOf(t *testing.T) {
	s := invalidRow()
	rep := &outcome.Reproduction{Expected: s.Expect, Observed: checker.Invalid, Reproduced: true,
		Why: "invalid as expected: double-grant at 3.420 s", FirstAnomaly: 3_420_000_000, Faults: []string{"f1"}}
	out := &runner.Outcome{Dir: "d", Result: doubleGrant(), Elapsed: 12 * time.Second,
		Judgement: outcome.Judgement{Verdict: checker.Invalid, ExitCode: outcome.ExitInvalid, Expected: rep}}
	j := SeedRunOf(4, out, nil)
	if !j.Matched || j.Seed != 4 || j.Observed != checker.Invalid || j.FirstAnomaly != 3_420_000_000 || j.ReportDir != "d" ||
		j.Elapsed != 12*time.Second || j.Why != rep.Why || len(j.Faults) != 1 || j.Faults[0].Desc != "restart n1 empty" {
		t.Fatalf("matching run: %+v", j)
	}
	line := Describe(s, j)
	for _, w := range []string{"row: reproduced", "invalid: double grant as documented", "3.42 s", "f1 restart n1 empty"} {
		if !strings.Contains(line, w) {
			t.Errorf("Describe = %q, want %q in it", line, w)
		}
	}

	// The same checked result, judged not reproduced (the engine saw the
	// run interrupted): the matrix says what the engine said.
	cut := *out
	cut.Interrupted = true
	cutRep := *rep
	cutRep.Reproduced, cutRep.Why = false, "interrupted before its time limit: "+rep.Why
	cut.Judgement.Expected = &cutRep
	j = SeedRunOf(4, &cut, nil)
	if j.Matched || j.Why != cutRep.Why || j.Error != "" || !strings.Contains(Describe(s, j), "NOT reproduced") {
		t.Fatalf("run judged not reproduced: %+v / %s", j, Describe(s, j))
	}

	j = SeedRunOf(4, nil, errors.New("redis-server not found"))
	if j.Matched || j.Error == "" || j.Observed != "" || !strings.Contains(Describe(s, j), "redis-server not found") {
		t.Fatalf("failed run: %+v", j)
	}
	// A run without an expectation was not judged against one: no match.
	bare := *out
	bare.Judgement.Expected = nil
	if j := SeedRunOf(4, &bare, nil); j.Matched || j.Error == "" {
		t.Fatalf("unjudged run: %+v", j)
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
	t.Parallel()
	s := quickBaseline(t)
	store := t.TempDir()
	var events []MatrixProgress
	m, err := RunMatrix(context.Background(), []Scenario{s}, []int64{1, 2}, &matrix.Shard{Index: 1, Count: 2}, 1,
		runner.Options{Store: store}, func(p MatrixProgress) {
			if p.Run == nil {
				events = append(events, p)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if m.SeedsPerRow != 2 || m.Shard == nil || len(m.Rows) != 1 || len(m.Rows[0].Seeds) != 1 {
		t.Fatalf("matrix: %+v", m)
	}
	r := m.Rows[0].Seeds[0]
	if r.Seed != 1 || !r.Matched || r.Observed != checker.Valid || r.Error != "" || m.Rows[0].Status != matrix.Holds {
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
	m, err = RunMatrix(ctx, []Scenario{s}, []int64{1, 2}, &matrix.Shard{Index: 2, Count: 2}, 1, runner.Options{Store: store}, nil)
	if !errors.Is(err, context.Canceled) || len(m.Rows) != 0 {
		t.Fatalf("cancelled: %v, %+v", err, m)
	}
	if _, err := RunMatrix(context.Background(), []Scenario{s}, []int64{1}, &matrix.Shard{Index: 3, Count: 2}, 1, runner.Options{}, nil); !errors.Is(err, outcome.ErrInput) {
		t.Fatalf("impossible shard: %v", err)
	}
	// Two shards of one row on one seed: the second has nothing to run.
	m, err = RunMatrix(context.Background(), []Scenario{s}, []int64{1}, &matrix.Shard{Index: 2, Count: 2}, 1, runner.Options{Store: store}, nil)
	if err != nil || len(m.Rows) != 0 {
		t.Fatalf("empty shard: %v, %+v", err, m)
	}
}
