package runner_test

import (
	"bytes"
	"testing"

	"github.com/tumbler-dev/tumbler/runner"
)

// TestNormalizeIsAFixedPoint: for every catalog row's plan and every plan
// under testdata/plans, the normalized plan is valid, and normalizing it
// again or reading its JSON back changes nothing: a run's plan.json is the
// plan it ran.
func TestNormalizeIsAFixedPoint(t *testing.T) {
	for _, src := range planSources(t) {
		p, err := runner.ParsePlan(src.raw, src.name)
		if err != nil {
			t.Fatal(err)
		}
		n := p.FromRepository().Normalize()
		if err := n.Validate(); err != nil {
			t.Errorf("%s: normalized, not valid: %v", src.name, err)
		}
		back, err := runner.ParsePlan(n.JSON(), src.name)
		if err != nil {
			t.Fatalf("%s: the normalized plan does not read back: %v", src.name, err)
		}
		if !bytes.Equal(back.JSON(), n.JSON()) || !bytes.Equal(back.Normalize().JSON(), n.JSON()) || !bytes.Equal(n.Normalize().JSON(), n.JSON()) {
			t.Errorf("%s: normalizing is not a fixed point:\n%s\n%s", src.name, n.JSON(), back.Normalize().JSON())
		}
		if !bytes.Equal(p.JSON(), mustParse(t, src).JSON()) {
			t.Errorf("%s: Normalize changed the plan it was given", src.name)
		}
	}
}

func mustParse(t *testing.T, src planSource) runner.Plan {
	t.Helper()
	p, err := runner.ParsePlan(src.raw, src.name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
