package runner

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// TestNormalizeDefaults: a plan that leaves everything out gets the
// defaults Normalize declares, a lock's kind brings its own, and what a
// plan gives is kept.
func TestNormalizeDefaults(t *testing.T) {
	p := Plan{}.Normalize()
	w, l := p.Workload, p.Lock
	if p.Name != "run" || p.Provider != "process" || l.Variant != "single" || p.Topology.String() != "independent:1" ||
		p.TTL.String() != "1s" || p.TimeLimit.String() != "10s" || l.ReadTimeout.String() != "1s" || l.Discovery != "" {
		t.Errorf("plan defaults: %s", p.JSON())
	}
	if w.Kind != workloads.FencedWrite || w.Mode != workloads.Processes || w.Clients != 4 || w.Keys != 1 || w.Retry != "wait" ||
		w.Nest != 1 || w.AcquireTimeout.String() != "1s" || w.OpTimeout.String() != "1s" || w.ReadFraction != nil || w.Latch != nil {
		t.Errorf("workload defaults: %s", p.JSON())
	}
	c := p.Check
	if c.LivenessK != checker.DefaultLivenessK || c.Linearizability.Memory != 1<<30 || c.Linearizability.Timeout.String() != "30s" {
		t.Errorf("check defaults: %s", p.JSON())
	}
	if err := p.Validate(); err != nil {
		t.Errorf("the plan of defaults is not valid: %v", err)
	}
	cfg := p.checkConfig()
	if cfg.LivenessK != 3 || cfg.LinearizabilityMemory != 1<<30 || cfg.LinearizabilityTimeout != 30*time.Second || p.readTimeout() != time.Second {
		t.Errorf("the engine reads %+v, read timeout %v", cfg, p.readTimeout())
	}

	lockOf := func(variant, inner string) Plan {
		return Plan{Lock: LockPlan{Options: variants.Options{Variant: variant, Inner: inner}}}.Normalize()
	}
	for _, c := range []struct{ variant, inner, topology string }{
		{"redlock", "", "independent:5"}, {"redsync", "", "independent:5"}, {"watchdog", "redlock", "independent:5"}, {"fenced", "", "independent:1"},
	} {
		if got := lockOf(c.variant, c.inner).Topology.String(); got != c.topology {
			t.Errorf("%s(%s): topology %s, want %s", c.variant, c.inner, got, c.topology)
		}
	}
	if n := lockOf("semaphore", "").Lock.Permits; n != 2 {
		t.Errorf("semaphore permits %d", n)
	}
	if f := lockOf("rwlock", "").Workload.ReadFraction; f == nil || *f != 0.75 {
		t.Errorf("rwlock read fraction %v", f)
	}
	latch := lockOf("latch", "")
	if lw := latch.Workload; lw.Kind != workloads.Latch || lw.Latch == nil || lw.Latch.Count != 2 || lw.Latch.Counters != 2 || lw.Latch.Round.String() != "4s" {
		t.Errorf("latch workload: %s", latch.JSON())
	}
	sentinels, _ := cluster.ParseTopology("replicated:1+sentinels")
	if d := (Plan{Topology: sentinels}).Normalize().Lock.Discovery; d != DiscoverySentinel {
		t.Errorf("discovery with Sentinels: %q", d)
	}

	// What a plan gives is kept, and the plan it came from is not changed.
	half := 0.5
	given := Plan{Name: "mine", Provider: "docker", Lock: LockPlan{Options: variants.Options{Variant: "rwlock"}, Discovery: DiscoveryFixed},
		Workload: workloads.Options{Kind: workloads.Mutex, Clients: 2, Keys: 3, Retry: "try", ReadFraction: &half}, Check: CheckPlan{LivenessK: 5}}
	before := given.JSON()
	n := given.Normalize()
	if n.Name != "mine" || n.Provider != "docker" || n.Workload.Clients != 2 || n.Workload.Keys != 3 || n.Workload.Retry != "try" ||
		*n.Workload.ReadFraction != 0.5 || n.Check.LivenessK != 5 || n.Lock.Discovery != DiscoveryFixed || n.Workload.Kind != workloads.Mutex {
		t.Errorf("given values not kept: %s", n.JSON())
	}
	if !bytes.Equal(given.JSON(), before) {
		t.Errorf("Normalize changed the plan it was given:\n%s\n%s", before, given.JSON())
	}
}

// Normalized is Normalize and then validation, of the normalized plan as
// adjust leaves it: a hold and a think time left out stay zero (values of
// their own), an adjustment is validated, and an invalid plan is refused
// with ErrPlan.
func TestNormalized(t *testing.T) {
	p := basePlan(t, "normalized")
	p.Workload.Hold = Range{}
	n, err := p.Normalized()
	if err != nil || !bytes.Equal(n.JSON(), p.Normalize().JSON()) || n.Workload.Hold != (Range{}) || n.Workload.Think != (Range{}) {
		t.Fatalf("Normalized: %v\n%s", err, n.JSON())
	}
	_, err = p.Normalized(func(q *Plan) { q.Workload.Hold = Range{span(t, "2ttl"), span(t, "1ttl")} })
	if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "workload.hold range [2s, 1s] is invalid") {
		t.Errorf("an invalid adjustment: %v", err)
	}
	p.Workload.Clients = -1
	if _, err := p.Normalized(); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "workload.clients") {
		t.Errorf("an invalid plan: %v", err)
	}
}

// A plan's field is checked by its own type and named by its JSON path:
// the lock's drift_factor (once only a flag's rule) is refused before
// anything starts.
func TestValidateNamesTheField(t *testing.T) {
	const base = `{"seed": 1, "topology": "independent:3", "ttl": "1s", "lock": {"variant": "redlock"},
	  "workload": {"kind": "fenced-write", "clients": 3, "hold": ["0.1ttl", "0.3ttl"]}, "time_limit": "2s"}`
	for _, c := range []struct{ old, new, want string }{
		{`"variant": "redlock"`, `"variant": "redlock", "drift_factor": 1.5`, "lock.drift_factor: 1.5 must be in [0, 1)"},
		{`"variant": "redlock"`, `"variant": "redlock", "drift_factor": -0.1`, "lock.drift_factor: -0.1 must be in [0, 1)"},
		{`"variant": "redlock"`, `"variant": "single", "wait_timeout": "1s"`, "lock.wait_timeout: 1s needs lock.wait_replicas"},
		{`"variant": "redlock"`, `"variant": "single", "wait_replicas": -1`, "lock.wait_replicas -1 is negative"},
		{`"variant": "redlock"`, `"variant": "redlock", "permits": 3`, "lock.permits applies only to semaphores, not redlock"},
		{`"variant": "redlock"`, `"variant": "redlock", "read_timeout": "-1s"`, "lock.read_timeout: -1s is negative"},
		{`"variant": "redlock"`, `"variant": "redlock", "client_ttl": ["1s"]`, "lock.client_ttl lists 1 leases for 3 clients"},
		{`"variant": "redlock"`, `"variant": "redlock", "tokens": ["a", "b", "c"]`, "lock.tokens applies only to redislock-token, not redlock"},
		{`"variant": "redlock"`, `"variant": "redislock-token", "tokens": ["a"]`, "lock.tokens lists 1 tokens for 3 clients"},
		{`"variant": "redlock"`, `"variant": "redislock-token", "tokens": ["a", "", "c"]`, "lock.tokens[1] is empty"},
		{`"clients": 3`, `"clients": -1`, "workload.clients = -1, want 1 to 10000 clients"},
		{`["0.1ttl", "0.3ttl"]`, `["0.3ttl", "0.1ttl"]`, "workload.hold range [300ms, 100ms] is invalid"},
		{`"clients": 3`, `"clients": 3, "retry": "spin"`, `workload.retry "spin" unknown`},
		{`"clients": 3`, `"clients": 3, "read_fraction": 0.5`, "workload.read_fraction and client_read_fraction apply only to a read-write lock"},
		{`"time_limit": "2s"`, `"time_limit": "2s", "persistence": "rdb"`, `persistence: unknown persistence "rdb"`},
		{`"time_limit": "2s"`, `"time_limit": "2s", "check": {"liveness_k": -1}`, "check.liveness_k: -1 is negative"},
		{`"time_limit": "2s"`, `"time_limit": "2s", "check": {"skip": ["nope"]}`, `check.skip: unknown checker "nope"`},
		{`"time_limit": "2s"`, `"time_limit": "2s", "faults": [{"at": "1s", "fault": "kill", "nodes": ["n1"], "for": "1s"}, {"at": "1s", "fault": "pause", "nodes": ["n9"], "for": "1s"}]`, `faults[1].nodes[0]: no node "n9" in independent:`},
	} {
		raw := strings.Replace(base, c.old, c.new, 1)
		p, err := ParsePlan([]byte(raw), "p.json")
		if err != nil {
			t.Fatalf("%s: %v", c.new, err)
		}
		err = p.Validate()
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrPlan saying %q", c.new, err, c.want)
		}
	}
	// A topology is checked by cluster.Topology.
	p := basePlan(t, "topology")
	p.Topology = cluster.Topology{Kind: cluster.Independent, N: 99}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "topology: independent needs 1 to 15 masters, got 99") {
		t.Errorf("99 masters: %v", err)
	}

	// Refused by Run before anything starts: no cluster, no run directory.
	p, err := ParsePlan([]byte(strings.Replace(base, `"variant": "redlock"`, `"variant": "redlock", "drift_factor": 1.5`, 1)), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	out, err := Run(t.Context(), p, Options{Store: store})
	if !errors.Is(err, ErrPlan) || out != nil || !strings.Contains(err.Error(), "lock.drift_factor") {
		t.Fatalf("Run of drift_factor 1.5: %v (outcome %v)", err, out)
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("the refused run left %d entries in the store", len(entries))
	}
}

// A draw is checked before a schedule is drawn, naming its field; a time
// limit too short for a fault names the time limit and the interval.
func TestDrawNamesTheField(t *testing.T) {
	for _, c := range []struct {
		d    Draw
		want string
	}{
		{Draw{Kinds: []nemesis.Kind{"meteor"}}, `draw.kinds: unknown fault "meteor"`},
		{Draw{Kinds: []nemesis.Kind{nemesis.Kill}, Interval: spans.Fixed(-time.Second)}, "draw.interval: -1s is negative"},
		{Draw{Kinds: []nemesis.Kind{nemesis.Kill}, Interval: spans.TTLs(-0.5)}, "draw.interval: -0.5ttl is negative"},
		{Draw{Interval: spans.Fixed(time.Second)}, "draw.interval: needs draw.kinds"},
		{Draw{Kinds: []nemesis.Kind{nemesis.Kill}, Concurrency: -1}, "draw.concurrency: -1: at least one fault"},
	} {
		if err := c.d.Validate(); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.d, err, c.want)
		}
	}
	if err := (Draw{}).Validate(); err != nil {
		t.Errorf("no draw: %v", err)
	}
	p := drawPlan(t, "single", 2)
	p.TimeLimit = span(t, "1s")
	_, err := p.WithDrawnFaults(1, Draw{Kinds: []nemesis.Kind{nemesis.Kill}, Interval: spans.Fixed(4 * time.Second)})
	if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "time_limit: no fault fits in 1s after the lead-in of half draw.interval") {
		t.Errorf("no room for a fault: %v", err)
	}
}
