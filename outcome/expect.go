package outcome

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/spans"
)

// Expectation is what a catalog row must show: a verdict and, for an invalid
// row, the kind of anomaly that makes it invalid.
type Expectation struct {
	Verdict checker.Verdict `json:"verdict"`
	// Kind is the anomaly an invalid row must find ("" for valid rows, or
	// any anomaly).
	Kind checker.Kind `json:"kind,omitempty"`
	// Text is the catalog's own words ("valid (stale write rejected)").
	Text string `json:"text,omitempty"`
	// Availability, when set, is what the row asserts about acquires
	// around each of its faults, beside the verdict: a lock that must be
	// unavailable while a fault lasts and available again after it.
	Availability *Availability `json:"availability,omitempty"`
	// AfterFaultStart, when set, makes an invalid row's anomaly count only
	// when it happened (checker.Anomaly.At) at least this long after the
	// start of a fault it names: a row whose flaw outlasts a fault's first
	// effects says so — rueidislock granting while a node's clock stays
	// ahead, past the keys the jump itself expired, which any lock loses.
	// An absolute span.
	AfterFaultStart spans.Span `json:"after_fault_start,omitzero"`
}

// Like is what counts as the row's anomaly: one of its kind (any, for a
// row that names none), as late after a fault's start as AfterFaultStart
// asks — the rule a hunt like the row applies to its finds too.
func (e Expectation) Like() Like {
	l := Like{After: e.AfterFaultStart.Resolve(0)}
	if e.Kind != "" {
		l.Kinds = []checker.Kind{e.Kind}
	}
	return l
}

// Late reports whether a happened at least d after the start of one of
// faults that it names (always, for d ≤ 0): the rule of an expectation's
// AfterFaultStart, which a hunt like such a row applies to its finds too.
func Late(a *checker.Anomaly, faults []checker.FaultWindow, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	for _, f := range faults {
		if slices.Contains(a.Faults, f.ID) && a.At >= f.Start+int64(d) {
			return true
		}
	}
	return false
}

// Availability bounds the acquire success rate around every fault of a run
// (checker.FaultAvailability), skipped faults aside. Each bound needs at
// least one acquire in its window, or the run shows nothing.
type Availability struct {
	// WithinMax: of the acquires begun and ended while the fault was
	// active, at most this share may succeed (0: none).
	WithinMax *float64 `json:"within_max,omitempty"`
	// AfterMin: of the acquires that ended in the window after the fault
	// (as long as the fault, at least a TTL), at least this share must
	// succeed.
	AfterMin *float64 `json:"after_min,omitempty"`
}

// Check says why res's availability misses a, or "" when it meets it.
func (a *Availability) Check(res *checker.Result) string {
	byID := map[string]checker.FaultAvailability{}
	for _, fa := range res.Availability {
		byID[fa.Fault] = fa
	}
	judged := 0
	for _, f := range res.Faults {
		if f.Skipped {
			continue
		}
		fa, ok := byID[f.ID]
		if !ok {
			return fmt.Sprintf("no availability was measured around fault %s", f.ID)
		}
		judged++
		if m := a.WithinMax; m != nil {
			w := fa.Within
			if n := w.OK + w.Fail + w.Unknown; n == 0 {
				return fmt.Sprintf("no acquire began and ended during fault %s (%s): its availability cannot be judged", f.ID, f.Desc)
			}
			if w.SuccessRate > *m {
				return fmt.Sprintf("%d of %d acquires begun and ended during fault %s (%s) succeeded (%.0f%%), over the %.0f%% allowed",
					w.OK, w.OK+w.Fail+w.Unknown, f.ID, f.Desc, 100*w.SuccessRate, 100**m)
			}
		}
		if m := a.AfterMin; m != nil {
			w := fa.After
			if n := w.OK + w.Fail + w.Unknown; n == 0 {
				return fmt.Sprintf("no acquire ended after fault %s (%s): recovery cannot be judged", f.ID, f.Desc)
			}
			if w.SuccessRate < *m {
				return fmt.Sprintf("only %d of %d acquires after fault %s (%s) succeeded (%.0f%%), under the %.0f%% required",
					w.OK, w.OK+w.Fail+w.Unknown, f.ID, f.Desc, 100*w.SuccessRate, 100**m)
			}
		}
	}
	if judged == 0 {
		return "the run has no fault to judge availability around"
	}
	return ""
}

func (a *Availability) String() string {
	var parts []string
	if a.WithinMax != nil {
		parts = append(parts, fmt.Sprintf("≤ %.0f%% of acquires succeed during each fault", 100**a.WithinMax))
	}
	if a.AfterMin != nil {
		parts = append(parts, fmt.Sprintf("≥ %.0f%% after it", 100**a.AfterMin))
	}
	return strings.Join(parts, ", ")
}

// Validate reports an expectation that no run could meet.
func (e Expectation) Validate() error {
	switch e.Verdict {
	case checker.Valid, checker.Unknown:
		if e.Kind != "" {
			return fmt.Errorf("outcome: expectation %q names anomaly %q: only an invalid verdict has anomalies", e.Verdict, e.Kind)
		}
	case checker.Invalid:
	default:
		return fmt.Errorf("outcome: expectation verdict %q is not valid, invalid or unknown", e.Verdict)
	}
	if s := e.AfterFaultStart; !s.IsZero() {
		switch {
		case e.Verdict != checker.Invalid:
			return fmt.Errorf("outcome: expectation %q has after_fault_start: only an invalid verdict has anomalies to time", e.Verdict)
		case s.Relative() || s.Resolve(0) <= 0:
			return fmt.Errorf("outcome: expectation after_fault_start %q must be a positive absolute span (\"1s\")", s)
		}
	}
	if a := e.Availability; a != nil {
		if a.WithinMax == nil && a.AfterMin == nil {
			return fmt.Errorf("outcome: expectation availability names no bound (within_max, after_min)")
		}
		for _, b := range []*float64{a.WithinMax, a.AfterMin} {
			if b != nil && (*b < 0 || *b > 1) {
				return fmt.Errorf("outcome: expectation availability bound %v is not a share in [0, 1]", *b)
			}
		}
	}
	return nil
}

// String renders the expectation compactly: "invalid (double-grant)".
func (e Expectation) String() string {
	s := string(e.Verdict)
	if e.Kind != "" {
		s = fmt.Sprintf("%s (%s)", e.Verdict, e.Kind)
	}
	if !e.AfterFaultStart.IsZero() {
		s += fmt.Sprintf(", %s or more after a fault's start", e.AfterFaultStart)
	}
	if e.Availability != nil {
		s += "; " + e.Availability.String()
	}
	return s
}
