package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
)

// storeRunDir makes a run directory under store: plan.json, and
// results.json unless res is nil.
func storeRunDir(t *testing.T, store, rel, planJSON string, res *Results) {
	t.Helper()
	dir := filepath.Join(store, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PlanFile), []byte(planJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if res == nil {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStoreIndex(t *testing.T) {
	store := t.TempDir()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	storeRunDir(t, store, "redlock-restart-empty/20261123T100000.000", `{"name": "redlock-restart-empty", "seed": 3}`, &Results{
		Name: "redlock-restart-empty", Seed: 3, Started: t0,
		Judgement: outcome.Judgement{Verdict: checker.Invalid, ExitCode: 1, Expected: &outcome.Reproduction{
			Expected: outcome.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant}, Reproduced: true}},
	})
	storeRunDir(t, store, "single-baseline/20261123T110000.000", `{"name": "single-baseline", "seed": 1}`, &Results{
		Name: "single-baseline", Seed: 1, Started: t0.Add(time.Hour),
		Judgement: outcome.Judgement{Verdict: checker.Invalid, ExitCode: 1, Expected: &outcome.Reproduction{
			Expected: outcome.Expectation{Verdict: checker.Valid}, Reproduced: false}},
	})
	storeRunDir(t, store, "adhoc<script>/20261123T120000.000", `{"name": "adhoc<script>", "seed": 7}`, &Results{
		Name: "adhoc<script>", Seed: 7, Started: t0.Add(2 * time.Hour), Judgement: outcome.Judgement{Verdict: checker.Valid},
	})
	// Killed before its report: listed as unfinished, named by its plan.
	storeRunDir(t, store, "killed/20261123T130000.000", `{"name": "killed", "seed": 9}`, nil)
	// A hunt's attempt, deeper down.
	storeRunDir(t, store, "hunts/h/20261123T090000.000/seed-4/20261123T090001.000", `{"name": "seed-4", "seed": 4}`, &Results{
		Name: "seed-4", Seed: 4, Started: t0.Add(-time.Hour), Judgement: outcome.Judgement{Verdict: checker.Unknown, ExitCode: 2},
	})
	// Not runs: an analysis in progress, the latest link, a directory
	// without plan.json.
	storeRunDir(t, store, "killed/20261123T130000.000/.analyze-1", `{"name": "stage"}`, nil)
	if err := os.Symlink("single-baseline/20261123T110000.000", filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(store, "matrix"), 0o755); err != nil {
		t.Fatal(err)
	}

	runs, err := ListStore(store)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Dir)
	}
	want := []string{"killed/20261123T130000.000", "adhoc<script>/20261123T120000.000", "single-baseline/20261123T110000.000",
		"redlock-restart-empty/20261123T100000.000", "hunts/h/20261123T090000.000/seed-4/20261123T090001.000"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		// killed's time is its plan.json's (now): newest.
		t.Fatalf("runs %q, want %q", got, want)
	}
	if k := runs[0]; k.Finished || k.Name != "killed" || k.Seed != 9 {
		t.Errorf("unfinished run %+v", k)
	}
	if r := runs[3]; !r.Finished || r.Verdict != "invalid" || r.Expected != "invalid (double-grant)" || !r.Reproduced || r.Seed != 3 {
		t.Errorf("reproduced row %+v", r)
	}

	if err := WriteStoreIndex(store); err != nil {
		t.Fatal(err)
	}
	page := readPage(t, store)
	for _, s := range []string{
		`<a href="redlock-restart-empty/20261123T100000.000/index.html">`,
		`<td>redlock-restart-empty</td><td>3</td>`, `<td>invalid (double-grant)</td>`, `<td>yes</td>`,
		`<td>single-baseline</td><td>1</td>`, `<span class="no">no</span>`,
		`<td class="unfinished">unfinished</td>`, `seed-4/20261123T090001.000/index.html`,
		`adhoc&lt;script&gt;`, `5 runs`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
	if strings.Contains(page, "<script>") {
		t.Error("a run's name went into the page unescaped")
	}
	if !IsStoreIndexed(store) {
		t.Error("IsStoreIndexed is false after WriteStoreIndex")
	}
	if left, _ := filepath.Glob(filepath.Join(store, ".index-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func readPage(t *testing.T, store string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, StoreIndexFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStoreIndexConcurrent: runs finishing at once in several writers
// leave a whole page listing all of them, and a reader never sees half a
// page.
func TestStoreIndexConcurrent(t *testing.T) {
	store := t.TempDir()
	const n = 16
	stop := make(chan struct{})
	torn := make(chan string, 1)
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(store, StoreIndexFile))
			if err == nil && !strings.HasSuffix(strings.TrimSpace(string(b)), "</html>") {
				select {
				case torn <- string(b):
				default:
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "row" + string(rune('a'+i))
			storeRunDir(t, store, name+"/20261123T100000.000", `{"name": "`+name+`", "seed": 1}`, &Results{Name: name, Seed: 1, Judgement: outcome.Judgement{Verdict: checker.Valid}})
			if err := WriteStoreIndex(store); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	select {
	case p := <-torn:
		t.Fatalf("a reader saw a partial page (%d bytes)", len(p))
	default:
	}
	page := readPage(t, store)
	if !strings.Contains(page, "16 runs") {
		t.Errorf("the last page does not list all 16 runs")
	}
}

// TestStoreIndexLeavesForeignPage: a directory whose index.html is not a
// store index (a hunt's page) keeps it.
func TestStoreIndexLeavesForeignPage(t *testing.T) {
	store := t.TempDir()
	foreign := "<!DOCTYPE html><title>hunt</title>"
	if err := os.WriteFile(filepath.Join(store, StoreIndexFile), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	storeRunDir(t, store, "seed-1/20261123T100000.000", `{"name": "seed-1", "seed": 1}`, nil)
	if err := WriteStoreIndex(store); err != nil {
		t.Fatal(err)
	}
	if readPage(t, store) != foreign || IsStoreIndexed(store) {
		t.Error("a foreign index.html was replaced")
	}
	if err := WriteStoreIndex(filepath.Join(store, "missing")); err == nil {
		t.Error("a missing store gave no error")
	}
}
