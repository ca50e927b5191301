//go:build linux

package reports

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/internal/browsertest"
)

// The report renders in a real browser without a script error and shows
// its verdict; a page with a broken script is caught, so the check can fail.
func TestIndexInBrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Chromium(t)

	broken := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(broken, []byte(`<!DOCTYPE html><html><head><script>window.onerror=function(m){document.documentElement.setAttribute("data-js-error",String(m));};</script></head><body><script>noSuchFunction();</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, log := browsertest.DumpDOM(t, browser, broken)
	if !browsertest.JSError.MatchString(dom) && !browsertest.ConsoleErrors.MatchString(log) {
		t.Fatalf("a page with a broken script shows no error: the check below could not fail\n%s", browsertest.Tail(log, 2000))
	}

	covered := corpusRun(t, filepath.Join("..", "checker", "testdata", "double-grant.jsonl"))
	covered.Coverage = coverage.Judge(coverage.Input{Ops: covered.Ops, Setup: coverage.Setup{TTL: time.Second,
		Validity: 900 * time.Millisecond, Leases: true, Nodes: []string{"n1"}, LeaseNodes: []string{"n1"}}})
	runs := []Run{covered, {Name: "empty", Interrupted: true}}
	for _, r := range runs {
		_, files := writeReport(t, r)
		dom, log := browsertest.DumpDOM(t, browser, files.Index())
		if m := browsertest.JSError.FindString(dom); m != "" {
			t.Errorf("%s: script error: %s", r.Name, m)
		}
		if lines := browsertest.ConsoleErrors.FindAllString(log, -1); len(lines) > 0 {
			t.Errorf("%s: console errors:\n%s", r.Name, strings.Join(lines, "\n"))
		}
		if !regexp.MustCompile(`<html[^>]*\sdata-ready="1"`).MatchString(dom) {
			t.Errorf("%s: the page's script did not run to its end", r.Name)
		}
		want := strings.ToUpper(string(judged(r).Judgement.Verdict))
		if !regexp.MustCompile(`id="verdict-badge">` + want + `<`).MatchString(dom) {
			t.Errorf("%s: the rendered page does not show %s", r.Name, want)
		}
		if r.Coverage != nil && !strings.Contains(dom, `id="window-`+coverage.RestartEmpty+`"`) {
			t.Errorf("%s: the rendered page shows no coverage of the dangerous windows", r.Name)
		}
		if r.Result != nil && len(r.Result.Anomalies) > 0 && !strings.Contains(dom, `class="tl-dg"`) {
			t.Errorf("%s: the inline timeline did not render its double grant", r.Name)
		}
	}
}
