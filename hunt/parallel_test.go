package hunt

import (
	"context"
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
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// world is a fake run engine safe for attempts at once: bad seeds find a
// double grant (flaky ones only on the attempt, never on a replay), slow
// seeds take slow (or until cancelled), and it counts the runs at once.
type world struct {
	bad, flaky map[int64]bool
	// otherWay seeds' attempts give a double grant that followed a
	// restart empty, their replays one that followed only a holder's stop.
	otherWay map[int64]bool
	// named seeds' anomalies name fault f1, of this kind.
	named map[int64]string
	slow  map[int64]time.Duration
	// started, when set, is told each seed as its run starts.
	started chan int64

	mu              sync.Mutex
	plans           map[int64]runner.Plan
	replays         map[int64]int
	inFlight, most  int
	cancelledSeeds  []int64
	attemptsStarted int
}

func (w *world) run(ctx context.Context, p runner.Plan, o runner.Options) (*runner.Outcome, error) {
	replay := filepath.Base(o.Store) == ReplaysDir
	w.mu.Lock()
	if w.plans == nil {
		w.plans, w.replays = map[int64]runner.Plan{}, map[int64]int{}
	}
	if replay {
		w.replays[p.Seed]++
	} else {
		w.plans[p.Seed] = p
		w.attemptsStarted++
	}
	w.inFlight++
	w.most = max(w.most, w.inFlight)
	w.mu.Unlock()
	defer func() { w.mu.Lock(); w.inFlight--; w.mu.Unlock() }()
	if w.started != nil && !replay {
		w.started <- p.Seed
	}
	dir := filepath.Join(o.Store, p.Name, "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1"}, {ID: "f2", Skipped: true}}}
	select {
	case <-time.After(w.slow[p.Seed]):
	case <-ctx.Done():
		w.mu.Lock()
		w.cancelledSeeds = append(w.cancelledSeeds, p.Seed)
		w.mu.Unlock()
		return &runner.Outcome{Dir: dir, Plan: p, Result: res, Interrupted: true, Judgement: outcome.Judgement{Verdict: checker.Unknown, ExitCode: outcome.ExitUnknown}}, nil
	}
	var cov *coverage.Run
	if w.bad[p.Seed] && !(replay && w.flaky[p.Seed]) {
		res.Verdict = checker.Invalid
		a := checker.Anomaly{Kind: checker.DoubleGrant, At: int64(3 * time.Second)}
		if k := w.named[p.Seed]; k != "" {
			a.Faults, res.Faults[0].Kind = []string{"f1"}, k
		}
		res.Anomalies = []checker.Anomaly{a}
		if w.otherWay[p.Seed] {
			windows := []string{coverage.RestartEmpty, coverage.HolderStopped}
			if replay {
				windows = []string{coverage.HolderStopped}
			}
			cov = &coverage.Run{Anomalies: []coverage.Followed{{Kind: a.Kind, At: a.At, Windows: windows}}}
		}
	}
	return &runner.Outcome{Dir: dir, Plan: p, Result: res, Coverage: cov, Judgement: outcome.Judgement{Verdict: res.Verdict}}, nil
}

func seedsOf(as []Attempt) []int64 {
	var out []int64
	for _, a := range as {
		out = append(out, a.Seed)
	}
	return out
}

// TestParallelHuntDrawsTheSerialPlans: three attempts at once try seeds
// 1..7, each with the plan a serial hunt draws for it, listed in seed
// order however they finish.
func TestParallelHuntDrawsTheSerialPlans(t *testing.T) {
	// Earlier seeds take longer, so they finish out of order.
	w := &world{slow: map[int64]time.Duration{1: 120 * time.Millisecond, 2: 80 * time.Millisecond, 3: 40 * time.Millisecond,
		4: 60 * time.Millisecond, 5: 10 * time.Millisecond, 6: 30 * time.Millisecond, 7: 5 * time.Millisecond}}
	s, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, MaxSeeds: 7, Parallel: 3, Store: t.TempDir(), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	if got := seedsOf(s.Attempts); len(got) != 7 || s.Tried != 7 || s.Stopped != "7 seeds tried" {
		t.Fatalf("attempts %v tried %d stopped %q", got, s.Tried, s.Stopped)
	}
	for i, a := range s.Attempts {
		if a.Seed != int64(i+1) {
			t.Fatalf("attempts not in seed order: %v", seedsOf(s.Attempts))
		}
		want, err := tmpl(t).WithDrawnFaults(a.Seed, draw)
		if err != nil {
			t.Fatal(err)
		}
		want.Name = w.plans[a.Seed].Name
		if string(want.JSON()) != string(w.plans[a.Seed].JSON()) {
			t.Errorf("seed %d: the parallel hunt ran another plan than a serial one draws", a.Seed)
		}
		if _, err := os.Stat(filepath.Join(s.Dir, a.Plan)); err != nil {
			t.Errorf("seed %d: %v", a.Seed, err)
		}
	}
	if w.most != 3 {
		t.Errorf("at most %d attempts ran at once, want 3", w.most)
	}
	if s.Parallel != 3 || s.FaultsApplied != 7 {
		t.Errorf("parallel %d, faults applied %d", s.Parallel, s.FaultsApplied)
	}
}

// TestParallelHuntStopsAtTheLowestFind: seed 3 finds at once while seeds
// 1, 2 and 4 still run: the hunt waits for 1 and 2 (a lower seed could
// find too), abandons 4 (a serial hunt never ran it: cut short, kept and
// marked) and starts no other.
func TestParallelHuntStopsAtTheLowestFind(t *testing.T) {
	w := &world{bad: map[int64]bool{3: true, 5: true}, slow: map[int64]time.Duration{1: 150 * time.Millisecond, 2: 150 * time.Millisecond, 4: time.Hour}}
	s, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, Parallel: 4, Store: t.TempDir(), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	if got := seedsOf(s.Attempts); len(got) != 4 || got[2] != 3 || s.First != 2 || s.Stopped != "anomaly found" || s.ExitCode != outcome.ExitInvalid {
		t.Fatalf("attempts %v first %d stopped %q exit %d", got, s.First, s.Stopped, s.ExitCode)
	}
	for _, a := range s.Attempts {
		if a.Abandoned != (a.Seed == 4) {
			t.Errorf("seed %d: abandoned %v", a.Seed, a.Abandoned)
		}
	}
	if len(w.cancelledSeeds) != 1 || w.cancelledSeeds[0] != 4 || w.attemptsStarted != 4 {
		t.Errorf("cancelled %v of %d started, want seed 4 of 4", w.cancelledSeeds, w.attemptsStarted)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, PlansDir, "seed-4.json")); err != nil {
		t.Errorf("the abandoned attempt's plan is gone: %v", err)
	}
}

// TestShardTriesItsSeeds: shard 2/3 of seeds 1..8 tries 2, 5 and 8, with
// the plans one big hunt draws for them.
func TestShardTriesItsSeeds(t *testing.T) {
	w := &world{}
	s, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, MaxSeeds: 8, Shard: &matrix.Shard{Index: 2, Count: 3},
		Parallel: 2, Store: t.TempDir(), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	got := seedsOf(s.Attempts)
	if len(got) != 3 || got[0] != 2 || got[1] != 5 || got[2] != 8 || s.Shard.String() != "2/3" {
		t.Fatalf("shard 2/3 tried %v", got)
	}
	for _, seed := range got {
		want, _ := tmpl(t).WithDrawnFaults(seed, draw)
		want.Name = w.plans[seed].Name
		if string(want.JSON()) != string(w.plans[seed].JSON()) {
			t.Errorf("seed %d: not the plan the whole hunt draws", seed)
		}
	}
	if _, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, Shard: &matrix.Shard{Index: 4, Count: 3}, Run: w.run}); !errors.Is(err, outcome.ErrInput) {
		t.Errorf("shard 4/3: %v, want bad input", err)
	}
}

// TestInterruptedAttemptCounts: Ctrl-C in the middle of the first
// attempt: it counts as tried, with the fault it applied, and the hunt
// says it was interrupted.
func TestInterruptedAttemptCounts(t *testing.T) {
	for _, parallel := range []int{1, 2} {
		w := &world{slow: map[int64]time.Duration{1: time.Hour, 2: time.Hour}, started: make(chan int64, 4)}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for range parallel {
				<-w.started
			}
			cancel()
		}()
		s, err := Run(ctx, tmpl(t), draw, Options{Name: "h", Budget: time.Hour, Parallel: parallel, Store: t.TempDir(), Run: w.run})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if s.Tried != parallel || s.FaultsApplied != parallel || !s.Interrupted || s.Stopped != "interrupted" || s.ExitCode != outcome.ExitUnknown {
			t.Errorf("parallel %d: tried %d, faults applied %d, interrupted %v, stopped %q, exit %d", parallel, s.Tried, s.FaultsApplied, s.Interrupted, s.Stopped, s.ExitCode)
		}
		if len(s.Attempts) != parallel || !s.Attempts[0].Interrupted || s.Attempts[0].Error != "" {
			t.Errorf("parallel %d: attempts %+v", parallel, s.Attempts)
		}
	}
}

// TestFindThatDoesNotReplay: seed 2 finds but none of its replays fails
// alike; the hunt says so, keeps it, goes on and stops at seed 4, whose
// find replays: that one is the find to shrink, and both are listed.
func TestFindThatDoesNotReplay(t *testing.T) {
	w := &world{bad: map[int64]bool{2: true, 4: true}, flaky: map[int64]bool{2: true}}
	s, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Parallel: 1, Budget: time.Hour, Replays: 3, Need: 2, Store: t.TempDir(), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	if got := seedsOf(s.Attempts); len(got) != 4 || s.First != 1 || s.Replayed != 3 || s.Stopped != "anomaly found" || s.ExitCode != outcome.ExitInvalid {
		t.Fatalf("attempts %v first %d replayed %d stopped %q exit %d", got, s.First, s.Replayed, s.Stopped, s.ExitCode)
	}
	flaky, good := s.Attempts[1].Replays, s.Attempts[3].Replays
	// 2 replays decide it either way: 2 unlike of 3 leave fewer than 2 alike.
	if flaky == nil || flaky.Replayed != 2 || flaky.Alike != 0 || good == nil || good.Replayed != 2 || good.Alike != 2 || len(good.Dirs) != 2 {
		t.Fatalf("replays: seed 2 %+v, seed 4 %+v", flaky, good)
	}
	if w.replays[2] != 2 || w.replays[4] != 2 || w.replays[1]+w.replays[3] != 0 {
		t.Errorf("replays run: %v", w.replays)
	}
	if a, ok := s.ToShrink(); !ok || a.Seed != 4 {
		t.Errorf("to shrink: %+v %v, want seed 4", a, ok)
	}
	if a, ok := s.Found(); !ok || a.Seed != 2 {
		t.Errorf("first find: %+v %v, want seed 2", a, ok)
	}
	page, err := os.ReadFile(filepath.Join(s.Dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failed alike in 0 of 2 replays", "failed alike in 2 of 2 replays", "seed 4"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Within the budget only: with no find that replays, the hunt ends
	// with its finds listed and nothing to shrink.
	w = &world{bad: map[int64]bool{2: true}, flaky: map[int64]bool{2: true}}
	s, err = Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, MaxSeeds: 3, Replays: 2, Need: 1, Store: t.TempDir(), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ToShrink(); ok || s.First != 1 || s.Replayed != -1 || s.Tried != 3 || s.ExitCode != outcome.ExitInvalid {
		t.Errorf("no find replays: first %d replayed %d tried %d exit %d", s.First, s.Replayed, s.Tried, s.ExitCode)
	}
	if !strings.Contains(s.Headline(), "did not replay") {
		t.Errorf("headline %q does not say the find did not replay", s.Headline())
	}
}

// TestReplayFailingAnotherWay: seed 2's find followed a restart empty;
// its replays give a double grant too, but one that followed only a
// holder's stop. They do not fail like the find (its Like asks for the
// restart), so it does not replay, and seed 3's does.
func TestReplayFailingAnotherWay(t *testing.T) {
	w := &world{bad: map[int64]bool{2: true, 3: true}, otherWay: map[int64]bool{2: true}}
	s, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Parallel: 1, Budget: time.Hour, Replays: 3, Need: 2, Store: t.TempDir(), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	if s.First != 1 || s.Replayed != 2 {
		t.Fatalf("first %d replayed %d, want 1 and 2", s.First, s.Replayed)
	}
	f := s.Attempts[1]
	if f.Like == nil || !slices.Equal(f.Like.Windows, []string{coverage.RestartEmpty}) || f.Replays.Alike != 0 {
		t.Errorf("seed 2's find: like %+v, replays %+v", f.Like, f.Replays)
	}
	if g := s.Attempts[2]; g.Like == nil || len(g.Like.Windows) != 0 || g.Replays.Alike != 2 {
		t.Errorf("seed 3's find: like %+v, replays %+v", g.Like, g.Replays)
	}
}

// TestEachWay: with EachWay a hunt that goes on replays each find that
// fails a way no lower seed's replayed find did (its anomaly's faults'
// kinds differ), and not one that fails a way already replayed.
func TestEachWay(t *testing.T) {
	w := &world{bad: map[int64]bool{1: true, 2: true, 3: true}, named: map[int64]string{1: "kill", 2: "kill", 3: "clock"}}
	s, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Parallel: 1, Budget: time.Hour, MaxSeeds: 3,
		KeepGoing: true, EachWay: true, Replays: 2, Need: 2, Store: t.TempDir(), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	if w.replays[1] != 2 || w.replays[2] != 0 || w.replays[3] != 2 {
		t.Errorf("replays by seed %v, want seeds 1 and 3 replayed, 2 (seed 1's way) not", w.replays)
	}
	if a, b := s.Attempts[0].Way(), s.Attempts[2].Way(); a == b || !strings.HasSuffix(a, "| kill") {
		t.Errorf("ways %q and %q", a, b)
	}
	// Without EachWay only the first find replays.
	w = &world{bad: map[int64]bool{1: true, 3: true}, named: map[int64]string{1: "kill", 3: "clock"}}
	if _, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Parallel: 1, Budget: time.Hour, MaxSeeds: 3,
		KeepGoing: true, Replays: 2, Need: 2, Store: t.TempDir(), Run: w.run}); err != nil {
		t.Fatal(err)
	}
	if w.replays[3] != 0 {
		t.Errorf("without EachWay seed 3 replayed %d times", w.replays[3])
	}
}

// TestMergeShards: three shards of seeds 1..9 merge into the hunt one
// would have run (its attempts in seed order, the lowest find first, plans
// linked where the shards keep them); mismatched, repeated and missing
// shards are refused by name.
func TestMergeShards(t *testing.T) {
	root := t.TempDir()
	w := &world{bad: map[int64]bool{5: true, 8: true}}
	var dirs []string
	for i := 1; i <= 3; i++ {
		s, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, MaxSeeds: 9, KeepGoing: true,
			Shard: &matrix.Shard{Index: i, Count: 3}, Store: filepath.Join(root, "shard"+itoa(int64(i))), Run: w.run})
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, s.Dir)
	}
	out := filepath.Join(root, "all")
	m, err := Merge(out, dirs[2], dirs[0], dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	got := seedsOf(m.Attempts)
	if len(got) != 9 || m.Tried != 9 || m.FaultsApplied != 9 || m.First != 4 || m.ExitCode != outcome.ExitInvalid || len(m.Shards) != 3 {
		t.Fatalf("merged: seeds %v tried %d faults %d first %d exit %d shards %v", got, m.Tried, m.FaultsApplied, m.First, m.ExitCode, m.Shards)
	}
	for i, a := range m.Attempts {
		if a.Seed != int64(i+1) {
			t.Fatalf("not in seed order: %v", got)
		}
		if _, err := os.Stat(filepath.Join(out, a.Plan)); err != nil {
			t.Errorf("seed %d: its plan is not where the merged hunt links it: %v", a.Seed, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, m.Attempts[4].Dir, "..")); err != nil || m.Attempts[4].Dir == "" {
		t.Errorf("the find's report is not linked: %q %v", m.Attempts[4].Dir, err)
	}
	disk, err := Load(out)
	if err != nil || disk.Tried != 9 || !strings.Contains(disk.Stopped, "merged from 3 shards") {
		t.Fatalf("merged hunt.json: %v %+v", err, disk)
	}

	// Refusals.
	other := tmpl(t)
	other.Workload.Clients = 3
	odd, err := Run(context.Background(), other, draw, Options{Name: "h", Budget: time.Hour, MaxSeeds: 9, Shard: &matrix.Shard{Index: 3, Count: 3},
		Store: filepath.Join(root, "odd"), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, MaxSeeds: 1, Store: filepath.Join(root, "whole"), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	half, err := Run(context.Background(), tmpl(t), draw, Options{Name: "h", Budget: time.Hour, MaxSeeds: 2, Shard: &matrix.Shard{Index: 1, Count: 2},
		Store: filepath.Join(root, "half"), Run: w.run})
	if err != nil {
		t.Fatal(err)
	}
	// A shard of the same hunt but guided (as an older tumbler could make
	// one: hunt --shard refuses --guided now): its hunt.json says so.
	guided, err := Load(dirs[2])
	if err != nil {
		t.Fatal(err)
	}
	guided.Guided, guided.Dir = true, filepath.Join(root, "guided")
	if err := os.MkdirAll(guided.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := guided.Write(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		dirs []string
		want []string
	}{
		"guided":   {[]string{dirs[0], dirs[1], guided.Dir}, []string{"not shards of one hunt", "guided differs", "false vs true", guided.Dir}},
		"missing":  {dirs[:2], []string{"shard 3/3 missing"}},
		"twice":    {[]string{dirs[0], dirs[1], dirs[1]}, []string{"shard 2/3 given twice"}},
		"template": {[]string{dirs[0], dirs[1], odd.Dir}, []string{"template differs", "workload"}},
		"no hunt":  {[]string{dirs[0], dirs[1], filepath.Join(root, "none")}, []string{"no hunt here"}},
		"count":    {[]string{dirs[0], half.Dir}, []string{"shard 1/2", "not shards of one hunt"}},
		"whole":    {[]string{dirs[0], whole.Dir}, []string{"not a shard"}},
	} {
		_, err := Merge(filepath.Join(root, "bad-"+name), c.dirs...)
		if !errors.Is(err, outcome.ErrInput) {
			t.Errorf("%s: %v, want bad input", name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", name, err, w)
			}
		}
	}
}
