package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/workloads"
)

// TestMain doubles as a client process: in-process runs of the command
// re-execute this test binary for their clients.
func TestMain(m *testing.M) {
	if workloads.IsWorker() {
		workloads.WorkerMain()
		return
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cli runs the command in this process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// binary builds tumbler once, for what needs a process of its own:
// signals and a different PATH.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "tumbler-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "tumbler")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = errors.New(string(out))
		}
	})
	if binErr != nil {
		t.Fatalf("go build: %v", binErr)
	}
	return binPath
}

// TestBadArguments: bad flags, names and combinations exit 254 with a
// message naming the flag (and the valid names, where there is a list).
func TestBadArguments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--ttl", "soon"}, []string{"--ttl"}},
		{[]string{"run", "--lock", "nope"}, []string{"--lock", "redlock", "setnx-expire", "watchdog"}},
		{[]string{"plan", "--nemesis", "kill,meteor"}, []string{"--nemesis", "meteor", "partition", "client-pause"}},
		{[]string{"run", "--nodes", "3", "--topology", "independent:3"}, []string{"--nodes", "--topology"}},
		{[]string{"run", "--plan", "p.json", "--lock", "single", "--seed", "3"}, []string{"--plan", "--lock", "--seed"}},
		{[]string{"run", "--plan", "/nonexistent/p.json"}, []string{"p.json"}},
		{[]string{"run", "--client-mode", "threads"}, []string{"--client-mode", "inprocess"}},
		{[]string{"plan", "--workload", "queue"}, []string{"--workload", "fenced-write"}},
		{[]string{"plan", "--nemesis", "kill", "--time-limit", "2s"}, []string{"--time-limit", "--nemesis-interval"}},
		{[]string{"run", "--bogus"}, []string{"--bogus"}},
		{[]string{"run", "extra"}, []string{"no arguments", "extra"}},
		{[]string{"reproduce", "nope"}, []string{"nope", "single-baseline", "redsync-setnx-on-extend"}},
		{[]string{"reproduce"}, []string{"--all", "--file"}},
		{[]string{"reproduce", "--all", "single-baseline"}, []string{"--all"}},
		{[]string{"reproduce", "--file", "/nonexistent/row.json"}, []string{"--file"}},
		{[]string{"matrix", "--shard", "3/2"}, []string{"--shard"}},
		{[]string{"matrix", "--seeds", "0"}, []string{"--seeds"}},
		{[]string{"matrix", "--only", "nope"}, []string{"--only", "single-baseline"}},
		{[]string{"matrix", "merge", "--out", t.TempDir()}, []string{"matrix.json"}},
		{[]string{"analyze"}, []string{"run directory"}},
		{[]string{"analyze", t.TempDir()}, []string{"not a run directory"}},
		{[]string{"--log-level", "loud", "list"}, []string{"--log-level"}},
		{[]string{"frobnicate"}, []string{"unknown command", "frobnicate"}},
	} {
		code, _, stderr := cli(t, c.args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d; stderr %q", c.args, code, exitUsage, stderr)
			continue
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.HasPrefix(stderr, "tumbler: ") {
			t.Errorf("%q: want one line \"tumbler: …\", got %q", c.args, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: message %q does not mention %q", c.args, stderr, w)
			}
		}
	}
}

// TestHelp: every command explains itself with examples.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, c := range [][]string{{"run"}, {"plan"}, {"list"}, {"reproduce"}, {"matrix"}, {"matrix", "merge"}, {"analyze"}} {
		code, out, _ := cli(t, append(c, "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "tumbler "+strings.Join(c, " ")) {
			t.Errorf("%v --help: exit %d\n%s", c, code, out)
		}
	}
}

// TestList: every catalog row is listed with its lock, topology,
// expectation and status.
func TestList(t *testing.T) {
	t.Parallel()
	code, out, stderr := cli(t, "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(scenarios.All())+1 {
		t.Fatalf("%d lines for %d rows:\n%s", len(lines), len(scenarios.All()), out)
	}
	for i, s := range scenarios.All() {
		l := lines[i+1]
		f := strings.Fields(l)
		if f[0] != s.Name || f[1] != s.Plan.Lock.Variant && !strings.HasPrefix(f[1], s.Plan.Lock.Variant) {
			t.Errorf("row %d: %q, want %s with lock %s", i, l, s.Name, s.Plan.Lock.Variant)
		}
		if !strings.Contains(l, s.Plan.Topology.String()) || !strings.Contains(l, s.Source) {
			t.Errorf("row %s: %q lacks its topology or source", s.Name, l)
		}
		want := "holds"
		if s.NotReproduced != "" {
			want = "not reproduced: " + s.NotReproduced
		}
		if !strings.HasSuffix(l, want) {
			t.Errorf("row %s: %q, want status %q", s.Name, l, want)
		}
	}
}

// TestPlanReplay: plan prints the same plan for the same flags and seed,
// and run --plan executes exactly that plan, faults included.
func TestPlanReplay(t *testing.T) {
	t.Parallel()
	args := []string{"plan", "--seed", "5", "--ttl", "500ms", "--nemesis", "latency", "--nemesis-interval", "1s",
		"--time-limit", "3s", "--clients", "3", "--client-mode", "inprocess"}
	code, plan1, stderr := cli(t, args...)
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	_, plan2, _ := cli(t, args...)
	if plan1 != plan2 {
		t.Fatalf("two plans for one seed:\n%s\n%s", plan1, plan2)
	}
	if !strings.Contains(plan1, `"fault": "latency"`) || !strings.Contains(plan1, `"seed": 5`) {
		t.Fatalf("plan lacks its fault or seed:\n%s", plan1)
	}
	args[2] = "6"
	if _, other, _ := cli(t, args...); other == plan1 {
		t.Fatal("seeds 5 and 6 gave the same plan")
	}

	file := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(file, []byte(plan1), 0o644); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	code, out, stderr := cli(t, "run", "--plan", file, "--store", store, "--json")
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("run --plan --json: exit %d, output %q (%v); stderr %s", code, out, err, stderr)
	}
	if s.ExitCode != code || s.Seed != 5 || s.ReportDir == "" {
		t.Fatalf("summary %+v, exit %d", s, code)
	}
	stored, err := os.ReadFile(filepath.Join(s.ReportDir, reports.PlanFile))
	if err != nil || string(stored) != plan1 {
		t.Fatalf("the run's plan.json differs from the plan given:\n%s\nvs\n%s (%v)", stored, plan1, err)
	}
	hist, err := os.ReadFile(filepath.Join(s.ReportDir, reports.HistoryFile))
	if err != nil || !bytes.Contains(hist, []byte(`"kind":"latency"`)) {
		t.Fatalf("the history records no latency fault (%v)", err)
	}
}

// TestRunAnalyze: a short healthy run exits 0 with a report; analyze on
// its directory gives the same verdict, and on a copy whose history was
// cut mid-line (a killed run) checks the complete lines and says so.
func TestRunAnalyze(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	code, out, stderr := cli(t, "run", "--nodes", "1", "--lock", "single", "--time-limit", "3s", "--seed", "1", "--store", store)
	if code != exitValid {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "valid — no anomaly") || !strings.Contains(out, "report: ") {
		t.Fatalf("run output:\n%s", out)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, reports.IndexFile)); err != nil {
		t.Fatal(err)
	}
	// The report says how to replay the run.
	var res reports.Results
	if b, err := os.ReadFile(filepath.Join(dir, reports.ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil ||
		!strings.Contains(res.Command, "tumbler run --nodes 1") || res.Verdict != checker.Valid {
		t.Fatalf("results.json: %v %+v", err, res)
	}

	code, out, stderr = cli(t, "analyze", dir, "--json")
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != exitValid || s.Verdict != checker.Valid || s.Interrupted {
		t.Fatalf("analyze: exit %d, %+v (%v)\n%s", code, s, err, stderr)
	}

	killed := t.TempDir()
	for _, f := range []string{reports.PlanFile, reports.HistoryFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == reports.HistoryFile {
			b = b[:len(b)-10]
		}
		if err := os.WriteFile(filepath.Join(killed, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = cli(t, "analyze", killed)
	if code != exitUnknown || !strings.Contains(out, "incomplete") || !strings.Contains(out, "valid — no anomaly") || !strings.Contains(out, "interrupted") {
		t.Fatalf("analyze of a killed run: exit %d, want %d (valid, but only part of the run)\n%s\n%s", code, exitUnknown, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(killed, reports.ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil || !res.Interrupted || res.Ops == 0 {
		t.Fatalf("results.json of the killed run: %v %+v", err, res)
	}
}

// TestReproduceBaseline: the baseline row gives its documented verdict.
func TestReproduceBaseline(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	code, out, stderr := cli(t, "reproduce", "single-baseline", "--store", store)
	if code != 0 || !strings.Contains(out, "single-baseline: reproduced — valid") || !strings.Contains(out, "report: "+store) {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestMatrixShardsMerge: a matrix in two shards, merged, is the whole one.
func TestMatrixShardsMerge(t *testing.T) {
	t.Parallel()
	store, d1, d2, all := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	code, out, stderr := cli(t, "matrix", "--seeds", "1", "--only", "single-baseline", "--shard", "1/2", "--out", d1, "--store", store)
	if code != 0 || !strings.Contains(out, "single-baseline") || !strings.Contains(out, "holds (1/1)") {
		t.Fatalf("shard 1/2: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr = cli(t, "matrix", "--seeds", "1", "--only", "single-baseline", "--shard", "2/2", "--out", d2, "--store", store); code != 0 {
		t.Fatalf("shard 2/2 (nothing to run): exit %d\n%s\n%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(d1, "matrix-junit.xml")); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = cli(t, "matrix", "merge", filepath.Join(d1, "matrix.json"), filepath.Join(d2, "matrix.json"), "--out", all)
	if code != 0 || !strings.Contains(out, "holds (1/1)") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out, stderr)
	}
	m, err := reports.ReadMatrixJSON(filepath.Join(all, "matrix.json"))
	if err != nil || m.Shard != nil || len(m.Rows) != 1 || m.Rows[0].Status != reports.Holds {
		t.Fatalf("merged matrix: %v %+v", err, m)
	}
	// A shard missing is refused.
	if code, _, stderr = cli(t, "matrix", "merge", filepath.Join(d1, "matrix.json"), "--out", all); code != exitUsage || !strings.Contains(stderr, "2/2") {
		t.Fatalf("merge with a shard missing: exit %d: %s", code, stderr)
	}
}

// TestInterrupt: Ctrl-C stops the run, which still checks what it
// recorded and writes its report; a valid verdict on part of a run is no
// pass (exit 2).
func TestInterrupt(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	store := t.TempDir()
	cmd := exec.Command(bin, "run", "--time-limit", "60s", "--seed", "1", "--store", store)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Interrupt once clients are at work.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if fi, err := os.Stat(filepath.Join(store, "latest", reports.HistoryFile)); err == nil && fi.Size() > 2000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no history after 30 s\n%s", errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after Ctrl-C\n%s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitUnknown && code != exitInvalid {
		t.Fatalf("exit %d after Ctrl-C\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "report: ") || !strings.Contains(errb.String(), "Ctrl-C again") {
		t.Fatalf("output after Ctrl-C:\n%s\n%s", out.String(), errb.String())
	}
	var res reports.Results
	if b, err := os.ReadFile(filepath.Join(store, "latest", reports.ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil || !res.Interrupted || res.Ops == 0 {
		t.Fatalf("results.json: %v %+v", err, res)
	}
}

// TestMissingRedisServer: without redis-server on PATH the run fails as a
// harness failure, in one line that says what to install.
func TestMissingRedisServer(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	cmd := exec.Command(bin, "run", "--time-limit", "2s", "--seed", "1", "--store", t.TempDir(), "--log-level", "error")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitHarness {
		t.Fatalf("exit: %v, want %d\n%s\n%s", err, exitHarness, out.String(), errb.String())
	}
	msg := strings.TrimSpace(errb.String())
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "redis-server") || !strings.Contains(msg, "apt-get install redis-server") {
		t.Fatalf("want one line naming the package, got %q", msg)
	}
}
