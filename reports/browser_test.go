//go:build unix

package reports

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/coverage"
)

const chromiumMissing = "chromium not found: install the Debian package chromium"

// chromium finds the browser, or fails (skips with TUMBLER_SKIP_BROWSER=1).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TUMBLER_SKIP_BROWSER") == "1" {
		t.Skip(chromiumMissing)
	}
	t.Fatal(chromiumMissing)
	return ""
}

// dumpDOM loads a page in headless Chromium and returns the DOM after its
// scripts ran, and the browser's log (console messages included).
func dumpDOM(t *testing.T, browser, page string) (dom, log string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir="+t.TempDir(), "--no-first-run", "--disable-extensions",
		"--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, so that every process the browser starts is
	// ended with it, also on a timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	if cmd.Process != nil {
		if kerr := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
			t.Logf("ending chromium's process group: %v", kerr)
		}
	}
	if err != nil {
		t.Fatalf("chromium on %s: %v\n%s", page, err, tail(stderr.String(), 2000))
	}
	return stdout.String(), stderr.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// jsError is the marker the page's window.onerror leaves on <html>.
var jsError = regexp.MustCompile(`<html[^>]*\sdata-js-error="[^"]*"`)

// consoleErrors are the lines of Chromium's log that report a script error.
var consoleErrors = regexp.MustCompile(`(?m)^.*(Uncaught|CONSOLE\(\d+\)|:CONSOLE:).*$`)

// The report renders in a real browser without a script error and shows
// its verdict; a page with a broken script is caught, so the check can fail.
func TestIndexInBrowser(t *testing.T) {
	browser := chromium(t)

	broken := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(broken, []byte(`<!DOCTYPE html><html><head><script>window.onerror=function(m){document.documentElement.setAttribute("data-js-error",String(m));};</script></head><body><script>noSuchFunction();</script></body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, log := dumpDOM(t, browser, broken)
	if !jsError.MatchString(dom) && !consoleErrors.MatchString(log) {
		t.Fatalf("a page with a broken script shows no error: the check below could not fail\n%s", tail(log, 2000))
	}

	covered := corpusRun(t, filepath.Join("..", "checker", "testdata", "double-grant.jsonl"))
	covered.Coverage = coverage.Judge(coverage.Input{Ops: covered.Ops, Setup: coverage.Setup{TTL: time.Second,
		Validity: 900 * time.Millisecond, Leases: true, Nodes: []string{"n1"}, LeaseNodes: []string{"n1"}}})
	runs := []Run{covered, {Name: "empty", Interrupted: true}}
	for _, r := range runs {
		_, files := writeReport(t, r)
		dom, log := dumpDOM(t, browser, files.Index())
		if m := jsError.FindString(dom); m != "" {
			t.Errorf("%s: script error: %s", r.Name, m)
		}
		if lines := consoleErrors.FindAllString(log, -1); len(lines) > 0 {
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
