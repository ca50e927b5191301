package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/reports"
)

func doubleGrant() *checker.Result {
	return &checker.Result{
		Verdict:   checker.Invalid,
		Anomalies: []checker.Anomaly{{Kind: checker.DoubleGrant, From: 3_420_000_000, To: 3_500_000_000, At: 3_420_000_000, Faults: []string{"f1"}}},
		Faults:    []checker.FaultWindow{{ID: "f1", Kind: "restart", Desc: "restart n1 empty", Start: 3_000_000_000}},
	}
}

// TestJudge: the one judgement of a run. A catalog row is reproduced when
// the verdict meets its expectation, and not when the run was slow,
// interrupted or failed, when its anomaly names none of its faults, or
// when a fault was idle — each saying why. The exit code follows the
// verdict, except that a valid interrupted run is unknown and a failed
// run is its error's.
func TestJudge(t *testing.T) {
	invalid := &reports.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant}
	valid := &reports.Expectation{Verdict: checker.Valid}
	base := judged{result: doubleGrant(), elapsed: 12 * time.Second, faults: true}
	for _, tc := range []struct {
		name       string
		exp        *reports.Expectation
		in         func(*judged)
		reproduced bool
		why        string // in Why
		verdict    checker.Verdict
		exit       int
	}{
		{"reproduced", invalid, nil, true, "invalid as expected: double-grant at 3.420 s, faults [f1] active", checker.Invalid, ExitInvalid},
		{"no expectation", nil, nil, false, "", checker.Invalid, ExitInvalid},
		{"slow", invalid, func(j *judged) { j.elapsed = MaxRunTime + time.Second }, false, "over the 30s", checker.Invalid, ExitInvalid},
		{"interrupted", invalid, func(j *judged) { j.interrupted = true }, false, "interrupted before its time limit", checker.Invalid, ExitInvalid},
		{"failed", invalid, func(j *judged) { j.err = errors.New("redis-server exited") }, false, "the run failed: redis-server exited", checker.Invalid, ExitHarness},
		{"bad input", invalid, func(j *judged) { j.err = fmt.Errorf("%w: x", ErrHistory); j.result = nil }, false, "the run failed", checker.Unknown, ExitBadInput},
		{"not checked", invalid, func(j *judged) { j.result = nil }, false, "not checked", checker.Unknown, ExitUnknown},
		{"a fault-free anomaly in a row with faults", invalid, func(j *judged) { j.result.Anomalies[0].Faults = nil }, false, "names no fault", checker.Invalid, ExitInvalid},
		{"a fault-free anomaly in a row without faults", invalid, func(j *judged) { j.result.Anomalies[0].Faults = nil; j.faults = false }, true, "invalid as expected", checker.Invalid, ExitInvalid},
		{"another kind", &reports.Expectation{Verdict: checker.Invalid, Kind: checker.StaleWrite}, nil, false, "by double-grant, not stale-write", checker.Invalid, ExitInvalid},
		{"valid row, invalid run", valid, nil, false, "expected valid, observed invalid (double-grant)", checker.Invalid, ExitInvalid},
		{"valid row", valid, func(j *judged) { j.result = &checker.Result{Verdict: checker.Valid} }, true, "valid as expected", checker.Valid, ExitValid},
		{"valid row, interrupted", valid, func(j *judged) { j.result = &checker.Result{Verdict: checker.Valid}; j.interrupted = true }, false, "interrupted", checker.Valid, ExitUnknown},
		{"valid row, unknown", valid, func(j *judged) { j.result = &checker.Result{Verdict: checker.Unknown} }, false, "observed unknown", checker.Unknown, ExitUnknown},
		{"valid row, armed step never reached", valid, func(j *judged) {
			j.result = &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1", Desc: "arm client 0", Arms: true}}}
		}, false, "fault f1 (arm client 0) was idle: no client reached the armed step", checker.Valid, ExitValid},
		{"valid row, armed step reached", valid, func(j *judged) {
			j.result = &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1", Arms: true, Fired: 1}}}
		}, true, "valid as expected", checker.Valid, ExitValid},
		{"valid row, skipped fault", valid, func(j *judged) {
			j.result = &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1", Desc: "restart n1", Skipped: true}}}
		}, false, "f1 (restart n1) was idle: skipped", checker.Valid, ExitValid},
		{"impossible expectation", &reports.Expectation{Verdict: checker.Valid, Kind: checker.DoubleGrant}, nil, false, "only an invalid verdict has anomalies", checker.Invalid, ExitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			res := *doubleGrant()
			res.Anomalies = append([]checker.Anomaly(nil), res.Anomalies...)
			in.result = &res
			if tc.in != nil {
				tc.in(&in)
			}
			j := judge(tc.exp, in)
			if j.Verdict != tc.verdict || j.ExitCode != tc.exit {
				t.Fatalf("verdict %s, exit %d; want %s, %d", j.Verdict, j.ExitCode, tc.verdict, tc.exit)
			}
			if tc.exp == nil {
				if j.Expected != nil {
					t.Fatalf("a run without expectation judged against one: %+v", j.Expected)
				}
				return
			}
			if j.Expected == nil || j.Expected.Reproduced != tc.reproduced || !strings.Contains(j.Expected.Why, tc.why) {
				t.Fatalf("reproduction %+v; want reproduced %v, why containing %q", j.Expected, tc.reproduced, tc.why)
			}
		})
	}
	// The first anomaly of the expected kind, and the faults it names.
	j := judge(invalid, base)
	if rep := j.Expected; rep.FirstAnomaly != 3_420_000_000 || len(rep.Faults) != 1 || rep.Faults[0] != "f1" || rep.Observed != checker.Invalid {
		t.Fatalf("reproduction %+v", rep)
	}
}

// TestExitCodeOf: bad input of either kind is 254, anything else 255.
func TestExitCodeOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, ExitValid},
		{fmt.Errorf("%w: --clients: 0", ErrPlan), ExitBadInput},
		{fmt.Errorf("%w: line 3", ErrHistory), ExitBadInput},
		{fmt.Errorf("%w: not a run directory", ErrInput), ExitBadInput},
		{errors.New("redis-server: not found"), ExitHarness},
	} {
		if got := ExitCodeOf(tc.err); got != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.code)
		}
	}
	if errors.Is(ErrPlan, ErrHistory) || errors.Is(ErrHistory, ErrPlan) || !errors.Is(ErrPlan, ErrInput) || !errors.Is(ErrHistory, ErrInput) {
		t.Fatal("ErrPlan and ErrHistory are two kinds of ErrInput")
	}
}

// TestJudgeAvailability: a row that asserts availability is reproduced only
// when no acquire begun and ended during each fault succeeded beyond the
// bound and enough did after it.
func TestJudgeAvailability(t *testing.T) {
	zero, some := 0.0, 0.5
	e := &reports.Expectation{Verdict: checker.Valid, Availability: &reports.Availability{WithinMax: &zero, AfterMin: &some}}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	run := func(within, after checker.Attempts) judged {
		return judged{faults: true, elapsed: 10 * time.Second, result: &checker.Result{Verdict: checker.Valid,
			Faults:       []checker.FaultWindow{{ID: "f1", Desc: "cut n2"}, {ID: "f2", Desc: "skipped one", Skipped: true}},
			Availability: []checker.FaultAvailability{{Fault: "f1", Within: within, After: after}}}}
	}
	down := checker.Attempts{Fail: 4}
	up := checker.Attempts{OK: 3, Fail: 1, SuccessRate: 0.75}
	// The skipped fault makes the run idle whatever its availability; judge
	// availability on the other first.
	in := run(down, up)
	in.result.Faults = in.result.Faults[:1]
	if rep := judge(e, in).Expected; !rep.Reproduced || !strings.Contains(rep.Why, "availability as expected") {
		t.Errorf("down during, up after: %+v", rep)
	}
	for name, tc := range map[string]struct {
		within, after checker.Attempts
		why           string
	}{
		"an acquire succeeded during": {checker.Attempts{OK: 1, Fail: 3, SuccessRate: 0.25}, up, "1 of 4 acquires begun and ended during fault f1"},
		"nothing tried during":        {checker.Attempts{}, up, "no acquire began and ended during fault f1"},
		"no recovery":                 {down, checker.Attempts{OK: 1, Fail: 3, SuccessRate: 0.25}, "only 1 of 4 acquires after fault f1"},
	} {
		in := run(tc.within, tc.after)
		in.result.Faults = in.result.Faults[:1]
		if rep := judge(e, in).Expected; rep.Reproduced || !strings.Contains(rep.Why, tc.why) {
			t.Errorf("%s: %+v, want not reproduced because %q", name, rep, tc.why)
		}
	}
	noFault := judged{elapsed: time.Second, result: &checker.Result{Verdict: checker.Valid}}
	if rep := judge(e, noFault).Expected; rep.Reproduced {
		t.Errorf("a run without faults matched an availability expectation: %+v", rep)
	}
	bad := 1.5
	for _, a := range []reports.Availability{{}, {WithinMax: &bad}} {
		if (reports.Expectation{Verdict: checker.Valid, Availability: &a}).Validate() == nil {
			t.Errorf("availability %+v validates", a)
		}
	}
	if s := e.String(); !strings.Contains(s, "≤ 0% of acquires succeed during each fault, ≥ 50% after it") {
		t.Errorf("String() = %q", s)
	}
}
