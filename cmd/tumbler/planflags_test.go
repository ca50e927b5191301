package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// flagPlan is the plan "tumbler plan args..." prints.
func flagPlan(args ...string) (runner.Plan, error) {
	var f planFlags
	fs := pflag.NewFlagSet("plan", pflag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	f.bind(fs)
	if err := fs.Parse(args); err != nil {
		return runner.Plan{}, err
	}
	p, _, err := f.build(fs)
	return p, err
}

// TestFlagDefaults: the flags' plan has the plan's defaults (Normalize),
// filled in as the run's plan.json will hold them, and the flags' own.
func TestFlagDefaults(t *testing.T) {
	p, err := flagPlan("--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "adhoc-single" || p.Topology.String() != "independent:1" || p.Lock.Variant != "single" ||
		p.Workload.Kind != workloads.FencedWrite || p.Workload.Mode != workloads.Processes || p.Workload.Clients != 4 ||
		p.TTL.Resolve(0) != time.Second || p.TimeLimit.Resolve(0) != 10*time.Second || len(p.Faults) != 0 || p.Seed != 3 {
		t.Fatalf("defaults: %s", p.JSON())
	}
	if p.Provider != "process" || p.Workload.Keys != 1 || p.Workload.Retry != "wait" || p.Check.LivenessK != 3 ||
		p.Workload.Hold.String() != "[0.1ttl, 0.4ttl]" || p.Workload.Think.String() != "[0, 0.05ttl]" {
		t.Fatalf("defaults not filled in: %s", p.JSON())
	}
	if again := p.Normalize(); !bytes.Equal(again.JSON(), p.JSON()) {
		t.Fatalf("the flags' plan is not normalized:\n%s\n%s", p.JSON(), again.JSON())
	}
	// Only the flags give a hold and a think time: a plan file that leaves
	// them out keeps its zeros (workloadDefaults says why).
	if w := (runner.Plan{}).Normalize().Workload; w.Hold != (spans.Range{}) || w.Think != (spans.Range{}) {
		t.Fatalf("Normalize gave a hold %v and a think time %v", w.Hold, w.Think)
	}
	// A lock that talks to every node gets a Redlock-sized topology.
	p, err = flagPlan("--lock", "redlock")
	if err != nil || p.Topology != (cluster.Topology{Kind: cluster.Independent, N: 5}) {
		t.Fatalf("redlock default topology: %v %v", p.Topology, err)
	}
	p, err = flagPlan("--nodes", "3", "--lock", "redsync", "--setnx-on-extend", "--client-mode", "inprocess", "--workload", "counter", "--hold", "50ms")
	if err != nil {
		t.Fatal(err)
	}
	if p.Topology.String() != "independent:3" || p.Workload.Mode != workloads.InProcess || !p.Lock.SetNXOnExtend ||
		p.Workload.Kind != workloads.Counter || p.Workload.Hold[0].String() != "50ms" || p.Workload.Hold[1].String() != "50ms" {
		t.Fatalf("settings not carried: %s", p.JSON())
	}
	// The latch lock: the latch workload, its rounds, count-downs in the
	// first TTL and a half.
	p, err = flagPlan("--lock", "latch", "--ttl", "2s")
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Workload; w.Kind != workloads.Latch || w.Latch == nil || w.Latch.Counters != 2 || w.Hold.String() != "[0s, 3s]" {
		t.Fatalf("latch: %s", p.JSON())
	}
}

// TestFlagErrorsNameTheFlag: every refusal names the flag to fix, listing
// the valid names where there is a list; a value the flag cannot parse is
// refused by the flag, anything else by the plan's own validation
// (ErrPlan) with the flag in place of the field's path.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args  []string
		parse bool // refused by the flag's value type
		want  []string
	}{
		{[]string{"--lock", "nope"}, false, []string{"--lock", "redlock", "single"}},
		{[]string{"--lock", "single", "--inner", "fenced"}, false, []string{"--inner", "watchdog"}},
		{[]string{"--lock", "watchdog", "--inner", "nope"}, false, []string{"--inner", "single"}},
		{[]string{"--nodes", "3", "--topology", "independent:3"}, false, []string{"--nodes", "--topology"}},
		{[]string{"--topology", "ring:3"}, true, []string{"--topology"}},
		{[]string{"--nodes", "99"}, false, []string{"--nodes", "1 to 15"}},
		{[]string{"--workload", "queue"}, false, []string{"--workload", "fenced-write", "mutex", "counter"}},
		{[]string{"--client-mode", "thread"}, true, []string{"--client-mode", "inprocess"}},
		{[]string{"--clients", "-1"}, false, []string{"--clients", "1 to 10000"}},
		{[]string{"--hold", "1s,x"}, true, []string{"--hold"}},
		{[]string{"--think", "soon"}, true, []string{"--think"}},
		{[]string{"--retry", "maybe"}, false, []string{"--retry", "wait", "try"}},
		{[]string{"--ttl", "1us"}, false, []string{"--ttl", "at least 1ms"}},
		{[]string{"--provider", "k8s"}, false, []string{"--provider", "docker"}},
		{[]string{"--provider", "external"}, false, []string{"--provider", "--external"}},
		{[]string{"--provider", "docker", "--external", "x.json"}, false, []string{"--external"}},
		{[]string{"--persistence", "rdb"}, true, []string{"--persistence"}},
		{[]string{"--nemesis", "kill,meteor"}, true, []string{"--nemesis", "meteor", "partition", "failover"}},
		{[]string{"--nemesis-interval", "1s"}, false, []string{"--nemesis-interval: needs --nemesis"}},
		{[]string{"--nemesis", "kill", "--time-limit", "1s"}, false, []string{"--time-limit: no fault fits", "--nemesis-interval"}},
		{[]string{"--nemesis", "kill", "--concurrency", "0"}, false, []string{"--concurrency", "at least one"}},
		{[]string{"--acquire-timeout", "-1s"}, false, []string{"--acquire-timeout"}},
		{[]string{"--nemesis", "clock", "--topology", "independent:3", "--concurrency", "-1"}, false, []string{"--concurrency", "-1"}},
		// Generate refuses a fault the setup cannot take.
		{[]string{"--nemesis", "failover", "--time-limit", "30s"}, false, []string{"--nemesis", "failover"}},
		{[]string{"--nemesis", "client-pause", "--client-mode", "inprocess", "--time-limit", "30s"}, false, []string{"--nemesis", "client-pause"}},
		{[]string{"--wait-timeout", "1s"}, false, []string{"--wait-timeout: 1s needs --wait-replicas"}},
		// Once a flag's own check, now the lock's: the same words from a
		// plan file name lock.drift_factor.
		{[]string{"--lock", "redlock", "--drift-factor", "1.5"}, false, []string{"--drift-factor: 1.5 must be in [0, 1)"}},
		{[]string{"--drift-factor", "-0.5"}, false, []string{"--drift-factor: -0.5 must be in [0, 1)"}},
		{[]string{"--read-timeout", "-1s"}, false, []string{"--read-timeout: -1s is negative"}},
		{[]string{"--permits", "2"}, false, []string{"--permits applies only to semaphores, not single"}},
		{[]string{"--lock", "single", "--read-fraction", "0.5"}, false, []string{"--read-fraction", "read-write lock"}},
		{[]string{"--lock", "semaphore", "--permits", "-1"}, false, []string{"--permits -1, want at least 1"}},
		{[]string{"--lock", "rwlock", "--read-fraction", "1.5"}, false, []string{"--read-fraction = 1.5"}},
		{[]string{"--topology", "replicated:1", "--discovery", "sentinel"}, false, []string{"--discovery sentinel needs a topology with Sentinels"}},
		{[]string{"--lock", "latch", "--workload", "mutex"}, false, []string{"--workload \"latch\""}},
		// A shipped client's manifest lists its options: any other is
		// refused before anything runs, naming it, the client and the
		// options it takes.
		{[]string{"--lock", "client:redis-py", "--client-option", "bogus=1"}, false,
			[]string{`--client-option: client redis-py has no option "bogus" (its options: blocking_timeout, sleep, thread_local, timeout)`}},
		{[]string{"--lock", "client:redis-py", "--client-option", "sleep=0.1", "--client-option", "zz=1", "--client-option", "bogus=1"}, false,
			[]string{`client redis-py has no options "bogus", "zz"`}},
		{[]string{"--lock", "client:reference", "--client-option", "bogus=1"}, false,
			[]string{`--client-option: client reference takes no options (given "bogus"; its manifest: clients/reference/client.json)`}},
		// An explicit zero is no request for the default.
		{[]string{"--clients", "0"}, false, []string{"--clients: 0: want 1 to 10000 clients (omit it for 4)"}},
		{[]string{"--ttl", "0s"}, false, []string{"--ttl: 0: want at least 1ms (omit it for 1s)"}},
		// What the topology says of the lock names the flag that set it.
		{[]string{"--lock", "redlock", "--nodes", "4"}, false, []string{"--nodes: independent:4 has 4 masters: lock redlock needs an odd number of them"}},
		{[]string{"--lock", "redlock", "--topology", "independent:4"}, false, []string{"--topology: independent:4 has 4 masters"}},
		{[]string{"--lock", "redlock", "--topology", "replicated:1"}, false, []string{"--topology: lock redlock needs independent masters"}},
		{[]string{"--wait-replicas", "1", "--wait-timeout", "1s"}, false, []string{"--topology: lock wait_replicas 1 needs a replicated topology"}},
		{[]string{"--topology", "cluster:1", "--tls"}, false, []string{"--tls: TLS to a Redis Cluster (topology cluster:1) is not supported yet"}},
	} {
		_, err := flagPlan(c.args...)
		if err == nil {
			t.Errorf("%q: accepted", c.args)
			continue
		}
		if !c.parse && !errors.Is(err, runner.ErrPlan) {
			t.Errorf("%q: err %v, want ErrPlan", c.args, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q does not mention %q", c.args, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "workload.") || strings.Contains(err.Error(), "lock.") {
			t.Errorf("%q: %q: want one line naming flags, not plan paths", c.args, err)
		}
	}
	// The options a manifest lists pass; a program of your own has no
	// manifest, so its init is what refuses an option it does not know.
	for _, args := range [][]string{
		{"--lock", "client:redis-py", "--client-option", "timeout=null", "--client-option", "blocking_timeout=2"},
		{"--client-cmd", "python3 my_client.py", "--client-option", "bogus=1"},
	} {
		if _, err := flagPlan(args...); err != nil {
			t.Errorf("%q: %v, want it accepted", args, err)
		}
	}
}

// TestFlagNemesis: the schedule is drawn from the seed and the fault
// kinds, the same every time, inside the time limit.
func TestFlagNemesis(t *testing.T) {
	args := []string{"--lock", "redlock", "--nemesis", "kill,partition,pause", "--time-limit", "40s", "--nemesis-interval", "2s", "--seed"}
	p1, err := flagPlan(append(args, "11")...)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := flagPlan(append(args, "11")...)
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
	if p3, _ := flagPlan(append(args, "12")...); bytes.Equal(p1.JSON(), p3.JSON()) {
		t.Fatal("seeds 11 and 12 gave the same plan")
	}
	// The lock-aware knobs: a fixed persistence is kept by every kill and
	// restart; the workload's hold and acquire timeout reach the plan.
	pf, err := flagPlan("--lock", "redlock", "--nemesis", "partition,restart,kill", "--time-limit", "40s", "--persistence", "aof-always",
		"--hold", "0.8ttl,0.9ttl", "--acquire-timeout", "6s", "--ttl", "3s", "--seed", "3")
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
	p, err := flagPlan("--nemesis", "clock", "--time-limit", "20s", "--seed", "1")
	if err != nil || !p.Faults[0].Fault.NeedsNodeClock() {
		t.Fatalf("clock plan: %v", err)
	}
}

// TestFlagsAskTheProvider: the schedule is drawn against what the
// provider says it can do; a kind it cannot take is refused, naming the
// flag, the kind and the provider, and Run refuses a plan file the same
// way before it starts anything.
func TestFlagsAskTheProvider(t *testing.T) {
	cfg := `{"topology": "independent:3",
	  "nodes": {"n1": {"addr": "127.0.0.1:1"}, "n2": {"addr": "127.0.0.1:2"}, "n3": {"addr": "127.0.0.1:3"}},
	  "toxiproxy": "http://127.0.0.1:9", "links": {"c0->n1": {}},
	  "persistence": "aof-always",
	  "hooks": {"kill": "true", "start": "true"}}`
	file := filepath.Join(t.TempDir(), "external.json")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--lock", "redlock", "--nodes", "3", "--external", file, "--time-limit", "20s", "--seed", "1", "--nemesis"}
	_, err := flagPlan(append(args, "partition,pause")...)
	if !errors.Is(err, runner.ErrPlan) || !strings.HasSuffix(err.Error(), "--nemesis: generate: pause: needs a provider that can pause/resume nodes; the external provider can kill/start") {
		t.Fatalf("pause on an external deployment without pause hooks: %v", err)
	}
	p, err := flagPlan(append(args, "partition,kill")...)
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
	out, err := runner.Run(t.Context(), p, runner.Options{Store: t.TempDir()})
	if !errors.Is(err, runner.ErrPlan) || !strings.Contains(err.Error(), "faults[0] (pause): needs a provider that can pause/resume nodes") {
		t.Fatalf("Run of a pause on that deployment: %v", err)
	}
	if out != nil && out.Result != nil {
		t.Errorf("the refused run was checked: %+v", out.Result)
	}
}
