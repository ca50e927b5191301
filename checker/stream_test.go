package checker

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	h "github.com/tumbler-dev/tumbler/history"
)

// monitorCount feeds ops to a MutexMonitor one by one and ends the holds
// still open at the end, as Check does.
func monitorCount(ops []h.Op, cfg Config, skew int64) (*MutexMonitor, int) {
	m := NewMutexMonitor(cfg)
	if skew >= 0 {
		m.skew = skew
	}
	for _, o := range ops {
		m.Observe(o)
	}
	m.mu.Lock()
	m.hb.finish(m.latest)
	m.mu.Unlock()
	return m, m.Anomalies()
}

// The monitor counts what the mutual-exclusion checker finds, on the
// corpus, on generated histories and on simulated runs (correct and
// broken), also when it forgets as eagerly as it can.
func TestMutexMonitorCountsWhatCheckFinds(t *testing.T) {
	t.Parallel()
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
		hs = append(hs, hist{filepath.Base(f), ops, false})
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 400 {
		hs = append(hs, hist{"generated", genLockHistory(rng, i%2 == 0), i%2 == 0})
	}
	for seed := range uint64(4) {
		ops := simulate(simConfig{seed: 40 + seed, clients: 6, keys: 2, ops: 30_000, ttl: 200 * time.Millisecond, infoRate: 0.02, watchdog: seed%2 == 0})
		hs = append(hs, hist{"sim", ops, false})
		var broken []h.Op
		n := 0
		skip := map[h.Process]bool{}
		for _, o := range ops {
			if o.F == h.Release && o.Type == h.Invoke {
				if n++; n%50 == 0 {
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
		hs = append(hs, hist{"sim broken", reindex(broken), false})
	}
	found := 0
	for _, x := range hs {
		cfg := Config{TTL: time.Second, Subject: Subject{Reentrant: x.reentrant}}
		res, err := Check(x.ops, Config{TTL: cfg.TTL, Subject: Subject{Reentrant: x.reentrant}, Skip: []string{Linearizability}})
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		want := 0
		if c, ok := res.Checker(MutualExclusion); ok {
			want = c.Anomalies
		}
		found += want
		for _, skew := range []int64{-1, 0} {
			if _, got := monitorCount(x.ops, cfg, skew); got != want {
				t.Fatalf("%s (skew %d): the monitor counts %d double grants, Check %d", x.name, skew, got, want)
			}
		}
	}
	if found < 100 {
		t.Fatalf("only %d double grants in the sample", found)
	}
}

// The monitor's memory does not grow with the history: after a long run
// it keeps a few calls and holds, not one per operation.
func TestMutexMonitorForgets(t *testing.T) {
	t.Parallel()
	ops := simulate(simConfig{seed: 5, clients: 16, keys: 4, ops: 200_000, ttl: 200 * time.Millisecond, infoRate: 0.01, watchdog: true})
	m := NewMutexMonitor(Config{TTL: 200 * time.Millisecond})
	peak := 0
	for i, o := range ops {
		m.Observe(o)
		if i%5000 == 0 {
			m.mu.Lock()
			kept := len(m.calls.calls) + len(m.released) + len(m.pr.byOwner)
			for _, rs := range m.recent {
				kept += len(rs)
			}
			m.mu.Unlock()
			peak = max(peak, kept)
		}
	}
	// The run spans 837 s of simulated time: the monitor keeps about what
	// the last ten seconds recorded (its skew), some 2,500 calls, owner
	// values and holds, not one per record.
	if m.err != nil || peak > 20_000 {
		t.Fatalf("peak %d calls, owner values and holds kept (err %v)", peak, m.err)
	}
	t.Logf("%d records, at most %d kept", len(ops), peak)
}

// Holds, which forgets calls as it goes, returns exactly the holds Check's
// prepare computes with every call kept.
func TestHoldsAsCheckComputesThem(t *testing.T) {
	var hs [][]h.Op
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, f := range files {
		ops, err := h.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, ops)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for range 300 {
		hs = append(hs, genLockHistory(rng, false), genChaos(rng, false))
	}
	hs = append(hs, simulate(simConfig{seed: 8, clients: 6, keys: 2, ops: 20_000, ttl: 200 * time.Millisecond, infoRate: 0.03, watchdog: true}))
	compared := 0
	for _, ops := range hs {
		for _, reentrant := range []bool{false, true} {
			cfg := Config{TTL: time.Second, Subject: Subject{Reentrant: reentrant}}
			got, gerr := Holds(ops, cfg)
			p, perr := prepare(ops, cfg)
			if (gerr == nil) != (perr == nil) || (gerr != nil && gerr.Error() != perr.Error()) {
				t.Fatalf("Holds: %v, prepare: %v", gerr, perr)
			}
			if perr != nil {
				continue
			}
			if len(got) != len(p.holds) {
				t.Fatalf("%d holds, prepare %d", len(got), len(p.holds))
			}
			for i, w := range p.holds {
				c := &p.calls[w.acq]
				want := Hold{Key: w.key, Client: w.client, Process: w.proc, Owner: c.value, Token: c.token, AcquireOp: c.opIndex(),
					Start: w.start, End: w.end, EndBy: w.endBy, EndOp: w.endOp, HeldUntil: w.held, HeldUntilBy: w.heldBy, ValidUntil: w.vu, Depth: w.depth}
				if got[i] != want {
					t.Fatalf("hold %d: %+v, prepare %+v", i, got[i], want)
				}
			}
			compared += len(got)
		}
	}
	if compared < 5000 {
		t.Fatalf("only %d holds compared", compared)
	}
}
