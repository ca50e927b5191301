package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/workloads"
)

// copyRun copies a run directory's top-level files (not the cluster's data).
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestAnalyze: a stored run checked again gives the run's verdict and
// anomalies and rewrites its report, keeping the logs and what the report
// said about the run; a history cut in the middle of its last line (a
// killed run) is checked up to it; a malformed one is refused.
func TestAnalyze(t *testing.T) {
	t.Parallel()
	p := basePlan(t, "analyze")
	p.Workload.Mode = workloads.InProcess
	p.TimeLimit = span(t, "3s")
	p.Faults = []nemesis.Step{{
		At: span(t, "1s"), Trigger: nemesis.TriggerGrant, Key: "tumbler:0",
		Fault: nemesis.Restart, Nodes: []string{"n1"}, RestartParams: nemesis.RestartParams{Persistence: cluster.PersistNone},
	}}
	out := runPlan(t, p)
	dir := out.Dir

	again, err := Analyze(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Result.Verdict != out.Result.Verdict || len(again.Result.Anomalies) != len(out.Result.Anomalies) ||
		again.FirstAnomaly != out.FirstAnomaly || again.Interrupted {
		t.Fatalf("analysis: %s with %d anomalies (first %v, interrupted %v); the run: %s with %d (first %v)",
			again.Result.Verdict, len(again.Result.Anomalies), again.FirstAnomaly, again.Interrupted,
			out.Result.Verdict, len(out.Result.Anomalies), out.FirstAnomaly)
	}
	if !again.Report.Has(reports.IndexFile) || !again.Report.Has("logs/n1.log") {
		t.Fatalf("rewritten report: %v (not written: %v)", again.Report.Written, again.Report.NotWritten)
	}
	// Elapsed is the run's, not the analysis's.
	if again.Elapsed != out.Elapsed || !again.Started.Equal(out.Started) {
		t.Errorf("the report's times changed: started %v → %v, elapsed %v → %v", out.Started, again.Started, out.Elapsed, again.Elapsed)
	}

	// Killed mid-write: no results.json, the last line cut in half.
	killed := copyRun(t, dir)
	if err := os.Remove(filepath.Join(killed, reports.ResultsFile)); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(killed, reports.HistoryFile)
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(b, []byte("\n"))
	last := bytes.LastIndexByte(b[:len(b)-1], '\n')
	if err := os.WriteFile(hist, b[:last+1+(len(b)-last)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	cut, err := Analyze(killed, Options{})
	var trunc *history.TruncatedError
	if !errors.As(err, &trunc) || trunc.Line != lines {
		t.Fatalf("truncated history: err %v, want a TruncatedError at line %d", err, lines)
	}
	if cut == nil || cut.Result == nil || cut.Result.Ops != lines-1 || !cut.Interrupted {
		t.Fatalf("truncated history: outcome %+v, want %d ops checked and interrupted", cut, lines-1)
	}
	var res reports.Results
	rb, err := os.ReadFile(filepath.Join(killed, reports.ResultsFile))
	if err != nil || json.Unmarshal(rb, &res) != nil || !res.Interrupted || res.Ops != lines-1 {
		t.Fatalf("results.json of the killed run: %v %+v", err, res)
	}

	// A malformed line in the middle: nothing past it can be trusted, and
	// the run is left as it was (TestAnalyzeNeverDestroys has the rest).
	bad := copyRun(t, dir)
	hb := bytes.SplitAfter(b, []byte("\n"))
	hb[2] = []byte("{not json\n")
	if err := os.WriteFile(filepath.Join(bad, reports.HistoryFile), bytes.Join(hb, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Analyze(bad, Options{})
	if !errors.Is(err, ErrHistory) || errors.Is(err, ErrPlan) || o != nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("malformed history: %v, outcome %+v", err, o)
	}

	if _, err := Analyze(t.TempDir(), Options{}); !errors.Is(err, outcome.ErrInput) {
		t.Fatalf("empty directory: %v", err)
	}
	if out.Result.Verdict != checker.Invalid {
		t.Logf("note: the run itself was %s", out.Result.Verdict)
	}
}
