package checker

import (
	"slices"
	"testing"
	"time"

	h "github.com/tumbler-dev/tumbler/history"
)

func held() mod { return func(_, d *h.Op) { d.Held = true } }

// TestRefusals: a refusal as held needs a lease that could hold the key
// within its call; an ok release ends a lease's key, anything else a TTL
// (and a slack of TTL/50 + 20 ms) after its acquire's or last extend's
// reply.
func TestRefusals(t *testing.T) {
	cfg := Config{TTL: time.Second} // slack 15 ms
	for _, tc := range []struct {
		name   string
		ops    []h.Op
		want   int   // refused-while-free anomalies
		judged int64 // refusals judged
	}{
		{"refused while another holds", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), acq(2, "k", 100, 200, h.Fail, held()), rel(1, "k", 300, 301, h.OK),
		), 0, 1},
		{"refused after the holder released", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 301, h.OK), acq(2, "k", 500, 600, h.Fail, held()),
		), 1, 1},
		{"refused within a TTL of an unknown acquire", build(
			acq(3, "k", 0, 1, h.OK, vu(900)), rel(3, "k", 2, 3, h.OK),
			acq(1, "k", 0, 10, h.Info), acq(2, "k", 500, 1020, h.Fail, held()),
		), 0, 1},
		{"refused past a TTL and the slack after an unknown acquire", build(
			acq(3, "k", 0, 1, h.OK, vu(900)), rel(3, "k", 2, 3, h.OK),
			acq(1, "k", 0, 10, h.Info), acq(2, "k", 1030, 1100, h.Fail, held()),
		), 1, 1},
		{"an unknown acquire of a lock whose grants never expire holds on", build(
			acq(3, "k", 0, 1, h.OK, vu(float64(h.NoExpiryAfter)/1e6+1)), rel(3, "k", 2, 3, h.OK),
			acq(1, "k", 5, 10, h.Info), acq(2, "k", 5000, 5100, h.Fail, held()),
		), 0, 1},
		{"nor does one when no grant says", build(
			acq(1, "k", 0, 10, h.Info), acq(2, "k", 5000, 5100, h.Fail, held()),
		), 0, 1},
		{"a release that found the key gone ends its lease's key", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 310, h.Fail), acq(2, "k", 500, 600, h.Fail, held()),
		), 1, 1},
		{"an unknown release leaves the key its TTL", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 310, h.Info), acq(2, "k", 900, 950, h.Fail, held()),
		), 0, 1},
		{"an unknown extend prolongs it", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), ext(1, "k", 800, 810, h.Info), acq(2, "k", 1500, 1600, h.Fail, held()),
		), 0, 1},
		{"a refusal not marked held promises nothing", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 301, h.OK), acq(2, "k", 500, 600, h.Fail),
		), 0, 0},
		{"another key's lease does not explain it", build(
			acq(1, "other", 0, 10, h.OK, vu(1000)), acq(2, "k", 100, 200, h.Fail, held()),
		), 1, 1},
		{"an acquire cut short holds to the end", build(
			acq(1, "k", 0, -1, ""), acq(2, "k", 3000, 3100, h.Fail, held()), single(3, h.Message, "", 9000),
		), 0, 1},
		{"a SET NX resent after its lost reply: refused by its own key, then the others", build(
			acq(1, "k", 0, 900, h.Fail, held()), acq(2, "k", 100, 950, h.Fail, held()), acq(3, "k", 200, 960, h.Fail, held()),
		), 3, 3},
		{"not judged once a node's clock moved", build(
			fault("f1", "clock", "move n1's clock", 50, 80, h.TouchesNode, h.MovesNodeClock),
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 301, h.OK), acq(2, "k", 500, 600, h.Fail, held()),
		), 0, 0},
		{"not judged once a failover may have brought a deleted key back", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 301, h.OK),
			fault("f1", "failover", "fail n1 over", 350, 400, h.PromotesReplica), acq(2, "k", 500, 600, h.Fail, held()),
		), 0, 0},
		{"a fault is known by its traits, not its kind's name: a node stopped unsettles", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 301, h.OK),
			fault("f1", "meteor", "a node stopped by a kind tumbler does not know", 350, 400, h.StopsNode), acq(2, "k", 500, 600, h.Fail, held()),
		), 0, 0},
		{"a kill recorded without its traits is a fault that unsettles nothing", build(
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 301, h.OK),
			fault("f1", "kill", "kill n1", 350, 400), acq(2, "k", 500, 600, h.Fail, held()),
		), 1, 1},
		{"judged before such a fault and under reply loss", build(
			fault("f0", "reply-loss", "lose n1's replies", 0, 700, h.TouchesNode, h.LosesReplies),
			acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 300, 301, h.OK), acq(2, "k", 500, 600, h.Fail, held()),
			fault("f1", "failover", "fail n1 over", 650, 900, h.PromotesReplica),
		), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := check(t, tc.ops, cfg)
			var got int
			for _, a := range res.Anomalies {
				if a.Kind == RefusedWhileFree {
					got++
					if a.Checker != Refusals || a.Explanation == "" || len(a.Ops) == 0 {
						t.Errorf("anomaly %+v: want the refusals checker's, with its op and a sentence", a)
					}
				}
			}
			if got != tc.want {
				t.Errorf("%d refused-while-free anomalies, want %d: %+v", got, tc.want, res.Anomalies)
			}
			i := slices.IndexFunc(res.Checkers, func(c CheckerResult) bool { return c.Name == Refusals })
			if i < 0 || res.Checkers[i].Skipped {
				t.Fatalf("the refusals checker did not run: %+v", res.Checkers)
			}
			if n := res.Checkers[i].Stats["refusals_judged"]; n != tc.judged {
				t.Errorf("judged %d refusals, want %d", n, tc.judged)
			}
			if want := Valid; tc.want > 0 && res.Checkers[i].Verdict == want {
				t.Errorf("verdict %s with anomalies", want)
			}
		})
	}
}
