package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
	"github.com/tumbler-dev/tumbler/workloads"
)

func mustSpan(t *testing.T, s string) nemesis.Span {
	t.Helper()
	sp, err := nemesis.ParseSpan(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// validRow is a catalog-like row that expects a healthy single lock to be
// valid.
func validRow(t *testing.T, name, limit string) scenarios.Scenario {
	t.Helper()
	topo, err := cluster.ParseTopology("independent:1")
	if err != nil {
		t.Fatal(err)
	}
	return scenarios.Scenario{
		Name: name, What: "a healthy single lock", Source: "this test",
		Expect: outcome.Expectation{Verdict: checker.Valid},
		Plan: runner.Plan{
			Seed: 1, Topology: topo, TTL: mustSpan(t, "1s"), Lock: runner.LockPlan{Options: variants.Options{Variant: "single"}},
			Workload: workloads.Options{Kind: workloads.FencedWrite, Clients: 3,
				Hold: runner.Range{mustSpan(t, "0.1ttl"), mustSpan(t, "0.3ttl")}},
			TimeLimit: mustSpan(t, limit),
		},
	}
}

// outputs is what every output said about one run.
type outputs struct {
	page      string          // index.html's "reproduced: …" line
	results   reports.Results // results.json
	junitWhy  *string         // junit.xml's "expected verdict" failure, nil when it passed
	junitProp map[string]string
	cliCode   int     // the run command's exit code
	cliJSON   summary // and its --json summary
	row       rowResult
	matrix    matrix.SeedResult
	analyze   summary // tumbler analyze DIR --json, and its exit code
	anaCode   int
}

func collect(t *testing.T, s scenarios.Scenario, sr scenarios.SeedRun, out *runner.Outcome, runErr error) outputs {
	t.Helper()
	var o outputs
	page, err := os.ReadFile(filepath.Join(out.Dir, reports.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(page), "\n") {
		if strings.Contains(l, `id="reproduced"`) {
			o.page = l
		}
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, reports.ResultsFile))
	if err != nil || json.Unmarshal(b, &o.results) != nil {
		t.Fatalf("results.json: %v", err)
	}
	var junit struct {
		Suites []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err = os.ReadFile(filepath.Join(out.Dir, reports.JUnitFile))
	if err != nil || xml.Unmarshal(b, &junit) != nil || len(junit.Suites) != 1 {
		t.Fatalf("junit.xml: %v", err)
	}
	o.junitProp = map[string]string{}
	for _, p := range junit.Suites[0].Props {
		o.junitProp[p.Name] = p.Value
	}
	seen := false
	for _, c := range junit.Suites[0].Cases {
		if c.Name == "expected verdict" {
			seen = true
			if c.Failure != nil {
				o.junitWhy = &c.Failure.Message
			}
		}
	}
	if !seen {
		t.Fatal("junit.xml has no expected-verdict case")
	}

	// What `tumbler run --json` prints and exits with for this outcome.
	var stdout, stderr bytes.Buffer
	a := &app{stdout: &stdout, stderr: &stderr}
	a.con = newConsole(&stdout, &stderr)
	o.cliCode = codeOf(a.conclude(out, runErr, true, ""))
	if err := json.Unmarshal(stdout.Bytes(), &o.cliJSON); err != nil {
		t.Fatalf("--json summary %q: %v", stdout.String(), err)
	}
	// What `tumbler reproduce --json` prints, and what a matrix keeps.
	o.row = rowResultOf(s, sr)
	o.matrix = sr.SeedResult

	// The stored run analyzed again by the command line: judged again
	// from what was stored, the same way.
	code, js, errs := cli(t, "analyze", out.Dir, "--json")
	if err := json.Unmarshal([]byte(js), &o.analyze); err != nil {
		t.Fatalf("analyze --json: exit %d, %q (%v) %s", code, js, err, errs)
	}
	o.anaCode = code
	return o
}

func codeOf(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return -1
}

// agree fails the test for any output that says other than the run
// engine's judgement, and returns the reproduction.
func agree(t *testing.T, out *runner.Outcome, o outputs) *outcome.Reproduction {
	t.Helper()
	j := out.Judgement
	rep := j.Expected
	if rep == nil {
		t.Fatal("the run of a row was not judged against its expectation")
	}
	word := map[bool]string{true: "yes", false: "no"}[rep.Reproduced]
	if !strings.Contains(o.page, "reproduced: "+word) {
		t.Errorf("index.html: %q, the judgement: reproduced %v", o.page, rep.Reproduced)
	}
	r := o.results
	if r.Verdict != j.Verdict || r.ExitCode != j.ExitCode || r.Expected == nil || r.Expected.Reproduced != rep.Reproduced || r.Expected.Why != rep.Why {
		t.Errorf("results.json: verdict %s exit %d expected %+v; the judgement %+v / %+v", r.Verdict, r.ExitCode, r.Expected, j, rep)
	}
	if (o.junitWhy == nil) != rep.Reproduced || o.junitWhy != nil && *o.junitWhy != rep.Why {
		t.Errorf("junit.xml: expected-verdict failure %v; the judgement: reproduced %v, %q", o.junitWhy, rep.Reproduced, rep.Why)
	}
	if o.junitProp["verdict"] != string(j.Verdict) || o.junitProp["exit_code"] != strconv.Itoa(j.ExitCode) {
		t.Errorf("junit.xml properties %v; the judgement %+v", o.junitProp, j)
	}
	if o.cliCode != j.ExitCode || o.cliJSON.ExitCode != j.ExitCode || o.cliJSON.Verdict != j.Verdict || o.cliJSON.Interrupted != out.Interrupted {
		t.Errorf("the command line: exit %d, summary %+v; the judgement %+v", o.cliCode, o.cliJSON, j)
	}
	if o.row.Matched != rep.Reproduced || o.row.Why != rep.Why || o.row.Observed != j.Verdict {
		t.Errorf("reproduce --json: %+v; the judgement %+v", o.row, rep)
	}
	if o.matrix.Matched != rep.Reproduced || o.matrix.Observed != j.Verdict || o.matrix.Error != "" || o.matrix.FirstAnomaly != rep.FirstAnomaly {
		t.Errorf("matrix row: %+v; the judgement %+v", o.matrix, rep)
	}
	if o.anaCode != j.ExitCode || o.analyze.ExitCode != j.ExitCode || o.analyze.Verdict != j.Verdict || o.analyze.Interrupted != out.Interrupted {
		t.Errorf("analyze: exit %d, summary %+v; the judgement %+v", o.anaCode, o.analyze, j)
	}
	// The analysis replaced the report with the same judgement.
	var again reports.Results
	if b, err := os.ReadFile(filepath.Join(out.Dir, reports.ResultsFile)); err != nil || json.Unmarshal(b, &again) != nil ||
		again.Expected == nil || again.Expected.Why != rep.Why || again.ExitCode != j.ExitCode {
		t.Errorf("results.json after analyze: %+v (%v)", again.Expected, err)
	}
	return rep
}

// TestOneJudgement: a run is judged once, by the run engine, and every
// output — index.html's reproduced line, results.json, junit.xml, the
// command line's exit code and --json summary, reproduce --json, a matrix
// row, and analyze of the stored run — says the same. Two real runs whose
// checked verdict meets their row's expectation but which do not show the
// row: one interrupted (its valid verdict covers part of the run: exit 2,
// not reproduced), one whose only fault arms a lock step no client of the
// single lock ever reaches (idle: not reproduced, though valid, exit 0).
func TestOneJudgement(t *testing.T) {
	t.Parallel()
	store := t.TempDir()

	t.Run("interrupted", func(t *testing.T) {
		row := validRow(t, "judge-interrupted", "60s")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Interrupt once clients are at work.
		go func() {
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if fi, err := os.Stat(filepath.Join(store, row.Name, "latest", reports.HistoryFile)); err == nil && fi.Size() > 2000 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			cancel()
		}()
		sr, out, err := scenarios.Reproduce(ctx, row, 1, runner.Options{Store: store})
		if err != nil || out == nil || !out.Interrupted {
			t.Fatalf("interrupted run: %v, outcome %+v", err, out)
		}
		rep := agree(t, out, collect(t, row, sr, out, err))
		if out.Judgement.Verdict != checker.Valid || out.Judgement.ExitCode != outcome.ExitUnknown || rep.Reproduced || !strings.Contains(rep.Why, "interrupted") {
			t.Errorf("an interrupted valid run: %+v / %+v, want valid, exit 2, not reproduced because interrupted", out.Judgement, rep)
		}
	})

	t.Run("idle fault", func(t *testing.T) {
		// A step the run knows (the workload's before a count-down) that a
		// fenced-write workload never reaches: the fault stays idle.
		row := validRow(t, "judge-idle", "3s")
		row.Plan.Faults = []nemesis.Step{{
			At: mustSpan(t, "0.5s"), Fault: nemesis.StepPause, Clients: []int{0},
			StepParams: nemesis.StepParams{LockStep: workloads.StepBeforeCountDown, Pause: mustSpan(t, "1ttl")}, For: mustSpan(t, "1.5s"),
		}}
		if _, err := scenarios.Parse(mustJSON(t, row), "row"); err != nil {
			t.Fatal(err)
		}
		sr, out, err := scenarios.Reproduce(context.Background(), row, 1, runner.Options{Store: store})
		if err != nil || out == nil {
			t.Fatalf("run: %v", err)
		}
		rep := agree(t, out, collect(t, row, sr, out, err))
		if out.Judgement.Verdict != checker.Valid || out.Judgement.ExitCode != outcome.ExitValid || rep.Reproduced || !strings.Contains(rep.Why, "was idle: no client reached the armed step") {
			t.Errorf("a valid run under an idle fault: %+v / %+v, want valid, exit 0, not reproduced because idle", out.Judgement, rep)
		}
		// The matrix counts it a mismatch, as the page says.
		m := matrix.Matrix{SeedsPerRow: 1, Rows: []matrix.Row{{Scenario: row.Name, Expected: row.Expect, Seeds: []matrix.SeedResult{sr.SeedResult}}}}
		var table bytes.Buffer
		if err := reports.WriteMatrixTable(&table, m); err != nil || matrix.RowStatus(m.Rows[0].Seeds) != matrix.Broken || !strings.Contains(table.String(), "val!") {
			t.Errorf("matrix: %v, status %s\n%s", err, matrix.RowStatus(m.Rows[0].Seeds), table.String())
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
