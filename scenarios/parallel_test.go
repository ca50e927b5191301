package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/runner"
)

// TestRunsAtOnceShareNothing runs real rows at once in one process (under
// -race in CI): a valid row on two seeds (same plan name, started
// together), a row that restarts its node empty, one whose fault moves a
// client's clock and one a node's, both through the clock shim — each
// with its clients in worker processes. The invalid rows were chosen for
// anomalies that a slow machine does not hide (a grant trigger, skews of
// two TTLs). If two runs shared a port, a temporary or clock
// shim file, a worker or a registry, a row would not give its verdict or
// a report would hold another run's history. Each must match its
// expectation, in a directory of its own, with its own plan and history.
func TestRunsAtOnceShareNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs four rows at once on real servers")
	}
	var rows []Scenario
	for _, n := range []string{"single-baseline", "single-restart-empty", "recipe-getset-skew", "rueidislock-node-clock-ahead"} {
		s, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store := os.Getenv("TUMBLER_STORE")
	if store == "" {
		store = t.TempDir()
	}
	// single-baseline on seeds 1 and 2, the others on seed 1: five runs at once.
	units := []struct {
		row  Scenario
		seed int64
	}{{rows[0], 1}, {rows[0], 2}, {rows[1], 1}, {rows[2], 1}, {rows[3], 1}}
	type result struct {
		j   SeedRun
		out *runner.Outcome
		err error
	}
	results := make([]result, len(units))
	done := make(chan int)
	for i, u := range units {
		go func() {
			j, out, err := Reproduce(ctx, u.row, u.seed, runner.Options{Store: store})
			results[i] = result{j, out, err}
			done <- i
		}()
	}
	for range units {
		<-done
	}
	dirs := map[string]bool{}
	for i, u := range units {
		r := results[i]
		name := u.row.Name
		if r.err != nil || !r.j.Matched {
			t.Errorf("%s seed %d run at once with others: %v; %s (%s)", name, u.seed, r.err, r.j.Why, r.j.ReportDir)
			continue
		}
		if dirs[r.out.Dir] {
			t.Errorf("%s seed %d: directory %s shared", name, u.seed, r.out.Dir)
		}
		dirs[r.out.Dir] = true
		plan, err := runner.LoadPlan(filepath.Join(r.out.Dir, "plan.json"))
		if err != nil || plan.Name != name || plan.Seed != u.seed {
			t.Errorf("%s seed %d: its plan.json holds %s seed %d (%v)", name, u.seed, plan.Name, plan.Seed, err)
		}
		h, err := os.ReadFile(filepath.Join(r.out.Dir, "history.jsonl"))
		if err != nil || !strings.Contains(string(h), `"acquire"`) {
			t.Errorf("%s seed %d: history: %v", name, u.seed, err)
		}
	}
}
