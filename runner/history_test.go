package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/reports"
)

// preTraits is a run stored by tumbler at 6605d2e, before faults recorded
// their traits: a restart empty, a holder's pause, a node's clock jump,
// lost replies, an armed step pause and a client's clock step on one node,
// judged invalid, with the coverage.json and results.json of that version.
const preTraits = "testdata/pre-traits"

// TestReadHistoryFillsKindTraits: the faults of a history written before
// traits were recorded get their kinds' on reading, the one that armed a
// step keeping what its "arms" flag said; a history written since is read
// unchanged.
func TestReadHistoryFillsKindTraits(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(preTraits, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"traits"`) {
		t.Fatal("the stored pre-traits history carries traits: it is not one written before them")
	}
	ops, err := ReadHistory(filepath.Join(preTraits, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]history.TraitSet{
		"restart":      {history.TouchesNode, history.StopsNode, history.RestartsNode, history.LosesKey},
		"client-pause": {history.StopsClient},
		"step-pause":   {history.ArmsStep, history.StopsClient},
	}
	faults := 0
	for _, o := range ops {
		if o.Fault == nil {
			continue
		}
		faults++
		if len(o.Fault.Traits) == 0 {
			t.Errorf("%s of %s: no traits", o.Summary(), o.Fault.Kind)
		}
		if w, ok := want[o.Fault.Kind]; ok && !slices.Equal(o.Fault.Traits, w) {
			t.Errorf("%s of %s: traits %v, want %v", o.Summary(), o.Fault.Kind, o.Fault.Traits, w)
		}
	}
	if faults != 12 {
		t.Errorf("%d fault records, want the 6 faults' starts and stops", faults)
	}
	// Read again, written anew: nothing changes.
	dir := t.TempDir()
	rec, err := history.CreateFile(filepath.Join(dir, "h.jsonl"), history.RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if _, err := rec.Record(o); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := ReadHistory(filepath.Join(dir, "h.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if a, b := ops[i].Fault, again[i].Fault; a != nil && !slices.Equal(a.Traits, b.Traits) {
			t.Errorf("op %d: traits %v written, %v read", i, a.Traits, b.Traits)
		}
	}
}

// TestAnalyzePreTraitsRun: tumbler analyze of a run stored before traits
// were recorded gives the verdict and anomalies it had, and the coverage
// it had: every window it judged reached as often, first at the same
// time, by the same reaches, with an anomaly following as before, counting
// or not as before (an out-of-reach window's reason now names traits).
// Without the kinds' traits filled in on reading, the faults would reach
// nothing: the fallback is what keeps the judgement.
func TestAnalyzePreTraitsRun(t *testing.T) {
	dir := copyRun(t, preTraits)
	var before reports.Results
	readJSON(t, filepath.Join(preTraits, reports.ResultsFile), &before)
	var was coverage.Run
	readJSON(t, filepath.Join(preTraits, coverage.File), &was)

	out, err := Analyze(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Verdict != before.Result.Verdict || out.Result.Verdict != checker.Invalid {
		t.Fatalf("verdict %s, was %s", out.Result.Verdict, before.Result.Verdict)
	}
	kinds := func(as []checker.Anomaly) (out []string) {
		for _, a := range as {
			out = append(out, string(a.Kind)+"@"+strings.Join(a.Faults, ","))
		}
		return out
	}
	if got, was := kinds(out.Result.Anomalies), kinds(before.Result.Anomalies); !slices.Equal(got, was) {
		t.Errorf("anomalies %v, were %v", got, was)
	}
	var now coverage.Run
	readJSON(t, filepath.Join(dir, coverage.File), &now)
	reachedAny := false
	for _, w := range was.Windows {
		n, ok := now.Get(w.Name)
		if !ok {
			t.Errorf("window %s is gone", w.Name)
			continue
		}
		reachedAny = reachedAny || w.Reached > 0
		if n.Reached != w.Reached || n.First != w.First || !slices.EqualFunc(n.Reaches, w.Reaches, sameReach) ||
			n.AnomalyFollowed != w.AnomalyFollowed || n.NotApplicable != w.NotApplicable || n.Counts() != w.Counts() {
			t.Errorf("window %s:\nnow %+v\nwas %+v", w.Name, n, w)
		}
	}
	if !reachedAny {
		t.Fatal("the stored run reached no window: it proves nothing")
	}

	// The same history read without the fallback: its faults carry no
	// traits, and reach nothing.
	ops, err := history.ReadFile(filepath.Join(preTraits, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := LoadPlan(filepath.Join(preTraits, reports.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	plan = plan.Normalize()
	holds, err := checker.Holds(ops, plan.checkConfig())
	if err != nil {
		t.Fatal(err)
	}
	bare := coverage.Judge(coverage.Input{Setup: plan.CoverageSetup(nil), Ops: ops, Holds: holds})
	for _, name := range []string{coverage.RestartEmpty, coverage.ClockPastValidity, coverage.HolderStopped, coverage.LostAcquireReply} {
		if w, _ := bare.Get(name); w.Reached != 0 {
			t.Errorf("without traits %s was reached: %+v", name, w)
		}
	}
}

func sameReach(a, b coverage.Reach) bool {
	return a.From == b.From && a.To == b.To && slices.Equal(a.Faults, b.Faults) && a.Note == b.Note
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
