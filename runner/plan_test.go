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
