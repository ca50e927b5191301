package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

func TestMain(m *testing.M) {
	if IsGoClient() {
		GoClientMain()
	}
	if workloads.IsWorker() {
		workloads.WorkerMain()
		return
	}
	os.Exit(m.Run())
}

func span(t testing.TB, s string) Span {
	t.Helper()
	sp, err := nemesis.ParseSpan(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func basePlan(t testing.TB, name string) Plan {
	topo, err := cluster.ParseTopology("independent:1")
	if err != nil {
		t.Fatal(err)
	}
	return Plan{
		Name: name, Seed: 1, Topology: topo, TTL: span(t, "1s"),
		Lock: LockPlan{Options: variants.Options{Variant: "single"}},
		Workload: workloads.Options{
			Kind: workloads.FencedWrite, Clients: 3,
			Hold: Range{span(t, "0.3ttl"), span(t, "0.6ttl")},
		},
		TimeLimit: span(t, "4s"),
	}
}

func runPlan(t *testing.T, p Plan) *Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Run(ctx, p, Options{Store: t.TempDir()})
	if err != nil {
		t.Fatalf("run %s: %v", p.Name, err)
	}
	if out.Result == nil {
		t.Fatalf("run %s: not checked", p.Name)
	}
	for _, f := range []string{"plan.json", "history.jsonl", "results.json", "index.html", "timeline.svg", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(out.Dir, f)); err != nil {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	return out
}

// TestHealthySingleIsValid: real servers, no faults: the checkers find
// nothing, and there was real contention to find it in.
func TestHealthySingleIsValid(t *testing.T) {
	t.Parallel()
	out := runPlan(t, basePlan(t, "healthy"))
	if out.Result.Verdict != checker.Valid {
		t.Fatalf("verdict %s, want valid; anomalies: %+v", out.Result.Verdict, out.Result.Anomalies)
	}
	if out.Stats.Ops["acquire"].OK < 5 || out.Stats.Ops["acquire"].Fail+out.Stats.Ops["acquire"].OK < 10 {
		t.Fatalf("too little happened to mean anything: %+v", out.Stats.Ops["acquire"])
	}
}

// TestRestartEmptyDoubleGrant: while a client holds the lock the node is
// killed and restarts without persistence; another client takes the lock
// the first still believes it holds.
func TestRestartEmptyDoubleGrant(t *testing.T) {
	t.Parallel()
	p := basePlan(t, "restart-empty")
	// The node must be back, empty, while the holder still holds: with a
	// 1 s lease (holds of 0.3–0.6 s) a restart slowed by a loaded host
	// came back after the hold ended.
	p.TTL = span(t, "3s")
	p.Faults = []nemesis.Step{{
		At: span(t, "1s"), Trigger: nemesis.TriggerGrant, Key: "tumbler:0",
		Fault: nemesis.Restart, Nodes: []string{"n1"}, RestartParams: nemesis.RestartParams{Persistence: cluster.PersistNone},
	}}
	out := runPlan(t, p)
	if out.Result.Verdict != checker.Invalid {
		t.Fatalf("verdict %s, want invalid", out.Result.Verdict)
	}
	found := false
	for _, a := range out.Result.Anomalies {
		if a.Kind == checker.DoubleGrant && len(a.Faults) > 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no double grant tied to the restart among %+v", out.Result.Anomalies)
	}
}

// TestClientPauseStopsWatchdog: the nemesis stops the holder's process for
// 2×TTL. Its watchdog stops with it, so no renewal of the paused client is
// recorded during the pause, the key expires and another client acquires it
// while the paused one still "holds" it.
// TestClientStarveDelaysRenewals: a starved holder (client-starve, running
// a fifth of every 1.5 TTLs, so stopped 1.2 TTLs at a time) cannot renew
// in time: its watchdog wakes past the lease's validity and reports it
// lost, and another client is granted the lock meanwhile; the fault's
// records frame the starvation.
func TestClientStarveDelaysRenewals(t *testing.T) {
	t.Parallel()
	p := basePlan(t, "client-starve")
	p.Lock = LockPlan{Options: variants.Options{Variant: "watchdog", Inner: "single"}}
	p.Workload.Hold = Range{span(t, "3ttl"), span(t, "3ttl")}
	p.Workload.AcquireTimeout = span(t, "4s")
	p.TimeLimit = span(t, "6s")
	p.Faults = []nemesis.Step{{
		At: span(t, "0.5s"), Trigger: nemesis.TriggerGrant, Key: "tumbler:0",
		Fault: nemesis.ClientStarve, Client: nemesis.Holder, StarveParams: nemesis.StarveParams{Share: 0.2, Period: span(t, "1.5ttl")}, For: span(t, "4ttl"),
	}}
	out := runPlan(t, p)
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var start, stop history.Op
	for _, op := range ops {
		if op.IsNemesis() && op.Fault != nil && op.Fault.Kind == string(nemesis.ClientStarve) {
			if op.F == history.Start {
				start = op
			} else {
				stop = op
			}
		}
	}
	if start.Type != history.Info || stop.Type != history.Info {
		t.Fatalf("the starvation was not applied: start %v, stop %v", start, stop)
	}
	lost, othersGranted := 0, 0
	for _, op := range ops {
		if op.Time <= start.Time || op.Time >= stop.Time || op.IsNemesis() {
			continue
		}
		if op.Client == start.Client && op.F == history.Lost {
			lost++
		}
		if op.Client != start.Client && op.F == history.Acquire && op.Type == history.OK {
			othersGranted++
		}
	}
	if lost == 0 {
		t.Errorf("the starved holder's watchdog never reported its lease lost")
	}
	if othersGranted == 0 {
		t.Errorf("no other client acquired while the holder starved")
	}
}

func TestClientPauseStopsWatchdog(t *testing.T) {
	t.Parallel()
	p := basePlan(t, "client-pause")
	p.Lock = LockPlan{Options: variants.Options{Variant: "watchdog", Inner: "single"}}
	p.Workload.Hold = Range{span(t, "3ttl"), span(t, "3ttl")}
	p.Workload.AcquireTimeout = span(t, "4s")
	p.TimeLimit = span(t, "5s")
	p.Faults = []nemesis.Step{{
		At: span(t, "0.5s"), Trigger: nemesis.TriggerGrant, Key: "tumbler:0",
		Fault: nemesis.ClientPause, Client: nemesis.Holder, For: span(t, "2ttl"),
	}}
	out := runPlan(t, p)
	ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var start, stop history.Op
	for _, op := range ops {
		if op.IsNemesis() && op.Fault != nil && op.Fault.Kind == string(nemesis.ClientPause) {
			if op.F == history.Start {
				start = op
			} else {
				stop = op
			}
		}
	}
	if start.Type != history.Info || stop.Type != history.Info {
		t.Fatalf("the client pause was not applied: start %v, stop %v", start, stop)
	}
	paused := start.Client
	renewed, othersGranted := 0, 0
	for _, op := range ops {
		if op.Time <= start.Time || op.Time >= stop.Time || op.IsNemesis() {
			continue
		}
		if op.Client == paused && op.F == history.Extend {
			renewed++
		}
		if op.Client != paused && op.F == history.Acquire && op.Type == history.OK {
			othersGranted++
		}
	}
	if renewed != 0 {
		t.Errorf("the paused client recorded %d renewals during its pause", renewed)
	}
	if othersGranted == 0 {
		t.Errorf("no other client acquired during the 2×TTL pause: the paused holder's key did not expire")
	}
	if out.Result.Verdict != checker.Invalid {
		t.Errorf("verdict %s: the paused holder and the new one overlap, want invalid", out.Result.Verdict)
	}
}
