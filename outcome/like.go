package outcome

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
)

// Like is what "fails like this find" means: the one rule that a catalog
// row's reproduction (Expectation.Like), a hunt's finds and their replays,
// a shrink's candidates and a campaign's finds all apply, so that none of
// them keeps a run that fails in another way.
//
// An anomaly counts when it is of one of Kinds (any kind, when Kinds is
// empty), when it came at least After after the start of a fault it names
// (Late; any time, when After is zero), and, when Windows is set, when it
// followed at least one of those dangerous windows (coverage.Run.Followed):
// the moments in which the find broke the lock. A smaller plan whose
// anomaly of the same kind follows none of them breaks the lock another
// way — a double grant after a restart empty, shrunk into one after a
// holder's pause — and does not pass for the find.
type Like struct {
	Kinds   []checker.Kind `json:"kinds,omitempty"`
	After   time.Duration  `json:"after_fault_start_ns,omitempty"`
	Windows []string       `json:"windows,omitempty"`
}

// Counts reports whether anomaly a, of a run whose faults ran as faults and
// whose coverage is cov, counts under l. Without the run's coverage (nil,
// or a stored run judged before anomalies were tied to windows) an anomaly
// counts under a Like with Windows only if none is asked.
func (l Like) Counts(a *checker.Anomaly, faults []checker.FaultWindow, cov *coverage.Run) bool {
	if len(l.Kinds) > 0 && !slices.Contains(l.Kinds, a.Kind) {
		return false
	}
	if !Late(a, faults, l.After) {
		return false
	}
	if len(l.Windows) == 0 {
		return true
	}
	for _, w := range cov.Followed(*a) {
		if slices.Contains(l.Windows, w) {
			return true
		}
	}
	return false
}

// First is the earliest anomaly of res that counts under l, nil when none
// does or res was not checked. It reads anomalies, not the verdict: a
// caller that needs an invalid, uninterrupted run says so (Fails).
func (l Like) First(res *checker.Result, cov *coverage.Run) *checker.Anomaly {
	if res == nil {
		return nil
	}
	var first *checker.Anomaly
	for i := range res.Anomalies {
		a := &res.Anomalies[i]
		if (first == nil || a.At < first.At) && l.Counts(a, res.Faults, cov) {
			first = a
		}
	}
	return first
}

// Fails is l's rule for a whole run: the run was checked invalid, was not
// interrupted, and has an anomaly that counts; it returns that anomaly's
// time (ns since the run started).
func (l Like) Fails(res *checker.Result, interrupted bool, cov *coverage.Run) (int64, bool) {
	if res == nil || res.Verdict != checker.Invalid || interrupted {
		return 0, false
	}
	if a := l.First(res, cov); a != nil {
		return a.At, true
	}
	return 0, false
}

// Find is the Like a find made under l is replayed and shrunk against:
// l's rule, its kinds narrowed to those of the anomalies of res that count
// under l (in order of first appearance), and its windows the telling ones
// (coverage.Window.Generic false) that the find's first counted anomaly
// followed. A find whose anomaly followed only generic windows, or none,
// asks for no window: any anomaly of its kinds is one like it. ok is false
// when no anomaly of res counts.
func (l Like) Find(res *checker.Result, cov *coverage.Run) (Like, bool) {
	first := l.First(res, cov)
	if first == nil {
		return Like{}, false
	}
	out := Like{After: l.After}
	for i := range res.Anomalies {
		a := &res.Anomalies[i]
		if !slices.Contains(out.Kinds, a.Kind) && l.Counts(a, res.Faults, cov) {
			out.Kinds = append(out.Kinds, a.Kind)
		}
	}
	for _, w := range cov.Followed(*first) {
		if !coverage.IsGeneric(w) && (len(l.Windows) == 0 || slices.Contains(l.Windows, w)) {
			out.Windows = append(out.Windows, w)
		}
	}
	return out, true
}

// Validate refuses a Like no run could meet: an unknown anomaly kind or
// window, a negative After. Errors wrap ErrInput.
func (l Like) Validate() error {
	for _, k := range l.Kinds {
		if !slices.Contains(checker.AnomalyKinds, k) {
			return fmt.Errorf("%w: anomaly kind %q unknown (valid: %s)", ErrInput, k, joinKinds(checker.AnomalyKinds))
		}
	}
	if l.After < 0 {
		return fmt.Errorf("%w: after a fault's start: %v is negative", ErrInput, l.After)
	}
	for _, w := range l.Windows {
		if _, ok := coverage.Lookup(w); !ok {
			return fmt.Errorf("%w: dangerous window %q unknown (valid: %s)", ErrInput, w, strings.Join(coverage.Names(), ", "))
		}
	}
	return nil
}

// String says what counts, for a person: "double-grant, 1s or more after
// a fault's start, following restart-empty".
func (l Like) String() string {
	s := "any anomaly"
	if len(l.Kinds) > 0 {
		s = joinKinds(l.Kinds)
	}
	if l.After > 0 {
		s += fmt.Sprintf(", %v or more after a fault's start", l.After)
	}
	if len(l.Windows) > 0 {
		s += ", following " + strings.Join(l.Windows, " or ")
	}
	return s
}
