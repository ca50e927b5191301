package checker

import (
	"slices"
	"strings"
	"testing"

	h "github.com/tumbler-dev/tumbler/history"
)

// Lock calls are given in ms; the TTL is 1 s unless a case says otherwise.
func TestMutualExclusionAndLinearizability(t *testing.T) {
	const ok, fail, info = h.OK, h.Fail, h.Info
	bad := verdicts{MutualExclusion: Invalid, Linearizability: Invalid}
	for _, tc := range []struct {
		name      string
		ops       []h.Op
		reentrant bool
		want      verdicts
	}{
		{"release then acquire", build(
			acq(1, "k", 0, 1, ok, vu(1000)), rel(1, "k", 100, 101, ok),
			acq(2, "k", 50, 150, ok, vu(1150)), rel(2, "k", 200, 201, ok),
		), false, verdicts{}},
		{"overlapping grants", build(
			acq(1, "k", 0, 1, ok, vu(1000)),
			acq(2, "k", 400, 500, ok, vu(1500)),
		), false, bad},
		{"keys are independent", build(
			acq(1, "k", 0, 1, ok, vu(1000)),
			acq(2, "j", 400, 500, ok, vu(1500)),
		), false, verdicts{}},
		{"the same client twice is no double grant", build(
			acq(1, "k", 0, 1, ok, vu(1000)),
			acq(1, "k", 400, 500, ok, vu(1500)),
		), false, verdicts{Linearizability: Invalid}}, // SET NX cannot succeed on a live key
		{"acquire after the holder's validity ended", build(
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 300, 500, ok, vu(1300)),
		), false, verdicts{}},
		{"acquire returning before the holder's validity ended", build(
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 300, 350, ok, vu(1300)),
		), false, bad},
		{"an ok extend keeps holding", build(
			acq(1, "k", 0, 1, ok, vu(400)), ext(1, "k", 300, 301, ok, vu(1300)),
			acq(2, "k", 450, 500, ok, vu(1500)),
		), false, bad},
		{"a failed extend does not", build(
			acq(1, "k", 0, 1, ok, vu(400)), ext(1, "k", 300, 301, fail),
			acq(2, "k", 450, 500, ok, vu(1500)),
		), false, verdicts{}},
		{"an extend with unknown outcome does not", build(
			acq(1, "k", 0, 1, ok, vu(400)), ext(1, "k", 300, 390, info),
			acq(2, "k", 450, 500, ok, vu(1500)),
		), false, verdicts{}},
		{"a lost lease ends the hold", build(
			acq(1, "k", 0, 1, ok, vu(1000)), single(1, h.Lost, "k", 300),
			acq(2, "k", 450, 500, ok, vu(1500)),
		), false, verdicts{Linearizability: Invalid}}, // the lock itself broke its promise
		{"a crash ends the hold", build(
			acq(1, "k", 0, 1, ok, vu(1000)), single(1, h.Crash, "", 300),
			acq(2, "k", 450, 500, ok, vu(1500)),
		), false, verdicts{Linearizability: Invalid}},
		{"unknown acquire overlapping a grant", build(
			acq(1, "k", 0, 600, info),
			acq(2, "k", 100, 200, ok, vu(1200)), rel(2, "k", 700, 701, ok),
		), false, verdicts{}},
		{"unknown release may have freed the lock", build(
			acq(1, "k", 0, 1, ok, vu(1000)), rel(1, "k", 100, 400, info),
			acq(2, "k", 200, 210, ok, vu(1210)),
		), false, verdicts{}},
		{"unknown acquire must have taken effect for its extend", build(
			acq(1, "k", 0, 300, info),
			ext(1, "k", 400, 410, ok, vu(1400)), rel(1, "k", 500, 501, ok),
			acq(2, "k", 600, 601, ok, vu(1600)),
		), false, verdicts{}},
		{"extend after the lease lapsed and another client held it", build( // redsync #147
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 450, 500, ok, vu(1500)), rel(2, "k", 600, 601, ok),
			ext(1, "k", 700, 701, ok, vu(1700)), rel(1, "k", 800, 801, ok),
		), false, bad},
		{"release of another client's lock, then a third client acquires", build(
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 450, 500, ok, vu(1500)),
			rel(1, "k", 600, 601, ok),
			acq(3, "k", 650, 700, ok, vu(1700)),
		), false, bad},
		{"acquire concurrent with the holder's release", build(
			acq(1, "k", 0, 1, ok, vu(1000)), rel(1, "k", 300, 400, ok),
			acq(2, "k", 350, 360, ok, vu(1360)),
		), false, verdicts{}},
		{"nested acquire without reentrancy: the release ends the hold", build(
			acq(1, "k", 0, 1, ok, vu(1000)), acq(1, "k", 10, 11, ok, vu(1010)), rel(1, "k", 200, 201, ok),
			acq(2, "k", 300, 301, ok, vu(1300)),
		), false, verdicts{Linearizability: Invalid}},
		{"nested acquire with reentrancy: one release is not enough", build(
			acq(1, "k", 0, 1, ok, vu(1000)), acq(1, "k", 10, 11, ok, vu(1010)), rel(1, "k", 200, 201, ok),
			acq(2, "k", 300, 301, ok, vu(1300)),
		), true, bad},
		{"reentrant: two releases free it", build(
			acq(1, "k", 0, 1, ok, vu(1000)), acq(1, "k", 10, 11, ok, vu(1010)),
			rel(1, "k", 200, 201, ok), rel(1, "k", 210, 211, ok),
			acq(2, "k", 300, 301, ok, vu(1300)),
		), true, verdicts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, tc.ops, Config{Subject: Subject{Reentrant: tc.reentrant}})
			expect(t, res, tc.want)
		})
	}
}

func TestDoubleGrantReport(t *testing.T) {
	ops := build(
		fault("f2", "kill", "kill n2, restart empty", 300, 350),
		fault("f9", "pause", "", 2000, 2100),
		acq(1, "k", 0, 10, h.OK, vu(1000)),
		acq(3, "k", 400, 500, h.OK, vu(1500)), rel(3, "k", 800, 801, h.OK),
	)
	res := check(t, ops, Config{})
	var dg []Anomaly
	for _, a := range res.Anomalies {
		if a.Kind == DoubleGrant {
			dg = append(dg, a)
		}
	}
	if len(dg) != 1 {
		t.Fatalf("want one double grant, got %+v", res.Anomalies)
	}
	a := dg[0]
	if a.Key != "k" || a.From != ns(500) || a.To != ns(800) {
		t.Errorf("overlap %d–%d on %q, want 500–800 ms on k", a.From, a.To, a.Key)
	}
	if !slices.Equal(a.Clients, []int{3, 1}) || !slices.Equal(a.Ops, []int64{5, 1}) || !slices.Equal(a.Faults, []string{"f2"}) {
		t.Errorf("clients %v ops %v faults %v", a.Clients, a.Ops, a.Faults)
	}
	for _, want := range []string{"client 3 acquired lock \"k\" at 0.500 s", "client 1 held it since 0.010 s", "until its validity ended at 1.000 s", "overlapped for 300ms", "fault f2 (kill n2, restart empty) started at 0.300 s"} {
		if !strings.Contains(a.Explanation, want) {
			t.Errorf("explanation %q lacks %q", a.Explanation, want)
		}
	}
	me, _ := res.Checker(MutualExclusion)
	if me.Stats["holds"] != 2 || me.Stats["acquires_ok"] != 2 {
		t.Errorf("stats %v", me.Stats)
	}
}

func TestUnknownAcquiresAreCountedNotHeld(t *testing.T) {
	res := check(t, build(
		acq(1, "k", 0, 600, h.Info),
		acq(2, "k", 100, 200, h.OK, vu(1200)),
		acq(3, "k", 100, -1, ""), // never completed: unknown too
	), Config{})
	me, _ := res.Checker(MutualExclusion)
	if me.Verdict != Valid || me.Stats["acquires_unknown"] != 2 || me.Stats["holds"] != 1 || len(me.Notes) != 1 {
		t.Fatalf("%+v", me)
	}
}

func TestMaxAnomaliesCapsTheListNotTheCount(t *testing.T) {
	var parts []part
	for c := range 6 {
		parts = append(parts, acq(c, "k", float64(c), float64(c)+0.5, h.OK, vu(1000)))
	}
	res := check(t, build(parts...), Config{MaxAnomalies: 4, Skip: []string{Linearizability}})
	me, _ := res.Checker(MutualExclusion)
	if me.Anomalies != 15 || len(res.Anomalies) != 4 {
		t.Fatalf("counted %d, kept %d; want 15 counted (6 choose 2), 4 kept", me.Anomalies, len(res.Anomalies))
	}
}

func owner(v string) mod { return func(i, d *h.Op) { i.Value, d.Value = v, v } }

// The workloads' watchdog can still be renewing the previous lease when
// the next one is granted: owner values keep them apart.
func TestRenewalsOfTwoLeasesOverlap(t *testing.T) {
	lostA := single(1, h.Lost, "k", 340) // the old lease's loss, reported late
	lostA[0].Value = "a"
	twoLeases := func(next part) []h.Op {
		return build(
			acq(1, "k", 0, 1, h.OK, vu(1000), owner("a")),
			ext(1, "k", 290, 330, h.OK, vu(1290), owner("a")), // the old lease's renewal, answered late
			rel(1, "k", 300, 301, h.OK),
			acq(1, "k", 305, 306, h.OK, vu(1305), owner("b")),
			ext(1, "k", 310, 320, h.OK, vu(1310), owner("b")),
			lostA,
			next,
		)
	}
	// The renewals interleave (invoke a, invoke b, ok b, ok a) and pair by
	// owner value; lease b holds until its validity.
	res := check(t, twoLeases(acq(2, "k", 1400, 1401, h.OK, vu(2400))), Config{})
	expect(t, res, verdicts{})
	// Were the late loss of lease a taken for lease b, b's hold would end
	// at 340 ms and a grant at 1 s would not overlap it.
	res = check(t, twoLeases(acq(2, "k", 1000, 1001, h.OK, vu(2000))), Config{})
	expect(t, res, verdicts{MutualExclusion: Invalid, Linearizability: Invalid})
}

// TestPauseOutlastingItsFault: a step-pause is armed from 500 to 4500 ms;
// it fires at 3600 ms and client 0 stays stopped until 4950 ms, when its
// acquire returns into client 1's hold. The double grant comes after the
// fault's stop, but the pause the fault caused was still on: the anomaly
// is tied to it, and the explanation says so.
func TestPauseOutlastingItsFault(t *testing.T) {
	f := fault("f1", "step-pause", "arm client 0 to pause 1.3s at lock step \"granted\"", 500, 4500)
	f[0].Fault.Targets = []string{"client:0"}
	ops := build(
		f,
		single(0, h.Pause, "k", 3600), single(0, h.Pause, "k", 4950),
		acq(1, "k", 4600, 4648, h.OK, vu(5648)), rel(1, "k", 5415, 5416, h.OK),
		acq(0, "k", 3040, 4950, h.OK, vu(5950)), rel(0, "k", 5558, 5559, h.Fail),
	)
	res := check(t, ops, Config{})
	var dg *Anomaly
	for i, a := range res.Anomalies {
		if a.Kind == DoubleGrant {
			dg = &res.Anomalies[i]
		}
	}
	if dg == nil {
		t.Fatalf("no double grant among %+v", res.Anomalies)
	}
	if !slices.Equal(dg.Faults, []string{"f1"}) || !strings.Contains(dg.Explanation, "the client pause it caused lasting until 4.950 s") {
		t.Fatalf("double grant %+v: want it tied to f1 through the pause it caused", dg)
	}
	if w := res.Faults[0]; w.Stop != ns(4500) || w.Effect != ns(4950) || w.Fired != 1 || w.Skipped {
		t.Fatalf("fault window %+v: want stop 4.5 s, effect until 4.95 s, fired once, not skipped", w)
	}
}

// A valid verdict under a fault means something only if the fault did
// something: the windows say whether the nemesis skipped a step and how
// often an armed step was reached (a crash counts as well as a pause).
func TestFaultWindowSkippedAndFired(t *testing.T) {
	armed := fault("f1", "step-pause", "arm client 0", 500, 2000)
	armed[0].Fault.Targets, armed[0].Fault.Traits = []string{"client:0"}, h.TraitSet{h.StopsClient, h.ArmsStep}
	crash := fault("f2", "step-crash", "arm client 1", 500, 2000)
	crash[0].Fault.Targets, crash[0].Fault.Traits = []string{"client:1"}, h.TraitSet{h.CrashesClient, h.ArmsStep}
	skipped := fault("f3", "restart", "restart n1 empty", 2500, 2500)
	skipped[0].Type, skipped[1].Type = h.Fail, h.Fail
	ops := build(
		armed, crash, skipped,
		single(0, h.Pause, "k", 2100), single(0, h.Pause, "k", 2200), // after f1 was disarmed
		single(1, h.Crash, "k", 1500),
		acq(2, "k", 100, 101, h.OK, vu(400)), rel(2, "k", 200, 201, h.OK),
	)
	res := check(t, ops, Config{})
	got := map[string]FaultWindow{}
	for _, w := range res.Faults {
		got[w.ID] = w
	}
	if w := got["f1"]; w.Fired != 0 || w.Skipped || w.Idle() == "" {
		t.Errorf("f1 %+v: its client paused only after it was disarmed; want fired 0, idle", w)
	}
	if w := got["f2"]; w.Fired != 1 || w.Skipped || w.Idle() != "" {
		t.Errorf("f2 %+v: want fired 1 (the crash), not idle", w)
	}
	if w := got["f3"]; !w.Skipped || w.Idle() == "" {
		t.Errorf("f3 %+v: recorded with type fail, want skipped, idle", w)
	}
}

// Holds exports the windows the mutual-exclusion checker judges: the
// double grant it reports is the overlap of two of them, and each says how
// long its client believed it held the lock, past its validity too.
func TestHolds(t *testing.T) {
	ops := build(
		acq(1, "k", 0, 1, h.OK, vu(400), owner("a"), tok(7)), rel(1, "k", 600, 601, h.OK),
		acq(2, "k", 300, 350, h.OK, vu(1350), owner("b")),
		acq(2, "k", 500, 510, h.OK, vu(1510), owner("b")), // nests only for a reentrant lock
	)
	res := check(t, ops, Config{})
	var dg *Anomaly
	for i, a := range res.Anomalies {
		if a.Kind == DoubleGrant {
			dg = &res.Anomalies[i]
		}
	}
	hs, err := Holds(ops, Config{})
	if err != nil || len(hs) != 3 || dg == nil {
		t.Fatalf("Holds = %+v, %v; double grant %+v", hs, err, dg)
	}
	a, b, b2 := hs[0], hs[1], hs[2]
	want := Hold{Key: "k", Client: 1, Process: 1, Owner: "a", Token: 7, AcquireOp: 1, Start: ns(1),
		End: ns(400), EndBy: "validity", EndOp: -1, HeldUntil: ns(600), HeldUntilBy: "release", ValidUntil: ns(400), Depth: 1}
	if a != want {
		t.Errorf("client 1's hold\n%+v, want\n%+v", a, want)
	}
	if b.Start != ns(350) || b.EndBy != "re-acquire" || b.End != ns(510) || b2.HeldUntilBy != "end" || b2.HeldUntil != ns(601) || b2.End != ns(1510) {
		t.Errorf("client 2's holds %+v and %+v: want one ended by the re-acquire and one open to its validity", b, b2)
	}
	if dg.From != b.Start || dg.To != a.End {
		t.Errorf("double grant over [%d, %d], want the overlap of the holds [%d, %d]", dg.From, dg.To, b.Start, a.End)
	}
	hs, err = Holds(ops, Config{Subject: Subject{Reentrant: true}})
	if err != nil || len(hs) != 2 || hs[1].Depth != 2 || hs[1].ValidUntil != ns(1510) {
		t.Fatalf("reentrant: Holds = %+v, %v; want client 2's acquires nested (depth 2, valid until 1.51 s)", hs, err)
	}
	if _, err := Holds(append(ops, h.Op{Index: 99, Process: 1, Type: h.OK, F: h.Release, Key: "k", Time: ns(700)}), Config{}); err == nil || !strings.Contains(err.Error(), "no pending invoke") {
		t.Fatalf("Holds of a broken history: %v, want Check's error", err)
	}
}

// FaultWindows pairs fault records even in a history Check would reject,
// so that a report can still show them.
func TestFaultWindowsOfARejectedHistory(t *testing.T) {
	skipped := fault("f2", "restart", "restart n1", 300, 300)
	skipped[0].Type, skipped[1].Type = h.Fail, h.Fail
	ops := build(
		fault("f1", "partition", "cut n1", 100, -1), // never stopped
		skipped,
		acq(1, "k", 900, 800, h.OK, vu(2000)), // returns before its invoke: Check refuses
	)
	if _, err := Check(ops, Config{}); err == nil {
		t.Fatal("Check accepted an op that returns before its invoke")
	}
	ws := FaultWindows(ops)
	if len(ws) != 2 || ws[0].ID != "f1" || ws[0].Healed || ws[0].Stop != ns(900) || ws[1].ID != "f2" || !ws[1].Skipped || ws[1].Idle() == "" {
		t.Fatalf("windows %+v: want f1 lasting to the last op (0.9 s), then f2 skipped", ws)
	}
}
