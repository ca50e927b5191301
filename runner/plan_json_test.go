package runner_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
)

var updateGolden = flag.Bool("update-plans", false, "rewrite testdata/plans-golden from the current Plan encoding")

// planSource is a plan as written by a person: a catalog row's or a
// hand-written one under testdata/plans.
type planSource struct {
	name string
	raw  []byte // the plan's JSON as written
}

func planSources(t *testing.T) []planSource {
	t.Helper()
	var out []planSource
	rows, err := filepath.Glob("../scenarios/catalog/*.json")
	if err != nil || len(rows) == 0 {
		t.Fatalf("no catalog rows found (%v)", err)
	}
	for _, f := range rows {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var row struct {
			Plan json.RawMessage `json:"plan"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, planSource{"catalog-" + strings.TrimSuffix(filepath.Base(f), ".json"), row.Plan})
	}
	hand, err := filepath.Glob("testdata/plans/*.json")
	if err != nil || len(hand) == 0 {
		t.Fatalf("no hand-written plans found (%v)", err)
	}
	for _, f := range hand {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, planSource{"plan-" + strings.TrimSuffix(filepath.Base(f), ".json"), b})
	}
	return out
}

// TestPlanJSONRoundTrip guards the plan's JSON: every catalog row's plan and
// every hand-written plan under testdata/plans reads, validates and writes
// back as the same document (the same fields with the same values, spans as
// written), writing is a fixed point of reading, and the bytes Plan.JSON
// writes are the ones recorded in testdata/plans-golden. A refactor of the
// plan's types (where a field's type lives, how a range is held) must keep
// all three; a change of the plan format changes the golden files on
// purpose (go test ./runner -run PlanJSON -update-plans).
func TestPlanJSONRoundTrip(t *testing.T) {
	for _, src := range planSources(t) {
		t.Run(src.name, func(t *testing.T) {
			p, err := runner.ParsePlan(src.raw, src.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.FromRepository().Validate(); err != nil {
				t.Fatalf("the plan is not valid: %v", err)
			}
			out := p.JSON()

			// The same document as written.
			var want, got any
			if err := json.Unmarshal(src.raw, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Errorf("the plan does not write back as written:\nwritten: %s\nwrites:  %s", compact(t, src.raw), compact(t, out))
			}

			// Writing is a fixed point of reading.
			again, err := runner.ParsePlan(out, src.name+" (written back)")
			if err != nil {
				t.Fatalf("the written plan does not read: %v\n%s", err, out)
			}
			if b := again.JSON(); !bytes.Equal(b, out) {
				t.Errorf("reading the written plan and writing it again changes it:\nfirst:  %s\nsecond: %s", out, b)
			}

			// The bytes are the recorded ones.
			golden := filepath.Join("testdata", "plans-golden", src.name+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			rec, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (a new plan? record it with -update-plans)", err)
			}
			if !bytes.Equal(rec, out) {
				t.Errorf("Plan.JSON differs from %s:\nrecorded: %s\nwrites:   %s", golden, rec, out)
			}
		})
	}
}

// TestPlanJSONCatalogRows checks the catalog as the scenarios package loads
// it: each row's plan, written and read back, is the same plan (seed, name
// and description included), so a row replayed from a run's plan.json is
// the row.
func TestPlanJSONCatalogRows(t *testing.T) {
	all := scenarios.All()
	if len(all) == 0 {
		t.Fatal("the catalog is empty")
	}
	for _, s := range all {
		for _, p := range []runner.Plan{s.Plan, s.PlanFor(77)} {
			back, err := runner.ParsePlan(p.JSON(), s.Name)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			if !bytes.Equal(back.JSON(), p.JSON()) {
				t.Errorf("%s: the plan changes on a round trip:\nbefore: %s\nafter:  %s", s.Name, p.JSON(), back.JSON())
			}
			if err := back.Validate(); err != nil {
				t.Errorf("%s: the plan read back is not valid: %v", s.Name, err)
			}
		}
	}
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
