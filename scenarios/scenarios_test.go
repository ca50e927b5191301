package scenarios

import (
	"os"
	"slices"
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

// TestReadmeListsTheCatalog: the README's catalog table has a line for
// every row, and names no row the catalog lacks.
func TestReadmeListsTheCatalog(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The catalog\n")
	if !ok {
		t.Fatal("the README has no section \"The catalog\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var listed []string
	for _, line := range strings.Split(section, "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			if i := strings.Index(name, "` |"); i > 0 {
				listed = append(listed, name[:i])
			}
		}
	}
	for _, n := range Names() {
		if !slices.Contains(listed, n) {
			t.Errorf("catalog row %s has no line in the README's catalog table", n)
		}
	}
	for _, n := range Missing(listed...) {
		t.Errorf("the README's catalog table names %s, which is no catalog row", n)
	}
}
