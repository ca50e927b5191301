package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/reports"
)

// TestRunIndexesStore: a run lists itself in its store's index.html, and
// an analysis of it rewrites the page.
func TestRunIndexesStore(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := basePlan(t, "indexed")
	p.Seed = 42
	p.TimeLimit = span(t, "1s")
	out, err := Run(ctx, p, Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(store, out.Dir)
	page := func() string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(store, reports.StoreIndexFile))
		if err != nil {
			t.Fatalf("no store index: %v", err)
		}
		return string(b)
	}
	first := page()
	for _, s := range []string{`<td>indexed</td><td>42</td>`, `<a href="` + filepath.ToSlash(rel) + `/index.html">`, `>` + string(out.Result.Verdict) + `<`} {
		if !strings.Contains(first, s) {
			t.Errorf("store index lacks %q:\n%s", s, first)
		}
	}
	// Analyze finds the store two levels up and rewrites its page.
	time.Sleep(1100 * time.Millisecond) // the page's own time changes
	if _, err := Analyze(out.Dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if again := page(); again == first || !strings.Contains(again, `<td>indexed</td><td>42</td>`) {
		t.Errorf("analyze did not rewrite the store index")
	}
}
