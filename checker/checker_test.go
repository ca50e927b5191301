package checker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	h "github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

func TestMerge(t *testing.T) {
	for _, tc := range []struct{ a, b, want Verdict }{
		{Valid, Valid, Valid}, {Valid, Unknown, Unknown}, {Unknown, Invalid, Invalid}, {Invalid, Valid, Invalid},
	} {
		if got := merge(tc.a, tc.b); got != tc.want {
			t.Errorf("merge(%s, %s) = %s", tc.a, tc.b, got)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	ops := build(acq(1, "k", 0, 1, h.OK, vu(100)))
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Config.TTL must be positive"},
		{Config{TTL: -time.Second}, "Config.TTL must be positive"},
		{Config{TTL: time.Second, LivenessK: -1}, "LivenessK"},
		{Config{TTL: time.Second, LinearizabilityTimeout: -1}, "LinearizabilityTimeout"},
		{Config{TTL: time.Second, LinearizabilityMemory: -1}, "LinearizabilityMemory"},
		{Config{TTL: time.Second, MaxAnomalies: -1}, "MaxAnomalies"},
		{Config{TTL: time.Second, Skip: []string{"mutex"}}, `unknown checker "mutex"`},
	} {
		if _, err := Check(ops, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestHistoryContractErrors(t *testing.T) {
	ok := func(ops []h.Op) []h.Op { return ops }
	for _, tc := range []struct {
		name string
		ops  []h.Op
		want string
	}{
		{"completion without invoke", ok([]h.Op{{Index: 0, Process: 1, Type: h.OK, F: h.Acquire, Key: "k", ValidUntil: 5}}), "op 0: ok acquire of process 1 on key \"k\" has no pending invoke"},
		{"completion of another key", ok([]h.Op{
			{Index: 0, Process: 1, Type: h.Invoke, F: h.Acquire, Key: "k"},
			{Index: 1, Process: 1, Type: h.OK, F: h.Acquire, Key: "j", ValidUntil: 5},
		}), "has no pending invoke"},
		{"completion of another function", ok([]h.Op{
			{Index: 0, Process: 1, Type: h.Invoke, F: h.Acquire, Key: "j"},
			{Index: 1, Process: 1, Type: h.Invoke, F: h.Acquire, Key: "k"},
			{Index: 2, Process: 1, Type: h.OK, F: h.Release, Key: "k"},
		}), `op 2: ok release of process 1 on key "k" has no pending invoke; process 1's pending call on key "k" is an acquire (op 1), not a release`},
		{"completion before invoke", ok([]h.Op{
			{Index: 0, Process: 1, Type: h.Invoke, F: h.Acquire, Key: "k", Time: 10},
			{Index: 1, Process: 1, Type: h.OK, F: h.Acquire, Key: "k", ValidUntil: 5, Time: 5},
		}), "op 1: ok acquire of process 1 on key \"k\" completed at 5 ns, before its invoke (op 0) at 10 ns"},
		{"ok acquire without validity", ok([]h.Op{
			{Index: 0, Process: 1, Type: h.Invoke, F: h.Acquire, Key: "k"},
			{Index: 1, Process: 1, Type: h.OK, F: h.Acquire, Key: "k", Time: 5},
		}), "op 1: ok acquire of process 1 on key \"k\" has no valid_until"},
		{"indexes out of order", ok([]h.Op{
			{Index: 3, Process: 1, Type: h.Invoke, F: h.Acquire, Key: "k"},
			{Index: 2, Process: 1, Type: h.Fail, F: h.Acquire, Key: "k"},
		}), "op 2: fail acquire of process 1 on key \"k\" follows op 3"},
		{"invalid op", ok([]h.Op{{Index: 0, Process: 1, Type: "done", F: h.Acquire, Key: "k"}}), `op 0: done acquire of process 1 on key "k": unknown type "done"`},
		{"call without key", ok([]h.Op{{Index: 0, Process: 1, Type: h.Invoke, F: h.Write}}), "op 0: invoke write of process 1 has no key"},
		{"fault stopped, never started", ok([]h.Op{{Index: 0, Process: h.NemesisProcess, Type: h.Info, F: h.Stop, Fault: &h.Fault{ID: "f1"}}}), "op 0: fault f1 was stopped but never started"},
		{"fault stops before it starts", ok([]h.Op{
			{Index: 0, Process: h.NemesisProcess, Type: h.Info, F: h.Stop, Time: 1, Fault: &h.Fault{ID: "f1"}},
			{Index: 1, Process: h.NemesisProcess, Type: h.Info, F: h.Start, Time: 5, Fault: &h.Fault{ID: "f1"}},
		}), "op 0: fault f1 stops before it starts (op 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.ops, Config{TTL: time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			// The error names the op, so a reader of the file finds its line.
			var he *HistoryError
			if !errors.As(err, &he) {
				t.Fatalf("%v: not a HistoryError", err)
			}
			if strings.HasPrefix(tc.want, "op ") && !strings.HasPrefix(tc.want, fmt.Sprintf("op %d: ", he.Index)) {
				t.Fatalf("HistoryError at op %d, want the op of %q", he.Index, tc.want)
			}
		})
	}
}

func TestPairingAllowsAWatchdogBesideItsClient(t *testing.T) {
	// An extend (watchdog) and a write (client) of one process overlap.
	res := check(t, build(
		acq(1, "k", 0, 1, h.OK, vu(400)),
		write(1, "k", 290, 500, h.OK),
		ext(1, "k", 300, 310, h.OK, vu(1300)),
		rel(1, "k", 600, 601, h.OK),
	), Config{})
	expect(t, res, verdicts{})
	if sw, _ := res.Checker(StaleWrites); sw.Stats["writes_in_lease"] != 1 {
		t.Fatalf("%+v", sw)
	}
}

func TestEmptyHistoryIsValid(t *testing.T) {
	res := check(t, nil, Config{})
	expect(t, res, verdicts{})
	if res.Anomalies == nil || res.Verdict != Valid {
		t.Fatalf("%+v", res)
	}
}

func TestResultJSON(t *testing.T) {
	res := check(t, build(
		fault("f1", "kill", "kill n1", 5, 6),
		acq(1, "k", 0, 10, h.OK, vu(1000)),
		acq(2, "k", 400, 450, h.OK, vu(1450)),
	), Config{})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict != Invalid || len(back.Anomalies) != 2 || back.Anomalies[0].Faults[0] != "f1" || back.Faults[0].Desc != "kill n1" || len(back.Checkers) != len(Names()) {
		t.Fatalf("%s", b)
	}
}

func TestSkip(t *testing.T) {
	res := check(t, build(
		acq(1, "k", 0, 10, h.OK, vu(1000)),
		acq(2, "k", 400, 450, h.OK, vu(1450)),
	), Config{Skip: []string{MutualExclusion, Linearizability}})
	expect(t, res, verdicts{})
	me, _ := res.Checker(MutualExclusion)
	if !me.Skipped || me.Reason != "skipped by Config.Skip" {
		t.Fatalf("%+v", me)
	}
}

// TestComposedByTheSubject: each checker says from the subject whether it
// applies; Check lists every checker, running those that apply and listing
// the others as skipped with a reason a person can read.
func TestComposedByTheSubject(t *testing.T) {
	plain := []string{MutualExclusion, Linearizability, StaleWrites, Liveness, Refusals}
	for _, c := range []struct {
		s   Subject
		run []string
	}{
		{Subject{}, plain},
		{Subject{Shape: lock.KindLock, Reentrant: true}, plain[:4]},
		{Subject{Fenced: true}, []string{MutualExclusion, Linearizability, Fencing, StaleWrites, Liveness, Refusals}},
		{Subject{Counter: true}, []string{MutualExclusion, Linearizability, StaleWrites, LostUpdates, Liveness, Refusals}},
		{Subject{Fair: true}, []string{MutualExclusion, Linearizability, StaleWrites, Liveness, Refusals, Fairness}},
		{Subject{Shape: lock.KindReadWrite}, []string{StaleWrites, Liveness, ReadersWriters}},
		{Subject{Shape: lock.KindSemaphore, Permits: 2, Counter: true}, []string{LostUpdates, Liveness, Semaphore}},
		{Subject{Shape: lock.KindLatch}, []string{Latch, LatchLiveness}},
	} {
		res := check(t, nil, Config{Subject: c.s})
		var run []string
		for i, r := range res.Checkers {
			if r.Name != Names()[i] {
				t.Fatalf("%+v: checker %d is %s, want %s (the order of Checkers)", c.s, i, r.Name, Names()[i])
			}
			ok, reason := checkers[i].Applies(c.s)
			switch {
			case !r.Skipped:
				run = append(run, r.Name)
			case r.Reason == "" || r.Reason != reason || ok:
				t.Errorf("%+v: %s skipped with reason %q, Applies says %v, %q", c.s, r.Name, r.Reason, ok, reason)
			}
		}
		if strings.Join(run, " ") != strings.Join(c.run, " ") {
			t.Errorf("%+v: ran %v, want %v", c.s, run, c.run)
		}
	}
	for _, c := range Checkers() {
		if c.Name == "" || c.Judges == "" || !IsName(c.Name) {
			t.Errorf("checker %+v: a name and what it judges are required", c)
		}
	}
}
