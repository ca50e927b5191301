package main

import (
	"testing"

	"github.com/tumbler-dev/tumbler/scenarios"
)

// TestRepresentativeRowsInCatalog: the representative rows the table
// hunts are rows of the catalog (a misspelt one is caught by the same
// check: scenarios' TestMissingNamesWhatIsNoRow).
func TestRepresentativeRowsInCatalog(t *testing.T) {
	if m := scenarios.Missing(representative...); len(m) > 0 {
		t.Errorf("representative rows the catalog does not have: %v", m)
	}
}
