//go:build linux

// Package browsertest loads tumbler's HTML pages (a run's report, a
// hunt's page) in headless Chromium for tests: the DOM after the page's
// scripts ran, the browser's log, and a screenshot. Every process the
// browser starts runs in a process group of its own that is ended when
// the call returns, on a timeout and on failure too.
//
// A test that needs the browser fails when Chromium is missing (install
// the Debian package chromium), unless TUMBLER_SKIP_BROWSER=1 says to
// skip it.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Missing is the message of a test that cannot find Chromium.
const Missing = "chromium not found: install the Debian package chromium"

// Chromium finds the browser, or fails the test (skips it with
// TUMBLER_SKIP_BROWSER=1).
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TUMBLER_SKIP_BROWSER") == "1" {
		t.Skip(Missing)
	}
	t.Fatal(Missing)
	return ""
}

// DumpDOM loads a page (a file's absolute path) in headless Chromium and
// returns the DOM after its scripts ran, and the browser's log (console
// messages included).
func DumpDOM(t testing.TB, browser, page string) (dom, log string) {
	t.Helper()
	stdout, stderr := run(t, browser, page, "--dump-dom")
	return stdout, stderr
}

// Screenshot loads a page (a file's absolute path) in headless Chromium
// at width × height CSS pixels and writes a PNG of it to out.
func Screenshot(t testing.TB, browser, page, out string, width, height int) {
	t.Helper()
	run(t, browser, page, "--hide-scrollbars", "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height), "--screenshot="+out)
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Fatalf("chromium made no screenshot of %s at %s (%v)", page, out, err)
	}
}

// run runs the browser headless on page with args, in a process group of
// its own that is killed when it returns.
func run(t testing.TB, browser, page string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir=" + t.TempDir(), "--no-first-run", "--disable-extensions",
		"--enable-logging=stderr", "--v=0"}, args...)
	cmd := exec.CommandContext(ctx, browser, append(args, "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
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
		t.Fatalf("chromium on %s: %v\n%s", page, err, Tail(errb.String(), 2000))
	}
	return out.String(), errb.String()
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// JSError is the marker a page's window.onerror leaves on <html>.
var JSError = regexp.MustCompile(`<html[^>]*\sdata-js-error="[^"]*"`)

// ConsoleErrors are the lines of Chromium's log that report a script
// error.
var ConsoleErrors = regexp.MustCompile(`(?m)^.*(Uncaught|CONSOLE\(\d+\)|:CONSOLE:).*$`)
