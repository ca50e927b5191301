package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
)

// TestCoverageOfARestartEmpty: on real servers, a restart of the lock's
// node without persistence while a client holds the lease reaches "node of
// the lease restarted empty within the TTL", judged from the history (the
// nemesis's record of the restart says the node came back empty); the same
// restart of a node running with AOF always does not. Both runs write
// coverage.json and show the window in their report.
func TestCoverageOfARestartEmpty(t *testing.T) {
	t.Parallel()
	restart := func(name string, persist cluster.Persistence) Plan {
		p := basePlan(t, name)
		// The node must be back while the lease still runs: a 1 s TTL left
		// too little room for a restart on a loaded host.
		p.TTL = span(t, "3s")
		p.Persistence = persist
		p.Faults = []nemesis.Step{{
			At: span(t, "1s"), Trigger: nemesis.TriggerGrant, Key: "tumbler:0",
			Fault: nemesis.Restart, Nodes: []string{"n1"},
		}}
		return p
	}
	for _, c := range []struct {
		name    string
		persist cluster.Persistence
		reached bool
	}{{"restart-without-persistence", "", true}, {"restart-aof-always", cluster.AOFAlways, false}} {
		t.Run(c.name, func(t *testing.T) {
			out := runPlan(t, restart(c.name, c.persist))
			w, ok := out.Coverage.Get(coverage.RestartEmpty)
			if !ok || !w.Counts() {
				t.Fatalf("restart-empty does not count for a single lock with restarts: %+v", w)
			}
			if got := w.Reached > 0; got != c.reached {
				t.Fatalf("restart-empty reached %d times, want reached %v: %+v", w.Reached, c.reached, w)
			}
			// Either way the restart hit the node of a held lease.
			if lf, _ := out.Coverage.Get(coverage.LeaseNodeFault); lf.Reached == 0 {
				t.Errorf("the restart of the lock's only node under a hold was not a fault on the lease: %+v", lf)
			}
			if c.reached {
				f := out.Result.Faults[0]
				if r := w.Reaches[0]; r.From != f.Start || r.Faults[0] != f.ID {
					t.Errorf("reach %+v, want from the restart's start %d by %s", r, f.Start, f.ID)
				}
			}
			b, err := os.ReadFile(filepath.Join(out.Dir, coverage.File))
			if err != nil {
				t.Fatal(err)
			}
			var stored coverage.Run
			if err := json.Unmarshal(b, &stored); err != nil {
				t.Fatal(err)
			}
			if sw, _ := stored.Get(coverage.RestartEmpty); sw.Reached != w.Reached {
				t.Errorf("coverage.json says %d, the outcome %d", sw.Reached, w.Reached)
			}
			page, err := os.ReadFile(filepath.Join(out.Dir, "index.html"))
			if err != nil || !strings.Contains(string(page), `id="window-restart-empty"`) {
				t.Errorf("the report shows no restart-empty row (%v)", err)
			}
		})
	}
}
