package outcome

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/spans"
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
	invalid := &Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant}
	valid := &Expectation{Verdict: checker.Valid}
	base := Facts{Result: doubleGrant(), Elapsed: 12 * time.Second, Faults: true}
	for _, tc := range []struct {
		name       string
		exp        *Expectation
		in         func(*Facts)
		reproduced bool
		why        string // in Why
		verdict    checker.Verdict
		exit       int
	}{
		{"reproduced", invalid, nil, true, "invalid as expected: double-grant at 3.420 s, faults [f1] active", checker.Invalid, ExitInvalid},
		{"no expectation", nil, nil, false, "", checker.Invalid, ExitInvalid},
		{"slow", invalid, func(j *Facts) { j.Elapsed = MaxRunTime + time.Second }, false, "over the 30s", checker.Invalid, ExitInvalid},
		{"interrupted", invalid, func(j *Facts) { j.Interrupted = true }, false, "interrupted before its time limit", checker.Invalid, ExitInvalid},
		{"failed", invalid, func(j *Facts) { j.Err = errors.New("redis-server exited") }, false, "the run failed: redis-server exited", checker.Invalid, ExitHarness},
		{"bad input", invalid, func(j *Facts) { j.Err = fmt.Errorf("%w: x", ErrInput); j.Result = nil }, false, "the run failed", checker.Unknown, ExitBadInput},
		{"not checked", invalid, func(j *Facts) { j.Result = nil }, false, "not checked", checker.Unknown, ExitUnknown},
		{"a fault-free anomaly in a row with faults", invalid, func(j *Facts) { j.Result.Anomalies[0].Faults = nil }, false, "names no fault", checker.Invalid, ExitInvalid},
		{"a fault-free anomaly in a row without faults", invalid, func(j *Facts) { j.Result.Anomalies[0].Faults = nil; j.Faults = false }, true, "invalid as expected", checker.Invalid, ExitInvalid},
		{"another kind", &Expectation{Verdict: checker.Invalid, Kind: checker.StaleWrite}, nil, false, "by double-grant, not stale-write", checker.Invalid, ExitInvalid},
		{"valid row, invalid run", valid, nil, false, "expected valid, observed invalid (double-grant)", checker.Invalid, ExitInvalid},
		{"valid row", valid, func(j *Facts) { j.Result = &checker.Result{Verdict: checker.Valid} }, true, "valid as expected", checker.Valid, ExitValid},
		{"valid row, interrupted", valid, func(j *Facts) { j.Result = &checker.Result{Verdict: checker.Valid}; j.Interrupted = true }, false, "interrupted", checker.Valid, ExitUnknown},
		{"valid row, unknown", valid, func(j *Facts) { j.Result = &checker.Result{Verdict: checker.Unknown} }, false, "observed unknown", checker.Unknown, ExitUnknown},
		{"valid row, armed step never reached", valid, func(j *Facts) {
			j.Result = &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1", Desc: "arm client 0", Traits: history.TraitSet{history.StopsClient, history.ArmsStep}}}}
		}, false, "fault f1 (arm client 0) was idle: no client reached the armed step", checker.Valid, ExitValid},
		{"valid row, armed step reached", valid, func(j *Facts) {
			j.Result = &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1", Traits: history.TraitSet{history.StopsClient, history.ArmsStep}, Fired: 1}}}
		}, true, "valid as expected", checker.Valid, ExitValid},
		{"valid row, skipped fault", valid, func(j *Facts) {
			j.Result = &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1", Desc: "restart n1", Skipped: true}}}
		}, false, "f1 (restart n1) was idle: skipped", checker.Valid, ExitValid},
		{"impossible expectation", &Expectation{Verdict: checker.Valid, Kind: checker.DoubleGrant}, nil, false, "only an invalid verdict has anomalies", checker.Invalid, ExitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			res := *doubleGrant()
			res.Anomalies = append([]checker.Anomaly(nil), res.Anomalies...)
			in.Result = &res
			if tc.in != nil {
				tc.in(&in)
			}
			j := Judge(tc.exp, in)
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
	j := Judge(invalid, base)
	if rep := j.Expected; rep.FirstAnomaly != 3_420_000_000 || len(rep.Faults) != 1 || rep.Faults[0] != "f1" || rep.Observed != checker.Invalid {
		t.Fatalf("reproduction %+v", rep)
	}
}

// TestJudgeAvailability: a row that asserts availability is reproduced only
// when no acquire begun and ended during each fault succeeded beyond the
// bound and enough did after it.
func TestJudgeAvailability(t *testing.T) {
	zero, some := 0.0, 0.5
	e := &Expectation{Verdict: checker.Valid, Availability: &Availability{WithinMax: &zero, AfterMin: &some}}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	run := func(within, after checker.Attempts) Facts {
		return Facts{Faults: true, Elapsed: 10 * time.Second, Result: &checker.Result{Verdict: checker.Valid,
			Faults:       []checker.FaultWindow{{ID: "f1", Desc: "cut n2"}, {ID: "f2", Desc: "skipped one", Skipped: true}},
			Availability: []checker.FaultAvailability{{Fault: "f1", Within: within, After: after}}}}
	}
	down := checker.Attempts{Fail: 4}
	up := checker.Attempts{OK: 3, Fail: 1, SuccessRate: 0.75}
	// The skipped fault makes the run idle whatever its availability; judge
	// availability on the other first.
	in := run(down, up)
	in.Result.Faults = in.Result.Faults[:1]
	if rep := Judge(e, in).Expected; !rep.Reproduced || !strings.Contains(rep.Why, "availability as expected") {
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
		in.Result.Faults = in.Result.Faults[:1]
		if rep := Judge(e, in).Expected; rep.Reproduced || !strings.Contains(rep.Why, tc.why) {
			t.Errorf("%s: %+v, want not reproduced because %q", name, rep, tc.why)
		}
	}
	noFault := Facts{Elapsed: time.Second, Result: &checker.Result{Verdict: checker.Valid}}
	if rep := Judge(e, noFault).Expected; rep.Reproduced {
		t.Errorf("a run without faults matched an availability expectation: %+v", rep)
	}
	bad := 1.5
	for _, a := range []Availability{{}, {WithinMax: &bad}} {
		if (Expectation{Verdict: checker.Valid, Availability: &a}).Validate() == nil {
			t.Errorf("availability %+v validates", a)
		}
	}
	if s := e.String(); !strings.Contains(s, "≤ 0% of acquires succeed during each fault, ≥ 50% after it") {
		t.Errorf("String() = %q", s)
	}
}

// TestJudgeAfterFaultStart: a row that times its anomaly counts only one
// that came long enough after the start of a fault it names, the earliest
// such one, and says so when none did.
func TestJudgeAfterFaultStart(t *testing.T) {
	late := &Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant, AfterFaultStart: spans.Fixed(time.Second)}
	res := doubleGrant() // its anomaly is 0.42 s after f1's start
	j := Judge(late, Facts{Result: res, Elapsed: time.Second, Faults: true})
	if j.Expected.Reproduced || !strings.Contains(j.Expected.Why, "no double-grant came 1s or more after the start of a fault it names") {
		t.Errorf("an early anomaly reproduced the row: %+v", j.Expected)
	}
	res.Anomalies = append(res.Anomalies,
		checker.Anomaly{Kind: checker.DoubleGrant, At: 4_700_000_000, Faults: []string{"f1"}},
		checker.Anomaly{Kind: checker.DoubleGrant, At: 4_100_000_000, Faults: []string{"f1"}},
		checker.Anomaly{Kind: checker.DoubleGrant, At: 3_900_000_000, Faults: nil})
	j = Judge(late, Facts{Result: res, Elapsed: time.Second, Faults: true})
	if !j.Expected.Reproduced || j.Expected.FirstAnomaly != 4_100_000_000 {
		t.Errorf("the anomaly 1.1 s after f1's start did not count first: %+v", j.Expected)
	}
	for _, bad := range []Expectation{
		{Verdict: checker.Valid, AfterFaultStart: spans.Fixed(time.Second)},
		{Verdict: checker.Invalid, AfterFaultStart: spans.TTLs(1)},
		{Verdict: checker.Invalid, AfterFaultStart: spans.Fixed(-time.Second)},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validates", bad)
		}
	}
	if s := late.String(); s != "invalid (double-grant), 1s or more after a fault's start" {
		t.Errorf("String() = %q", s)
	}
}
