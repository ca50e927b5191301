package runner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

func TestAdhocDefaults(t *testing.T) {
	p, err := Adhoc{Seed: 3}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "adhoc-single" || p.Topology.String() != "independent:1" || p.Lock.Variant != "single" ||
		p.Workload.Kind != workloads.FencedWrite || p.Workload.Mode != workloads.Processes || p.Workload.Clients != 4 ||
		p.TTL.Resolve(0) != time.Second || p.TimeLimit.Resolve(0) != 10*time.Second || len(p.Faults) != 0 || p.Seed != 3 {
		t.Fatalf("defaults: %s", p.JSON())
	}
	// The plan is what plan.json will hold: defaults filled in.
	if p.Provider != "process" || p.Workload.Keys != 1 || p.Workload.Retry != "wait" {
		t.Fatalf("defaults not filled in: %s", p.JSON())
	}
	// A lock that talks to every node gets a Redlock-sized topology.
	p, err = Adhoc{Lock: "redlock"}.Plan()
	if err != nil || p.Topology != (cluster.Topology{Kind: cluster.Independent, N: 5}) {
		t.Fatalf("redlock default topology: %v %v", p.Topology, err)
	}
	p, err = Adhoc{Nodes: 3, Lock: "redsync", SetNXOnExtend: true, ClientMode: "inprocess", Workload: "counter", Hold: "50ms"}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.Topology.String() != "independent:3" || p.Workload.Mode != workloads.InProcess || !p.Lock.SetNXOnExtend ||
		p.Workload.Kind != workloads.Counter || p.Workload.Hold[0].String() != "50ms" || p.Workload.Hold[1].String() != "50ms" {
		t.Fatalf("settings not carried: %s", p.JSON())
	}
}

// TestAdhocErrorsNameTheFlag: every refusal wraps ErrPlan and names the
// flag to fix, listing the valid names where there is a list.
func TestAdhocErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		a    Adhoc
		want []string
	}{
		{Adhoc{Lock: "nope"}, []string{"--lock", "redlock", "single"}},
		{Adhoc{Lock: "single", Inner: "fenced"}, []string{"--inner", "watchdog"}},
		{Adhoc{Lock: "watchdog", Inner: "nope"}, []string{"--inner", "single"}},
		{Adhoc{Nodes: 3, Topology: "independent:3"}, []string{"--nodes", "--topology"}},
		{Adhoc{Topology: "ring:3"}, []string{"--topology"}},
		{Adhoc{Nodes: 99}, []string{"--nodes"}},
		{Adhoc{Workload: "queue"}, []string{"--workload", "fenced-write", "mutex", "counter"}},
		{Adhoc{ClientMode: "thread"}, []string{"--client-mode", "inprocess"}},
		{Adhoc{Clients: -1}, []string{"--clients"}},
		{Adhoc{Hold: "1s,x"}, []string{"--hold"}},
		{Adhoc{Think: "soon"}, []string{"--think"}},
		{Adhoc{Retry: "maybe"}, []string{"--retry", "wait", "try"}},
		{Adhoc{TTL: time.Microsecond}, []string{"--ttl"}},
		{Adhoc{Target: Target{Provider: "k8s"}}, []string{"--provider", "docker"}},
		{Adhoc{Target: Target{Provider: "external"}}, []string{"--provider", "--external"}},
		{Adhoc{Target: Target{Provider: "docker", External: "x.json"}}, []string{"--external"}},
		{Adhoc{Persistence: "rdb"}, []string{"--persistence"}},
		{Adhoc{Nemesis: []string{"kill", "meteor"}}, []string{"--nemesis", "meteor", "partition", "failover"}},
		{Adhoc{NemesisInterval: time.Second}, []string{"--nemesis-interval", "--nemesis"}},
		{Adhoc{Nemesis: []string{"kill"}, TimeLimit: time.Second}, []string{"--nemesis", "--time-limit"}},
		{Adhoc{Nemesis: []string{"kill"}, Concurrency: new(0)}, []string{"--concurrency", "at least one"}},
		{Adhoc{AcquireTimeout: -time.Second}, []string{"--acquire-timeout"}},
		{Adhoc{Nemesis: []string{"clock"}, Topology: "independent:3", Lock: "single", Concurrency: new(-1)}, []string{"--concurrency", "-1"}},
		// Generate refuses a fault the setup cannot take.
		{Adhoc{Nemesis: []string{"failover"}, TimeLimit: 30 * time.Second}, []string{"--nemesis", "failover"}},
		{Adhoc{Nemesis: []string{"client-pause"}, ClientMode: "inprocess", TimeLimit: 30 * time.Second}, []string{"--nemesis", "client-pause"}},
		{Adhoc{WaitTimeout: time.Second}, []string{"--wait-timeout", "--wait-replicas"}},
	} {
		_, err := c.a.Plan()
		if !errors.Is(err, ErrPlan) {
			t.Errorf("%+v: err %v, want ErrPlan", c.a, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %q does not mention %q", c.a, err, w)
			}
		}
	}
	// What only the plan as a whole can tell still wraps ErrPlan.
	if _, err := (Adhoc{Lock: "redlock", Nodes: 4}).Plan(); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "odd") {
		t.Errorf("redlock on 4 nodes: %v", err)
	}
}

// TestAdhocNemesis: the schedule is drawn from the seed and the fault
// kinds, the same every time, inside the time limit.
func TestAdhocNemesis(t *testing.T) {
	a := Adhoc{Lock: "redlock", Nemesis: []string{"kill", "partition", "pause"}, TimeLimit: 40 * time.Second, Seed: 11, NemesisInterval: 2 * time.Second}
	p1, err := a.Plan()
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := a.Plan()
	if !bytes.Equal(p1.JSON(), p2.JSON()) {
		t.Fatal("the same settings and seed gave two plans")
	}
	if len(p1.Faults) < 3 {
		t.Fatalf("40 s with 2 s between faults gave %d faults", len(p1.Faults))
	}
	for _, f := range p1.Faults {
		switch f.Fault {
		case nemesis.Kill, nemesis.Partition, nemesis.Pause:
		default:
			t.Errorf("fault %s not in the mix", f.Fault)
		}
		if f.At.Resolve(time.Second) >= 40*time.Second {
			t.Errorf("fault at %v, past the time limit", f.At)
		}
	}
	a.Seed = 12
	p3, _ := a.Plan()
	if bytes.Equal(p1.JSON(), p3.JSON()) {
		t.Fatal("seeds 11 and 12 gave the same plan")
	}
	// The lock-aware knobs: a fixed persistence is kept by every kill and
	// restart; the workload's hold and acquire timeout reach the plan.
	fixed := Adhoc{Lock: "redlock", Nemesis: []string{"partition", "restart", "kill"}, TimeLimit: 40 * time.Second,
		Persistence: "aof-always", Hold: "0.8ttl,0.9ttl", AcquireTimeout: 6 * time.Second, TTL: 3 * time.Second, Seed: 3}
	pf, err := fixed.Plan()
	if err != nil {
		t.Fatal(err)
	}
	lease := 0
	for _, f := range pf.Faults {
		if f.Persistence != "" {
			t.Errorf("--persistence aof-always, but a %s starts a node with %q", f.Fault, f.Persistence)
		}
		if f.Node == nemesis.NodeLease {
			lease++
		}
	}
	if lease == 0 || pf.Workload.AcquireTimeout.Resolve(0) != 6*time.Second {
		t.Errorf("no fault aimed at the lease, or the acquire timeout lost: %s", pf.JSON())
	}
	// A clock fault needs the node clock shim; the plan says so.
	p, err := Adhoc{Nemesis: []string{"clock"}, TimeLimit: 20 * time.Second}.Plan()
	if err != nil || !p.nemesisPlan().NeedsNodeClock() {
		t.Fatalf("clock plan: %v", err)
	}
}

// TestAdhocAsksTheProvider: the schedule is drawn against what the
// provider says it can do; a kind it cannot take is refused, naming the
// kind and the provider, and Run refuses a plan file the same way before
// it starts anything.
func TestAdhocAsksTheProvider(t *testing.T) {
	cfg := `{"topology": "independent:3",
	  "nodes": {"n1": {"addr": "127.0.0.1:1"}, "n2": {"addr": "127.0.0.1:2"}, "n3": {"addr": "127.0.0.1:3"}},
	  "toxiproxy": "http://127.0.0.1:9", "links": {"c0->n1": {}},
	  "persistence": "aof-always",
	  "hooks": {"kill": "true", "start": "true"}}`
	file := filepath.Join(t.TempDir(), "external.json")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	a := Adhoc{Lock: "redlock", Nodes: 3, Target: Target{External: file}, Nemesis: []string{"partition", "pause"}, TimeLimit: 20 * time.Second, Seed: 1}
	_, err := a.Plan()
	if !errors.Is(err, ErrPlan) || !strings.HasSuffix(err.Error(), "--nemesis: generate: pause: needs a provider that can pause/resume nodes; the external provider can kill/start") {
		t.Fatalf("pause on an external deployment without pause hooks: %v", err)
	}
	a.Nemesis = []string{"partition", "kill"}
	p, err := a.Plan()
	if err != nil {
		t.Fatal(err)
	}
	// Restarting empty needs a wipe hook on a deployment that persists,
	// and it keeps its own persistence mode.
	kills := 0
	for _, f := range p.Faults {
		if f.Fault == nemesis.Kill {
			kills++
			if f.Persistence != "" {
				t.Errorf("the plan starts a node with persistence %q, which the deployment cannot do", f.Persistence)
			}
		}
	}
	if kills == 0 {
		t.Errorf("no kill in %s", p.JSON())
	}
	p.Faults = []nemesis.Step{{Fault: nemesis.Pause, Nodes: []string{"n1"}, For: nemesis.Fixed(time.Second)}}
	if err := p.Validate(); err != nil {
		t.Fatalf("without a provider every control is assumed: %v", err)
	}
	out, err := Run(t.Context(), p, Options{Store: t.TempDir()})
	if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "step 1 (pause): needs a provider that can pause/resume nodes") {
		t.Fatalf("Run of a pause on that deployment: %v", err)
	}
	if out != nil && out.Result != nil {
		t.Errorf("the refused run was checked: %+v", out.Result)
	}
}
