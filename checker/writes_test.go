package checker

import (
	"slices"
	"strings"
	"testing"

	h "github.com/tumbler-dev/tumbler/history"
)

func TestFencing(t *testing.T) {
	const ok, fail = h.OK, h.Fail
	for _, tc := range []struct {
		name      string
		ops       []h.Op
		reentrant bool
		want      []Kind
		stats     map[string]int64
	}{
		{"increasing tokens, several writes per lease", build(
			acq(1, "k", 0, 1, ok, vu(1000), tok(1)), write(1, "k", 10, 11, ok, tok(1)), write(1, "k", 20, 21, ok, tok(1)), rel(1, "k", 30, 31, ok),
			acq(2, "k", 40, 41, ok, vu(1040), tok(2)), write(2, "k", 50, 51, ok, tok(2)), rel(2, "k", 60, 61, ok),
		), false, nil, map[string]int64{"writes_accepted": 3}},
		{"an old token rejected is fencing at work", build(
			acq(2, "k", 40, 41, ok, vu(1040), tok(2)), write(2, "k", 50, 51, ok, tok(2)),
			write(1, "k", 55, 56, fail, tok(1)),
		), false, nil, map[string]int64{"writes_rejected": 1}},
		{"two grants with one token", build(
			acq(1, "k", 0, 1, ok, vu(100), tok(5)), rel(1, "k", 30, 31, ok),
			acq(2, "k", 200, 201, ok, vu(1200), tok(5)),
		), false, []Kind{TokenReuse}, nil},
		{"one token on different keys is fine", build(
			acq(1, "k", 0, 1, ok, vu(100), tok(5)),
			acq(2, "j", 0, 1, ok, vu(100), tok(5)),
		), false, nil, nil},
		{"a reentrant holder's nested grant keeps its token", build(
			acq(1, "k", 0, 1, ok, vu(1000), tok(5)), acq(1, "k", 2, 3, ok, vu(1000), tok(5)),
		), true, nil, nil},
		{"a lower token accepted after a higher one", build(
			write(2, "k", 50, 51, ok, tok(7)),
			write(1, "k", 60, 61, ok, tok(6)),
		), false, []Kind{TokenOrder}, nil},
		{"the same token accepted from two leases", build(
			acq(1, "k", 0, 1, ok, vu(100), tok(5)), write(1, "k", 10, 11, ok, tok(5)), rel(1, "k", 30, 31, ok),
			acq(2, "k", 200, 201, ok, vu(1200), tok(5)), write(2, "k", 210, 211, ok, tok(5)),
		), false, []Kind{TokenReuse, TokenOrder}, nil},
		{"accept order is the accept time, not the invoke", build(
			write(1, "k", 10, 80, ok, tok(3)),
			write(2, "k", 20, 30, ok, tok(2)),
		), false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, tc.ops, Config{Subject: Subject{Fenced: true, Reentrant: tc.reentrant}, Skip: []string{MutualExclusion, Linearizability, StaleWrites}})
			fc, _ := res.Checker(Fencing)
			if got := kinds(res.Anomalies); !slices.Equal(got, tc.want) {
				t.Fatalf("anomalies %v, want %v", got, tc.want)
			}
			if (len(tc.want) > 0) != (fc.Verdict == Invalid) {
				t.Fatalf("verdict %s with anomalies %v", fc.Verdict, tc.want)
			}
			for k, v := range tc.stats {
				if fc.Stats[k] != v {
					t.Errorf("stat %s = %d, want %d", k, fc.Stats[k], v)
				}
			}
		})
	}
	res := check(t, build(acq(1, "k", 0, 1, h.OK, vu(100), tok(5)), acq(2, "k", 200, 201, h.OK, vu(1200), tok(5))), Config{})
	if fc, _ := res.Checker(Fencing); !fc.Skipped || fc.Verdict != Valid || !strings.Contains(fc.Reason, "Subject.Fenced") {
		t.Fatalf("fencing on an unfenced workload: %+v", fc)
	}
}

func TestStaleWrites(t *testing.T) {
	const ok, fail, info = h.OK, h.Fail, h.Info
	for _, tc := range []struct {
		name     string
		ops      []h.Op
		anomaly  []Kind
		warnings []Kind
		stats    map[string]int64
	}{
		{"writes inside the lease", build(
			acq(1, "k", 0, 1, ok, vu(1000)), write(1, "k", 10, 11, ok), write(1, "k", 900, 999, ok),
		), nil, nil, map[string]int64{"writes_in_lease": 2}},
		{"accepted after the lease while another client held it", build(
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 450, 500, ok, vu(1500)), rel(2, "k", 600, 601, ok),
			write(1, "k", 380, 700, ok),
		), []Kind{StaleWrite}, nil, map[string]int64{"writes_outside_lease": 1}},
		{"accepted after the lease, nobody else held it", build(
			acq(1, "k", 0, 1, ok, vu(400)), write(1, "k", 380, 700, ok),
			acq(2, "k", 800, 801, ok, vu(1800)),
		), nil, []Kind{WriteOutsideLease}, nil},
		{"rejected after the lease", build(
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 450, 500, ok, vu(1500)),
			write(1, "k", 380, 700, fail),
		), nil, nil, map[string]int64{"writes_rejected": 1, "writes_rejected_outside_lease": 1}},
		{"unknown outcome is not judged", build(
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 450, 500, ok, vu(1500)),
			write(1, "k", 380, 700, info),
		), nil, nil, map[string]int64{"writes_unknown": 1}},
		{"an ok extend before the accept keeps the write inside", build(
			acq(1, "k", 0, 1, ok, vu(400)), ext(1, "k", 300, 310, ok, vu(1300)), write(1, "k", 380, 700, ok),
		), nil, nil, map[string]int64{"writes_in_lease": 1}},
		{"the write's own validity counts", build(
			write(1, "k", 380, 700, ok, wvu(900)),
		), nil, nil, map[string]int64{"writes_in_lease": 1}},
		{"a write without any lease while another client holds", build(
			acq(2, "k", 0, 1, ok, vu(1000)),
			write(1, "k", 100, 101, ok),
		), []Kind{StaleWrite}, nil, nil},
		{"fenced: accepted in token order before the new holder wrote", build(
			acq(1, "k", 0, 1, ok, vu(400), tok(1)),
			acq(2, "k", 450, 500, ok, vu(1500), tok(2)),
			write(1, "k", 380, 700, ok, tok(1)),
			write(2, "k", 800, 801, ok, tok(2)),
		), nil, []Kind{WriteOutsideLease}, map[string]int64{"writes_outside_lease": 1}},
		{"unfenced: the same is stale", build(
			acq(1, "k", 0, 1, ok, vu(400)),
			acq(2, "k", 450, 500, ok, vu(1500)),
			write(1, "k", 380, 700, ok),
			write(2, "k", 800, 801, ok),
		), []Kind{StaleWrite}, nil, nil},
		{"the writer's own later hold is no conflict", build(
			acq(1, "k", 0, 1, ok, vu(400)), write(1, "k", 380, 700, ok),
			acq(1, "k", 500, 501, ok, vu(1500)),
		), nil, []Kind{WriteOutsideLease}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fenced := slices.ContainsFunc(tc.ops, func(o h.Op) bool { return o.Token != 0 })
			res := check(t, tc.ops, Config{Subject: Subject{Fenced: fenced}, Skip: []string{MutualExclusion, Linearizability, Liveness}})
			sw, _ := res.Checker(StaleWrites)
			if got := kinds(res.Anomalies); !slices.Equal(got, tc.anomaly) {
				t.Fatalf("anomalies %v, want %v", got, tc.anomaly)
			}
			if got := kinds(res.Warnings); !slices.Equal(got, tc.warnings) {
				t.Fatalf("warnings %v, want %v", got, tc.warnings)
			}
			if (len(tc.anomaly) > 0) != (sw.Verdict == Invalid) {
				t.Fatalf("verdict %s", sw.Verdict)
			}
			for k, v := range tc.stats {
				if sw.Stats[k] != v {
					t.Errorf("stat %s = %d, want %d", k, sw.Stats[k], v)
				}
			}
		})
	}
}

func TestStaleWriteReport(t *testing.T) {
	ops := build(
		fault("f1", "client-pause", "pause client 1 for 1.5 s", 100, 1600),
		acq(1, "k", 0, 1, h.OK, vu(400)), write(1, "k", 90, 1700, h.OK, val("x")),
		acq(2, "k", 450, 500, h.OK, vu(1500)), rel(2, "k", 600, 601, h.OK),
	)
	res := check(t, ops, Config{})
	if len(res.Anomalies) != 1 || res.Anomalies[0].Kind != StaleWrite {
		t.Fatalf("%+v", res.Anomalies)
	}
	a := res.Anomalies[0]
	if a.From != ns(400) || a.To != ns(1700) || !slices.Equal(a.Clients, []int{1, 2}) || !slices.Equal(a.Faults, []string{"f1"}) {
		t.Errorf("%+v", a)
	}
	for _, want := range []string{`client 1's write of "x" to "k"`, "accepted at 1.700 s, 1.3s after its lease ended at 0.400 s", "client 2 held the lock (granted at 0.500 s", "pause client 1 for 1.5 s"} {
		if !strings.Contains(a.Explanation, want) {
			t.Errorf("explanation %q lacks %q", a.Explanation, want)
		}
	}
}

func TestLostUpdates(t *testing.T) {
	const ok, info = h.OK, h.Info
	w := func(proc int, call, ret float64, v string, typ h.Type) part {
		return write(proc, "c", call, ret, typ, val(v))
	}
	for _, tc := range []struct {
		name     string
		ops      []h.Op
		anomaly  []Kind
		warnings []Kind
		summary  CounterSummary
	}{
		{"every increment counted", build(
			read(1, "c", 0, 1, "0"), w(1, 2, 3, "1", ok),
			read(2, "c", 10, 11, "1"), w(2, 12, 13, "2", ok),
		), nil, nil, CounterSummary{Key: "c", Final: 2, Acknowledged: 2}},
		{"two writes of one value", build(
			read(1, "c", 0, 1, "0"), read(2, "c", 0, 2, "0"),
			w(1, 3, 4, "1", ok), w(2, 5, 6, "1", ok),
		), []Kind{LostUpdate}, nil, CounterSummary{Key: "c", Final: 1, Acknowledged: 2, Lost: 1}},
		{"a stale read sets the counter back", build(
			read(2, "c", 0, 1, "0"),
			read(1, "c", 2, 3, "0"), w(1, 4, 5, "1", ok), read(1, "c", 6, 7, "1"), w(1, 8, 9, "2", ok),
			w(2, 10, 11, "1", ok),
		), []Kind{LostUpdate}, nil, CounterSummary{Key: "c", Final: 1, Acknowledged: 3, Lost: 2}},
		{"an unknown write that took effect is a jump, not a loss", build(
			read(1, "c", 0, 1, "0"), w(1, 2, 3, "1", info),
			read(2, "c", 10, 11, "1"), w(2, 12, 13, "2", ok),
		), nil, []Kind{CounterJump}, CounterSummary{Key: "c", Final: 2, Acknowledged: 1, Unknown: 1}},
		{"a final read below the acknowledged increments", build(
			w(1, 2, 3, "1", ok), w(1, 4, 5, "2", ok), w(1, 6, 7, "3", ok),
			read(2, "c", 10, 11, "1"),
		), []Kind{LostUpdate}, nil, CounterSummary{Key: "c", Final: 1, Acknowledged: 3, Lost: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, tc.ops, Config{Subject: Subject{Counter: true}, Skip: []string{StaleWrites}})
			lu, _ := res.Checker(LostUpdates)
			if got := kinds(res.Anomalies); !slices.Equal(got, tc.anomaly) {
				t.Fatalf("anomalies %v, want %v", got, tc.anomaly)
			}
			if got := kinds(res.Warnings); !slices.Equal(got, tc.warnings) {
				t.Fatalf("warnings %v, want %v", got, tc.warnings)
			}
			if (len(tc.anomaly) > 0) != (lu.Verdict == Invalid) {
				t.Fatalf("verdict %s", lu.Verdict)
			}
			if len(res.Counters) != 1 || res.Counters[0] != tc.summary {
				t.Fatalf("summary %+v, want %+v", res.Counters, tc.summary)
			}
		})
	}
}

func TestLostUpdateReport(t *testing.T) {
	res := check(t, build(
		read(2, "c", 0, 1, "0"),
		read(1, "c", 2, 3, "0"), write(1, "c", 4, 5, h.OK, val("1")), read(1, "c", 6, 7, "1"), write(1, "c", 8, 9, h.OK, val("2")),
		write(2, "c", 10, 11, h.OK, val("1")),
	), Config{Subject: Subject{Counter: true}, Skip: []string{StaleWrites}})
	a := res.Anomalies[0]
	// The overwriting write, the two it erased, and the read it was based on.
	if !slices.Equal(a.Ops, []int64{11, 5, 9, 1}) || !slices.Equal(a.Clients, []int{2, 1, 1, 2}) {
		t.Fatalf("ops %v clients %v", a.Ops, a.Clients)
	}
	for _, want := range []string{"client 2's write of 1", "based on its read of 0 at 0.001 s (op 1)", "set it back from 2", "erasing 2 acknowledged increments", "client 1's 2 at 0.009 s (op 9)"} {
		if !strings.Contains(a.Explanation, want) {
			t.Errorf("explanation %q lacks %q", a.Explanation, want)
		}
	}
}

func TestLostUpdatesRejectsNonIntegers(t *testing.T) {
	res := check(t, build(write(1, "c", 0, 1, h.OK, val("one"))), Config{Subject: Subject{Counter: true}})
	lu, _ := res.Checker(LostUpdates)
	if lu.Verdict != Unknown || !strings.Contains(lu.Reason, `counter value "one" is not a base-10 integer`) || res.Verdict != Unknown {
		t.Fatalf("%+v", lu)
	}
}
