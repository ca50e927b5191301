package runner

import (
	"bytes"
	"errors"
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
		{Adhoc{Provider: "k8s"}, []string{"--provider", "docker"}},
		{Adhoc{Provider: "external"}, []string{"--provider", "--external"}},
		{Adhoc{Provider: "docker", External: "x.json"}, []string{"--external"}},
		{Adhoc{Persistence: "rdb"}, []string{"--persistence"}},
		{Adhoc{Nemesis: []string{"kill", "meteor"}}, []string{"--nemesis", "meteor", "partition", "failover"}},
		{Adhoc{NemesisInterval: time.Second}, []string{"--nemesis-interval", "--nemesis"}},
		{Adhoc{Nemesis: []string{"kill"}, TimeLimit: 2 * time.Second}, []string{"--nemesis", "--time-limit"}},
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
	// A clock fault needs the node clock shim; the plan says so.
	p, err := Adhoc{Nemesis: []string{"clock"}, TimeLimit: 20 * time.Second}.Plan()
	if err != nil || !p.needsNodeClock() {
		t.Fatalf("clock plan: %v", err)
	}
}
