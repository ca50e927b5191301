package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// Every checker must find a correct lock's history valid: a false positive
// here is a checker bug.
func TestSimulatedCorrectLockIsValid(t *testing.T) {
	for _, cfg := range []simConfig{
		{seed: 1, clients: 4, keys: 1, ops: 3000, ttl: 200 * time.Millisecond},
		{seed: 2, clients: 8, keys: 2, ops: 3000, ttl: 200 * time.Millisecond, infoRate: 0.05},
		{seed: 3, clients: 8, keys: 2, ops: 3000, ttl: 200 * time.Millisecond, writes: true, watchdog: true, infoRate: 0.02},
		{seed: 4, clients: 6, keys: 1, ops: 3000, ttl: 200 * time.Millisecond, counter: true, watchdog: true},
		{seed: 5, clients: 16, keys: 4, ops: 4000, ttl: 200 * time.Millisecond, writes: true, infoRate: 0.1},
	} {
		ops := simulate(cfg)
		res := check(t, ops, Config{TTL: cfg.ttl, Subject: Subject{Fenced: cfg.writes, Counter: cfg.counter}})
		t.Logf("seed %d: %d ops, %v", cfg.seed, len(ops), summary(res))
		expect(t, res, verdicts{})
	}
}

func summary(res *Result) map[string]any {
	m := map[string]any{}
	for _, c := range res.Checkers {
		m[c.Name] = c.Stats
	}
	return m
}

// reindex numbers ops again after records were removed.
func reindex(ops []history.Op) []history.Op {
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

// Breaking a correct history must be noticed: drop a release that a later
// grant relied on, and the holder keeps holding until its validity ends.
func TestSimulatedBrokenLockIsInvalid(t *testing.T) {
	cfg := simConfig{seed: 21, clients: 6, keys: 1, ops: 3000, ttl: 200 * time.Millisecond}
	ops := simulate(cfg)
	// Find a release whose key was granted to another client before the
	// releaser's validity ended.
	validity := map[history.Process]int64{}
	victim := -1
	for i, o := range ops {
		switch {
		case o.F == history.Acquire && o.Type == history.OK:
			validity[o.Process] = o.ValidUntil
		case o.F == history.Release && o.Type == history.Invoke && victim < 0:
			for _, later := range ops[i+1:] {
				if later.F == history.Acquire && later.Type == history.OK && later.Process != o.Process {
					if later.Time < validity[o.Process] {
						victim = i
					}
					break
				}
			}
		}
	}
	if victim < 0 {
		t.Fatal("no release to drop in the simulated history")
	}
	var broken []history.Op
	dropped := 0
	for i, o := range ops {
		if i == victim || (i > victim && dropped == 1 && o.F == history.Release && o.Process == ops[victim].Process) {
			dropped++
			continue
		}
		broken = append(broken, o)
	}
	res := check(t, reindex(broken), Config{TTL: cfg.ttl})
	expect(t, res, verdicts{MutualExclusion: Invalid, Linearizability: Invalid})
}

func TestSimulatedLostIncrementIsFound(t *testing.T) {
	cfg := simConfig{seed: 22, clients: 4, keys: 1, ops: 2000, ttl: 200 * time.Millisecond, counter: true}
	ops := simulate(cfg)
	// Make the 20th accepted increment write the value the 10th wrote.
	var writes []int
	for i, o := range ops {
		if o.F == history.Write && o.Type == history.OK {
			writes = append(writes, i)
		}
	}
	if len(writes) < 20 {
		t.Fatalf("only %d writes", len(writes))
	}
	ops[writes[19]].Value = ops[writes[9]].Value
	res := check(t, ops, Config{TTL: cfg.ttl, Subject: Subject{Counter: true}})
	expect(t, res, verdicts{LostUpdates: Invalid})
	// The record alone changed, so later writes continue from the true
	// value: the anomaly is the write that set the counter back over ten
	// acknowledged increments (plus the read it was based on).
	if len(res.Anomalies) != 1 || len(res.Anomalies[0].Ops) != 12 || !strings.Contains(res.Anomalies[0].Explanation, "erasing 10 acknowledged increments") {
		t.Fatalf("%+v", res.Anomalies)
	}
}

func TestSimulatedTokenReuseIsFound(t *testing.T) {
	cfg := simConfig{seed: 23, clients: 4, keys: 1, ops: 2000, ttl: 200 * time.Millisecond, writes: true}
	ops := simulate(cfg)
	var grants []int
	for i, o := range ops {
		if o.F == history.Acquire && o.Type == history.OK {
			grants = append(grants, i)
		}
	}
	ops[grants[7]].Token = ops[grants[6]].Token
	res := check(t, ops, Config{TTL: cfg.ttl, Subject: Subject{Fenced: true}})
	expect(t, res, verdicts{Fencing: Invalid})
	if k := kinds(res.Anomalies); k[0] != TokenReuse {
		t.Fatalf("%v", k)
	}
}
