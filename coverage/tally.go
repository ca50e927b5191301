package coverage

import (
	"slices"
	"strconv"
)

// Tally adds up the coverage of many runs of one configuration (a hunt's
// attempts), per window.
type Tally struct {
	Windows []Count `json:"windows"`
	// Runs is the number of runs added.
	Runs int `json:"runs"`
}

// Count is one window over many runs.
type Count struct {
	// Heading as in Result (from the first run).
	Heading
	// Reached counts the reaches in all runs; Runs the runs that reached
	// it; Followed the runs in which an anomaly followed a reach.
	Reached  int `json:"reached"`
	Runs     int `json:"runs"`
	Followed int `json:"anomaly_followed"`
}

// NewTally is an empty tally of the windows for setup: each window listed,
// none reached.
func NewTally(s Setup) *Tally {
	t := &Tally{Windows: []Count{}}
	for _, w := range Windows() {
		t.Windows = append(t.Windows, Count{Heading: w.heading(s)})
	}
	return t
}

// Add adds a run's coverage.
func (t *Tally) Add(r *Run) {
	if r == nil {
		return
	}
	t.Runs++
	for _, w := range r.Windows {
		i := slices.IndexFunc(t.Windows, func(c Count) bool { return c.Name == w.Name })
		if i < 0 {
			t.Windows = append(t.Windows, Count{Heading: w.Heading})
			i = len(t.Windows) - 1
		}
		c := &t.Windows[i]
		c.Reached += w.Reached
		if w.Reached > 0 {
			c.Runs++
		}
		if w.AnomalyFollowed {
			c.Followed++
		}
	}
}

// Reached is how often the window named name was reached, -1 when it does
// not count.
func (t *Tally) Reached(name string) int {
	for _, c := range t.Windows {
		if c.Name == name {
			if !c.Counts() {
				return -1
			}
			return c.Reached
		}
	}
	return -1
}

// CoveredK reports whether every window that counts was reached at least k
// times (and at least one counts).
func (t *Tally) CoveredK(k int) bool {
	n := 0
	for _, c := range t.Windows {
		if !c.Counts() {
			continue
		}
		n++
		if c.Reached < k {
			return false
		}
	}
	return n > 0
}

// Summary is one line per window that counts, "label: reached N times"
// (in R of the runs, an anomaly followed in F).
func (t *Tally) Summary() []string {
	var out []string
	for _, c := range t.Windows {
		if !c.Counts() {
			continue
		}
		s := line(c.Label, c.Reached, false)
		if c.Reached > 0 {
			s += " in " + itoa(c.Runs) + " of " + itoa(t.Runs) + " runs"
		}
		if c.Followed > 0 {
			s += ", an anomaly followed in " + itoa(c.Followed)
		}
		out = append(out, s)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// Merge adds another tally of the same configuration (a shard of the same
// hunt) to t.
func (t *Tally) Merge(o *Tally) {
	if o == nil {
		return
	}
	t.Runs += o.Runs
	for _, c := range o.Windows {
		i := slices.IndexFunc(t.Windows, func(x Count) bool { return x.Name == c.Name })
		if i < 0 {
			t.Windows = append(t.Windows, c)
			continue
		}
		t.Windows[i].Reached += c.Reached
		t.Windows[i].Runs += c.Runs
		t.Windows[i].Followed += c.Followed
	}
}
