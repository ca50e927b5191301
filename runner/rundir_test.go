package runner

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestRunsAtOnceTakeTheirOwnDirectory: runs of one plan that begin in the
// same millisecond (a matrix's seeds at once) each get a directory of
// their own, and the latest links end up pointing at one of them.
func TestRunsAtOnceTakeTheirOwnDirectory(t *testing.T) {
	store := t.TempDir()
	began := time.Now()
	dirs := make([]string, 8)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &run{plan: basePlan(t, "same"), opts: Options{Store: store}, log: discard(), began: began}
			if err := r.makeDir(); err != nil {
				t.Error(err)
				return
			}
			dirs[i] = r.dir
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" || seen[d] {
			t.Fatalf("directories %v: not one each", dirs)
		}
		seen[d] = true
		if _, err := os.Stat(filepath.Join(d, "plan.json")); err != nil {
			t.Error(err)
		}
	}
	for _, l := range []string{filepath.Join(store, "latest"), filepath.Join(store, "same", "latest")} {
		target, err := filepath.EvalSymlinks(l)
		if err != nil {
			t.Fatalf("latest link: %v", err)
		}
		if !seen[target] {
			t.Errorf("%s points to %s, none of the runs", l, target)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(store, "same"))
	if len(entries) != len(dirs)+1 {
		t.Errorf("%d entries in the plan's directory, want %d runs and latest (no link left aside)", len(entries), len(dirs))
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
