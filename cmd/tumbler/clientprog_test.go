package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/internal/clienttest"
	"github.com/tumbler-dev/tumbler/lock/conform"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
)

// TestRunClientRefusesInit: a run whose lock client program refuses its
// init (an option it does not know) stops as bad input — exit 254, in
// results.json too — with a message naming the client and its reason, in
// either client mode (in process mode the refusal happens in a worker
// process and must keep its kind on the way to the harness).
func TestRunClientRefusesInit(t *testing.T) {
	prog := clienttest.ReferenceCopy(t, "refusing-client.py") // the reference refuses every option
	for _, mode := range []string{"process", "inprocess"} {
		t.Run(mode, func(t *testing.T) {
			store := t.TempDir()
			code, stdout, stderr := cli(t, "run", "--client-cmd", prog, "--client-option", "bogus=1", "--client-mode", mode,
				"--clients", "2", "--time-limit", "3s", "--seed", "1", "--store", store)
			if code != outcome.ExitBadInput {
				t.Fatalf("run whose client refuses its init: exit %d, want %d (bad input)\nstdout:\n%s\nstderr:\n%s", code, outcome.ExitBadInput, stdout, stderr)
			}
			for _, w := range []string{"the client refused its init", "client " + prog, "options unknown: bogus"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
			if err != nil {
				t.Fatal(err)
			}
			var res reports.Results
			if b, err := os.ReadFile(filepath.Join(dir, reports.ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil || res.ExitCode != outcome.ExitBadInput {
				t.Errorf("results.json: %v, exit code %d, want %d", err, res.ExitCode, outcome.ExitBadInput)
			}
		})
	}
}

// brokenRelease is the reference client with a release that deletes the
// key whoever holds it: no compare of the owner's token.
var brokenRelease = [2]string{
	`RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"`,
	`RELEASE = "return redis.call('del', KEYS[1])"`,
}

// TestConformBrokenClient: tumbler conform on a client whose release
// deletes the key without checking the owner (a real program on real
// servers) fails the checks that catch it — a forged release and an
// expired holder's late release both free another's lock — and passes the
// others; the command prints the table saying so and exits 1.
func TestConformBrokenClient(t *testing.T) {
	t.Parallel()
	prog := clienttest.ReferenceCopy(t, "blind-release-client.py", brokenRelease)
	store := t.TempDir()
	code, stdout, stderr := cli(t, "conform", "--client-cmd", prog, "--store", store)
	if code != outcome.ExitInvalid {
		t.Fatalf("conform of a client whose release checks no owner: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, outcome.ExitInvalid, stdout, stderr)
	}
	want := map[string]string{ // every check's outcome
		conform.LeaseFields: runner.ConformPass, conform.MutualExclusion: runner.ConformPass,
		conform.ReleaseOthers: runner.ConformFail, conform.Expiry: runner.ConformFail,
		conform.Extend: runner.ConformPass, conform.LostReply: runner.ConformPass,
		conform.Valid: runner.ConformNotApplicable,
	}
	lines := strings.Split(stdout, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "client "+prog+" (tumbler reference (redis-py ") || !strings.HasPrefix(lines[2], "CHECK ") {
		t.Fatalf("table's head:\n%s", stdout)
	}
	for check, out := range want {
		row := tableRow(lines, check)
		if rest := strings.TrimSpace(strings.TrimPrefix(row, check)); !strings.HasPrefix(rest, out+" ") {
			t.Errorf("row of %s: %q, want outcome %s", check, row, out)
		}
	}
	if row := tableRow(lines, conform.ReleaseOthers); !strings.Contains(row, "want ErrNotHeld") {
		t.Errorf("row of %s: %q, want the detail of what went wrong", conform.ReleaseOthers, row)
	}
	if !strings.Contains(stdout, "\nDOES NOT CONFORM; logs and conform.json: "+filepath.Join(store, "conform")) {
		t.Errorf("table's verdict:\n%s", stdout)
	}
	var res runner.ConformResult
	files, _ := filepath.Glob(filepath.Join(store, "conform", "*", "*", "conform.json"))
	if len(files) != 1 {
		t.Fatalf("conform.json files %v, want one", files)
	}
	if b, err := os.ReadFile(files[0]); err != nil || json.Unmarshal(b, &res) != nil || len(res.Checks) != len(want) || res.Passed() {
		t.Fatalf("conform.json: %v %+v", err, res)
	}
	if got := outcome.FindingCode(!res.Passed(), nil); got != outcome.ExitInvalid {
		t.Errorf("FindingCode of conform.json's result: %d, want %d", got, outcome.ExitInvalid)
	}
}

// tableRow is the table's line of check.
func tableRow(lines []string, check string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, check+" ") {
			return l
		}
	}
	return ""
}

// TestConformClientRefusesInit: conform of a client that refuses its init
// stops as bad input (254), naming the client and its reason, rather than
// reporting every check failed.
func TestConformClientRefusesInit(t *testing.T) {
	prog := clienttest.ReferenceCopy(t, "refusing-client.py")
	code, stdout, stderr := cli(t, "conform", "--client-cmd", prog, "--client-option", "bogus=1", "--store", t.TempDir())
	if code != outcome.ExitBadInput {
		t.Fatalf("conform of a client that refuses its init: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, outcome.ExitBadInput, stdout, stderr)
	}
	for _, w := range []string{"the client refused its init", "client " + prog, "options unknown: bogus"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
}
