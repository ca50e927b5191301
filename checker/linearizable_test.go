package checker

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	h "github.com/tumbler-dev/tumbler/history"
)

// notLinearizableIn is res's last not-linearizable anomaly; the test
// fails without one.
func notLinearizableIn(t *testing.T, res *Result) *Anomaly {
	t.Helper()
	var a *Anomaly
	for i := range res.Anomalies {
		if res.Anomalies[i].Kind == NotLinearizable {
			a = &res.Anomalies[i]
		}
	}
	if a == nil {
		t.Fatalf("no %s anomaly in %+v", NotLinearizable, res.Anomalies)
	}
	return a
}

func TestNotLinearizableExplains(t *testing.T) {
	ops := build(
		fault("f1", "clock", "jump n1 forward 2 s", 200, 250),
		acq(1, "k", 0, 10, h.OK, vu(1000)),
		acq(2, "k", 400, 450, h.OK, vu(1450)),
	)
	a := notLinearizableIn(t, check(t, ops, Config{}))
	if a.Key != "k" || a.Ops[0] != 5 || a.Ops[1] != 1 || a.Clients[0] != 2 || a.Clients[1] != 1 {
		t.Errorf("culprit %+v", a)
	}
	for _, want := range []string{"client 2's acquire (op 5", "held by client 1 (acquire op 1), valid until 1.000 s", "fault f1 (jump n1 forward 2 s)"} {
		if !strings.Contains(a.Explanation, want) {
			t.Errorf("explanation %q lacks %q", a.Explanation, want)
		}
	}
}

// TestNotLinearizableSaysNoExpiry: a lease with no expiry (a library
// that exposes no validity: lock.NoExpiry) is said to be one, not given
// the instant a century ahead.
func TestNotLinearizableSaysNoExpiry(t *testing.T) {
	never := func(_, d *h.Op) { d.ValidUntil = int64(100*365*24*time.Hour) + ns(10) }
	ops := build(
		acq(1, "k", 0, 10, h.OK, never),
		acq(2, "k", 400, 450, h.OK, never),
	)
	a := notLinearizableIn(t, check(t, ops, Config{}))
	want := "held by client 1 (acquire op 1), " + h.NoExpiryText
	if !strings.Contains(a.Explanation, want) || strings.Contains(a.Explanation, "valid until") {
		t.Errorf("explanation %q: want %q and no \"valid until\"", a.Explanation, want)
	}
}

// TestNotLinearizableNamesFaultsOfBothOps: the faults named are those
// active while either of the two operations was in flight. Client 2's
// acquire is in flight from 0 to 1000; client 1's is granted at 110; the
// restart at 200–210 comes after client 1's grant and before client 2's,
// and must be named whichever of the two porcupine blames.
func TestNotLinearizableNamesFaultsOfBothOps(t *testing.T) {
	ops := build(
		acq(2, "k", 0, 1000, h.OK, vu(2000)),
		acq(1, "k", 100, 110, h.OK, vu(1100)),
		fault("f1", "restart", "restart n3 empty", 200, 210),
	)
	a := notLinearizableIn(t, check(t, ops, Config{}))
	if !slices.Contains(a.Faults, "f1") || !strings.Contains(a.Explanation, "fault f1 (restart n3 empty)") {
		t.Errorf("faults %v, explanation %q: want f1 named", a.Faults, a.Explanation)
	}
}

// TestNotLinearizableExplainsAlike: two overlapping grants leave two
// longest orders of one operation each, which porcupine returns in map
// order; the explanation must not follow that order. The culprit is the
// grant that returned first (client 2's), every time.
func TestNotLinearizableExplainsAlike(t *testing.T) {
	ops := build(
		acq(1, "k", 0, 1000, h.OK, vu(3000)),
		acq(2, "k", 100, 110, h.OK, vu(2000)),
	)
	first := notLinearizableIn(t, check(t, ops, Config{}))
	if first.Clients[0] != 2 || len(first.Clients) != 2 || first.Clients[1] != 1 {
		t.Errorf("culprit and holder: clients %v, want [2 1]", first.Clients)
	}
	for range 40 {
		if a := notLinearizableIn(t, check(t, ops, Config{})); a.Explanation != first.Explanation || a.At != first.At {
			t.Fatalf("the same history explained two ways:\n%s (at %d)\n%s (at %d)", first.Explanation, first.At, a.Explanation, a.At)
		}
	}
}

func TestLinearizabilityVisualization(t *testing.T) {
	ops := build(
		fault("f1", "partition", "cut n1 from every client", 200, 700),
		acq(1, "k", 0, 10, h.OK, vu(1000)), rel(1, "k", 100, -1, ""),
		single(1, h.Crash, "", 150),
		acq(2, "k", 400, 450, h.OK, vu(1450)),
	)
	res := check(t, ops, Config{})
	var buf bytes.Buffer
	if err := res.WriteLinearizationHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{"<html", "nemesis", "f1 partition", "cut n1 from every client", "crash", "valid until 1.000 s"} {
		if !strings.Contains(page, want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	path := filepath.Join(t.TempDir(), "linearizability.html")
	if err := res.WriteLinearizationHTMLFile(path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, buf.Bytes()) {
		t.Fatalf("file differs from the writer's page (%v)", err)
	}
	skipped := check(t, ops, Config{Skip: []string{Linearizability}})
	if err := skipped.WriteLinearizationHTML(&buf); err == nil {
		t.Fatal("a visualization without a linearizability check")
	}
}

// A time limit yields unknown, never valid: 24 processes with unknown
// reentrant acquires pending to the end, then an acquire nobody can
// explain, make porcupine try every subset.
func TestLinearizabilityTimeoutIsUnknown(t *testing.T) {
	var parts []part
	for c := range 24 {
		parts = append(parts, acq(c, "k", float64(c), 5000, h.Info))
	}
	parts = append(parts,
		acq(30, "k", 100, 110, h.OK, vu(3000)),
		acq(31, "k", 200, 210, h.OK, vu(3000)),
	)
	start := time.Now()
	res := check(t, build(parts...), Config{Subject: Subject{Reentrant: true}, LinearizabilityTimeout: 300 * time.Millisecond, Skip: []string{MutualExclusion}})
	lin, _ := res.Checker(Linearizability)
	if lin.Verdict != Unknown || !strings.Contains(lin.Reason, "did not finish within 300ms") {
		t.Fatalf("got %s (%s), want unknown after the time limit", lin.Verdict, lin.Reason)
	}
	if res.Verdict != Unknown {
		t.Fatalf("overall %s", res.Verdict)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("porcupine ignored its time limit: %v", took)
	}
}

// A history linearizable in the order its operations returned needs no
// search, and no memory for one; one that needs a search does not get it
// within a byte.
func TestLinearizabilityMemoryLimitIsUnknown(t *testing.T) {
	var parts []part
	for i := range 10 {
		parts = append(parts, acq(1, "k", float64(10*i), float64(10*i+1), h.OK, vu(1000)), rel(1, "k", float64(10*i+2), float64(10*i+3), h.OK))
	}
	res := check(t, build(parts...), Config{LinearizabilityMemory: 1})
	if lin, _ := res.Checker(Linearizability); lin.Verdict != Valid {
		t.Fatalf("in the order of returns: %s (%s)", lin.Verdict, lin.Reason)
	}
	ops, err := h.ReadFile(filepath.Join("testdata", "slow-release-reply.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res = check(t, ops, Config{LinearizabilityMemory: 1})
	lin, _ := res.Checker(Linearizability)
	if lin.Verdict != Unknown || !strings.Contains(lin.Reason, "LinearizabilityMemory") || !strings.Contains(lin.Reason, `key "lock" piece 1 of 1`) {
		t.Fatalf("got %s (%s)", lin.Verdict, lin.Reason)
	}
	if res := check(t, ops, Config{}); res.Verdict != Valid {
		t.Fatalf("with memory: %s", res.Verdict)
	}
}

func TestUnknownReleasesNobodyNeedsAreLeftOut(t *testing.T) {
	res := check(t, build(
		acq(1, "k", 0, 1, h.OK, vu(400)), rel(1, "k", 100, 300, h.Info), // nobody acquires before 400
		acq(2, "k", 350, 420, h.OK, vu(1400)), rel(2, "k", 500, 501, h.OK),
		acq(3, "k", 600, 900, h.Info), // never extended
	), Config{})
	lin, _ := res.Checker(Linearizability)
	if lin.Verdict != Valid || lin.Stats["left_out"] != 2 || lin.Stats["operations"] != 3 {
		t.Fatalf("%+v", lin)
	}
}

// The pruning in linOps must never change porcupine's answer: compare with
// and without it on many small random histories, valid and invalid alike.
func TestLinearizabilityPruningKeepsVerdicts(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	types := []h.Type{h.OK, h.OK, h.OK, h.Fail, h.Info}
	counts := map[porcupine.CheckResult]int{}
	exercised := 0
	for round := range 3000 {
		var parts []part
		for proc := range 3 {
			t0 := float64(rng.IntN(100))
			for range 1 + rng.IntN(2) { // acquire, maybe extend, release
				call := t0 + float64(rng.IntN(30))
				ret := call + 1 + float64(rng.IntN(60))
				parts = append(parts, acq(proc, "k", call, ret, types[rng.IntN(len(types))], vu(call+20+float64(rng.IntN(150)))))
				if rng.IntN(3) == 0 {
					call = ret + float64(rng.IntN(20))
					ret = call + 1 + float64(rng.IntN(30))
					parts = append(parts, ext(proc, "k", call, ret, types[rng.IntN(len(types))], vu(call+20+float64(rng.IntN(150)))))
				}
				call = ret + float64(rng.IntN(40))
				ret = call + 1 + float64(rng.IntN(60))
				parts = append(parts, rel(proc, "k", call, ret, types[rng.IntN(len(types))]))
				t0 = ret
			}
		}
		ops := build(parts...)
		cfg, _ := Config{TTL: time.Second}.withDefaults()
		p, err := prepare(ops, cfg)
		if err != nil {
			t.Fatal(err)
		}
		model := linModel(p)
		pruned, _ := linOps(p, true)
		full, _ := linOps(p, false)
		if len(slices.Concat(pruned...)) < len(slices.Concat(full...)) {
			exercised++
		}
		a := porcupine.CheckOperations(model, porcupineOps(slices.Concat(pruned...)))
		b := porcupine.CheckOperations(model, porcupineOps(slices.Concat(full...)))
		if a != b {
			for _, o := range ops {
				t.Log(o)
			}
			t.Fatalf("round %d: pruned says linearizable=%v, full says %v", round, a, b)
		}
		if a {
			counts[porcupine.Ok]++
		} else {
			counts[porcupine.Illegal]++
		}
	}
	// Both answers must be well represented for the comparison to mean much.
	if counts[porcupine.Ok] < 300 || counts[porcupine.Illegal] < 300 || exercised < 300 {
		t.Fatalf("unbalanced sample: %v, pruning exercised in %d rounds", counts, exercised)
	}
	t.Logf("%v, pruning exercised in %d rounds", counts, exercised)
}

// A piece that times out is not reported as not linearizable, and does not
// hide another key that is.
func TestLinearizabilityTimeoutBesideAnIllegalKey(t *testing.T) {
	var parts []part
	for c := range 24 {
		parts = append(parts, acq(c, "slow", float64(c), 5000, h.Info))
	}
	parts = append(parts,
		acq(30, "slow", 100, 110, h.OK, vu(3000)), acq(31, "slow", 200, 210, h.OK, vu(3000)),
		acq(40, "bad", 100, 110, h.OK, vu(3000)), acq(41, "bad", 200, 210, h.OK, vu(3000)),
	)
	res := check(t, build(parts...), Config{Subject: Subject{Reentrant: true}, LinearizabilityTimeout: 300 * time.Millisecond, Skip: []string{MutualExclusion}})
	lin, _ := res.Checker(Linearizability)
	if lin.Verdict != Invalid || len(res.Anomalies) != 1 || res.Anomalies[0].Key != "bad" {
		t.Fatalf("%s, anomalies %+v", lin.Verdict, res.Anomalies)
	}
	if len(lin.Notes) != 1 || !strings.Contains(lin.Notes[0], `did not finish within 300ms (Config.LinearizabilityTimeout, per piece) on key "slow" piece 1 of 1 (ops `) {
		t.Fatalf("notes %q", lin.Notes)
	}
}
