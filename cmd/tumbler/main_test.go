package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/audit"
	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
	"github.com/tumbler-dev/tumbler/workloads"
)

// TestMain doubles as a client process: in-process runs of the command
// re-execute this test binary for their clients.
//
// With asCommandEnv set it is the tumbler command itself (main, whose
// client and worker modes come first, as they do here): what needs a
// process of its own re-executes this binary so, instead of building one.
func TestMain(m *testing.M) {
	if os.Getenv(asCommandEnv) == "1" && !runner.IsGoClient() && !workloads.IsWorker() {
		os.Unsetenv(asCommandEnv)
		main()
	}
	if runner.IsGoClient() {
		runner.GoClientMain()
	}
	if workloads.IsWorker() {
		workloads.WorkerMain()
		return
	}
	os.Exit(m.Run())
}

// cli runs the command in this process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// asCommandEnv makes this test binary run as the tumbler command.
const asCommandEnv = "TUMBLER_TEST_AS_COMMAND"

// command is the tumbler command as a process of its own, for what needs
// one (signals, a different PATH): this test binary, re-executed as the
// command. env, when not nil, replaces the environment it inherits.
func command(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary's path: %v", err)
	}
	cmd := exec.Command(self, args...)
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(env, asCommandEnv+"=1")
	return cmd
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
		{[]string{"plan", "--nemesis", "kill", "--time-limit", "1s"}, []string{"--time-limit", "--nemesis-interval"}},
		{[]string{"run", "--nemesis", "kill", "--concurrency", "0"}, []string{"--concurrency", "at least one"}},
		{[]string{"run", "--bogus"}, []string{"--bogus"}},
		{[]string{"run", "--auth-user", "locks"}, []string{"--auth-", "locks", "needs a password"}},
		{[]string{"plan", "--auth-password-file", "pw", "--auth-password-env", "PW"}, []string{"--auth-", "not both"}},
		{[]string{"plan", "--tls-cert", "c.pem"}, []string{"--tls-", "key_file"}},
		{[]string{"plan", "--auth-password", "hunter2"}, []string{"--auth-password"}},
		{[]string{"run", "extra"}, []string{"no arguments", "extra"}},
		{[]string{"reproduce", "nope"}, []string{"nope", "single-baseline", "redsync-setnx-on-extend"}},
		{[]string{"reproduce"}, []string{"--all", "--file"}},
		{[]string{"reproduce", "--all", "single-baseline"}, []string{"--all"}},
		{[]string{"reproduce", "--file", "/nonexistent/row.json"}, []string{"--file"}},
		{[]string{"matrix", "--shard", "3/2"}, []string{"--shard"}},
		{[]string{"matrix", "--seeds", "0"}, []string{"--seeds"}},
		{[]string{"matrix", "--only", "nope"}, []string{"--only", "single-baseline"}},
		{[]string{"matrix", "merge", "--out", t.TempDir()}, []string{"matrix.json"}},
		// A zero given explicitly is no request for the default.
		{[]string{"run", "--clients", "0"}, []string{"--clients", "0", "1 to 10000"}},
		{[]string{"run", "--nodes", "0"}, []string{"--nodes", "0", "1 to 15"}},
		{[]string{"run", "--keys", "0"}, []string{"--keys", "0", "at least 1"}},
		{[]string{"plan", "--ttl", "0s"}, []string{"--ttl", "at least 1ms"}},
		{[]string{"plan", "--time-limit", "0"}, []string{"--time-limit", "positive"}},
		{[]string{"plan", "--nemesis", "kill", "--nemesis-interval", "0s"}, []string{"--nemesis-interval", "positive"}},
		{[]string{"plan", "--read-timeout", "0s"}, []string{"--read-timeout", "positive"}},
		{[]string{"plan", "--lock", "redlock", "--node-timeout", "0s"}, []string{"--node-timeout", "positive"}},
		{[]string{"plan", "--topology", "replicated:1", "--wait-replicas", "1", "--wait-timeout", "0s"}, []string{"--wait-timeout", "positive"}},
		{[]string{"run", "--clients", "-2"}, []string{"--clients", "1 to 10000"}},
		{[]string{"analyze"}, []string{"run directory"}},
		{[]string{"analyze", t.TempDir()}, []string{"not a run directory"}},
		{[]string{"analyze", t.TempDir(), "--lin-memory", "lots"}, []string{"--lin-memory", "512MiB"}},
		{[]string{"analyze", t.TempDir(), "--lin-timeout", "0s"}, []string{"--lin-timeout"}},
		{[]string{"--log-level", "loud", "list"}, []string{"--log-level"}},
		{[]string{"hunt", "--nemesis", "kill"}, []string{"--budget is required", "10m"}},
		{[]string{"hunt", "--nemesis", "kill", "--budget", "-1m"}, []string{"--budget", "positive"}},
		{[]string{"hunt", "--budget", "1m"}, []string{"--nemesis", "--like"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "failover"}, []string{"failover", "no replicas"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--concurrency", "0"}, []string{"--concurrency", "at least one"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--seed", "3"}, []string{"--seed", "--first-seed"}},
		{[]string{"hunt", "--budget", "1m", "--like", "nope"}, []string{"--like", "nope", "single-baseline"}},
		{[]string{"hunt", "--budget", "1m", "--like", "single-baseline"}, []string{"--like", "no faults"}},
		{[]string{"hunt", "--budget", "1m", "--like", "redlock-restart-empty", "--lock", "single"}, []string{"--like", "--lock"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--want", "double-grants"}, []string{"double-grants", "double-grant"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--shrink-budget", "0s"}, []string{"--shrink-budget"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--parallel", "0"}, []string{"--parallel", "at least 1"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--shard", "3/2"}, []string{"--shard", "3/2", "i/n"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--shard", "two"}, []string{"--shard", "two"}},
		{[]string{"hunt", "--budget", "1m", "--nemesis", "kill", "--shard", "1/2", "--guided"}, []string{"--guided", "--shard 1/2", "weighs only its own attempts"}},
		{[]string{"hunt", "--budget", "1m", "--like", "redlock-restart-empty", "--guided", "--shard", "2/3"}, []string{"--guided", "--shard 2/3"}},
		{[]string{"hunt", "merge", "--out", t.TempDir()}, []string{"give the shards"}},
		{[]string{"hunt", "merge", t.TempDir()}, []string{"no hunt here"}},
		{[]string{"matrix", "--parallel", "0"}, []string{"--parallel", "at least 1"}},
		{[]string{"reproduce", "--all", "--parallel", "0"}, []string{"--parallel", "at least 1"}},
		{[]string{"campaign", "--lock", "single"}, []string{"--budget is required"}},
		{[]string{"campaign", "--budget", "1m", "--topology", "independent:3"}, []string{"--topology", "--topologies"}},
		{[]string{"campaign", "--budget", "1m", "--nemesis", "kill"}, []string{"--nemesis", "--families"}},
		{[]string{"campaign", "--budget", "1m", "--families", "netwrok"}, []string{"netwrok", "network, process"}},
		{[]string{"campaign", "--budget", "1m", "--topologies", "ring:3"}, []string{"ring:3"}},
		{[]string{"campaign", "--budget", "1m", "--confirm", "0"}, []string{"--confirm"}},
		{[]string{"campaign", "merge", "--out", t.TempDir()}, []string{"give the shards"}},
		{[]string{"campaign", "merge", t.TempDir()}, []string{"no campaign here"}},
		{[]string{"campaign", "sort", t.TempDir()}, []string{"no campaign here"}},
		{[]string{"shrink"}, []string{"1 arg"}},
		{[]string{"shrink", t.TempDir()}, []string{"not a stored run"}},
		{[]string{"shrink", t.TempDir(), "--replays", "2", "--need", "3"}, []string{"need 3", "replays"}},
		{[]string{"frobnicate"}, []string{"unknown command", "frobnicate"}},
		// An option a shipped client's manifest does not list, refused before anything runs.
		{[]string{"plan", "--lock", "client:redis-py", "--client-option", "bogus=1"}, []string{"--client-option", `no option "bogus"`, "redis-py", "blocking_timeout, sleep, thread_local, timeout"}},
		{[]string{"conform", "--client", "redis-py", "--client-option", "bogus=1"}, []string{`no option "bogus"`, "redis-py", "blocking_timeout, sleep, thread_local, timeout"}},
	} {
		code, _, stderr := cli(t, c.args...)
		if code != outcome.ExitBadInput {
			t.Errorf("%q: exit %d, want %d; stderr %q", c.args, code, outcome.ExitBadInput, stderr)
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

// TestPlanAccess: a plan names where the secret is and how TLS is set,
// never a secret's value; the flags also move a plan file.
func TestPlanAccess(t *testing.T) {
	t.Setenv("TUMBLER_TEST_CLI_PW", "never-in-a-plan")
	code, plan, stderr := cli(t, "plan", "--seed", "1", "--auth-user", "locks", "--auth-password-env", "TUMBLER_TEST_CLI_PW",
		"--tls-ca", "ca.pem", "--tls-server-name", "redis.internal")
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"user": "locks"`, `"env": "TUMBLER_TEST_CLI_PW"`, `"ca_file": "ca.pem"`, `"server_name": "redis.internal"`} {
		if !strings.Contains(plan, want) {
			t.Errorf("plan lacks %s:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "never-in-a-plan") {
		t.Fatalf("the plan holds the secret:\n%s", plan)
	}
}

// TestAuditCommand: exit 0 for a safe node, 1 for a risky one (and the
// JSON names the rows), 254 for a refused login or no node, 255 for a
// node that does not answer.
func TestAuditCommand(t *testing.T) {
	safe := redistest.Start(t, 1, "--appendonly", "yes", "--appendfsync", "always")[0]
	risky := redistest.Start(t, 1, "--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru")[0]
	if code, out, stderr := cli(t, "audit", "--node", safe.Addr); code != 0 || !strings.Contains(out, "no risky setting") {
		t.Fatalf("safe node: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr := cli(t, "audit", "--node", risky.Addr, "--json")
	var rep audit.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != outcome.ExitInvalid {
		t.Fatalf("risky node: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	var checks []string
	for _, f := range rep.Findings {
		if f.Risky {
			checks = append(checks, f.Check)
		}
	}
	if !slices.Contains(checks, "persistence") || !slices.Contains(checks, "eviction") {
		t.Errorf("risks %v, want persistence and eviction", checks)
	}
	t.Setenv("TUMBLER_TEST_AUDIT_PW", "right")
	topo, _ := cluster.ParseTopology("independent:1")
	locked, err := cluster.Start(context.Background(), cluster.Spec{Topology: topo,
		Access: &access.Config{Client: access.Credentials{Password: access.Secret{Env: "TUMBLER_TEST_AUDIT_PW"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer locked.Close()
	lockedAddr, _ := locked.Addr("n1")
	t.Setenv("TUMBLER_TEST_AUDIT_PW", "nope")
	if code, _, stderr := cli(t, "audit", "--node", lockedAddr, "--auth-password-env", "TUMBLER_TEST_AUDIT_PW"); code != outcome.ExitBadInput || !strings.Contains(stderr, "n1") || !strings.Contains(stderr, "WRONGPASS") {
		t.Errorf("refused login: exit %d: %s", code, stderr)
	}
	if code, _, stderr := cli(t, "audit"); code != outcome.ExitBadInput || !strings.Contains(stderr, "--external") {
		t.Errorf("no node: exit %d: %s", code, stderr)
	}
	if code, _, stderr := cli(t, "audit", "--node", "127.0.0.1:1"); code != outcome.ExitHarness || !strings.Contains(stderr, "cannot read") {
		t.Errorf("closed port: exit %d: %s", code, stderr)
	}
}

// TestTargetFlags: reproduce and matrix take --provider, --external and
// --server like run, and refuse up front, with the reason, the rows the
// target cannot run.
func TestTargetFlags(t *testing.T) {
	t.Parallel()
	ext := filepath.Join("..", "..", "deploy", "external.json") // independent:5, no clock hook
	code, _, stderr := cli(t, "reproduce", "single-failover", "--external", ext)
	if code != outcome.ExitBadInput || !strings.Contains(stderr, "single-failover cannot run on the external provider") || !strings.Contains(stderr, "needs topology replicated:1+sentinels") {
		t.Errorf("reproduce a replicated row on an independent deployment: exit %d: %s", code, stderr)
	}
	code, _, stderr = cli(t, "matrix", "--seeds", "1", "--only", "single-failover,redlock-clock-jump", "--external", ext, "--out", t.TempDir())
	if code != outcome.ExitBadInput || !strings.Contains(stderr, "no row can run there") || !strings.Contains(stderr, "clock") {
		t.Errorf("matrix of rows the deployment cannot run: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"reproduce", "single-baseline", "--provider", "k8s"},
		{"matrix", "--provider", "docker", "--external", ext},
		{"reproduce", "single-baseline", "--auth-user", "locks"},
	} {
		if code, _, stderr := cli(t, args...); code != outcome.ExitBadInput || !strings.Contains(stderr, "--") {
			t.Errorf("%q: exit %d: %s", args, code, stderr)
		}
	}
}

// TestTopologyKindRefusedUpFront: what a topology's kind cannot run (TLS
// to a Redis Cluster) is refused before anything starts, naming the flag
// or the plan's field, and a matrix lists such a row as refused.
func TestTopologyKindRefusedUpFront(t *testing.T) {
	t.Parallel()
	code, _, stderr := cli(t, "plan", "--topology", "cluster:1", "--tls", "--seed", "1")
	if code != outcome.ExitBadInput || !strings.Contains(stderr, "--tls: TLS to a Redis Cluster (topology cluster:1) is not supported yet") {
		t.Errorf("plan --topology cluster:1 --tls: exit %d: %s", code, stderr)
	}
	p := runner.Plan{Topology: cluster.Topology{Kind: cluster.RedisCluster, N: 1}, Access: &access.Config{TLS: &access.TLS{}}}
	file, store := filepath.Join(t.TempDir(), "plan.json"), t.TempDir()
	if err := os.WriteFile(file, p.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, "run", "--plan", file, "--store", store)
	if code != outcome.ExitBadInput || !strings.Contains(stderr, "access.tls: TLS to a Redis Cluster") {
		t.Errorf("run --plan of a cluster with TLS: exit %d: %s", code, stderr)
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("the refused run left %d entries in the store", len(entries))
	}

	var rows []scenarios.Scenario
	for _, name := range []string{"cluster-failover", "single-baseline"} {
		s, err := scenarios.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, s)
	}
	a := &app{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	placed, refused, err := a.placeRows(rows, targetFlags{tlsOn: true}, nil)
	if err != nil || len(placed) != 1 || placed[0].Name != "single-baseline" {
		t.Fatalf("placed %v, %v", placed, err)
	}
	if len(refused) != 1 || refused[0].Scenario != "cluster-failover" || !strings.Contains(refused[0].Reason, "access.tls: TLS to a Redis Cluster") {
		t.Errorf("refused %+v, want cluster-failover refused for access.tls", refused)
	}
}

// TestReproduceInDocker: tumbler reproduce ROW --provider docker runs the
// row in containers (where Docker runs; TUMBLER_DOCKER_TESTS=1 makes no
// Docker a failure).
func TestReproduceInDocker(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cluster.DockerAvailable(ctx); err != nil {
		if os.Getenv("TUMBLER_DOCKER_TESTS") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no Docker: %v", err)
	}
	store := t.TempDir()
	code, out, stderr := cli(t, "reproduce", "single-baseline", "--provider", "docker", "--store", store)
	if code != 0 || !strings.Contains(out, "single-baseline: reproduced") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	plan, err := os.ReadFile(filepath.Join(store, "latest", "plan.json"))
	if err != nil || !strings.Contains(string(plan), `"provider": "docker"`) {
		t.Fatalf("the run's plan does not say docker (%v):\n%s", err, plan)
	}
}

// TestHelp: every command explains itself with examples.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, c := range [][]string{{"run"}, {"plan"}, {"list"}, {"reproduce"}, {"matrix"}, {"matrix", "merge"}, {"analyze"}, {"audit"}} {
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
	if code != outcome.ExitValid {
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

	// A valid run has nothing to shrink.
	if code, _, stderr := cli(t, "shrink", dir); code != outcome.ExitBadInput || !strings.Contains(stderr, "is valid, not invalid") {
		t.Errorf("shrink of a valid run: exit %d, %q", code, stderr)
	}

	code, out, stderr = cli(t, "analyze", dir, "--json")
	var s summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != outcome.ExitValid || s.Verdict != checker.Valid || s.Interrupted {
		t.Fatalf("analyze: exit %d, %+v (%v)\n%s", code, s, err, stderr)
	}

	// Linearizability bounds from the command line, on the run's plan with
	// a history whose check needs a search: too little memory for it makes
	// the verdict unknown, and says which piece; enough makes it valid.
	slow := t.TempDir()
	for src, dst := range map[string]string{
		filepath.Join(dir, reports.PlanFile):                                         reports.PlanFile,
		filepath.Join("..", "..", "checker", "testdata", "slow-release-reply.jsonl"): reports.HistoryFile,
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(slow, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr = cli(t, "analyze", slow, "--lin-memory", "1KiB", "--lin-timeout", "20s", "--json")
	if err := json.Unmarshal([]byte(out), &s); err != nil || code != outcome.ExitUnknown || s.Verdict != checker.Unknown {
		t.Fatalf("analyze --lin-memory 1KiB: exit %d, %+v (%v)\n%s", code, s, err, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(slow, reports.ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatal(err)
	}
	if lin, _ := res.Result.Checker(checker.Linearizability); !strings.Contains(lin.Reason, `key "lock" piece 1 of 1`) || !strings.Contains(lin.Reason, "limit 1.0 KiB") {
		t.Fatalf("linearizability: %s (%s)", lin.Verdict, lin.Reason)
	}
	if code, out, stderr = cli(t, "analyze", slow, "--lin-memory", "64MiB"); code != outcome.ExitUnknown || !strings.Contains(out, "valid — no anomaly") {
		// unknown only because the copied run has no results.json: it counts as interrupted
		t.Fatalf("analyze --lin-memory 64MiB: exit %d\n%s\n%s", code, out, stderr)
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
	if code != outcome.ExitUnknown || !strings.Contains(out, "incomplete") || !strings.Contains(out, "valid — no anomaly") || !strings.Contains(out, "interrupted") {
		t.Fatalf("analyze of a killed run: exit %d, want %d (valid, but only part of the run)\n%s\n%s", code, outcome.ExitUnknown, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(killed, reports.ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil || !res.Interrupted || res.Ops == 0 {
		t.Fatalf("results.json of the killed run: %v %+v", err, res)
	}

	// A malformed history is bad input: 254, the reason on the terminal
	// naming the line and the op, and the stored run left as it was.
	hist, err := os.ReadFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	results, _ := os.ReadFile(filepath.Join(dir, reports.ResultsFile))
	lines := bytes.SplitAfter(hist, []byte("\n"))
	// An ok release answered as an extend: a completion of the wrong type.
	changed := false
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"ok","f":"release"`)) {
			lines[i] = bytes.Replace(l, []byte(`"f":"release"`), []byte(`"f":"extend"`), 1)
			changed = true
			break
		}
	}
	if !changed {
		t.Fatal("the run has no ok release")
	}
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = cli(t, "analyze", dir)
	if code != outcome.ExitBadInput || out != "" || !strings.HasPrefix(stderr, "tumbler: invalid history: ") ||
		!strings.Contains(stderr, "history.jsonl line ") || !strings.Contains(stderr, "ok extend of process") || strings.Contains(stderr, "plan") {
		t.Fatalf("analyze of a malformed history: exit %d\n%s\n%s", code, out, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, reports.ResultsFile)); !bytes.Equal(after, results) {
		t.Fatal("analyze of a malformed history changed results.json")
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

// TestMatrixServers: --server redis,valkey runs the row on both servers
// (scripts/setup installs Valkey from bookworm-backports), with a column
// per server; each run's report names the server it ran.
func TestMatrixServers(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("valkey-server"); err != nil {
		t.Fatalf("valkey-server is not installed: run scripts/setup (it adds bookworm-backports): %v", err)
	}
	store, out := t.TempDir(), t.TempDir()
	code, table, stderr := cli(t, "matrix", "--seeds", "1", "--only", "single-baseline", "--server", "redis,valkey", "--out", out, "--store", store)
	if code != 0 || !strings.Contains(table, "REDIS") || !strings.Contains(table, "VALKEY") {
		t.Fatalf("exit %d\n%s\n%s", code, table, stderr)
	}
	m, err := matrix.Read(filepath.Join(out, "matrix.json"))
	if err != nil || len(m.Rows) != 2 || m.Rows[0].Server != "redis" || m.Rows[1].Server != "valkey" {
		t.Fatalf("matrix: %v %+v", err, m)
	}
	index, err := os.ReadFile(filepath.Join(m.Rows[1].Seeds[0].ReportDir, "index.html"))
	if err != nil || !strings.Contains(string(index), "valkey 8.") {
		t.Fatalf("the valkey run's report does not name valkey 8 (%v)", err)
	}
	if code, _, stderr := cli(t, "reproduce", "single-baseline", "--server", "memcached"); code != outcome.ExitBadInput || !strings.Contains(stderr, "--server") {
		t.Fatalf("reproduce --server memcached: exit %d: %s", code, stderr)
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
	m, err := matrix.Read(filepath.Join(all, "matrix.json"))
	if err != nil || m.Shard != nil || len(m.Rows) != 1 || m.Rows[0].Status != matrix.Holds {
		t.Fatalf("merged matrix: %v %+v", err, m)
	}
	// A shard missing is refused.
	if code, _, stderr = cli(t, "matrix", "merge", filepath.Join(d1, "matrix.json"), "--out", all); code != outcome.ExitBadInput || !strings.Contains(stderr, "2/2") {
		t.Fatalf("merge with a shard missing: exit %d: %s", code, stderr)
	}
}

// TestInterrupt: Ctrl-C stops the run, which still checks what it
// recorded and writes its report; a valid verdict on part of a run is no
// pass (exit 2).
func TestInterrupt(t *testing.T) {
	t.Parallel()
	store := t.TempDir()
	cmd := command(t, nil, "run", "--time-limit", "60s", "--seed", "1", "--store", store)
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
	if code := cmd.ProcessState.ExitCode(); code != outcome.ExitUnknown && code != outcome.ExitInvalid {
		t.Fatalf("exit %d after Ctrl-C\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "report: ") || !strings.Contains(errb.String(), "Ctrl-C again") {
		t.Fatalf("output after Ctrl-C:\n%s\n%s", out.String(), errb.String())
	}
	var res reports.Results
	if b, err := os.ReadFile(filepath.Join(store, "latest", reports.ResultsFile)); err != nil || json.Unmarshal(b, &res) != nil || !res.Interrupted || res.Ops == 0 {
		t.Fatalf("results.json: %v %+v", err, res)
	}
	if code := cmd.ProcessState.ExitCode(); res.ExitCode != code {
		t.Fatalf("results.json says exit %d, the run exited %d", res.ExitCode, code)
	}
}

// TestMissingRedisServer: without redis-server on PATH the run fails as a
// harness failure, in one line that says what to install.
func TestMissingRedisServer(t *testing.T) {
	t.Parallel()
	cmd := command(t, append(os.Environ(), "PATH="+t.TempDir()), "run", "--time-limit", "2s", "--seed", "1", "--store", t.TempDir(), "--log-level", "error")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != outcome.ExitHarness {
		t.Fatalf("exit: %v, want %d\n%s\n%s", err, outcome.ExitHarness, out.String(), errb.String())
	}
	msg := strings.TrimSpace(errb.String())
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "redis-server") || !strings.Contains(msg, "apt-get install redis-server") {
		t.Fatalf("want one line naming the package, got %q", msg)
	}
}
