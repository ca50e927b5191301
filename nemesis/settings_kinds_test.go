package nemesis

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
)

// The memory, refuse-writes and reply-loss kinds: their rules, their
// draws, and what Run asks of the cluster.

func TestSettingsKindsValidate(t *testing.T) {
	ind3 := Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 3}, Clients: 2}
	sentinel := Setup{Topology: cluster.Topology{Kind: cluster.Replicated, N: 2, Sentinels: true}, Clients: 2}
	rcluster := Setup{Topology: cluster.Topology{Kind: cluster.RedisCluster, N: 3}, Clients: 2}
	external := ind3
	external.Provider, external.Controls = "external", cluster.CanKill
	noClients := ind3
	noClients.Clients = 0
	for _, tc := range []struct {
		name  string
		setup Setup
		step  string
		want  string // "" for valid
	}{
		{"memory", ind3, `{"fault":"memory","nodes":["n1"],"policy":"volatile-ttl","for":"1s"}`, ""},
		{"memory strobe", ind3, `{"fault":"memory","nodes":["n1"],"policy":"allkeys-lru","strobe":"100ms","for":"1s"}`, ""},
		{"memory on a lease", ind3, `{"fault":"memory","node":"lease","key":"k","trigger":"grant","policy":"noeviction","for":"1s"}`, ""},
		{"memory without a policy", ind3, `{"fault":"memory","nodes":["n1"],"for":"1s"}`, `[0].policy is missing`},
		{"memory unknown policy", ind3, `{"fault":"memory","nodes":["n1"],"policy":"lru","for":"1s"}`, `[0].policy: unknown maxmemory-policy "lru"`},
		{"memory strobe under noeviction", ind3, `{"fault":"memory","nodes":["n1"],"policy":"noeviction","strobe":"100ms","for":"1s"}`, `[0].strobe: pushes an evicting policy's node over its limit; under noeviction the node is full already`},
		{"memory strobe past for", ind3, `{"fault":"memory","nodes":["n1"],"policy":"volatile-ttl","strobe":"2s","for":"1s"}`, `[0].strobe: "2s" must be positive and shorter than [0].for "1s"`},
		{"memory refused by the provider", external, `{"fault":"memory","nodes":["n1"],"policy":"volatile-ttl","for":"1s"}`, `[0] (memory): needs a provider that can config nodes; the external provider can kill/start`},
		{"memory takes no refusal", ind3, `{"fault":"memory","nodes":["n1"],"policy":"volatile-ttl","refusal":"misconf","for":"1s"}`, `[0].refusal: does not apply to memory`},
		{"misconf", sentinel, `{"fault":"refuse-writes","node":"primary","refusal":"misconf","for":"1s"}`, ""},
		{"readonly", ind3, `{"fault":"refuse-writes","nodes":["n2"],"refusal":"readonly","for":"1s"}`, ""},
		{"no refusal", ind3, `{"fault":"refuse-writes","nodes":["n2"],"for":"1s"}`, `[0].refusal is missing: misconf or readonly`},
		{"unknown refusal", ind3, `{"fault":"refuse-writes","nodes":["n2"],"refusal":"oom","for":"1s"}`, `[0].refusal: unknown refusal "oom"`},
		{"readonly under Sentinels", sentinel, `{"fault":"refuse-writes","node":"primary","refusal":"readonly","for":"1s"}`, `[0].refusal: "readonly" demotes a primary, which the Sentinels of replicated:2+sentinels would act on`},
		{"readonly in a Redis Cluster", rcluster, `{"fault":"refuse-writes","nodes":["n1"],"refusal":"readonly","for":"1s"}`, `[0].refusal: "readonly" demotes a primary, which a Redis Cluster`},
		{"refused by the provider", external, `{"fault":"refuse-writes","nodes":["n1"],"refusal":"misconf","for":"1s"}`, `[0] (refuse-writes): needs a provider that can config nodes`},
		{"reply loss", ind3, `{"fault":"reply-loss","nodes":["n1"],"for":"1s"}`, ""},
		{"reply delay", ind3, `{"fault":"reply-loss","nodes":["n1"],"latency":"300ms","jitter":"100ms","for":"1s"}`, ""},
		{"reply loss without clients", noClients, `{"fault":"reply-loss","nodes":["n1"],"for":"1s"}`, `[0] (reply-loss): the run has no clients`},
		{"reply jitter alone", ind3, `{"fault":"reply-loss","nodes":["n1"],"jitter":"100ms","for":"1s"}`, `[0].jitter: needs a [0].latency`},
		{"reply jitter past the latency", ind3, `{"fault":"reply-loss","nodes":["n1"],"latency":"10ms","jitter":"100ms","for":"1s"}`, `[0].jitter: "100ms" must be between 0 and the latency`},
		{"reply loss takes no direction", ind3, `{"fault":"reply-loss","nodes":["n1"],"direction":"upstream","for":"1s"}`, `[0].direction: does not apply to reply-loss`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mustPlan(t, `{"steps":[`+tc.step+`]}`).Validate(tc.setup)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestSettingsKindsOverlap(t *testing.T) {
	ind3 := Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 3}, Clients: 2}
	rep := Setup{Topology: cluster.Topology{Kind: cluster.Replicated, N: 2}, Clients: 2}
	for _, tc := range []struct {
		name, plan, want string
		setup            Setup
	}{
		{"two squeezes of a node", `{"steps":[{"at":"0s","fault":"memory","nodes":["n1"],"policy":"volatile-ttl","for":"1s"},
			{"at":"500ms","fault":"memory","nodes":["n1"],"policy":"noeviction","for":"1s"}]}`, "a node takes one memory step at a time", ind3},
		{"squeezes of two nodes", `{"steps":[{"at":"0s","fault":"memory","nodes":["n1"],"policy":"volatile-ttl","for":"1s"},
			{"at":"500ms","fault":"memory","nodes":["n2"],"policy":"noeviction","for":"1s"}]}`, "", ind3},
		{"a squeeze and a refusal of a node", `{"steps":[{"at":"0s","fault":"memory","nodes":["n1"],"policy":"volatile-ttl","for":"1s"},
			{"at":"500ms","fault":"refuse-writes","nodes":["n1"],"refusal":"misconf","for":"1s"}]}`, "", ind3},
		{"a refusal during a failover", `{"steps":[{"at":"0s","fault":"failover","via":"promote","nodes":["r1"],"for":"1s"},
			{"at":"0s","fault":"refuse-writes","nodes":["p"],"refusal":"readonly","for":"1s"}]}`, "a node's settings cannot be changed during a failover", rep},
	} {
		err := mustPlan(t, tc.plan).Validate(tc.setup)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Aimed at the lock, memory is mostly volatile-ttl (the policy that evicts
// a lock key first), refuse-writes and reply-loss last past the holder's
// release, and every one waits for a grant; readonly is never drawn where
// the topology cannot demote a node.
func TestSettingsKindsDraw(t *testing.T) {
	for _, topo := range []string{"independent:1", "replicated:2+sentinels", "cluster:3"} {
		o := genOptions(t, topo, "tumbler:0", 2)
		hold := o.Hold.Max().Resolve(0)
		counts := map[string]int{}
		for seed := int64(0); seed < 60; seed++ {
			p, err := Generate(seed, []Kind{Memory, RefuseWrites, ReplyLoss}, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range p.Steps {
				leased := st.Trigger == TriggerGrant
				counts[string(st.Fault)]++
				switch st.Fault {
				case Memory:
					counts["memory "+st.Policy]++
				case RefuseWrites:
					counts["refuse "+string(st.Refusal)]++
					if st.Refusal == cluster.RefuseReadonly && demotable(o.Topology) != nil {
						t.Fatalf("%s seed %d: readonly drawn where it cannot be", topo, seed)
					}
					if leased && st.For.Resolve(o.TTL) < o.Hold.Min().Resolve(0) {
						t.Errorf("%s seed %d: a refusal aimed at the lease ends (%v) before the holder releases", topo, seed, st.For)
					}
				case ReplyLoss:
					if leased && st.For.Resolve(o.TTL) < hold {
						t.Errorf("%s seed %d: a reply loss aimed at the lease ends (%v) before the holder releases (%v)", topo, seed, st.For, hold)
					}
				}
				if leased {
					counts["leased"]++
				}
			}
		}
		t.Logf("%s: %v", topo, counts)
		total := counts["memory"] + counts["refuse-writes"] + counts["reply-loss"]
		for _, p := range cluster.MemoryPolicies {
			if p != "volatile-ttl" && counts["memory "+p]*2 > counts["memory volatile-ttl"] {
				t.Errorf("%s: %d memory steps under %s, %d under volatile-ttl; want volatile-ttl far the most", topo, counts["memory "+p], p, counts["memory volatile-ttl"])
			}
		}
		if counts["leased"]*2 < total {
			t.Errorf("%s: %d of %d steps aimed at the lease; want most", topo, counts["leased"], total)
		}
		if counts["memory"] == 0 || counts["reply-loss"] == 0 || counts["refuse-writes"] == 0 {
			t.Errorf("%s: a kind never drawn: %v", topo, counts)
		}
		if demotable(o.Topology) == nil && counts["refuse readonly"] == 0 {
			t.Errorf("%s: readonly never drawn", topo)
		}
	}
}

// Run squeezes, pushes on time and restores; refuses and accepts; and
// drops only the replies on every client's link to the node.
func TestRunSettingsKinds(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:2", 2)
	s := newSink()
	plan := mustPlan(t, `{"ttl":"200ms","steps":[
		{"at":"0s","fault":"memory","nodes":["n1"],"policy":"volatile-ttl","strobe":"100ms","for":"350ms"},
		{"at":"0s","fault":"refuse-writes","nodes":["n2"],"refusal":"misconf","for":"200ms"},
		{"at":"100ms","fault":"reply-loss","nodes":["n2"],"for":"200ms"},
		{"at":"400ms","fault":"reply-loss","nodes":["n1"],"latency":"50ms","for":"100ms"}
	]}`)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), plan, fakeEnv(f, nil, nil), s) }()
	s.wait(t, history.Start, "f3", 2*time.Second)
	tox := f.Toxics()
	if tox["c0->n2"]["cut-downstream"] != "blackhole" || tox["c1->n2"]["cut-downstream"] != "blackhole" || tox["c0->n2"]["cut-upstream"] != "" {
		t.Errorf("reply loss: %v", tox)
	}
	s.wait(t, history.Start, "f4", 2*time.Second)
	if tox := f.Toxics(); tox["c0->n1"]["delay-downstream"] != "50ms±0s" || tox["c0->n1"]["delay-upstream"] != "" {
		t.Errorf("reply delay: %v", tox)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, c := range f.Calls() {
		if w := strings.Fields(c)[0]; slices.Contains([]string{"squeeze", "push", "unsqueeze", "refuse", "accept"}, w) {
			mine = append(mine, c)
		}
	}
	want := []string{"squeeze n1 volatile-ttl", "push n1", "refuse n2 misconf", "push n1", "accept n2", "push n1", "push n1", "unsqueeze n1"}
	if !slices.Equal(mine, want) {
		t.Errorf("calls %q, want %q", mine, want)
	}
	var descs []string
	for _, op := range s.Ops() {
		if op.F == history.Start {
			descs = append(descs, op.Fault.Desc)
		}
	}
	for i, w := range []string{"fill n1's memory under volatile-ttl for 350ms, pushing it over the limit every 100ms",
		"make n2 refuse every write with MISCONF (a save failed) for 200ms",
		"cut n2 from every client for 200ms (blackhole, replies only)",
		"delay every client's link to n1 by 50ms ± 0s for 100ms (replies only)"} {
		if i >= len(descs) || descs[i] != w {
			t.Errorf("sentence %d: %q, want %q", i+1, descs, w)
		}
	}
	if len(f.Toxics()) != 0 {
		t.Errorf("after the plan: %v", f.Toxics())
	}
}

// A memory step triggered by a grant pushes at once, on the node the
// lease rests on, and then every strobe until its heal.
func TestRunMemoryOnAGrantPushesAtOnce(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:1", 2)
	f.setValue("n1", "k", "v1")
	o := newFakeOracle()
	s := newSink()
	plan := mustPlan(t, `{"steps":[{"at":"0s","trigger":"grant","key":"k","fault":"memory","node":"lease","policy":"volatile-ttl","strobe":"100ms","for":"250ms"}]}`)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), plan, fakeEnv(f, nil, o), s) }()
	<-o.waiting
	o.grants <- 1
	s.wait(t, history.Start, "f1", 2*time.Second)
	if calls := f.Calls(); !slices.Equal(calls, []string{"squeeze n1 volatile-ttl", "push n1"}) {
		t.Errorf("calls when the step applies: %q, want the squeeze and a push at once", calls)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if calls := f.Calls(); !slices.Equal(calls, []string{"squeeze n1 volatile-ttl", "push n1", "push n1", "push n1", "unsqueeze n1"}) {
		t.Errorf("calls: %q", calls)
	}
}
