package main

import (
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/hunt"
	"github.com/tumbler-dev/tumbler/scenarios"
)

// TestRowsInCatalog: the rows the measurement hunts are rows of the catalog.
func TestRowsInCatalog(t *testing.T) {
	if m := scenarios.Missing(rows...); len(m) > 0 {
		t.Errorf("rows the catalog does not have: %v", m)
	}
}

// TestRowMedian: the median is over the hunts that found, and says so when
// some did not; a safe configuration that found something is not quiet.
func TestRowMedian(t *testing.T) {
	found := func(d time.Duration) *hunt.Summary {
		return &hunt.Summary{First: 0, TimeToFirst: d, Tried: 1, Attempts: []hunt.Attempt{{}}}
	}
	none := &hunt.Summary{First: -1, Tried: 2}
	if got := row("c", "guided", []*hunt.Summary{found(10 * time.Second), found(30 * time.Second), found(20 * time.Second)}, false); got != "| c | guided | 3 | 3/3 | 20s | 3 | 0/0 |" {
		t.Errorf("odd: %s", got)
	}
	if got := row("c", "guided", []*hunt.Summary{found(10 * time.Second), none, found(30 * time.Second)}, true); got != "| c | guided | 3 | 2/3 (**not quiet**) | 20s (of the 2 that found) | 4 | 0/0 |" {
		t.Errorf("with a miss: %s", got)
	}
}
