package hunt

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/runner"
)

// Coverage of a hunt: every attempt's run judges which dangerous windows
// it reached (package coverage, coverage.json in its directory); the hunt
// adds them up per window in Summary.Coverage, lists each attempt's in
// Attempt.Reached, ends with Options.UntilCovered once every window that
// counts was reached that often, and, with Options.Guided, draws each
// attempt's schedule toward the windows reached least so far (guide.go).

// newTally is the hunt's empty tally: the windows of the template's lock
// and topology, out of reach where none of the draw's kinds can reach them.
func newTally(template runner.Plan, draw runner.Draw) *coverage.Tally {
	return coverage.NewTally(template.CoverageSetup(draw.Kinds))
}

// covered keeps the attempt's coverage: the windows it reached, by name
// (Attempt.Reached), and the whole of it for the hunt's tally (cover).
func (a *Attempt) covered(c *coverage.Run) {
	if c == nil {
		return
	}
	a.cov = c
	for _, w := range c.Windows {
		if w.Reached > 0 && w.Counts() {
			if a.Reached == nil {
				a.Reached = map[string]int{}
			}
			a.Reached[w.Name] = w.Reached
		}
	}
}

// cover adds a recorded attempt's coverage to the hunt's (an interrupted
// attempt's too: it counts among the seeds tried).
func (h *hunter) cover(a Attempt) {
	if a.cov != nil {
		h.s.Coverage.Add(a.cov)
	}
}

// covered says why the hunt may end for its coverage: every window that
// counts was reached Options.UntilCovered times; "" when not (or not asked).
func (h *hunter) covered() string {
	k := h.o.UntilCovered
	if k <= 0 || !h.s.Coverage.CoveredK(k) {
		return ""
	}
	return fmt.Sprintf("every window reached %d %s", k, map[bool]string{true: "time", false: "times"}[k == 1])
}

// CoverageLines are the hunt's coverage, one line per window that counts
// ("node of the lease restarted empty within the TTL: reached 0 times").
func (s *Summary) CoverageLines() []string {
	if s.Coverage == nil {
		return nil
	}
	return s.Coverage.Summary()
}

// mergeCoverage adds up the shards' coverage (nil when none has any).
func mergeCoverage(shards []*Summary) *coverage.Tally {
	var t *coverage.Tally
	for _, s := range shards {
		if s.Coverage == nil {
			continue
		}
		if t == nil {
			t = &coverage.Tally{}
		}
		t.Merge(s.Coverage)
	}
	return t
}
