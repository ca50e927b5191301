package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/runner"
)

// splitWindow measures a split-brain run: how long after the split the
// cut-off primary still granted client 0 the lock (its last grant during
// the split), and when the other side was first granted it.
type splitWindow struct {
	split, heal       time.Duration
	lastMinority      time.Duration // -1: none during the split
	firstMajority     time.Duration // -1: none during the split
	minorityGrants    int
	majorityGrants    int
	firstRefusedAfter time.Duration // client 0's first write refused with NOREPLICAS, -1: none
}

func measureSplit(ops []history.Op) splitWindow {
	w := splitWindow{lastMinority: -1, firstMajority: -1, firstRefusedAfter: -1}
	for _, o := range ops {
		if o.IsNemesis() && o.F == history.Start {
			w.split = time.Duration(o.Time)
		}
		if o.IsNemesis() && o.F == history.Stop {
			w.heal = time.Duration(o.Time)
		}
	}
	for _, o := range ops {
		t := time.Duration(o.Time)
		if o.IsNemesis() || t < w.split || t > w.heal {
			continue
		}
		if o.Client == 0 && w.firstRefusedAfter < 0 && strings.Contains(o.Error, "NOREPLICAS") {
			w.firstRefusedAfter = t - w.split // a release or an acquire
		}
		switch {
		case o.F != history.Acquire || o.Type != history.OK:
		case o.Client == 0:
			w.lastMinority = t - w.split
			w.minorityGrants++
		default:
			if w.firstMajority < 0 {
				w.firstMajority = t - w.split
			}
			w.majorityGrants++
		}
	}
	return w
}

// TestSplitBrainWindow measures the unsafe window of the two split-brain
// rows on the seeds in TUMBLER_SPLIT_SEEDS ("1-10"; skipped when unset,
// being minutes of real runs): without min-replicas the cut-off primary
// grants client 0 the lock for the whole split; with min-replicas-to-write
// 1 it stops within min-replicas-max-lag plus two seconds (a replica's
// lag is counted in whole seconds since its last REPLCONF ACK, sent once a
// second, and the primary recounts its good replicas once a second).
func TestSplitBrainWindow(t *testing.T) {
	seeds := os.Getenv("TUMBLER_SPLIT_SEEDS")
	if seeds == "" {
		t.Skip("set TUMBLER_SPLIT_SEEDS=1-10 to measure the split-brain rows' unsafe window")
	}
	plain, err := Get("sentinel-split-brain")
	if err != nil {
		t.Fatal(err)
	}
	bounded, err := Get("sentinel-split-brain-min-replicas")
	if err != nil {
		t.Fatal(err)
	}
	lag, err := strconv.Atoi(bounded.Plan.NodeConfig["min-replicas-max-lag"])
	if err != nil {
		t.Fatal(err)
	}
	bound := time.Duration(lag+2) * time.Second
	if split := bounded.Plan.Faults[0].For.Resolve(0); split-bound < bounded.Plan.TTL.Resolve(0) {
		t.Fatalf("%s: its split (%v) must outlast the bound %v by a TTL to show it", bounded.Name, split, bound)
	}
	store := os.Getenv("TUMBLER_STORE")
	if store == "" {
		store = t.TempDir()
	}
	var windows []time.Duration
	for _, s := range []Scenario{plain, bounded} {
		for _, seed := range parseSeeds(t, seeds) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			out, err := runner.Run(ctx, s.PlanFor(seed), runner.Options{Store: store})
			cancel()
			if err != nil {
				t.Fatalf("%s seed %d: %v", s.Name, seed, err)
			}
			ops, err := history.ReadFile(filepath.Join(out.Dir, "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			w := measureSplit(ops)
			t.Logf("%s seed %d: split %.2fs–%.2fs; client 0 granted %d times on the cut-off primary, the last %s into the split; its first write refused (NOREPLICAS) %s in; the other side first granted %s in (%d grants)",
				s.Name, seed, w.split.Seconds(), w.heal.Seconds(), w.minorityGrants, secs(w.lastMinority), secs(w.firstRefusedAfter), secs(w.firstMajority), w.majorityGrants)
			if w.minorityGrants == 0 || w.majorityGrants == 0 {
				t.Errorf("%s seed %d: both sides must grant the lock during the split (%d and %d grants)", s.Name, seed, w.minorityGrants, w.majorityGrants)
			}
			switch s.Name {
			case bounded.Name:
				windows = append(windows, w.lastMinority)
				if w.lastMinority > bound {
					t.Errorf("%s seed %d: the cut-off primary granted the lock %.2fs into the split, past min-replicas-max-lag %ds + 2s", s.Name, seed, w.lastMinority.Seconds(), lag)
				}
			default:
				// Without min-replicas it grants to the end: within the
				// last TTL of the split (one hold and think).
				if ttl := s.Plan.TTL.Resolve(0); w.lastMinority < w.heal-w.split-ttl {
					t.Errorf("%s seed %d: without min-replicas the cut-off primary stopped granting %s into a %s split", s.Name, seed, secs(w.lastMinority), secs(w.heal-w.split))
				}
			}
		}
	}
	if len(windows) > 0 {
		slices.Sort(windows)
		t.Logf("with min-replicas-max-lag %ds: the last minority grant came %.2fs–%.2fs (median %.2fs) into the split", lag,
			windows[0].Seconds(), windows[len(windows)-1].Seconds(), windows[len(windows)/2].Seconds())
	}
}

func secs(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
