package hunt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

func tmpl(t *testing.T) runner.Plan {
	t.Helper()
	p, err := runner.ParsePlan([]byte(`{"name": "adhoc-redlock", "seed": 0, "topology": "independent:5", "ttl": "1s",
	  "lock": {"variant": "redlock"}, "time_limit": "10s",
	  "workload": {"kind": "fenced-write", "clients": 4, "hold": ["0.1ttl", "0.4ttl"], "think": ["0", "0.05ttl"]}}`), "template")
	if err != nil {
		t.Fatal(err)
	}
	return p.Normalize()
}

var draw = runner.Draw{Kinds: []nemesis.Kind{nemesis.Partition, nemesis.Restart, nemesis.Kill}}

// fake runs nothing: it writes the run directory as the runner would and
// gives the seeds in bad an anomaly (a double grant at 3 s), unknown on
// the seeds in unknown, and fails the harness on the seeds in broken.
func fake(bad, unknown, broken map[int64]bool, seen *[]runner.Plan) RunFunc {
	return func(ctx context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
		*seen = append(*seen, p)
		dir := filepath.Join(o.Store, p.Name, "t")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if broken[p.Seed] {
			return &runner.Outcome{Dir: dir, Judgement: outcome.Judgement{Verdict: checker.Unknown, ExitCode: outcome.ExitHarness}}, errors.New("redis-server not found")
		}
		res := &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1"}, {ID: "f2", Skipped: true}}}
		switch {
		case bad[p.Seed]:
			res.Verdict = checker.Invalid
			res.Anomalies = []checker.Anomaly{{Kind: checker.DoubleGrant, At: int64(3 * time.Second)}}
		case unknown[p.Seed]:
			res.Verdict = checker.Unknown
		}
		return &runner.Outcome{Dir: dir, Plan: p, Result: res, Judgement: outcome.Judgement{Verdict: res.Verdict}}, nil
	}
}

func TestHuntStopsAtTheFirstFind(t *testing.T) {
	var seen []runner.Plan
	store := t.TempDir()
	s, err := Run(context.Background(), tmpl(t), draw, Options{
		Name: "h", Parallel: 1, Budget: time.Hour, Store: store, Run: fake(map[int64]bool{3: true, 5: true}, nil, nil, &seen),
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tried != 3 || s.First != 2 || s.ExitCode != outcome.ExitInvalid || s.Stopped != "anomaly found" {
		t.Fatalf("tried %d first %d exit %d stopped %q", s.Tried, s.First, s.ExitCode, s.Stopped)
	}
	if s.FaultsApplied != 3 {
		t.Errorf("faults applied %d, want 3 (one of two per attempt)", s.FaultsApplied)
	}
	a, _ := s.Found()
	if a.Seed != 3 || a.FirstAnomaly < 3*time.Second || s.TimeToFirst < a.FirstAnomaly || a.Dir == "" {
		t.Errorf("find: %+v, time to first %v", a, s.TimeToFirst)
	}
	// Each seed drew its own schedule, and the same seed draws the same.
	if string(seen[0].JSON()) == string(seen[1].JSON()) {
		t.Error("seeds 1 and 2 ran the same plan")
	}
	again, err := tmpl(t).WithDrawnFaults(3, draw)
	if err != nil {
		t.Fatal(err)
	}
	again.Name = seen[2].Name
	if string(again.JSON()) != string(seen[2].JSON()) {
		t.Errorf("seed 3 drawn again differs:\n%s\n%s", again.JSON(), seen[2].JSON())
	}
	// Valid attempts' reports are gone, their plans kept; the find's
	// report is kept; hunt.json says the same as the summary.
	for _, at := range s.Attempts {
		if _, err := os.Stat(filepath.Join(s.Dir, at.Plan)); err != nil {
			t.Errorf("seed %d: plan: %v", at.Seed, err)
		}
		_, err := os.Stat(filepath.Join(s.Dir, "seed-"+itoa(at.Seed)))
		if at.Verdict == checker.Valid != errors.Is(err, os.ErrNotExist) {
			t.Errorf("seed %d (%s): report dir: %v", at.Seed, at.Verdict, err)
		}
	}
	var disk Summary
	b, err := os.ReadFile(filepath.Join(s.Dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &disk); err != nil || disk.First != 2 || len(disk.Attempts) != 3 || disk.Draw.Concurrency != runner.DefaultConcurrency {
		t.Errorf("hunt.json: %v %+v", err, disk)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, IndexFile)); err != nil {
		t.Error(err)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestHuntKeepGoingAndBounds(t *testing.T) {
	var seen []runner.Plan
	s, err := Run(context.Background(), tmpl(t), draw, Options{
		Name: "h", Parallel: 1, Budget: time.Hour, MaxSeeds: 6, KeepGoing: true, KeepAll: true, Store: t.TempDir(),
		Like: outcome.Like{Kinds: []checker.Kind{checker.DoubleGrant}},
		Run:  fake(map[int64]bool{2: true, 4: true}, map[int64]bool{5: true}, nil, &seen),
	})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, a := range s.Attempts {
		if a.Found {
			found++
		}
		if a.Dir == "" {
			t.Errorf("seed %d: --keep-all removed its report", a.Seed)
		}
	}
	if s.Tried != 6 || found != 2 || s.First != 1 || s.ExitCode != outcome.ExitInvalid {
		t.Fatalf("tried %d found %d first %d exit %d", s.Tried, found, s.First, s.ExitCode)
	}
	// A kind not wanted does not count.
	seen = nil
	s, err = Run(context.Background(), tmpl(t), draw, Options{
		Name: "h", Parallel: 1, Budget: time.Hour, MaxSeeds: 3, Store: t.TempDir(), Like: outcome.Like{Kinds: []checker.Kind{checker.StaleWrite}},
		Run: fake(map[int64]bool{2: true}, nil, nil, &seen),
	})
	if err != nil || s.First != -1 || s.ExitCode != outcome.ExitValid || s.Tried != 3 {
		t.Fatalf("unwanted kind: %v first %d exit %d", err, s.First, s.ExitCode)
	}
	// The budget: no attempt starts without room for its time limit; the
	// first always does.
	seen = nil
	s, err = Run(context.Background(), tmpl(t), draw, Options{Name: "h", Parallel: 1, Budget: time.Second, Store: t.TempDir(), Run: fake(nil, nil, nil, &seen)})
	if err != nil || s.Tried != 1 || s.Stopped != "budget spent" || s.ExitCode != outcome.ExitValid {
		t.Fatalf("budget: %v tried %d stopped %q exit %d", err, s.Tried, s.Stopped, s.ExitCode)
	}
}

func TestHuntHarnessFailuresAndInterrupt(t *testing.T) {
	var seen []runner.Plan
	s, err := Run(context.Background(), tmpl(t), draw, Options{
		Name: "h", Parallel: 1, Budget: time.Hour, Store: t.TempDir(), Run: fake(nil, nil, map[int64]bool{1: true, 2: true, 3: true, 4: true}, &seen),
	})
	if err != nil || s.ExitCode != outcome.ExitHarness || s.Tried != 3 {
		t.Fatalf("broken harness: %v exit %d tried %d", err, s.ExitCode, s.Tried)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	seen = nil
	s, err = Run(ctx, tmpl(t), draw, Options{Name: "h", Parallel: 1, Budget: time.Hour, Store: t.TempDir(), Run: fake(nil, nil, nil, &seen)})
	if err != nil || !s.Interrupted || s.ExitCode != outcome.ExitUnknown || len(seen) != 0 {
		t.Fatalf("interrupted: %v %+v", err, s)
	}
}

func TestHuntRefuses(t *testing.T) {
	var seen []runner.Plan
	run := fake(nil, nil, nil, &seen)
	for name, c := range map[string]struct {
		d runner.Draw
		o Options
	}{
		"zero budget":                   {draw, Options{Name: "h", Parallel: 1, Run: run}},
		"no kinds":                      {runner.Draw{}, Options{Name: "h", Parallel: 1, Budget: time.Minute, Run: run}},
		"unknown kind":                  {draw, Options{Name: "h", Parallel: 1, Budget: time.Minute, Run: run, Like: outcome.Like{Kinds: []checker.Kind{"double-grants"}}}},
		"concurrency 0":                 {runner.Draw{Kinds: draw.Kinds, Concurrency: -1}, Options{Name: "h", Parallel: 1, Budget: time.Minute, Run: run}},
		"failover on independent nodes": {runner.Draw{Kinds: []nemesis.Kind{nemesis.Failover}}, Options{Name: "h", Parallel: 1, Budget: time.Minute, Run: run}},
	} {
		if _, err := Run(context.Background(), tmpl(t), c.d, c.o); !errors.Is(err, outcome.ErrInput) {
			t.Errorf("%s: %v, want bad input", name, err)
		}
	}
	// A guided shard weighs only its own attempts: refused before anything
	// runs, naming the shard and why.
	_, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Parallel: 1, Budget: time.Minute, Run: run, Store: t.TempDir(),
		Guided: true, Shard: &matrix.Shard{Index: 1, Count: 2}})
	if !errors.Is(err, outcome.ErrInput) || !strings.Contains(err.Error(), "shard 1/2") || !strings.Contains(err.Error(), "weighs only its own attempts") {
		t.Errorf("a guided shard: %v, want bad input naming the shard and why", err)
	}
	if len(seen) != 0 {
		t.Errorf("bad input ran %d attempts", len(seen))
	}
}

// TestHeadlineTellsCutReplaysFromFailedOnes: a first find whose replays
// were cut short is not said to have failed to replay.
func TestHeadlineTellsCutReplaysFromFailedOnes(t *testing.T) {
	s := &Summary{Replays: 2, Need: 1, First: 0, Replayed: 1, Attempts: []Attempt{
		{Seed: 1, Found: true, Replays: &Replays{Need: 1, Interrupted: true}},
		{Seed: 2, Found: true, Replays: &Replays{Need: 1, Replayed: 1, Alike: 1}},
	}}
	h := s.Headline()
	if !strings.Contains(h, "whose replays were cut short") || strings.Contains(h, "did not replay") {
		t.Errorf("headline %q, want its replays said to be cut short", h)
	}
	s.Attempts[0].Replays = &Replays{Need: 1, Replayed: 2}
	if h := s.Headline(); !strings.Contains(h, "which did not replay (failed alike in 0 of 2 replays") {
		t.Errorf("headline %q, want it said not to replay", h)
	}
}
