package scenarios

import (
	"strings"
	"testing"
)

// TestCatalogValid: every row parses, validates, and is named in the
// catalog's order; every row of tableOrder is present.
func TestCatalogValid(t *testing.T) {
	got := map[string]bool{}
	for _, s := range All() {
		got[s.Name] = true
		if s.What == "" || s.Source == "" {
			t.Errorf("%s: what and source are required", s.Name)
		}
		if err := s.PlanFor(42).Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	for _, n := range tableOrder {
		if !got[n] {
			t.Errorf("catalog row %s is missing", n)
		}
	}
}

func TestGetUnknownListsNames(t *testing.T) {
	_, err := Get("nope")
	if err == nil || !strings.Contains(err.Error(), "single-baseline") {
		t.Fatalf("Get(nope) = %v, want an error listing the rows", err)
	}
}
