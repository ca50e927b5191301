package audit

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/scenarios"
)

// TestRowsInCatalog: every row a finding can name is a row of the catalog
// (loaded by package scenarios), named once; the same check names a
// misspelt row.
func TestRowsInCatalog(t *testing.T) {
	names := rowNames[:]
	for r, n := range names {
		if n == "" || slices.Index(names, n) != r {
			t.Errorf("row %d: name %q is empty or named twice", r, n)
		}
	}
	if m := scenarios.Missing(names...); len(m) > 0 {
		t.Errorf("the audit names rows the catalog does not have: %s", strings.Join(m, ", "))
	}
	t.Run("a misspelt row is caught", func(t *testing.T) {
		bad := append(slices.Clone(names), "single-failovr")
		if m := scenarios.Missing(bad...); !slices.Equal(m, []string{"single-failovr"}) {
			t.Errorf("Missing = %v, want the misspelt row", m)
		}
	})
	if got := rows(singleFailover, clusterFailover); !slices.Equal(got, []string{"single-failover", "cluster-failover"}) {
		t.Errorf("rows = %v", got)
	}
}

// TestRowsDocumented: docs/audit.md's table names every row a finding can
// name, and names only catalog rows, so the page cannot fall behind the
// checks (it once pointed eviction at single-restart-empty alone).
func TestRowsDocumented(t *testing.T) {
	page, err := os.ReadFile("../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(page), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| check") {
			continue
		}
		for _, part := range strings.Split(cells[3], ";") {
			for _, name := range strings.Split(part, ",") {
				if name = strings.Fields(name + " x")[0]; name != "x" {
					listed = append(listed, name)
				}
			}
		}
	}
	if len(listed) == 0 {
		t.Fatal("no rows read from docs/audit.md's table")
	}
	for _, n := range rowNames {
		if !slices.Contains(listed, n) {
			t.Errorf("docs/audit.md's table does not name %s, which a finding names", n)
		}
	}
	if m := scenarios.Missing(listed...); len(m) > 0 {
		t.Errorf("docs/audit.md names rows the catalog does not have: %s", strings.Join(m, ", "))
	}
}
