package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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

// snapshot is every file under dir (symlinks as their targets), byte for
// byte.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			files[rel] = "-> " + target
			return err
		case d.IsDir():
			files[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(path)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameFiles fails the test for any file of before that changed or went,
// and any file that appeared.
func sameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s: %s was removed", what, name)
		case a != b:
			t.Errorf("%s: %s changed (%d bytes → %d)", what, name, len(b), len(a))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s: %s appeared", what, name)
		}
	}
}

// TestAnalyzeNeverDestroys: a stored invalid run of a catalog-like row
// (a real run, with an expectation), its history corrupted in each way
// the checkers refuse, is refused with ErrHistory naming the file's line
// and the op — and every file in its directory is byte-identical
// afterwards. Restored, it is analyzed again: the new report replaces
// the old one (stale files are regenerated), with the run's verdict,
// anomalies, expectation and judgement, and nothing else in the directory
// changes.
func TestAnalyzeNeverDestroys(t *testing.T) {
	t.Parallel()
	p := basePlan(t, "keep")
	p.Workload.Mode = workloads.InProcess
	p.TimeLimit = span(t, "3s")
	p.Faults = []nemesis.Step{{
		At: span(t, "1s"), Trigger: nemesis.TriggerGrant, Key: "tumbler:0",
		Fault: nemesis.Restart, Nodes: []string{"n1"}, RestartParams: nemesis.RestartParams{Persistence: cluster.PersistNone},
	}}
	exp := &outcome.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant}
	ctx := t.Context()
	out, err := Run(ctx, p, Options{Store: t.TempDir(), Expected: exp, Command: "tumbler reproduce keep --seed 1"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Judgement.Verdict != checker.Invalid {
		t.Logf("note: the run was %s; the test goes on with it", out.Judgement.Verdict)
	}
	dir := out.Dir
	histPath := filepath.Join(dir, reports.HistoryFile)
	orig, err := os.ReadFile(histPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(orig, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	ops, err := history.ReadFile(histPath)
	if err != nil {
		t.Fatal(err)
	}
	// Line i+1 holds ops[i]: the recorder writes no blank lines.
	find := func(match func(history.Op) bool) int {
		for i, o := range ops {
			if match(o) {
				return i
			}
		}
		t.Fatal("no such op in the history")
		return -1
	}
	okRelease := find(func(o history.Op) bool { return o.F == history.Release && o.Type == history.OK })
	relInvoke := -1
	for i := okRelease - 1; i >= 0; i-- {
		if o := ops[i]; o.Process == ops[okRelease].Process && o.F == history.Release && o.Key == ops[okRelease].Key && o.Type == history.Invoke {
			relInvoke = i
			break
		}
	}
	if relInvoke < 0 {
		t.Fatal("the ok release has no invoke")
	}
	with := func(edit func(ls [][]byte) [][]byte) []byte {
		ls := make([][]byte, len(lines))
		copy(ls, lines)
		return bytes.Join(edit(ls), nil)
	}
	replace := func(i int, f func(o *history.Op)) func([][]byte) [][]byte {
		return func(ls [][]byte) [][]byte {
			o := ops[i]
			f(&o)
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			ls[i] = append(b, '\n')
			return ls
		}
	}
	rel := ops[okRelease]
	for _, tc := range []struct {
		name string
		edit func([][]byte) [][]byte
		want []string // in the error, besides "invalid history"
	}{
		{"a line that is not JSON", func(ls [][]byte) [][]byte { ls[3] = []byte("{\"index\": 3, oops\n"); return ls },
			[]string{histPath + " line 4: "}},
		{"an ok release with no invoke", func(ls [][]byte) [][]byte { return append(ls[:relInvoke:relInvoke], ls[relInvoke+1:]...) },
			[]string{fmt.Sprintf("line %d: op %d: %s has no pending invoke", okRelease, rel.Index, rel.Summary())}},
		{"indexes that go backwards", func(ls [][]byte) [][]byte { ls[5], ls[6] = ls[6], ls[5]; return ls },
			[]string{histPath + " line 7: ", fmt.Sprintf("index %d (%s) does not follow index %d", ops[5].Index, ops[5].Summary(), ops[6].Index)}},
		{"a completion of the wrong type", replace(okRelease, func(o *history.Op) { o.F = history.Acquire }),
			[]string{fmt.Sprintf("line %d: op %d: ok acquire of process %d", okRelease+1, rel.Index, rel.Process),
				fmt.Sprintf("pending call on key %q is a release (op %d), not an acquire", rel.Key, ops[relInvoke].Index)}},
		{"a completion with no known type", replace(okRelease, func(o *history.Op) { o.Type = "done" }),
			[]string{fmt.Sprintf("%s line %d: done release of process %d", histPath, okRelease+1, rel.Process), `unknown type "done"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(histPath, with(tc.edit), 0o644); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, dir)
			o, err := Analyze(dir, Options{})
			if !errors.Is(err, ErrHistory) || !errors.Is(err, outcome.ErrInput) || errors.Is(err, ErrPlan) || o != nil {
				t.Fatalf("Analyze: %v (outcome %v), want ErrHistory and no outcome", err, o)
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, "invalid history: ") {
				t.Errorf("%q does not say it is about the history", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not say %q", msg, w)
				}
			}
			sameFiles(t, tc.name, before, snapshot(t, dir))
		})
	}

	// Restored and analyzed again: the report is replaced, the run is not.
	if err := os.WriteFile(histPath, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	// Unless the new report cannot be written in full (here a "log" the
	// report cannot copy): then the old one stays, whole.
	broken := filepath.Join(dir, "cluster", "zz", "broken.log")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	if o, err := Analyze(dir, Options{}); err == nil || errors.Is(err, outcome.ErrInput) || o != nil || !strings.Contains(err.Error(), "the old one is kept") {
		t.Fatalf("a report that cannot be written: %v (outcome %v)", err, o)
	}
	sameFiles(t, "unwritable report", before, snapshot(t, dir))
	if err := os.RemoveAll(filepath.Dir(broken)); err != nil {
		t.Fatal(err)
	}
	// A stale timeline (an older tumbler's, say) is replaced.
	if err := os.WriteFile(filepath.Join(dir, reports.TimelineFile), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = snapshot(t, dir)
	again, err := Analyze(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, dir)
	if after[reports.TimelineFile] == "stale" || !strings.Contains(after[reports.TimelineFile], "<svg") {
		t.Errorf("the stale timeline was not replaced: %.40q", after[reports.TimelineFile])
	}
	for name, b := range before {
		if strings.HasPrefix(name, "cluster") || name == reports.PlanFile || name == reports.HistoryFile {
			if after[name] != b {
				t.Errorf("re-analysis changed the run's own %s", name)
			}
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("re-analysis left %s behind", name)
		}
	}
	var res reports.Results
	if err := json.Unmarshal([]byte(after[reports.ResultsFile]), &res); err != nil {
		t.Fatal(err)
	}
	if res.Verdict != out.Judgement.Verdict || res.ExitCode != out.Judgement.ExitCode || res.Ops != len(ops) ||
		len(res.Result.Anomalies) != len(out.Result.Anomalies) || res.Command != "tumbler reproduce keep --seed 1" {
		t.Errorf("results.json after re-analysis: verdict %s exit %d, %d ops, %d anomalies, command %q; the run: %s exit %d, %d ops, %d anomalies",
			res.Verdict, res.ExitCode, res.Ops, len(res.Result.Anomalies), res.Command,
			out.Judgement.Verdict, out.Judgement.ExitCode, len(ops), len(out.Result.Anomalies))
	}
	// The expectation is kept and the run judged against it again, the
	// same way.
	if res.Expected == nil || again.Judgement.Expected == nil || out.Judgement.Expected == nil ||
		res.Expected.Expected != *exp || res.Expected.Reproduced != out.Judgement.Expected.Reproduced ||
		res.Expected.Why != out.Judgement.Expected.Why || again.Judgement.Expected.Why != out.Judgement.Expected.Why {
		t.Errorf("judgement after re-analysis: %+v; the run's: %+v", res.Expected, out.Judgement.Expected)
	}
}
