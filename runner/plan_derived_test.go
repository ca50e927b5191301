package runner

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/lock"
)

var updateDerived = flag.Bool("update-derived", false, "rewrite testdata/plans-derived from what plans resolve to now")

// TestPlanDerived guards what a plan means, not only how it is written:
// for every catalog row's plan and every plan under testdata/plans, the
// lock spec of each client, the workload configuration, the checkers'
// configuration and the fault validator's setup the plan resolves to are
// the ones recorded in testdata/plans-derived. A refactor of the plan's
// types must keep them (go test ./runner -run PlanDerived -update-derived
// records a deliberate change).
func TestPlanDerived(t *testing.T) {
	plans := guardedPlans(t)
	for _, name := range slices.Sorted(maps.Keys(plans)) {
		p := plans[name]
		t.Run(name, func(t *testing.T) {
			got := derived(t, p)
			golden := filepath.Join("testdata", "plans-derived", name+".json")
			if *updateDerived {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (a new plan? record it with -update-derived)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("what the plan resolves to differs from %s:\nrecorded: %s\nnow:      %s", golden, want, got)
			}
		})
	}
}

func derived(t *testing.T, p Plan) []byte {
	t.Helper()
	p = p.Normalize()
	var specs []any
	for i := 0; i < p.Workload.Clients; i++ {
		specs = append(specs, p.clientLockSpec(i))
	}
	wc, err := p.workloadConfig(nil)
	if err != nil {
		t.Fatalf("workload: %v", err)
	}
	setup := p.nemesisSetup(nil)
	out := map[string]any{
		"plan_with_defaults": json.RawMessage(p.JSON()),
		"lock_specs":         specs,
		"lock_desc":          p.LockDesc(),
		"workload":           wc,
		"check":              checkRecord(p.checkConfig()),
		"nemesis_setup":      fmt.Sprintf("%+v", setup),
		"nemesis_plan":       p.nemesisPlan(),
		"read_timeout":       p.readTimeout().String(),
		"node_args":          p.nodeArgs(),
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// A row's client directory of the repository (Plan.FromRepository)
	// is recorded from the repository's root, wherever the checkout is.
	if root, err := filepath.Abs(".."); err == nil {
		b = bytes.ReplaceAll(b, []byte(root+string(filepath.Separator)), nil)
	}
	return append(b, '\n')
}

// checkRecord renders the checkers' configuration as plans-derived has
// recorded it since before checker.Subject replaced checker.Config's seven
// flags (Fenced, Counter, Reentrant, ReadWrite, Fair, Permits, Latch): the
// records stay byte-identical, so they pin that every guarded plan's
// subject is the configuration it resolved to when the runner compared
// variant names. (checkers-run.json pins the checkers that run.)
func checkRecord(c checker.Config) string {
	return fmt.Sprintf("{TTL:%v LivenessK:%v LinearizabilityTimeout:%v LinearizabilityMemory:%v "+
		"Fenced:%v Counter:%v Reentrant:%v ReadWrite:%v Fair:%v Permits:%v Latch:%v MaxAnomalies:%v Skip:%v}",
		c.TTL, c.LivenessK, c.LinearizabilityTimeout, c.LinearizabilityMemory,
		c.Fenced, c.Counter, c.Reentrant, c.Shape == lock.KindReadWrite, c.Fair, c.Permits, c.Shape == lock.KindLatch,
		c.MaxAnomalies, c.Skip)
}
