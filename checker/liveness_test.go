package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	h "github.com/tumbler-dev/tumbler/history"
)

// retries: client c fails to acquire key k in attempts of 400 ms, each
// 50 ms after the last, from `from` to `to` ms.
func retries(c int, k string, from, to float64) []part {
	var ps []part
	for t := from; t+400 <= to; t += 450 {
		ps = append(ps, acq(c, k, t, t+400, h.Fail))
	}
	return ps
}

func TestLiveness(t *testing.T) {
	cfg := Config{TTL: 500 * time.Millisecond} // k = 3: 1.5 s
	for _, tc := range []struct {
		name string
		ops  []h.Op
		want []Kind
	}{
		{"a lock that never expires", build(append(retries(2, "k", 100, 4000),
			acq(1, "k", 0, 10, h.OK, vu(500)), // its hold ends at 500 ms; the key stays
		)...), []Kind{Unavailable}},
		{"a long legitimate hold", build(append(retries(2, "k", 100, 4000),
			acq(1, "k", 0, 10, h.OK, vu(500)),
			ext(1, "k", 150, 151, h.OK, vu(650)), ext(1, "k", 300, 301, h.OK, vu(4200)),
			rel(1, "k", 4100, 4101, h.OK),
		)...), nil},
		{"grants in between", build(append(retries(2, "k", 100, 4000),
			acq(3, "k", 1500, 1510, h.OK, vu(1510)), // expired on arrival, still a grant
			acq(3, "k", 2900, 2910, h.OK, vu(2910)),
		)...), nil},
		{"during a fault and a TTL after", build(append(retries(2, "k", 100, 4000),
			fault("f1", "partition", "cut n1 from every client", 1000, 3000),
		)...), nil},
		{"gaps longer than a TTL between attempts", build(
			acq(2, "k", 0, 1400, h.Fail), acq(2, "k", 2000, 3400, h.Fail), acq(2, "k", 4000, 5400, h.Fail),
		), nil},
		{"attempts cut by the end of the run do not count", build(
			acq(2, "k", 0, -1, ""), acq(3, "k", 100, 200, h.OK, vu(600)), rel(3, "k", 300, 301, h.OK),
			single(1, h.Message, "", 9000),
		), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, tc.ops, cfg)
			var got []Kind
			for _, a := range res.Anomalies {
				if a.Checker == Liveness {
					got = append(got, a.Kind)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("liveness anomalies %v, want %v", got, tc.want)
			}
			lv, _ := res.Checker(Liveness)
			if (len(tc.want) > 0) != (lv.Verdict == Invalid) {
				t.Fatalf("verdict %s", lv.Verdict)
			}
		})
	}
}

func TestUnavailableReport(t *testing.T) {
	ops := build(append(append(retries(2, "k", 100, 4000), retries(3, "k", 120, 4000)...),
		acq(1, "k", 0, 10, h.OK, vu(500)), single(1, h.Crash, "", 200),
	)...)
	res := check(t, ops, Config{TTL: 500 * time.Millisecond})
	if len(res.Anomalies) != 1 {
		t.Fatalf("%+v", res.Anomalies)
	}
	a := res.Anomalies[0]
	if a.Kind != Unavailable || a.From != ns(200) || a.To != ns(3670) {
		t.Errorf("%s from %d to %d", a.Kind, a.From, a.To)
	}
	for _, want := range []string{`nobody could acquire lock "k" for 3.47s (6.9×TTL)`, "clients 2, 3 tried 16 times", "the last holder was client 1", "it crashed at 0.200 s"} {
		if !strings.Contains(a.Explanation, want) {
			t.Errorf("explanation %q lacks %q", a.Explanation, want)
		}
	}
}

func TestAvailabilityAroundFaults(t *testing.T) {
	ops := build(
		fault("f1", "partition", "", 1000, 2000),
		acq(1, "k", 0, 100, h.OK, vu(200)), acq(1, "k", 300, 400, h.OK, vu(500)), acq(2, "k", 300, 900, h.Fail), // before
		acq(1, "k", 1100, 1200, h.Fail), acq(2, "k", 1100, 1500, h.Info), acq(3, "k", 1600, 1700, h.OK, vu(1800)), // during
		acq(1, "k", 2100, 2200, h.OK, vu(2300)), // after
		acq(1, "k", 3100, 3200, h.OK, vu(3300)), // later than the window
	)
	res := check(t, ops, Config{Skip: []string{MutualExclusion, Linearizability}})
	if len(res.Availability) != 1 {
		t.Fatalf("%+v", res.Availability)
	}
	av := res.Availability[0]
	if av.Fault != "f1" ||
		av.Before != (Attempts{From: ns(0), To: ns(1000), OK: 2, Fail: 1, SuccessRate: 2.0 / 3}) ||
		av.During != (Attempts{From: ns(1000), To: ns(2000), OK: 1, Fail: 1, Unknown: 1, SuccessRate: 1.0 / 3}) ||
		av.After != (Attempts{From: ns(2000), To: ns(3000), OK: 1, SuccessRate: 1}) {
		t.Fatalf("%+v", av)
	}
}

// With k < 1 a span can fall between two attempts of one run; it still
// names them.
func TestUnavailableBetweenAttempts(t *testing.T) {
	res := check(t, build(
		acq(2, "k", 0, 100, h.Fail), acq(2, "k", 700, 800, h.Fail),
		acq(1, "k", 40, 50, h.OK, vu(150)), acq(3, "k", 680, 690, h.OK, vu(750)),
	), Config{TTL: time.Second, LivenessK: 0.5})
	lv, _ := res.Checker(Liveness)
	if lv.Anomalies != 1 || len(res.Anomalies) != 1 || len(res.Anomalies[0].Ops) == 0 || res.Anomalies[0].From != ns(150) || res.Anomalies[0].To != ns(690) {
		t.Fatalf("%+v", res.Anomalies)
	}
}
