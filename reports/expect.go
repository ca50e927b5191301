package reports

import (
	"fmt"
	"slices"

	"github.com/tumbler-dev/tumbler/checker"
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
}

// Validate reports an expectation that no run could meet.
func (e Expectation) Validate() error {
	switch e.Verdict {
	case checker.Valid, checker.Unknown:
		if e.Kind != "" {
			return fmt.Errorf("reports: expectation %q names anomaly %q: only an invalid verdict has anomalies", e.Verdict, e.Kind)
		}
	case checker.Invalid:
	default:
		return fmt.Errorf("reports: expectation verdict %q is not valid, invalid or unknown", e.Verdict)
	}
	return nil
}

// String renders the expectation compactly: "invalid (double-grant)".
func (e Expectation) String() string {
	if e.Kind == "" {
		return string(e.Verdict)
	}
	return fmt.Sprintf("%s (%s)", e.Verdict, e.Kind)
}

// Comparison is an expectation against what the checker observed.
type Comparison struct {
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

// Compare judges a check result against the expectation. A nil result
// (the run could not be checked) reproduces nothing.
func (e Expectation) Compare(res *checker.Result) Comparison {
	c := Comparison{Expected: e, Observed: checker.Unknown, FirstAnomaly: -1}
	if err := e.Validate(); err != nil {
		c.Why = err.Error()
		return c
	}
	if res == nil {
		c.Why = "the run was not checked"
		return c
	}
	c.Observed = res.Verdict
	var first *checker.Anomaly
	for i := range res.Anomalies {
		a := &res.Anomalies[i]
		if !slices.Contains(c.Kinds, a.Kind) {
			c.Kinds = append(c.Kinds, a.Kind)
		}
		if (e.Kind == "" || a.Kind == e.Kind) && (first == nil || a.At < first.At) {
			first = a
		}
	}
	if first != nil {
		c.FirstAnomaly, c.Faults = first.At, first.Faults
	}
	switch {
	case res.Verdict != e.Verdict:
		c.Why = fmt.Sprintf("expected %s, observed %s", e.Verdict, res.Verdict)
		if res.Verdict == checker.Invalid {
			c.Why += fmt.Sprintf(" (%s)", joinKinds(c.Kinds))
		}
	case e.Kind != "" && first == nil:
		c.Why = fmt.Sprintf("invalid as expected, but by %s, not %s", joinKinds(c.Kinds), e.Kind)
	case e.Verdict == checker.Invalid:
		c.Reproduced = true
		c.Why = fmt.Sprintf("invalid as expected: %s at %s", first.Kind, secs(first.At))
		if len(first.Faults) > 0 {
			c.Why += fmt.Sprintf(", faults %v active", first.Faults)
		}
	default:
		c.Reproduced = true
		c.Why = fmt.Sprintf("%s as expected", e.Verdict)
	}
	return c
}

func joinKinds(ks []checker.Kind) string {
	if len(ks) == 0 {
		return "no anomaly"
	}
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ", "
		}
		s += string(k)
	}
	return s
}
