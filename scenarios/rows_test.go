package scenarios

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/workloads"
)

func TestMain(m *testing.M) {
	if runner.IsGoClient() {
		runner.GoClientMain()
	}
	if workloads.IsWorker() {
		workloads.WorkerMain()
		return
	}
	os.Exit(m.Run())
}

// TestRows runs catalog rows end to end on real servers and requires each
// to give its expected verdict. Which rows and seeds come from the
// environment — TUMBLER_ROWS (comma list or "all") and TUMBLER_SEEDS
// ("1-10" or "3,7") — because the whole catalog takes minutes per seed;
// CI runs every row through `tumbler reproduce --all` instead.
func TestRows(t *testing.T) {
	rows := os.Getenv("TUMBLER_ROWS")
	if rows == "" {
		t.Skip("set TUMBLER_ROWS=<row,...|all> (and TUMBLER_SEEDS=1-10) to run catalog rows here; CI runs them with `tumbler reproduce --all`")
	}
	var list []Scenario
	if rows == "all" {
		list = All()
	} else {
		for _, n := range strings.Split(rows, ",") {
			s, err := Get(strings.TrimSpace(n))
			if err != nil {
				t.Fatal(err)
			}
			list = append(list, s)
		}
	}
	seeds := parseSeeds(t, os.Getenv("TUMBLER_SEEDS"))
	store := os.Getenv("TUMBLER_STORE")
	if store == "" {
		store = t.TempDir()
	}
	for _, s := range list {
		for _, seed := range seeds {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			out, err := runner.Run(ctx, s.PlanFor(seed), runner.Options{Store: store, Expected: s.Expected(), Source: s.Source})
			cancel()
			if err != nil {
				t.Errorf("%s seed %d: %v", s.Name, seed, err)
				continue
			}
			rep := out.Judgement.Expected
			line := fmt.Sprintf("%-32s seed %-3d %-8s %6.1fs first=%6.2fs reproduced=%v %s", s.Name, seed, out.Judgement.Verdict, out.Elapsed.Seconds(), out.FirstAnomaly.Seconds(), rep.Reproduced, out.Dir)
			t.Log(line)
			fmt.Fprintln(os.Stderr, line)
			if !rep.Reproduced {
				t.Errorf("%s seed %d: %s (report %s)", s.Name, seed, rep.Why, out.Dir)
			}
		}
	}
}

func parseSeeds(t *testing.T, s string) []int64 {
	if s == "" {
		return []int64{1}
	}
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.ParseInt(a, 10, 64)
		hi, err2 := strconv.ParseInt(b, 10, 64)
		if err1 != nil || err2 != nil || hi < lo {
			t.Fatalf("TUMBLER_SEEDS %q: want N-M", s)
		}
		var out []int64
		for i := lo; i <= hi; i++ {
			out = append(out, i)
		}
		return out
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("TUMBLER_SEEDS %q: %v", s, err)
		}
		out = append(out, n)
	}
	return out
}
