package scenarios

import (
	"strings"
	"testing"
)

// TestCatalogValid: every row parses, validates, and is named in the
// catalog's order; every row of tableOrder is present.
func TestCatalogValid(t *testing.T) {
	for _, s := range All() {
		if s.What == "" || s.Source == "" {
			t.Errorf("%s: what and source are required", s.Name)
		}
		if err := s.PlanFor(42).Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	for _, n := range Missing(tableOrder...) {
		t.Errorf("catalog row %s is missing", n)
	}
}

// TestMissingNamesWhatIsNoRow: Missing, with which code that names rows
// checks them, passes the catalog's rows and names a misspelt or renamed
// one.
func TestMissingNamesWhatIsNoRow(t *testing.T) {
	if m := Missing(Names()...); m != nil {
		t.Errorf("Missing(every row) = %v", m)
	}
	if m := Missing("single-failover", "single-failovr", "redlock-restart-empty", "redlock-restart-emtpy"); strings.Join(m, " ") != "single-failovr redlock-restart-emtpy" {
		t.Errorf("Missing = %v, want the two misspelt names", m)
	}
}

func TestGetUnknownListsNames(t *testing.T) {
	_, err := Get("nope")
	if err == nil || !strings.Contains(err.Error(), "single-baseline") {
		t.Fatalf("Get(nope) = %v, want an error listing the rows", err)
	}
}
