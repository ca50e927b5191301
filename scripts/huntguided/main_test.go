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

// TestJobs: the jobs cover every row once, each alone, and the other
// configurations in one more.
func TestJobs(t *testing.T) {
	js := jobs()
	if len(js) != len(rows)+1 {
		t.Fatalf("%d jobs for %d rows: %+v", len(js), len(rows), js)
	}
	for i, r := range rows {
		if js[i].Name != r || js[i].Args != "--parts rows --rows "+r {
			t.Errorf("job %d: %+v, want row %s alone", i, js[i], r)
		}
	}
	if last := js[len(js)-1]; last.Name != "others" || last.Args != "--parts others" {
		t.Errorf("last job: %+v, want the other configurations", last)
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

// TestSpread: every hunt's time is listed, a hunt that found nothing
// counts in the median as later than any find, and p compares guided with
// today's (small when every guided hunt is faster, 1 when they are alike).
func TestSpread(t *testing.T) {
	found := func(d time.Duration) *hunt.Summary {
		return &hunt.Summary{First: 0, TimeToFirst: d, Tried: 1, Attempts: []hunt.Attempt{{}}}
	}
	none := &hunt.Summary{First: -1, Tried: 2}
	today := []*hunt.Summary{found(40 * time.Second), none, none}
	guided := []*hunt.Summary{found(10 * time.Second), found(20 * time.Second), none}
	want := "| c | today's | 40.0, —, — s | — | — |\n| c | guided | 10.0, 20.0, — s | 20.0 s | 0.40 |"
	if got := spread("c", today, guided, false); got != want {
		t.Errorf("spread:\n%s\nwant\n%s", got, want)
	}
	if got := spread("c", guided, guided, true); got != "| c | today's | 10.0, 20.0, — s | 20.0 s | — |\n| c | guided | 10.0, 20.0, — s | 20.0 s | — |" {
		t.Errorf("safe: %s", got)
	}
	var slow, fast []float64
	for i := range 8 {
		slow = append(slow, float64(100+i))
		fast = append(fast, float64(10+i))
	}
	if p := rankSumP(slow, fast); p > 0.001 {
		t.Errorf("p of eight slower against eight faster = %.4f, want < 0.001 (exact: 2/12870)", p)
	}
	if p := rankSumP(slow, slow); p != 1 {
		t.Errorf("p of identical samples = %.4f, want 1", p)
	}
}
