package audit

import (
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
