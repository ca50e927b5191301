package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
	"github.com/tumbler-dev/tumbler/spans"
)

// testTemplate is the lock every test campaign analyses: tumbler's single, a
// short run.
func testTemplate(t *testing.T) runner.Plan {
	t.Helper()
	p, err := runner.ParsePlan([]byte(`{"name": "c", "topology": "independent:1", "ttl": "1s",
	  "lock": {"variant": "single"}, "time_limit": "4s",
	  "workload": {"kind": "fenced-write", "clients": 3, "mode": "process"}}`), "template")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// world is a deterministic stand-in for the run engine. A plan fails when
// its schedule has one of the kinds below, with the anomaly following the
// window given; it writes the run's results.json and coverage.json, as a
// run does, so that a shrink can start from a stored replay.
type world struct {
	mu   sync.Mutex
	runs int
}

// ways: a restart (on one node: a double grant after a restart empty, a
// telling window) and a client pause (a stale write after a holder's stop,
// a generic one). On independent masters the restart gives a
// not-linearizable history after the same window.
func (w *world) run(_ context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
	w.mu.Lock()
	w.runs++
	n := w.runs
	w.mu.Unlock()
	dir := filepath.Join(o.Store, p.Name, time.Now().Format("150405.000000000")+"-"+itoa(n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	has := func(k nemesis.Kind) bool {
		return slices.ContainsFunc(p.Faults, func(s nemesis.Step) bool { return s.Fault == k })
	}
	res := &checker.Result{Verdict: checker.Valid}
	cov := &coverage.Run{}
	fail := func(kind checker.Kind, window string) {
		a := checker.Anomaly{Kind: kind, At: int64(2 * time.Second), Faults: []string{"f1"}}
		res = &checker.Result{Verdict: checker.Invalid, Anomalies: []checker.Anomaly{a},
			Faults: []checker.FaultWindow{{ID: "f1", Start: int64(time.Second)}}}
		cov = &coverage.Run{Anomalies: []coverage.Followed{{Kind: a.Kind, At: a.At, Windows: []string{window}}}}
	}
	switch {
	case has(nemesis.Restart) && p.Topology.N == 1:
		fail(checker.DoubleGrant, coverage.RestartEmpty)
	case has(nemesis.Restart):
		fail(checker.NotLinearizable, coverage.RestartEmpty)
	case has(nemesis.ClientPause):
		fail(checker.StaleWrite, coverage.HolderStopped)
	}
	for name, v := range map[string]any{reports.ResultsFile: reports.Results{Result: res}, reports.CoverageFile: cov} {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	return &runner.Outcome{Dir: dir, Plan: p, Result: res, Coverage: cov, Judgement: outcome.Judgement{Verdict: res.Verdict}}, nil
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// catalog is the test campaigns' catalog: one row shows single's double
// grant after a restart on one node.
func catalog(t *testing.T) []scenarios.Scenario {
	t.Helper()
	row, err := scenarios.Parse([]byte(`{"name": "single-restart-empty", "what": "w", "source": "s",
	  "expect": {"verdict": "invalid", "kind": "double-grant"},
	  "plan": {"topology": "independent:1", "ttl": "1s", "lock": {"variant": "single"}, "time_limit": "5s",
	    "faults": [{"at": "1s", "fault": "restart", "nodes": ["n1"], "persistence": "none"}]}}`), "single-restart-empty")
	if err != nil {
		t.Fatal(err)
	}
	return []scenarios.Scenario{row}
}

func options(t *testing.T, w *world) Options {
	return Options{Name: "c", Template: testTemplate(t), Topologies: []string{"independent:1", "independent:3", "groups:3"},
		Families: []string{"process", "clients"}, Budget: time.Hour, Seeds: 6, Parallel: 2, Replays: 2, Need: 2, Confirm: 2,
		Store: t.TempDir(), Run: w.run, Catalog: catalog(t)}
}

// TestCampaign: two topologies the lock runs on and one it does not, two
// families. Every cell the lock can take is hunted (groups are skipped,
// with why); the restart on one node is known (the row), the same failure
// found again in a second cell folds into it, the client pause is generic
// and the restart on independent masters (another anomaly, no row) a
// candidate. The summary on disk reads back the same.
func TestCampaign(t *testing.T) {
	w := &world{}
	o := options(t, w)
	s, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 6 {
		t.Fatalf("%d cells, want 3 topologies × 2 families", len(s.Cells))
	}
	for _, c := range s.Cells {
		switch {
		case c.Topology == "groups:3":
			if !strings.Contains(c.Skipped, "the lock cannot run on it") || c.Hunt != "" {
				t.Errorf("%s: skipped %q, hunt %q", c.Name(), c.Skipped, c.Hunt)
			}
		case c.Hunt == "" || c.Tried == 0:
			t.Errorf("%s: not hunted (%s)", c.Name(), c.Error)
		}
	}
	byClass := map[string][]Find{}
	for _, f := range s.Finds {
		byClass[f.Class] = append(byClass[f.Class], f)
		if f.Confirmed.Replayed != 2 || f.Confirmed.Alike != 2 || !f.Shrunk || len(f.Steps) != 1 {
			t.Errorf("%s (%s): confirmed %s, shrunk %v, steps %v", f.ID, f.Signature, f.Confirmed, f.Shrunk, f.Steps)
		}
		if _, err := os.Stat(filepath.Join(s.Dir, f.Minimal)); err != nil {
			t.Errorf("%s: %v", f.ID, err)
		}
	}
	known, generic, cand := byClass[Known], byClass[Generic], byClass[Candidate]
	if len(known) != 1 || known[0].Row != "single-restart-empty" || known[0].Kind != checker.DoubleGrant {
		t.Errorf("known finds %+v", known)
	}
	if len(generic) != 1 || generic[0].Kind != checker.StaleWrite {
		t.Errorf("generic finds %+v", generic)
	}
	if len(cand) != 1 || cand[0].Kind != checker.NotLinearizable || cand[0].TopClass != "independent masters" ||
		!slices.Equal(cand[0].Followed, []string{coverage.RestartEmpty}) {
		t.Errorf("candidates %+v", cand)
	}
	// The pause family on one node and on three both find a client pause's
	// stale write: one find, both cells.
	if len(generic) == 1 && len(generic[0].Cells) != 2 {
		t.Errorf("the generic find's cells %v, want the clients family on both topologies", generic[0].Cells)
	}
	if s.ExitCode != outcome.ExitInvalid {
		t.Errorf("exit %d", s.ExitCode)
	}
	disk, err := Load(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(disk.Finds) != len(s.Finds) || len(disk.Cells) != len(s.Cells) || disk.Lock != "single" {
		t.Errorf("campaign.json: %d finds, %d cells, lock %q", len(disk.Finds), len(disk.Cells), disk.Lock)
	}
	page, err := os.ReadFile(filepath.Join(s.Dir, IndexFile))
	if err != nil || !strings.Contains(string(page), "single-restart-empty") || !strings.Contains(string(page), s.Headline()) {
		t.Errorf("index.html: %v", err)
	}
}

// TestCampaignNothingFound: a lock that never fails says so, with its
// cells' coverage, and exits 0.
func TestCampaignNothingFound(t *testing.T) {
	o := options(t, &world{})
	o.Families, o.Topologies = []string{"memory"}, []string{"independent:1"}
	s, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Finds) != 0 || s.ExitCode != outcome.ExitValid || !strings.Contains(s.Headline(), "nothing found") {
		t.Errorf("finds %d exit %d headline %q", len(s.Finds), s.ExitCode, s.Headline())
	}
	if c := s.Cells[0]; c.Tried == 0 || len(c.Windows) == 0 {
		t.Errorf("cell %+v: no attempts or no windows counted", c)
	}
}

func TestCampaignRefuses(t *testing.T) {
	w := &world{}
	for name, change := range map[string]func(*Options){
		"no name":          func(o *Options) { o.Name = "" },
		"no budget":        func(o *Options) { o.Budget = 0 },
		"unknown family":   func(o *Options) { o.Families = []string{"netwrok"} },
		"need over replay": func(o *Options) { o.Replays, o.Need = 2, 3 },
		"a bad shard":      func(o *Options) { o.Shard = &matrix.Shard{Index: 3, Count: 2} },
		"its own faults": func(o *Options) {
			o.Template.Faults = []nemesis.Step{{Fault: nemesis.Kill, Nodes: []string{"n1"}}}
		},
		"a bad topology": func(o *Options) { o.Topologies = []string{"independent:banana"} },
	} {
		o := options(t, w)
		change(&o)
		if _, err := Run(context.Background(), o); !errors.Is(err, outcome.ErrInput) {
			t.Errorf("%s: %v, want bad input", name, err)
		}
	}
}

// TestMerge: a campaign in two shards, merged, has every cell hunted by
// its shard and the finds of both folded by signature; a shard missing,
// given twice, or of another campaign is refused.
func TestMerge(t *testing.T) {
	w := &world{}
	var dirs []string
	for i := 1; i <= 2; i++ {
		o := options(t, w)
		o.Shard = &matrix.Shard{Index: i, Count: 2}
		s, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		hunted := 0
		for _, c := range s.Cells {
			if c.Hunt != "" {
				hunted++
			}
		}
		if hunted != 2 {
			t.Fatalf("shard %d hunted %d cells, want 2 of the 4 runnable", i, hunted)
		}
		dirs = append(dirs, s.Dir)
	}
	out := t.TempDir()
	m, err := Merge(out, catalog(t), dirs...)
	if err != nil {
		t.Fatal(err)
	}
	var sigs []string
	for _, f := range m.Finds {
		if slices.Contains(sigs, f.Signature) {
			t.Errorf("signature %s twice", f.Signature)
		}
		sigs = append(sigs, f.Signature)
		if _, err := os.Stat(filepath.Join(out, f.Minimal)); err != nil {
			t.Errorf("%s: minimal plan not where the merge says: %v", f.ID, err)
		}
	}
	if c, g, k := m.Counts(); c != 1 || g != 1 || k != 1 {
		t.Errorf("merged classes: %d candidates, %d generic, %d known", c, g, k)
	}
	for _, c := range m.Cells {
		if c.Skipped == "" && c.Hunt == "" {
			t.Errorf("%s: no shard's hunt", c.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(out, SummaryFile)); err != nil {
		t.Error(err)
	}
	for name, ds := range map[string][]string{
		"missing shard":    dirs[:1],
		"a shard twice":    {dirs[0], dirs[0]},
		"not a campaign":   {t.TempDir()},
		"nothing to merge": nil,
	} {
		if _, err := Merge(t.TempDir(), nil, ds...); !errors.Is(err, outcome.ErrInput) {
			t.Errorf("%s: %v, want bad input", name, err)
		}
	}
	// A shard of another campaign (another TTL).
	o := options(t, w)
	o.Shard = &matrix.Shard{Index: 2, Count: 2}
	o.Template.TTL = spans.Fixed(2 * time.Second)
	other, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(t.TempDir(), nil, dirs[0], other.Dir); !errors.Is(err, outcome.ErrInput) || !strings.Contains(err.Error(), "lock template") {
		t.Errorf("another campaign's shard: %v", err)
	}
}

// TestClassify: the classes from the catalog and the windows.
func TestClassify(t *testing.T) {
	cat := catalog(t)
	base := Find{Kind: checker.DoubleGrant, Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}}, TopClass: "one node",
		Faults: []nemesis.Kind{nemesis.Restart}, Followed: []string{coverage.RestartEmpty}}
	for _, c := range []struct {
		name   string
		change func(*Find)
		lock   string
		want   string
	}{
		{"the row's failure", func(*Find) {}, "single", Known},
		{"another lock", func(*Find) {}, "redlock", Candidate},
		{"another topology class", func(f *Find) { f.TopClass = "replicated" }, "single", Candidate},
		{"another fault", func(f *Find) { f.Faults = []nemesis.Kind{nemesis.ReplyLoss} }, "single", Candidate},
		{"a fault of the row's family", func(f *Find) { f.Faults = []nemesis.Kind{nemesis.Kill} }, "single", Known},
		{"the row's kind among the find's", func(f *Find) {
			f.Kind, f.Like.Kinds = checker.NotLinearizable, []checker.Kind{checker.NotLinearizable, checker.DoubleGrant}
		}, "single", Known},
		{"only generic windows", func(f *Find) { f.Followed = []string{coverage.HolderStopped, coverage.AcquireStalled} }, "redlock", Generic},
		{"a generic and a telling window", func(f *Find) { f.Followed = []string{coverage.HolderStopped, coverage.RestartEmpty} }, "redlock", Candidate},
		{"no window at all", func(f *Find) { f.Followed = nil }, "redlock", Candidate},
		// The row is not marked as the deployment's: another lock's
		// restart empty is not known by it.
		{"another lock, the deployment's window", func(*Find) {}, "redsync", Candidate},
	} {
		f := base
		f.Like.Kinds = slices.Clone(base.Like.Kinds)
		c.change(&f)
		Classify(&f, c.lock, cat)
		if f.Class != c.want || f.Why == "" {
			t.Errorf("%s: %s (%s), want %s", c.name, f.Class, f.Why, c.want)
		}
	}
}

// TestClassifyByTheDeployment: a row that shows a failure of the
// deployment (a restart empty, for single on one node) knows another
// lock's find of the same shape, when the find followed only the
// deployment's windows; not one that followed a window of the lock's own,
// nor one on another topology class.
func TestClassifyByTheDeployment(t *testing.T) {
	cat := catalog(t)
	cat[0].Deployment = true
	base := Find{Kind: checker.NotLinearizable, Like: outcome.Like{Kinds: []checker.Kind{checker.NotLinearizable, checker.DoubleGrant}},
		TopClass: "one node", Faults: []nemesis.Kind{nemesis.Kill}, Followed: []string{coverage.LeaseNodeFault, coverage.RestartEmpty, coverage.HolderStopped}}
	for _, c := range []struct {
		name   string
		change func(*Find)
		want   string
	}{
		{"the deployment's windows", func(*Find) {}, Known},
		{"a window of the lock's own too", func(f *Find) { f.Followed = append(f.Followed, coverage.LostAcquireReply) }, Candidate},
		{"another topology class", func(f *Find) { f.TopClass = "replicated" }, Candidate},
		{"another anomaly", func(f *Find) { f.Like.Kinds = []checker.Kind{checker.StaleWrite} }, Candidate},
		{"only generic windows", func(f *Find) { f.Followed = []string{coverage.HolderStopped} }, Generic},
	} {
		f := base
		f.Like.Kinds, f.Followed = slices.Clone(base.Like.Kinds), slices.Clone(base.Followed)
		c.change(&f)
		Classify(&f, "redsync", cat)
		if f.Class != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, f.Class, f.Why, c.want)
		}
		if c.want == Known && (f.Row != "single-restart-empty" || !strings.Contains(f.Why, "deployment")) {
			t.Errorf("%s: row %q, why %q", c.name, f.Row, f.Why)
		}
	}
}

// TestResort: a stored campaign's finds sorted again against another
// catalog, and written back.
func TestResort(t *testing.T) {
	o := options(t, &world{})
	s, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resort(s.Dir, []scenarios.Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	if c, _, k := r.Counts(); k != 0 || c != 2 {
		t.Errorf("against an empty catalog: %d candidates, %d known", c, k)
	}
	disk, err := Load(s.Dir)
	if err != nil || len(disk.Finds) != len(s.Finds) || disk.Finds[0].Class != r.Finds[0].Class {
		t.Errorf("not written back: %v", err)
	}
	if _, err := Resort(t.TempDir(), nil); !errors.Is(err, outcome.ErrInput) {
		t.Errorf("no campaign: %v", err)
	}
}

// TestSignature: what failed, whatever the timing: the same kinds, steps
// and windows in any order and magnitude sign alike; another window, step
// or lock step does not.
func TestSignature(t *testing.T) {
	plan := func(steps ...nemesis.Step) runner.Plan { return runner.Plan{Faults: steps} }
	like := outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}, Windows: []string{coverage.RestartEmpty, coverage.LeaseNodeFault}}
	a := Signature(checker.DoubleGrant, like, plan(nemesis.Step{Fault: nemesis.Restart}, nemesis.Step{Fault: nemesis.Pause}))
	swapped := like
	swapped.Windows = []string{coverage.LeaseNodeFault, coverage.RestartEmpty}
	b := Signature(checker.DoubleGrant, swapped, plan(nemesis.Step{Fault: nemesis.Pause}, nemesis.Step{Fault: nemesis.Restart}, nemesis.Step{Fault: nemesis.Pause}))
	if a != b {
		t.Errorf("%q != %q", a, b)
	}
	for _, other := range []string{
		Signature(checker.StaleWrite, like, plan(nemesis.Step{Fault: nemesis.Restart}, nemesis.Step{Fault: nemesis.Pause})),
		Signature(checker.DoubleGrant, outcome.Like{}, plan(nemesis.Step{Fault: nemesis.Restart}, nemesis.Step{Fault: nemesis.Pause})),
		Signature(checker.DoubleGrant, like, plan(nemesis.Step{Fault: nemesis.Restart})),
	} {
		if other == a {
			t.Errorf("%q signs like %q", other, a)
		}
	}
}

// TestCampaignSmallBudget: a budget that gives each cell less than one run
// (8 s for 4 cells whose runs take 4 s) still hunts, a run's time per cell
// while the budget lasts, rather than stopping before the first cell.
func TestCampaignSmallBudget(t *testing.T) {
	o := options(t, &world{})
	o.Topologies, o.Budget = []string{"independent:1", "independent:3"}, 8*time.Second
	s, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Cells[0]; c.Hunt == "" || c.Tried == 0 {
		t.Errorf("the first cell was not hunted: %+v; stopped %q", c, s.Stopped)
	}
	if c := s.Cells[0]; c.Budget < 6*time.Second {
		t.Errorf("the first cell's share %v is less than one run's", c.Budget)
	}
}
