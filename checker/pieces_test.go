package checker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	h "github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/racebuild"
)

// splitStats says what a split exercised.
type splitStats struct {
	cuts    int // cuts made
	carried int // cuts that moved a still-running acquire (C) to the next piece
	pending int // cuts with an unknown operation (P) left behind in the piece before
	fast    int // pieces linearizable in the order their operations returned
}

// verdictsSplitAndWhole checks linOps' operations twice: porcupine on each
// key's whole history, and porcupine on each piece.
func verdictsSplitAndWhole(p *prepared, keys [][]linOp) (whole, split bool, st splitStats) {
	model := linModel(p)
	whole = porcupine.CheckOperations(model, porcupineOps(slices.Concat(keys...)))
	split = true
	for _, key := range keys {
		pieces := splitKey(key, p.cfg.Reentrant)
		st.cuts += len(pieces) - 1
		for i, piece := range pieces {
			// As checkPieces decides: the order of returns, else a search.
			fast := linearizableAsReturned(piece, nil) != nil
			searched := porcupine.CheckOperations(model, porcupineOps(piece))
			if fast && !searched {
				panic(fmt.Sprintf("the order of returns was accepted, porcupine finds no order: %+v", piece))
			}
			if fast {
				st.fast++
			}
			if !fast && !searched {
				split = false
			}
			if i == 0 {
				continue
			}
			var lastCall int64 = math.MinInt64
			for _, op := range pieces[i-1] {
				lastCall = max(lastCall, op.call)
			}
			if piece[0].call < lastCall {
				st.carried++
			}
			for _, op := range pieces[i-1] {
				if op.in.info {
					st.pending++
					break
				}
			}
		}
	}
	return whole, split, st
}

// genLockHistory writes a random history of a few clients taking one or
// two locks: outcomes ok, fail or unknown, validities shorter or longer than
// the holds, extends, releases that are missing, unknown or concurrent with
// other clients' acquires, crashes (an invoke never completed, then a new
// process), and with reentrancy nested holds. Idle gaps of varying length
// leave room for cuts; overlapping clients make about half the histories
// not linearizable.
func genLockHistory(rng *rand.Rand, reentrant bool) []h.Op {
	return genClients(rng, reentrant, 2, 3, 30)
}

// genSparse is genLockHistory with two or three clients that take their
// time inside a hold (up to 200 ms between acquire, extends and release):
// cuts then fall between a lease's acquire and its extends or release.
func genSparse(rng *rand.Rand, reentrant bool) []h.Op { return genClients(rng, reentrant, 2, 2, 200) }

func genClients(rng *rand.Rand, reentrant bool, minClients, moreClients, inHold int) []h.Op {
	types := []h.Type{h.OK, h.OK, h.OK, h.OK, h.Fail, h.Info}
	pick := func() h.Type { return types[rng.IntN(len(types))] }
	keys := []string{"k"}
	if rng.IntN(3) == 0 {
		keys = append(keys, "j")
	}
	var parts []part
	proc := 0
	for range minClients + rng.IntN(moreClients) {
		t := float64(rng.IntN(400))
		me := proc
		proc++
		for range 2 + rng.IntN(5) {
			key := keys[rng.IntN(len(keys))]
			call := t
			ret := call + 1 + float64(rng.IntN(40))
			if rng.IntN(4) == 0 { // waits for the lock
				ret += 20 + float64(rng.IntN(150))
			}
			life := 10 + float64(rng.IntN(60))
			if rng.IntN(2) == 0 {
				life = 100 + float64(rng.IntN(300))
			}
			if rng.IntN(20) == 0 { // crash during the acquire: never completed
				parts = append(parts, acq(me, key, call, -1, h.Info))
				me = proc
				proc++
				t = call + float64(rng.IntN(100))
				continue
			}
			typ := pick()
			parts = append(parts, acq(me, key, call, ret, typ, vu(call+life)))
			t = ret
			depth := 0
			if typ == h.OK {
				depth = 1
			}
			if reentrant && typ != h.Fail && rng.IntN(3) == 0 { // nest
				c2 := t + float64(rng.IntN(10))
				r2 := c2 + 1 + float64(rng.IntN(10))
				typ2 := pick()
				parts = append(parts, acq(me, key, c2, r2, typ2, vu(c2+life)))
				if typ2 == h.OK {
					depth++
				}
				t = r2
			}
			if typ == h.Fail && depth == 0 {
				t += float64(rng.IntN(60))
				continue
			}
			for rng.IntN(3) == 0 { // extends, now and then concurrent with what follows
				c := t + float64(rng.IntN(inHold))
				r := c + 1 + float64(rng.IntN(30))
				until := c + life
				if rng.IntN(5) == 0 { // the validity it reports ran out while it ran (a pause)
					until = max(1, c-float64(rng.IntN(50)))
				}
				parts = append(parts, ext(me, key, c, r, pick(), vu(until)))
				if rng.IntN(4) != 0 {
					t = r
				}
			}
			releases := max(depth, 1)
			if rng.IntN(8) == 0 {
				releases-- // abandoned: it never releases
			}
			for range releases {
				c := t + float64(rng.IntN(inHold+20))
				r := c + 1 + float64(rng.IntN(30))
				if rng.IntN(25) == 0 { // crash during the release
					parts = append(parts, rel(me, key, c, -1, h.Info))
					me = proc
					proc++
					t = c
					break
				}
				parts = append(parts, rel(me, key, c, r, pick()))
				t = r
			}
			t += float64(rng.IntN(300)) // think: long gaps leave the lock idle
		}
	}
	return build(parts...)
}

// genChaos writes lock calls with no client discipline at all: any
// process, any call, any times and outcomes, calls of one process
// overlapping, releases and extends of leases taken later or by nobody.
func genChaos(rng *rand.Rand, reentrant bool) []h.Op {
	types := []h.Type{h.OK, h.OK, h.OK, h.Fail, h.Info}
	fs := []func(int, string, float64, float64, h.Type, ...mod) part{acq, acq, acq,
		func(p int, k string, c, r float64, t h.Type, _ ...mod) part { return rel(p, k, c, r, t) }, ext}
	if reentrant {
		fs = fs[:4]
	}
	var parts []part
	for range 6 + rng.IntN(10) {
		c := float64(rng.IntN(600))
		r := c + 1 + float64(rng.IntN(80))
		if rng.IntN(15) == 0 {
			r = -1 // never completed
		}
		parts = append(parts, fs[rng.IntN(len(fs))](rng.IntN(3), "k", c, r, types[rng.IntN(len(types))], vu(c+1+float64(rng.IntN(300)))))
	}
	return build(parts...)
}

// The split must never change the verdict: compare porcupine on whole keys
// with porcupine on the pieces, with and without pruning, on many generated
// histories (with and without reentrancy), and make sure every kind of cut
// was exercised and both verdicts are well represented.
func TestLinearizabilitySplitKeepsVerdicts(t *testing.T) {
	t.Parallel()
	rounds := racebuild.Sample(6000, 8) // an eighth under -race (internal/racebuild)
	if testing.Short() {
		rounds = min(rounds, 1500)
	}
	seed := uint64(7)
	if s := os.Getenv("TUMBLER_SPLIT_ROUNDS"); s != "" { // a longer search: TUMBLER_SPLIT_ROUNDS=200000 TUMBLER_SPLIT_SEED=n
		rounds, _ = strconv.Atoi(s)
		seed, _ = strconv.ParseUint(os.Getenv("TUMBLER_SPLIT_SEED"), 10, 64)
	}
	for _, tc := range []struct {
		name      string
		gen       func(*rand.Rand, bool) []h.Op
		reentrant bool
		cuts      int // at least rounds/cuts cuts made
	}{
		{"clients", genLockHistory, false, 2},
		{"clients/reentrant", genLockHistory, true, 2},
		{"sparse", genSparse, false, 2},
		{"sparse/reentrant", genSparse, true, 2},
		{"chaos", genChaos, false, 2},
		{"chaos/reentrant", genChaos, true, 100}, // rarely balanced
	} {
		reentrant := tc.reentrant
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(len(tc.name))))
			var valid, invalid int
			var total splitStats
			for round := range rounds {
				ops := tc.gen(rng, reentrant)
				cfg, _ := Config{TTL: time.Second, Subject: Subject{Reentrant: reentrant}}.withDefaults()
				p, err := prepare(ops, cfg)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				for _, prune := range []bool{true, false} {
					lops, _ := linOps(p, prune)
					whole, split, st := verdictsSplitAndWhole(p, lops)
					if whole != split {
						for _, o := range ops {
							t.Log(o)
						}
						t.Fatalf("round %d (prune %v): whole keys linearizable=%v, pieces %v", round, prune, whole, split)
					}
					if prune {
						if whole {
							valid++
						} else {
							invalid++
						}
					}
					total.cuts += st.cuts
					total.carried += st.carried
					total.pending += st.pending
					total.fast += st.fast
				}
			}
			t.Logf("%d linearizable, %d not; %d cuts, %d carrying a running acquire, %d after an unknown operation; %d pieces linearizable as returned",
				valid, invalid, total.cuts, total.carried, total.pending, total.fast)
			if valid < rounds/8 || invalid < rounds/8 {
				t.Errorf("unbalanced sample: %d linearizable, %d not", valid, invalid)
			}
			if total.cuts < rounds/tc.cuts || (!reentrant && (total.carried < rounds/40 || total.pending < rounds/10)) {
				t.Errorf("cuts not exercised enough: %+v", total)
			}
		})
	}
}

// The same comparison on the corpus and on simulated runs of a correct lock
// (with unknown outcomes and watchdog renewals) and of broken ones.
func TestLinearizabilitySplitKeepsVerdictsOnRecordedHistories(t *testing.T) {
	type hist struct {
		name      string
		ops       []h.Op
		reentrant bool
	}
	var hs []hist
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, f := range files {
		ops, err := h.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, hist{filepath.Base(f), ops, false}, hist{filepath.Base(f) + " (reentrant)", ops, true})
	}
	for seed := range uint64(6) {
		cfg := simConfig{seed: 100 + seed, clients: 6, keys: 2, ops: 2500, ttl: 200 * time.Millisecond, infoRate: 0.05 * float64(seed%3), watchdog: seed%2 == 0}
		ops := simulate(cfg)
		hs = append(hs, hist{fmt.Sprintf("sim %d", cfg.seed), ops, false})
		// Broken: drop every 40th release invoke (and its completion), so
		// holders keep leases others take: overlaps, not linearizable.
		var broken []h.Op
		skip := map[h.Process]bool{}
		n := 0
		for _, o := range ops {
			if o.F == h.Release && o.Type == h.Invoke {
				n++
				if n%40 == 0 {
					skip[o.Process] = true
					continue
				}
			}
			if o.F == h.Release && o.Type != h.Invoke && skip[o.Process] {
				delete(skip, o.Process)
				continue
			}
			broken = append(broken, o)
		}
		hs = append(hs, hist{fmt.Sprintf("sim %d broken", cfg.seed), reindex(broken), false})
	}
	var invalid int
	for _, x := range hs {
		cfg, _ := Config{TTL: time.Second, Subject: Subject{Reentrant: x.reentrant}}.withDefaults()
		p, err := prepare(x.ops, cfg)
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		lops, _ := linOps(p, true)
		whole, split, st := verdictsSplitAndWhole(p, lops)
		if whole != split {
			t.Errorf("%s: whole keys linearizable=%v, pieces %v", x.name, whole, split)
		}
		if !whole {
			invalid++
		}
		t.Logf("%s: linearizable=%v, %d operations, %+v", x.name, whole, len(slices.Concat(lops...)), st)
	}
	if invalid < 6 {
		t.Errorf("only %d histories not linearizable", invalid)
	}
}

// Check's own verdict on a long simulated run is the same with and without
// the split (the reference: porcupine on whole keys), and the anomaly of a
// planted overlap names both clients.
func TestSplitCheckOnALongRun(t *testing.T) {
	cfg := simConfig{seed: 31, clients: 8, keys: 2, ops: 20_000, ttl: 200 * time.Millisecond, infoRate: 0.01, watchdog: true}
	ops := simulate(cfg)
	res := check(t, ops, Config{TTL: cfg.ttl})
	lin, _ := res.Checker(Linearizability)
	if lin.Verdict != Valid || lin.Stats["pieces"] < 100 {
		t.Fatalf("%s (%s), stats %v", lin.Verdict, lin.Reason, lin.Stats)
	}
	planted, a, b := plantOverlap(t, ops)
	res = check(t, planted, Config{TTL: cfg.ttl})
	lin, _ = res.Checker(Linearizability)
	if lin.Verdict != Invalid {
		t.Fatalf("planted overlap: %s (%s)", lin.Verdict, lin.Reason)
	}
	for _, an := range res.Anomalies {
		if !slices.Contains(an.Clients, a) || !slices.Contains(an.Clients, b) || len(an.Clients) != 2 {
			t.Errorf("%s names clients %v, want %d and %d: %s", an.Kind, an.Clients, a, b, an.Explanation)
		}
		t.Logf("%s: %s", an.Kind, an.Explanation)
	}
	if got := kinds(res.Anomalies); len(got) != 2 {
		t.Errorf("anomalies %v, want one double grant and one not-linearizable", got)
	}
}

// plantOverlap moves one ok acquire of client b into the middle of a hold
// of client a on the same key (a takes the lock, b is granted it shortly
// after while a's lease is valid and a has not released), and returns the
// history and the two clients.
func plantOverlap(t testing.TB, ops []h.Op) ([]h.Op, int, int) {
	t.Helper()
	out := make([]h.Op, len(ops))
	copy(out, ops)
	// The middle ok acquire with a release after it; then the next ok
	// acquire of another client on that key.
	for i := len(out) / 2; i < len(out); i++ {
		o := out[i]
		if o.F != h.Acquire || o.Type != h.OK {
			continue
		}
		var relInv int64 = -1
		for j := i + 1; j < len(out); j++ {
			if out[j].F == h.Release && out[j].Process == o.Process && out[j].Key == o.Key && out[j].Type == h.Invoke {
				relInv = out[j].Time
				break
			}
		}
		if relInv < 0 || relInv-o.Time < 2_000_000 {
			continue
		}
		for j := i + 1; j < len(out); j++ {
			q := &out[j]
			if q.F == h.Acquire && q.Type == h.OK && q.Key == o.Key && q.Process != o.Process {
				// Find its invoke and squeeze both into a's hold.
				for k := j - 1; k >= 0; k-- {
					if out[k].F == h.Acquire && out[k].Type == h.Invoke && out[k].Process == q.Process && out[k].Key == q.Key {
						mid := o.Time + (relInv-o.Time)/2
						out[k].Time = mid
						q.Time = mid + 1
						q.ValidUntil = mid + 150_000_000
						return sortByTime(out), o.Client, q.Client
					}
				}
			}
		}
	}
	t.Fatal("no hold to plant an overlap in")
	return nil, 0, 0
}

func sortByTime(ops []h.Op) []h.Op {
	var parts []part
	for _, o := range ops {
		parts = append(parts, part{o})
	}
	return build(parts...)
}

// A piece that cannot be decided is named: key, place, records, times and
// size.
func TestUndecidedPieceIsNamed(t *testing.T) {
	var parts []part
	// A first, decidable stretch, then an idle gap, then one that is not.
	parts = append(parts, acq(50, "k", 0, 1, h.OK, vu(20)), rel(50, "k", 5, 6, h.OK))
	for c := range 24 {
		parts = append(parts, acq(c, "k", 100+float64(c), 5000, h.Info))
	}
	parts = append(parts, acq(30, "k", 200, 210, h.OK, vu(3000)), acq(31, "k", 300, 310, h.OK, vu(3000)))
	res := check(t, build(parts...), Config{Subject: Subject{Reentrant: true}, LinearizabilityTimeout: 300 * time.Millisecond, Skip: []string{MutualExclusion}})
	lin, _ := res.Checker(Linearizability)
	if lin.Verdict != Unknown || lin.Stats["pieces"] != 2 {
		t.Fatalf("%s (%s) %v", lin.Verdict, lin.Reason, lin.Stats)
	}
	want := `could not decide 1 of 2 pieces: porcupine did not finish within 300ms (Config.LinearizabilityTimeout, per piece) on key "k" piece 2 of 2 (ops 4–55, 0.100 s to 5.000 s, 26 operations)`
	if lin.Reason != want {
		t.Fatalf("reason\n%s\nwant\n%s", lin.Reason, want)
	}
	// The memory bound: the same piece does not fit in 20 KiB.
	res = check(t, build(parts...), Config{Subject: Subject{Reentrant: true}, LinearizabilityMemory: 20 << 10, Skip: []string{MutualExclusion}})
	lin, _ = res.Checker(Linearizability)
	if lin.Verdict != Unknown || !strings.Contains(lin.Reason, `on key "k" piece 2 of 2`) || !strings.Contains(lin.Reason, "Config.LinearizabilityMemory") {
		t.Fatalf("%s (%s)", lin.Verdict, lin.Reason)
	}
}

// The rules of pieces.go are needed: for each, a history where cutting at
// T without the rule would change the verdict. The split must keep the
// verdict (it does not cut there), and the naive cut at T must not. (Rule
// 1's bound on the validity of an acquire in C, and no unknown operation
// before a reentrant cut, are what the proof needs; no history here shows
// them mattering, as the model's floor stands in the way.)
func TestCutRulesAreNeeded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ops       []h.Op
		reentrant bool
		at        float64 // ms: where a naive cut would go
		whole     bool
	}{
		{"rule 1: an extend after the cut of an old lease", build(
			acq(1, "k", 0, 1, h.OK, vu(10)),
			ext(1, "k", 50, 51, h.OK, vu(40)), // ok, though what it promised ran out (nobody took the lock)
		), false, 50, true},
		{"rule 2: a lease neither released nor expired", build(
			acq(1, "k", 0, 1, h.OK, vu(1000)),
			acq(2, "k", 100, 101, h.OK, vu(2000)),
		), false, 100, false},
		{"rule 2: a release called before its acquire returned", build(
			acq(1, "k", 0, 1, h.OK, vu(1000)), rel(1, "k", 6, 7, h.OK),
			acq(2, "k", 3, 30, h.OK, vu(1000)), rel(2, "k", 4, 5, h.OK), // 2's release comes first
			acq(4, "k", 50, 51, h.OK, vu(2000)),
		), false, 50, false},
		{"rule 3: an unknown acquire, extended, took over a valid lease", build(
			acq(1, "k", 0, 1, h.OK, vu(100)),
			acq(2, "k", 2, 3, h.Info),
			ext(2, "k", 5, 6, h.OK, vu(50)),
			rel(1, "k", 10, 11, h.OK),
			acq(3, "k", 25, 26, h.OK, vu(200)),
		), false, 25, false},
		{"reentrant: a nested hold released once", build(
			acq(1, "k", 0, 1, h.OK, vu(1000)), acq(1, "k", 2, 3, h.OK, vu(1000)), rel(1, "k", 4, 5, h.OK),
			acq(2, "k", 50, 51, h.OK, vu(2000)),
		), true, 50, false},
		{"reentrant: a process's release before its acquire returned", build(
			acq(1, "k", 0, 1, h.OK, vu(1000)), rel(1, "k", 6, 7, h.OK),
			acq(2, "k", 3, 30, h.OK, vu(1000)), rel(2, "k", 4, 5, h.OK),
			acq(4, "k", 50, 51, h.OK, vu(2000)),
		), true, 50, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := Config{TTL: time.Second, Subject: Subject{Reentrant: tc.reentrant}}.withDefaults()
			p, err := prepare(tc.ops, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ops, _ := linOps(p, false)
			whole, split, _ := verdictsSplitAndWhole(p, ops)
			if whole != tc.whole || split != whole {
				t.Fatalf("whole keys linearizable=%v (want %v), pieces %v", whole, tc.whole, split)
			}
			// The naive cut at T: A ∪ P, then C ∪ B, each from free.
			at := ns(tc.at)
			var first, second []linOp
			for _, op := range slices.Concat(ops...) {
				if op.ret < at || (op.in.info && op.call < at) {
					first = append(first, op)
				} else {
					second = append(second, op)
				}
			}
			model := linModel(p)
			if naive := porcupine.CheckOperations(model, porcupineOps(first)) && porcupine.CheckOperations(model, porcupineOps(second)); naive == whole {
				t.Fatalf("the naive cut at %v ms gives the same verdict (%v): the case shows nothing", tc.at, naive)
			}
		})
	}
}
