package runner

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// check.linearizability bounds the linearizability checker; the
// linearizability_timeout of older plans is migrated to it.
func TestCheckPlanLinearizability(t *testing.T) {
	base := string(basePlan(t, "lin").JSON())
	withCheck := func(check string) string {
		return strings.Replace(base, `"time_limit"`, `"check": `+check+`, "time_limit"`, 1)
	}
	p, err := ParsePlan([]byte(withCheck(`{"linearizability": {"memory": "2GiB", "timeout": "90s"}}`)), "new.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.checkConfig()
	if cfg.LinearizabilityMemory != 2<<30 || cfg.LinearizabilityTimeout != 90*time.Second {
		t.Fatalf("config %+v", cfg)
	}
	if out := string(p.JSON()); !strings.Contains(out, `"memory": "2GiB"`) || !strings.Contains(out, `"timeout": "90s"`) {
		t.Fatalf("plan.json:\n%s", out)
	}

	old, err := ParsePlan([]byte(withCheck(`{"linearizability_timeout": "45s", "liveness_k": 4}`)), "old.json")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := old.checkConfig(); cfg.LinearizabilityTimeout != 45*time.Second || cfg.LivenessK != 4 || cfg.LinearizabilityMemory != 0 {
		t.Fatalf("old plan: config %+v", cfg)
	}
	if out := string(old.JSON()); strings.Contains(out, "linearizability_timeout") || !strings.Contains(out, `"timeout": "45s"`) {
		t.Fatalf("the old field is not migrated:\n%s", out)
	}
	if _, err := ParsePlan([]byte(withCheck(`{"linearizability_timeout": "45s", "linearizability": {"timeout": "45s"}}`)), "both.json"); err != nil {
		t.Fatalf("both names, same value: %v", err)
	}

	for _, c := range []struct{ check, want string }{
		{`{"linearizability_timeout": "45s", "linearizability": {"timeout": "60s"}}`, "disagree"},
		{`{"linearizability": {"memory": "lots"}}`, `size "lots"`},
		{`{"linearizability": {"memory": "-1GiB"}}`, "non-negative"},
		{`{"linearizability": {"memroy": "1GiB"}}`, `unknown field "memroy"`},
		{`{"linearizability_timeuot": "1s"}`, `unknown field "linearizability_timeuot"`},
	} {
		_, err := ParsePlan([]byte(withCheck(c.check)), "bad.json")
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("%s: %v, want a plan error saying %q", c.check, err, c.want)
		}
	}
	bad, err := ParsePlan([]byte(withCheck(`{"linearizability": {"timeout": "-1s"}}`)), "neg.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "linearizability.timeout") {
		t.Errorf("negative timeout: %v", err)
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{
		"1048576": 1 << 20, "512MiB": 512 << 20, "1.5GiB": 3 << 29, "2GB": 2e9, "64 KiB": 64 << 10, "0": 0, "100B": 100,
	} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("%q: %d (%v), want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "1XB", "-5", "1e30GiB", "NaN"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	for b, want := range map[ByteSize]string{1 << 30: "1GiB", 3 << 29: "1536MiB", 1000: "1000B", 2048: "2KiB", 0: "0B"} {
		if got := b.String(); got != want {
			t.Errorf("%d: %q, want %q", int64(b), got, want)
		}
	}
}

// TestClusterPlanRules: a Redis Cluster takes one-node locks whose keys
// share a slot, WAIT up to its replicas per shard, and no Redlock.
func TestClusterPlanRules(t *testing.T) {
	plan := func(lock string) string {
		return `{"seed":1,"topology":"cluster:3+1","ttl":"2s","lock":` + lock +
			`,"workload":{"kind":"fenced-write","clients":2,"hold":["0.1ttl","0.2ttl"]},"time_limit":"2s"}`
	}
	for lock, want := range map[string]string{
		`{"variant":"single"}`: "",
		`{"variant":"single","wait_replicas":1,"wait_timeout":"100ms"}`: "",
		`{"variant":"reentrant"}`:                                       "",
		`{"variant":"watchdog","inner":"fenced"}`:                       "topology: lock watchdog touches keys in different hash slots in one script, which a Redis Cluster (topology cluster:3+1) refuses with CROSSSLOT",
		`{"variant":"fenced"}`:                                          "topology: lock fenced touches keys in different hash slots",
		`{"variant":"single","wait_replicas":2,"wait_timeout":"100ms"}`: "topology: lock wait_replicas 2 needs a replicated topology, or a cluster with shards, with at least that many replicas",
		`{"variant":"redlock"}`:                                         "topology: lock redlock needs independent masters",
	} {
		p, err := ParsePlan([]byte(plan(lock)), "cluster.json")
		if err == nil {
			err = p.Validate()
		}
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", lock, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error with %q", lock, err, want)
		}
	}
}

// A field of the lock's or the workload's options (embedded from
// lock/variants and workloads) with the wrong JSON type is named by its path
// in the plan, without the Go types the plan is made of.
func TestPlanFieldTypeError(t *testing.T) {
	base := string(basePlan(t, "types").JSON())
	for _, tc := range []struct{ old, new, want string }{
		{`"variant": "single"`, `"variant": "single", "permits": "two"`, "plan field lock.permits of type int"},
		{`"clients": 3`, `"clients": "three"`, "plan field workload.clients of type int"},
		{`"seed": 1`, `"seed": "one"`, "plan field seed of type int64"},
	} {
		raw := strings.Replace(base, tc.old, tc.new, 1)
		if raw == base {
			t.Fatalf("%s is not in the plan:\n%s", tc.old, base)
		}
		_, err := ParsePlan([]byte(raw), "p.json")
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Options") {
			t.Errorf("%s: error %v, want one naming %q", tc.new, err, tc.want)
		}
	}
}

// Relative spans of the lock's options resolve against the plan's TTL, also
// for a client with its own lease.
func TestClientLockSpecResolvesAgainstPlanTTL(t *testing.T) {
	p := basePlan(t, "client-ttl")
	p.Lock.Variant, p.Lock.NodeTimeout = "rwlock", span(t, "0.1ttl")
	p.Workload.Clients = 2
	p.Lock.ClientTTL = []Span{span(t, "1s"), span(t, "3s")}
	for i, ttl := range []time.Duration{time.Second, 3 * time.Second} {
		s := p.clientLockSpec(i)
		if s.TTL != ttl || s.NodeTimeout.Relative() || s.NodeTimeout.Resolve(s.TTL) != 100*time.Millisecond {
			t.Errorf("client %d: spec TTL %v, node_timeout %v: want %v and 100ms", i, s.TTL, s.NodeTimeout, ttl)
		}
	}
}

// A lock that takes whole seconds (Info.WholeSeconds) refuses another TTL,
// named by the plan's field the TTL comes from: the plan's ttl, or a
// client's own lock.client_ttl[i].
func TestWholeSecondTTL(t *testing.T) {
	plan := func(ttl, clientTTL string) string {
		return `{"seed":1,"topology":"independent:1","ttl":"` + ttl + `","lock":{"variant":"go-zero"` + clientTTL +
			`},"workload":{"kind":"mutex","clients":2,"hold":["0.1ttl","0.2ttl"]},"time_limit":"2s"}`
	}
	for _, tc := range []struct{ plan, want string }{
		{plan("2s", ""), ""},
		{plan("2s", `,"client_ttl":["1s","3s"]`), ""},
		{plan("1500ms", ""), "ttl 1.5s: lock go-zero takes its TTL in whole seconds"},
		{plan("2s", `,"client_ttl":["1s","2.5s"]`), "lock.client_ttl[1] 2.5s: lock go-zero takes its TTL in whole seconds"},
	} {
		p, err := ParsePlan([]byte(tc.plan), "p.json")
		if err == nil {
			err = p.Validate()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.plan, err)
		case tc.want != "" && (!errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "lock.ttl")):
			t.Errorf("%s: %v, want a plan error with %q", tc.plan, err, tc.want)
		}
	}
}
