package outcome

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// MaxRunTime is how long one run of a catalog row may take, from its start
// to its check, for the row to count as reproduced (the catalog's bound on
// a 2-core machine); a slower run is not, whatever its verdict.
const MaxRunTime = 30 * time.Second

// Facts are what a judgement is made of: everything the run engine knows
// once the history has been checked.
type Facts struct {
	Result *checker.Result // nil when the history was not checked
	// Err is the run's failure, if it failed.
	Err         error
	Interrupted bool
	Elapsed     time.Duration
	// Faults: the plan injects faults.
	Faults bool
}

// Judgement is what a run showed, made once by Judge (the run engine
// calls it) and handed as data to every output — index.html, results.json,
// junit.xml, the command line's summary and exit code, a matrix row — so
// that they cannot disagree.
type Judgement struct {
	// Verdict is the checkers' verdict, unknown when the history was not
	// checked.
	Verdict checker.Verdict `json:"verdict"`
	// ExitCode is the run's exit code (a valid verdict on an interrupted run
	// is 2: it covers part of the run; a run that failed is 254 or 255).
	ExitCode int `json:"exit_code"`
	// Expected judges a catalog row's expectation; nil for a run without one.
	Expected *Reproduction `json:"expected,omitempty"`
}

// Reproduction judges a catalog row's expectation against its run, with
// every condition the catalog sets (see Judge).
type Reproduction struct {
	Expected Expectation     `json:"expected"`
	Observed checker.Verdict `json:"observed"`
	// Kinds are the anomaly kinds observed, in order of first appearance.
	Kinds      []checker.Kind `json:"observed_kinds,omitempty"`
	Reproduced bool           `json:"reproduced"`
	// Why says in one sentence why the row was or was not reproduced.
	Why string `json:"why"`
	// FirstAnomaly is when (ns since run start) the first anomaly of the
	// expected kind (of any kind when none is expected) happened
	// (checker.Anomaly.At), -1 if none.
	FirstAnomaly int64 `json:"first_anomaly_ns"`
	// Faults are the faults that anomaly names.
	Faults []string `json:"faults,omitempty"`
}

// Judge makes the run's judgement — the verdict, the exit code and, with
// an expectation, whether the run reproduced it. It is the only place
// either is decided; every output shows what it decided.
func Judge(expected *Expectation, in Facts) Judgement {
	j := Judgement{Verdict: checker.Unknown}
	if in.Result != nil {
		j.Verdict = in.Result.Verdict
	}
	j.ExitCode = RunCode(j.Verdict, in.Interrupted, in.Err)
	if expected != nil {
		rep := reproduction(*expected, in)
		j.Expected = &rep
	}
	return j
}

// reproduction judges a catalog row's expectation: reproduced when the
// checkers' verdict meets it (an invalid row's anomaly of the expected
// kind), the run neither failed nor was interrupted, it took at most
// MaxRunTime, an invalid row's anomaly names one of the row's faults, the
// acquires around each fault meet the row's availability bounds if it has
// any, and every fault took effect (none skipped, every armed lock step
// reached).
func reproduction(e Expectation, in Facts) Reproduction {
	rep := Reproduction{Expected: e, Observed: checker.Unknown, FirstAnomaly: -1}
	if err := e.Validate(); err != nil {
		rep.Why = err.Error()
		return rep
	}
	res := in.Result
	if res == nil {
		rep.Why = "the run was not checked"
		if in.Err != nil {
			rep.Why = "the run failed: " + in.Err.Error()
		}
		return rep
	}
	rep.Observed = res.Verdict
	for i := range res.Anomalies {
		if a := &res.Anomalies[i]; !slices.Contains(rep.Kinds, a.Kind) {
			rep.Kinds = append(rep.Kinds, a.Kind)
		}
	}
	first := e.Like().First(res, nil)
	if first != nil {
		rep.FirstAnomaly, rep.Faults = first.At, first.Faults
	}
	switch {
	case res.Verdict != e.Verdict:
		rep.Why = fmt.Sprintf("expected %s, observed %s", e.Verdict, res.Verdict)
		if res.Verdict == checker.Invalid {
			rep.Why += fmt.Sprintf(" (%s)", anomalyKinds(rep.Kinds))
		}
		return rep
	case first == nil && !e.AfterFaultStart.IsZero():
		rep.Why = fmt.Sprintf("invalid as expected (%s), but no %s came %s or more after the start of a fault it names", anomalyKinds(rep.Kinds), e.Kind, e.AfterFaultStart)
		return rep
	case e.Kind != "" && first == nil:
		rep.Why = fmt.Sprintf("invalid as expected, but by %s, not %s", anomalyKinds(rep.Kinds), e.Kind)
		return rep
	case e.Verdict == checker.Invalid:
		rep.Why = fmt.Sprintf("invalid as expected: %s at %.3f s", first.Kind, history.Seconds(first.At))
		if len(first.Faults) > 0 {
			rep.Why += fmt.Sprintf(", faults %v active", first.Faults)
		}
	default:
		rep.Why = fmt.Sprintf("%s as expected", e.Verdict)
	}
	// The verdict meets the expectation; the run must also show it.
	switch {
	case in.Err != nil:
		rep.Why = "the run failed: " + in.Err.Error() + " (" + rep.Why + ")"
	case in.Interrupted:
		rep.Why = "interrupted before its time limit: " + rep.Why
	case in.Elapsed > MaxRunTime:
		rep.Why = fmt.Sprintf("took %.1f s, over the %v a row may take (%s)", in.Elapsed.Seconds(), MaxRunTime, rep.Why)
	case e.Verdict == checker.Invalid && in.Faults && len(rep.Faults) == 0:
		// The catalog asks for the cause, not only the symptom: in a row
		// with faults, the anomaly must be tied to one.
		rep.Why = "the anomaly names no fault, though the row injects some: " + rep.Why
	case e.Availability != nil && e.Availability.Check(res) != "":
		// A row that asserts availability is judged on it beside the
		// verdict.
		rep.Why = fmt.Sprintf("%s, but its availability does not match: %s", rep.Why, e.Availability.Check(res))
	case idleFault(res.Faults) != "":
		// A verdict under faults that did nothing shows nothing: above all
		// a valid one, which would hold trivially.
		rep.Why = idleFault(res.Faults) + ", so the run does not show the row: " + rep.Why
	default:
		rep.Reproduced = true
		if e.Availability != nil {
			rep.Why += "; availability as expected (" + e.Availability.String() + ")"
		}
	}
	return rep
}

// idleFault names a fault that did nothing (checker.FaultWindow.Idle).
func idleFault(faults []checker.FaultWindow) string {
	for _, f := range faults {
		if why := f.Idle(); why != "" {
			return fmt.Sprintf("fault %s (%s) was idle: %s", f.ID, f.Desc, why)
		}
	}
	return ""
}

// anomalyKinds lists kinds for a sentence: "double-grant, stale-write".
func anomalyKinds(ks []checker.Kind) string {
	if len(ks) == 0 {
		return "no anomaly"
	}
	return joinKinds(ks)
}

func joinKinds[K ~string](ks []K) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
