package hunt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// reaching is a fake run whose coverage reaches, on every seed, the windows
// reach gives it (by name: how often).
func reaching(template runner.Plan, d runner.Draw, reach func(seed int64) map[string]int) RunFunc {
	return func(ctx context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
		dir := filepath.Join(o.Store, p.Name, "t")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		cov := &coverage.Run{}
		for _, c := range newTally(template, d).Windows {
			cov.Windows = append(cov.Windows, coverage.Result{Heading: c.Heading, Reached: reach(p.Seed)[c.Name]})
		}
		res := &checker.Result{Verdict: checker.Valid}
		return &runner.Outcome{Dir: dir, Plan: p, Result: res, Coverage: cov, Judgement: outcome.Judgement{Verdict: res.Verdict}}, nil
	}
}

func TestHuntUntilCovered(t *testing.T) {
	d := runner.Draw{Kinds: []nemesis.Kind{nemesis.Restart}}
	p := tmpl(t)
	counting := newTally(p, d)
	var names []string
	for _, c := range counting.Windows {
		if c.Counts() {
			names = append(names, c.Name)
		}
	}
	// With restarts only, on redlock over 5 nodes: a fault on the lease
	// and a restart empty within the TTL count; the others are out of reach.
	if strings.Join(names, ",") != coverage.LeaseNodeFault+","+coverage.RestartEmpty {
		t.Fatalf("windows that count: %v", names)
	}
	// Seeds 1 and 2 reach only the fault on the lease; from seed 3 on both.
	reach := func(seed int64) map[string]int {
		m := map[string]int{coverage.LeaseNodeFault: 1}
		if seed >= 3 {
			m[coverage.RestartEmpty] = 1
		}
		return m
	}
	s, err := Run(context.Background(), p, d, Options{Name: "h", Budget: time.Hour, Store: t.TempDir(), Parallel: 1,
		UntilCovered: 2, Run: reaching(p, d, reach)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tried != 4 || s.Stopped != "every window reached 2 times" || s.ExitCode != outcome.ExitValid {
		t.Fatalf("tried %d, stopped %q, exit %d", s.Tried, s.Stopped, s.ExitCode)
	}
	if got := s.Coverage.Reached(coverage.RestartEmpty); got != 2 {
		t.Errorf("restart-empty reached %d, want 2", got)
	}
	if s.Attempts[0].Reached[coverage.RestartEmpty] != 0 || s.Attempts[3].Reached[coverage.RestartEmpty] != 1 {
		t.Errorf("attempts' reaches: %+v / %+v", s.Attempts[0].Reached, s.Attempts[3].Reached)
	}
	lines := strings.Join(s.CoverageLines(), "\n")
	if !strings.Contains(lines, "node of the lease restarted empty within the TTL: reached 2 times in 2 of 4 runs") {
		t.Errorf("coverage lines:\n%s", lines)
	}
	page, err := os.ReadFile(filepath.Join(s.Dir, IndexFile))
	if err != nil || !strings.Contains(string(page), `id="window-restart-empty"`) {
		t.Errorf("the hunt page shows no coverage row (%v)", err)
	}

	// Never covered: the budget (here the seeds) ends it, and the summary
	// still says how often each window was reached.
	never := func(int64) map[string]int { return map[string]int{coverage.LeaseNodeFault: 3} }
	s, err = Run(context.Background(), p, d, Options{Name: "h", Budget: time.Hour, Store: t.TempDir(), Parallel: 1, MaxSeeds: 3,
		UntilCovered: 1, Run: reaching(p, d, never)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tried != 3 || !strings.Contains(strings.Join(s.CoverageLines(), "\n"), "node of the lease restarted empty within the TTL: reached 0 times") {
		t.Fatalf("tried %d, coverage %v", s.Tried, s.CoverageLines())
	}
	if _, err := Run(context.Background(), p, d, Options{Name: "h", Budget: time.Hour, Store: t.TempDir(), Parallel: 1, UntilCovered: -1}); err == nil {
		t.Error("a negative UntilCovered was accepted")
	}
}

// TestGuidedHuntSavesWhatItRan: a guided hunt's first attempt, drawn
// before any attempt had finished, is the unguided hunt's; the later ones
// are other schedules than an unguided hunt draws from the same seeds
// (the weights change what is drawn), and each attempt's saved plan is
// exactly the plan it ran.
func TestGuidedHuntSavesWhatItRan(t *testing.T) {
	p := tmpl(t)
	d := runner.Draw{Kinds: []nemesis.Kind{nemesis.Partition, nemesis.Restart, nemesis.Clock}}
	hunt := func(guided bool) ([]runner.Plan, *Summary) {
		var seen []runner.Plan
		run := reaching(p, d, func(int64) map[string]int { return map[string]int{coverage.LeaseNodeFault: 2} })
		s, err := Run(context.Background(), p, d, Options{Name: "h", Budget: time.Hour, Store: t.TempDir(), Parallel: 1, MaxSeeds: 4, Guided: guided,
			Run: func(ctx context.Context, pl runner.Plan, o runner.Options) (*runner.Outcome, error) {
				seen = append(seen, pl)
				return run(ctx, pl, o)
			}})
		if err != nil {
			t.Fatal(err)
		}
		return seen, s
	}
	plain, _ := hunt(false)
	guided, s := hunt(true)
	if !s.Guided {
		t.Error("hunt.json does not say the hunt was guided")
	}
	if len(guided) != 4 || len(plain) != 4 {
		t.Fatalf("attempts: %d guided, %d unguided, want 4 each", len(guided), len(plain))
	}
	if string(plain[0].JSON()) != string(guided[0].JSON()) {
		t.Error("the first guided attempt, drawn with nothing finished, is not the unguided one")
	}
	differ := 0
	for i := range guided {
		if i > 0 && string(plain[i].JSON()) != string(guided[i].JSON()) {
			differ++
		}
		saved, err := runner.LoadPlan(filepath.Join(s.Dir, s.Attempts[i].Plan))
		if err != nil {
			t.Fatal(err)
		}
		if string(saved.JSON()) != string(guided[i].JSON()) {
			t.Errorf("seed %d: the saved plan is not the plan run", guided[i].Seed)
		}
	}
	if differ == 0 {
		t.Error("guided and unguided hunts drew the same schedules after the first attempt")
	}
}

// TestMergedCoverage: hunt merge adds up the shards' coverage.
func TestMergedCoverage(t *testing.T) {
	p := tmpl(t)
	d := runner.Draw{Kinds: []nemesis.Kind{nemesis.Restart}}
	root := t.TempDir()
	var dirs []string
	for i := 1; i <= 2; i++ {
		s, err := Run(context.Background(), p, d, Options{Name: "h", Budget: time.Hour, MaxSeeds: 4, Shard: &matrix.Shard{Index: i, Count: 2},
			Store: filepath.Join(root, "shard"+itoa(int64(i))),
			Run:   reaching(p, d, func(seed int64) map[string]int { return map[string]int{coverage.LeaseNodeFault: int(seed)} })})
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, s.Dir)
	}
	m, err := Merge(filepath.Join(root, "all"), dirs...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Coverage == nil || m.Coverage.Runs != 4 || m.Coverage.Reached(coverage.LeaseNodeFault) != 1+2+3+4 || m.Coverage.Reached(coverage.RestartEmpty) != 0 {
		t.Fatalf("merged coverage: %+v", m.Coverage)
	}
}
