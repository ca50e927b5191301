package hunt

import (
	"context"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

// TestInterruptedRealAttemptCounts: Ctrl-C a few seconds into the first
// attempt of a real hunt (real servers, the run engine): the summary
// counts that attempt as tried, interrupted, with the faults it applied
// by then — not "0 seeds tried".
func TestInterruptedRealAttemptCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers")
	}
	p, err := runner.ParsePlan([]byte(`{"name": "interrupt", "topology": "independent:1", "ttl": "1s",
	  "lock": {"variant": "single"}, "time_limit": "30s",
	  "workload": {"kind": "fenced-write", "clients": 2, "mode": "in-process", "hold": ["0.1ttl", "0.3ttl"]}}`), "template")
	if err != nil {
		t.Fatal(err)
	}
	d := runner.Draw{Kinds: []nemesis.Kind{nemesis.Pause, nemesis.Partition}}
	// Interrupt a second and a half after the first step of seed 1's
	// schedule is due: it has been applied by then.
	first, err := p.Normalize().WithDrawnFaults(1, d)
	if err != nil {
		t.Fatal(err)
	}
	due := time.Hour
	for _, st := range first.Faults {
		due = min(due, st.At.Resolve(time.Second))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	status := func(s Status) {
		if s.Run.Elapsed > due+1500*time.Millisecond {
			cancel()
		}
	}
	s, err := Run(ctx, p, d, Options{Name: "interrupt", Parallel: 1, Budget: time.Hour, Store: t.TempDir(), Status: status})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first step due at %v; attempts %+v", due, s.Attempts)
	if s.Tried != 1 || len(s.Attempts) != 1 || !s.Attempts[0].Interrupted || !s.Interrupted || s.ExitCode != outcome.ExitUnknown {
		t.Fatalf("tried %d, attempts %+v, interrupted %v, exit %d", s.Tried, s.Attempts, s.Interrupted, s.ExitCode)
	}
	if a := s.Attempts[0]; a.FaultsApplied < 1 || a.FaultsApplied != s.FaultsApplied || a.Elapsed > 25*time.Second {
		t.Errorf("the interrupted attempt: %d faults applied (summary %d), took %v", a.FaultsApplied, s.FaultsApplied, a.Elapsed)
	}
}
