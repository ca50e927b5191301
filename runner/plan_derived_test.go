package runner

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	files, _ := filepath.Glob("../scenarios/catalog/*.json")
	hand, _ := filepath.Glob("testdata/plans/*.json")
	if len(files) == 0 || len(hand) == 0 {
		t.Fatal("no plans found")
	}
	for _, f := range append(files, hand...) {
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
				t.Fatal(err)
			}
			b = row.Plan
		}
		t.Run(name, func(t *testing.T) {
			p, err := ParsePlan(b, name)
			if err != nil {
				t.Fatal(err)
			}
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
		"check":              fmt.Sprintf("%+v", p.checkConfig()),
		"nemesis_setup":      fmt.Sprintf("%+v", setup),
		"nemesis_plan":       p.nemesisPlan(),
		"read_timeout":       p.readTimeout().String(),
		"node_args":          p.nodeArgs(),
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
