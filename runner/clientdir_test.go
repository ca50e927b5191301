package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/clients"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock/conform"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/workloads"
)

// contribClient is tumbler's own client directory outside clients/: a
// real library (redis-py's asyncio lock), loaded from disk as a user's is.
const contribClient = "../contrib/clients/redis-py-asyncio"

// scaffold writes `tumbler client new`'s directory for lang into a
// directory of the test's — outside the repository —, or skips the test
// when the language's toolchain is not installed (a failure in CI,
// TUMBLER_CI=1, where scripts/setup installs it).
func scaffold(t *testing.T, lang string) string {
	t.Helper()
	tool := map[string]string{"python": "/usr/bin/python3", "php": "/usr/bin/php", "go": "go", "node": "node", "java": "java"}[lang]
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("TUMBLER_CI") != "" {
			t.Fatalf("%s is not installed (scripts/setup installs it): %v", tool, err)
		}
		t.Skipf("%s is not installed: %v", tool, err)
	}
	dir, err := clients.Scaffold("my-"+lang, lang, filepath.Join(t.TempDir(), "my-"+lang))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestConformScaffolds: every scaffold of `tumbler client new`, written
// outside the repository, passes every conformance check against a real
// server as it is — among them the RESP ones, whose leases carry a
// validity their manifest declares, and the library ones, whose leases
// carry none.
func TestConformScaffolds(t *testing.T) {
	t.Parallel()
	for _, lang := range clients.LangNames() {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			dir := scaffold(t, lang)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			res, err := Conform(ctx, ConformOptions{Client: protocol.Program{Dir: dir}, Store: t.TempDir()})
			if err != nil {
				t.Fatalf("conform %s: %v", dir, err)
			}
			m, err := protocol.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Checks) != len(conform.Checks) || !res.Passed() {
				t.Fatalf("scaffold %s (validity %v): %+v", lang, m.Validity, res.Checks)
			}
			for _, c := range res.Checks {
				// A scaffold declares no answer to the valid request: that
				// check, and only that one, does not apply to it.
				if c.Name == "Valid" && !m.AnswersValid && c.Outcome == ConformNotApplicable {
					continue
				}
				if c.Outcome != ConformPass {
					t.Errorf("check %s: %s %s", c.Name, c.Outcome, c.Detail)
				}
			}
		})
	}
}

// TestConformClientDirectory: the client directory of contrib/, read from
// disk, conforms, and --trace's transcript holds the requests, the replies
// and the steps its init armed (none: a conform run arms no step).
func TestConformClientDirectory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Conform(ctx, ConformOptions{Client: protocol.Program{Dir: contribClient}, Store: t.TempDir(), Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Client != "redis-py-asyncio" || !res.Passed() || !strings.Contains(res.Library, "redis.asyncio") {
		t.Fatalf("conform of %s: %s %s %+v", contribClient, res.Client, res.Library, res.Checks)
	}
	lf := res.Checks[0]
	joined := strings.Join(lf.Transcript, "\n")
	for _, want := range []string{`c0 > {"type":"init"`, `"steps":[]`, `c0 < {"type": "ok", "library": "redis.asyncio.lock.Lock`, `c0 > {"type":"acquire"`, `c0 > {"type":"release"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("LeaseFields' transcript lacks %q:\n%s", want, joined)
		}
	}
	if b, err := os.ReadFile(filepath.Join(res.Dir, "trace", conform.LeaseFields+".txt")); err != nil || strings.TrimSpace(string(b)) != joined {
		t.Errorf("trace file: %v\n%s", err, b)
	}
}

// TestClientDirectoryRunsAtItsOwnStep: a run of a scaffold written outside
// the repository, whose faults arm its manifest's own step for every
// client, stops clients there (the program reported the step, the harness
// paused it), and its plan.json records the manifest it ran with, so that
// the plan replays and re-checks without the flags.
func TestClientDirectoryRunsAtItsOwnStep(t *testing.T) {
	t.Parallel()
	dir := scaffold(t, "python")
	m, err := protocol.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	own := m.Steps[0].Name
	p := basePlan(t, "client-dir-step")
	p.Lock.Options = variants.Options{Variant: variants.ClientVariant, Client: &protocol.Program{Dir: dir}}
	p.Workload.Mode = workloads.Processes
	p.Faults = []nemesis.Step{{At: span(t, "0s"), Fault: nemesis.StepPause, For: span(t, "3s"), Clients: []int{0, 1, 2},
		StepParams: nemesis.StepParams{LockStep: own, Pause: span(t, "0.3ttl")}}}
	out := runPlan(t, p)
	ops, err := history.ReadFile(filepath.Join(out.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	paused := 0
	for _, op := range ops {
		if op.F == history.Pause && strings.HasSuffix(op.Value, " at "+own) {
			paused++
		}
	}
	if paused == 0 {
		t.Fatalf("no client was stopped at the manifest's step %q (report %s)", own, out.Dir)
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var replay Plan
	if err := json.Unmarshal(b, &replay); err != nil {
		t.Fatal(err)
	}
	if c := replay.Lock.Client; c == nil || c.Dir != dir || c.Recorded == nil || c.Recorded.Name != m.Name || len(c.Recorded.Steps) != len(m.Steps) {
		t.Fatalf("plan.json's lock.client: %+v, want the directory and its manifest", replay.Lock.Client)
	}
	if _, err := replay.Normalized(); err != nil {
		t.Errorf("plan.json does not validate: %v", err)
	}
}

// TestClientDirectoryStepsAreDrawn: a hunt's schedules of a client
// directory arm the manifest's own steps, as a shipped client's.
func TestClientDirectoryStepsAreDrawn(t *testing.T) {
	p := basePlan(t, "client-dir-draw")
	p.Lock.Options = variants.Options{Variant: variants.ClientVariant, Client: &protocol.Program{Dir: contribClient}}
	p.TimeLimit = span(t, "20s")
	p = p.Normalize()
	own := map[string]bool{"acquired": false, "releasing": false}
	for seed := int64(1); seed <= 30; seed++ {
		p.Seed = seed
		d, err := p.WithDrawnFaults(seed, Draw{Kinds: []nemesis.Kind{nemesis.StepPause, nemesis.StepCrash}})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range d.Faults {
			if _, ok := own[st.LockStep]; ok {
				own[st.LockStep] = true
			}
		}
	}
	for step, drawn := range own {
		if !drawn {
			t.Errorf("step %q of the manifest was never drawn in 30 seeds", step)
		}
	}
}

// TestClientDirectoryRefused: each way a client directory or a plan of
// one can be wrong is bad input (ErrPlan) naming the manifest and the
// field.
func TestClientDirectoryRefused(t *testing.T) {
	write := func(t *testing.T, name, manifest string, files ...string) string {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	good := `{"name": "mine", "command": ["./run.sh"], "library": "x", "doc": "d", "source": "s", "steps": [{"name": "after-set", "acquiring": true}]}`
	for _, c := range []struct {
		what, name, manifest string
		files                []string
		want                 string
	}{
		{"unknown field", "mine", `{"name": "mine", "command": ["./run.sh"], "fencnig": true}`, []string{"run.sh"}, `field "fencnig" is unknown`},
		{"name not its directory's", "theirs", good, []string{"run.sh"}, `name: "mine" is not its directory's name "theirs"`},
		{"relative command missing", "mine", good, nil, `command[0]: "./run.sh" does not exist in the client directory`},
		{"fair", "mine", `{"name": "mine", "command": ["./run.sh"], "fair": true}`, []string{"run.sh"}, "fair: a lock client program cannot declare a fair lock"},
		{"no conformance check", "mine", `{"name": "mine", "command": ["./run.sh"], "conform": {"deviations": {"Expiri": "x"}}}`, []string{"run.sh"}, `conform.deviations: "Expiri" is no conformance check`},
	} {
		t.Run(c.what, func(t *testing.T) {
			dir := write(t, c.name, c.manifest, c.files...)
			p := basePlan(t, "refused")
			p.Lock.Options = variants.Options{Variant: variants.ClientVariant, Client: &protocol.Program{Dir: dir}}
			_, err := p.Normalized()
			file := filepath.Join(dir, protocol.ManifestFile)
			if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("plan of %s: %v, want ErrPlan naming %s and saying %q", c.what, err, file, c.want)
			}
		})
	}
	t.Run("step not in the manifest", func(t *testing.T) {
		dir := write(t, "mine", good, "run.sh")
		p := basePlan(t, "refused")
		p.Lock.Options = variants.Options{Variant: variants.ClientVariant, Client: &protocol.Program{Dir: dir}}
		p.Workload.Mode = workloads.Processes
		p.Faults = []nemesis.Step{{At: span(t, "0s"), Fault: nemesis.StepCrash, For: span(t, "1s"), Clients: []int{0, 1, 2}, StepParams: nemesis.StepParams{LockStep: "after-sett"}}}
		_, err := p.Normalized()
		for _, w := range []string{"faults[0].step", `"after-sett" is not a step lock client:mine reports`, filepath.Join(dir, protocol.ManifestFile) + `'s field "steps" lists: after-set`} {
			if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), w) {
				t.Errorf("a fault at a step the manifest does not list: %v, want ErrPlan saying %q", err, w)
			}
		}
	})
}
