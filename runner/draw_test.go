package runner

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

// TestDrawnFaultsArmTheLocksOwnSteps: a drawn schedule arms the steps the
// lock reports (a watchdog: its inner lock's) as well as the workload's,
// and no other; a step on the way to a grant is armed on every client at
// once, a step of the release on the holder of a grant.
func TestDrawnFaultsArmTheLocksOwnSteps(t *testing.T) {
	t.Parallel()
	for lock, want := range map[string]string{"setnx-expire": "after-setnx", "check-then-del": "between-get-and-del", "watchdog": "granted", "reentrant": ""} {
		p := drawPlan(t, lock, 3)
		seen := map[string]int{}
		for seed := int64(1); seed <= 20; seed++ {
			q, err := p.WithDrawnFaults(seed, Draw{Kinds: []nemesis.Kind{nemesis.StepCrash}})
			if err != nil {
				t.Fatalf("%s seed %d: %v", lock, seed, err)
			}
			for _, f := range q.Faults {
				seen[f.LockStep]++
				if strings.HasPrefix(f.LockStep, "workload:") || f.Clients != nil && len(f.Clients) == 1 {
					continue
				}
				grantStep := f.LockStep == "after-setnx" || f.LockStep == "granted"
				if grantStep != (len(f.Clients) == 3) || grantStep == (f.Client == nemesis.Holder) {
					t.Errorf("%s seed %d: step %q armed on clients %v / %q", lock, seed, f.LockStep, f.Clients, f.Client)
				}
			}
		}
		for step := range seen {
			if step != want && !strings.HasPrefix(step, "workload:") {
				t.Errorf("%s: armed at %q, a step it does not report", lock, step)
			}
		}
		if want != "" && seen[want] == 0 {
			t.Errorf("%s: never armed at its step %q (armed: %v)", lock, want, seen)
		}
	}
}

// drawPlan is a normalized plan of lock with clients, a TTL of 1 s and a
// time limit of 20 s, the hold and think times the command line's.
func drawPlan(t *testing.T, lock string, clients int) Plan {
	t.Helper()
	p := Plan{Lock: LockPlan{Options: variants.Options{Variant: lock}}, TTL: span(t, "1s"), TimeLimit: span(t, "20s"),
		Workload: workloads.Options{Clients: clients, Hold: Range{span(t, "0.1ttl"), span(t, "0.4ttl")}, Think: Range{span(t, "0"), span(t, "0.05ttl")}}}
	return p.Normalize()
}

// TestLatchDrawsUnaimed: a latch grants nothing, so no drawn step waits
// for a grant or targets a holder (each would wait for a grant that never
// comes and be skipped).
func TestLatchDrawsUnaimed(t *testing.T) {
	raw, err := os.ReadFile("../scenarios/catalog/latch-failover.json")
	if err != nil {
		t.Fatal(err)
	}
	var row struct{ Plan json.RawMessage }
	if err := json.Unmarshal(raw, &row); err != nil {
		t.Fatal(err)
	}
	base, err := ParsePlan(row.Plan, "latch-failover")
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 20; seed++ {
		p := base
		p.Seed = seed
		steps, err := p.drawFaults(Draw{Kinds: []nemesis.Kind{nemesis.Failover}})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range steps {
			if st.Trigger != "" || st.Client == nemesis.Holder {
				t.Fatalf("seed %d: a latch plan drew a step aimed at a grant: %+v", seed, st)
			}
		}
	}
}
