package runner

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/workloads"
)

var updateCheckers = flag.Bool("update-checkers", false, "rewrite testdata/checkers-run.json from the checkers plans run now")

// checkersRunFile pins, for every guarded plan (catalog rows, the plans
// under testdata/plans) and for every lock variant (a watchdog around each
// lock it can wrap) under every workload kind it takes, the checkers that
// run on it. It was recorded from the checkers' configuration before the
// variants declared their traits (when the runner compared variant names):
// a change of what a plan's checkers are is deliberate, recorded with
// -update-checkers and reviewed.
const checkersRunFile = "testdata/checkers-run.json"

func TestCheckersRun(t *testing.T) {
	got := map[string]checkersRecord{}
	plans := guardedPlans(t)
	for name, p := range variantPlans(t) {
		plans[name] = p
	}
	for name, p := range plans {
		got[name] = checkersOf(t, p)
	}
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *updateCheckers {
		if err := os.WriteFile(checkersRunFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(checkersRunFile)
	if err != nil {
		t.Fatal(err)
	}
	var recorded map[string]checkersRecord
	if err := json.Unmarshal(want, &recorded); err != nil {
		t.Fatal(err)
	}
	for name, now := range got {
		rec, ok := recorded[name]
		if !ok {
			t.Errorf("%s: not recorded in %s (a new plan or variant? record it with -update-checkers)", name, checkersRunFile)
			continue
		}
		if strings.Join(rec.Run, " ") != strings.Join(now.Run, " ") || rec.Reentrant != now.Reentrant || rec.Permits != now.Permits {
			t.Errorf("%s: now %+v, recorded %+v", name, now, rec)
		}
	}
	for name := range recorded {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: recorded in %s but no longer a plan (record with -update-checkers)", name, checkersRunFile)
		}
	}
	if !bytes.Equal(want, b) && !t.Failed() {
		t.Errorf("%s differs in form only: record it with -update-checkers", checkersRunFile)
	}
}

// checkersRecord is what the checkers make of a plan's history: the
// checkers that run on it (not skipped), in the order they run, and what
// else the checkers' configuration says of the history besides choosing
// checkers: whether holds nest, a semaphore's permits.
type checkersRecord struct {
	Run       []string `json:"run"`
	Reentrant bool     `json:"reentrant,omitempty"`
	Permits   int      `json:"permits,omitempty"`
}

func checkersOf(t *testing.T, p Plan) checkersRecord {
	t.Helper()
	cfg := p.Normalize().checkConfig()
	res, err := checker.Check(nil, cfg)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	rec := checkersRecord{Run: []string{}, Reentrant: cfg.Reentrant, Permits: cfg.Permits}
	for _, c := range res.Checkers {
		if !c.Skipped {
			rec.Run = append(rec.Run, c.Name)
		}
	}
	return rec
}

// guardedPlans are the plans the plan guards keep, by guard name: each
// catalog row's ("catalog-<row>") and each under testdata/plans
// ("plan-<file>").
func guardedPlans(t *testing.T) map[string]Plan {
	t.Helper()
	rows, _ := filepath.Glob("../scenarios/catalog/*.json")
	hand, _ := filepath.Glob("testdata/plans/*.json")
	if len(rows) == 0 || len(hand) == 0 {
		t.Fatal("no plans found")
	}
	out := map[string]Plan{}
	for _, f := range append(rows, hand...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := "plan-" + strings.TrimSuffix(filepath.Base(f), ".json")
		if strings.Contains(f, "catalog") {
			name = "catalog-" + strings.TrimSuffix(filepath.Base(f), ".json")
			var row struct {
				Plan json.RawMessage `json:"plan"`
			}
			if err := json.Unmarshal(b, &row); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			b = row.Plan
		}
		p, err := ParsePlan(b, name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = p.FromRepository() // a row's client directory of contrib/, as the catalog finds it
	}
	return out
}

// variantPlans are a plan for every built-in variant (and a watchdog
// around every lock) under every workload kind, "variant-<lock>-<kind>",
// those that validate.
func variantPlans(t *testing.T) map[string]Plan {
	t.Helper()
	var locks []variants.Options
	for _, n := range builtinVariants() {
		locks = append(locks, variants.Options{Variant: n})
		if info, _ := variants.Lookup(n); info.Kind == lock.KindLock && !info.Wraps {
			locks = append(locks, variants.Options{Variant: "watchdog", Inner: n})
		}
	}
	out := map[string]Plan{}
	for _, o := range locks {
		for _, kind := range []workloads.Kind{workloads.Mutex, workloads.FencedWrite, workloads.Counter, workloads.Latch} {
			p := basePlan(t, "")
			p.Lock.Options, p.Workload.Kind = o, kind
			if kind == workloads.Latch {
				p.Workload.Latch = &workloads.LatchSpec{Count: 2, Counters: 2, Round: span(t, "2s")}
			}
			if (variants.Spec{Options: o}).AllNodes() {
				p.Topology, _ = cluster.ParseTopology("independent:3")
			}
			name := "variant-" + o.Variant
			if o.Inner != "" {
				name += "(" + o.Inner + ")"
			}
			p.Name = name + "-" + string(kind)
			if p.Validate() == nil {
				out[p.Name] = p
			}
		}
	}
	for _, n := range builtinVariants() {
		if _, ok := out["variant-"+n+"-"+string(workloads.Mutex)]; !ok {
			if _, ok := out["variant-"+n+"-"+string(workloads.Latch)]; !ok {
				t.Fatalf("no plan of variant %s validates", n)
			}
		}
	}
	return out
}

// builtinVariants are the variants but those tests register.
func builtinVariants() []string {
	return slices.DeleteFunc(variants.BuiltHere(), func(n string) bool { return strings.HasPrefix(n, registeredPrefix) })
}
