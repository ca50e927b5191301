package workloads_test

import (
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// TestHistoriesMeetCheckerContract feeds workload histories to the
// checkers: they must be accepted as well-formed, and a correct lock
// without faults must be judged valid in both client modes.
func TestHistoriesMeetCheckerContract(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		for _, kind := range []workloads.Kind{workloads.Mutex, workloads.Counter, workloads.FencedWrite} {
			t.Run(string(mode)+"/"+string(kind), func(t *testing.T) {
				e := newEnv(t)
				const ttl = 2 * time.Second
				cfg := mutexConfig(e, t, mode)
				cfg.Kind, cfg.Keys = kind, 1
				cfg.Lock.Spec = spec(t, testSpec{Addr: e.addr, TTL: ttl, Variant: "watchdog", Inner: "fenced"})
				cfg.Retry, cfg.RetryDelay, cfg.RetryJitter = workloads.RetryWait, spans.Fixed(time.Millisecond), spans.Fixed(2*time.Millisecond)
				cfg.TimeLimit = 500 * time.Millisecond
				run(t, cfg, e.harness(t, kind == workloads.FencedWrite))
				res, err := checker.Check(e.rec.snapshot(), checker.Config{
					TTL: ttl, Subject: checker.Subject{Fenced: kind == workloads.FencedWrite, Counter: kind == workloads.Counter},
				})
				if err != nil {
					t.Fatalf("checker refused the history: %v", err)
				}
				if res.Verdict != checker.Valid {
					t.Fatalf("verdict %s for a correct lock without faults: %+v", res.Verdict, res.Anomalies)
				}
			})
		}
	}
}
