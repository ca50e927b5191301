package checker

import (
	"testing"
	"time"
)

func benchHistory(b *testing.B, cfg simConfig) *prepared {
	b.Helper()
	ops := simulate(cfg)
	c, err := Config{TTL: cfg.ttl, Fenced: cfg.writes}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	p, err := prepare(ops, c)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkLinearizability: 100k operations (calls) of 16 clients on 4
// keys; the target is under 10 s.
func BenchmarkLinearizability(b *testing.B) {
	p := benchHistory(b, simConfig{seed: 9, clients: 16, keys: 4, ops: 200_000, ttl: 200 * time.Millisecond, watchdog: true, infoRate: 0.01})
	var r *report
	for b.Loop() {
		r = &report{CheckerResult: CheckerResult{Name: Linearizability, Verdict: Valid}, max: 100, p: p}
		checkLinearizable(p, &Result{}, r)
		if r.Verdict != Valid {
			b.Fatalf("%s: %s %v", r.Verdict, r.Reason, r.anomalies)
		}
	}
	b.ReportMetric(float64(len(p.ops)), "records")
	b.ReportMetric(float64(len(p.calls)), "calls")
	b.ReportMetric(float64(r.Stats["operations"]), "porcupine-ops")
}

// BenchmarkMutualExclusion: a million records paired, their holds derived
// and swept; the target is under 2 s.
func BenchmarkMutualExclusion(b *testing.B) {
	cfg := simConfig{seed: 11, clients: 16, keys: 4, ops: 1_000_000, ttl: 200 * time.Millisecond, watchdog: true, infoRate: 0.01, writes: true}
	ops := simulate(cfg)
	c, err := Config{TTL: cfg.ttl}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p, err := prepare(ops, c)
		if err != nil {
			b.Fatal(err)
		}
		r := &report{CheckerResult: CheckerResult{Name: MutualExclusion, Verdict: Valid}, max: 100, p: p}
		checkMutex(p, &Result{}, r)
		if r.Anomalies != 0 {
			b.Fatal(r.anomalies)
		}
	}
	b.ReportMetric(float64(len(ops)), "records")
}

// BenchmarkCheckAllButLinearizability: every other checker on the same
// million records.
func BenchmarkCheckAllButLinearizability(b *testing.B) {
	cfg := simConfig{seed: 11, clients: 16, keys: 4, ops: 1_000_000, ttl: 200 * time.Millisecond, watchdog: true, infoRate: 0.01, writes: true}
	ops := simulate(cfg)
	for b.Loop() {
		res, err := Check(ops, Config{TTL: cfg.ttl, Fenced: true, Skip: []string{Linearizability}})
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict != Valid {
			b.Fatal(res.Anomalies)
		}
	}
	b.ReportMetric(float64(len(ops)), "records")
}
