package workloads_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

func kindConfig(e *env, t *testing.T, s testSpec) workloads.Config {
	s.Addr = e.addr
	if s.TTL == 0 {
		s.TTL = 2 * time.Second
	}
	return workloads.Config{
		Options: workloads.Options{
			Kind:        workloads.Mutex,
			Mode:        workloads.InProcess,
			Clients:     4,
			Keys:        1,
			Retry:       workloads.RetryWait,
			RetryDelay:  spans.Fixed(time.Millisecond),
			RetryJitter: spans.Fixed(2 * time.Millisecond),
			Hold:        spans.Between(2*time.Millisecond, 6*time.Millisecond),
		},
		KeyPrefix: "wl:" + t.Name() + ":",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, s)},
		TimeLimit: 800 * time.Millisecond,
		Seed:      1,
	}
}

func checkOps(t *testing.T, ops []history.Op, cfg checker.Config) *checker.Result {
	t.Helper()
	cfg.TTL = 2 * time.Second
	res, err := checker.Check(ops, cfg)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if res.Verdict != checker.Valid {
		for _, a := range res.Anomalies {
			t.Logf("anomaly: %s", a.Explanation)
		}
		t.Fatalf("verdict %s on a healthy run", res.Verdict)
	}
	return res
}

func TestReadWriteCycles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := kindConfig(e, t, testSpec{Variant: "rwlock"})
	cfg.ReadFraction = ptr(0.7)
	run(t, cfg, e.harness(t, false))
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	modes := map[string]int{}
	for _, o := range ops {
		switch o.F {
		case history.Acquire, history.Release:
			modes[o.Mode]++
		default:
			if o.Mode != "" {
				t.Fatalf("op %v carries a mode", o)
			}
		}
	}
	if modes[history.ModeRead] == 0 || modes[history.ModeWrite] == 0 || modes[""] != 0 {
		t.Fatalf("ops by mode %v: want reads and writes, every lock op with its mode", modes)
	}
	res := checkOps(t, ops, checker.Config{Subject: checker.Subject{Shape: lock.KindReadWrite}})
	rw, _ := res.Checker(checker.ReadersWriters)
	if rw.Stats["read_holds"] == 0 || rw.Stats["write_holds"] == 0 {
		t.Fatalf("stats %v", rw.Stats)
	}
}

func TestSemaphoreCycles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := kindConfig(e, t, testSpec{Variant: "permit-expirable-semaphore", Permits: 2})
	stats := run(t, cfg, e.harness(t, false))
	if stats.Crashes != 0 || stats.Ops[history.Acquire].OK < 10 {
		t.Fatalf("stats %+v: want no crash and many permits taken", stats)
	}
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	inits := map[history.Type]int{}
	for _, o := range ops {
		if o.F == history.Init && o.Type != history.Invoke {
			inits[o.Type]++
			if o.Value != "2" {
				t.Fatalf("init %v: want value 2", o)
			}
		}
	}
	if inits[history.OK] != 1 || inits[history.Fail] != cfg.Clients-1 {
		t.Fatalf("inits %v: want one that set the permits and %d that found them set", inits, cfg.Clients-1)
	}
	res := checkOps(t, ops, checker.Config{Subject: checker.Subject{Shape: lock.KindSemaphore, Permits: 2}})
	if c, _ := res.Checker(checker.Semaphore); c.Stats["most_held_at_once"] != 2 {
		t.Fatalf("stats %v: 4 clients waiting on 2 permits must hold 2 at once", c.Stats)
	}
}

func TestSemaphoreInitEachCycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := kindConfig(e, t, testSpec{Variant: "semaphore", Permits: 2})
	cfg.InitEachCycle = true
	stats := run(t, cfg, e.harness(t, false))
	acq, init := stats.Ops[history.Acquire], stats.Ops[history.Init]
	if stats.Crashes != 0 || acq.Invoke < 10 || init.Invoke < acq.Invoke || init.OK != 1 {
		t.Fatalf("acquires %+v, inits %+v, crashes %d: want an init before every acquire, one of them setting the permits", acq, init, stats.Crashes)
	}
	checkOps(t, e.rec.snapshot(), checker.Config{Subject: checker.Subject{Shape: lock.KindSemaphore, Permits: 2}})
}

func TestFairQueueRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := kindConfig(e, t, testSpec{Variant: "fair"})
	cfg.Hold = spans.Between(20*time.Millisecond, 30*time.Millisecond)
	run(t, cfg, e.harness(t, false))
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	enq := 0
	for _, o := range ops {
		if o.F == history.Enqueue && o.Type == history.OK {
			enq++
			if o.ValidUntil <= o.Time {
				t.Fatalf("enqueue %v: its entry's timeout must be after it returned", o)
			}
		}
	}
	if enq == 0 {
		t.Fatal("no enqueue: waiters on a held fair lock must queue")
	}
	res := checkOps(t, ops, checker.Config{Subject: checker.Subject{Fair: true}})
	if c, _ := res.Checker(checker.Fairness); c.Stats["queue_entries"] == 0 || c.Stats["grants"] == 0 {
		t.Fatalf("stats %v", c.Stats)
	}
}

func TestLatchRounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := kindConfig(e, t, testSpec{Variant: "latch"})
	cfg.Kind = workloads.Latch
	cfg.Clients = 5
	cfg.Latch = &workloads.LatchSpec{Count: 2, Counters: 2, Round: spans.Fixed(300 * time.Millisecond)}
	cfg.Hold = spans.Between(10*time.Millisecond, 80*time.Millisecond)
	cfg.TimeLimit = 900 * time.Millisecond
	run(t, cfg, workloads.Harness{Clock: e.clock, Recorder: e.rec})
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	n := map[string]int{}
	for _, o := range ops {
		if o.Type == history.OK {
			n[o.F]++
		}
	}
	if n[history.Init] != 3 || n[history.CountDown] != 6 || n[history.Await] != 9 {
		t.Fatalf("ok ops %v: want 3 rounds of 1 init, 2 count-downs and 3 waiters passing", n)
	}
	res := checkOps(t, ops, checker.Config{Subject: checker.Subject{Shape: lock.KindLatch}})
	if c, _ := res.Checker(checker.Latch); c.Stats["awaits_judged"] != 9 {
		t.Fatalf("stats %v", c.Stats)
	}
}

func TestKindConfigErrors(t *testing.T) {
	base := workloads.Config{
		Options: workloads.Options{
			Mode:    workloads.InProcess,
			Kind:    workloads.Latch,
			Clients: 3,
			Keys:    1,
		},
		TimeLimit: time.Second,
		Lock:      workloads.LockSpec{Builder: testBuilder},
	}
	for _, tc := range []struct {
		mod  func(*workloads.Config)
		want string
	}{
		{func(c *workloads.Config) {}, "the latch workload needs latch"},
		{func(c *workloads.Config) {
			c.Latch = &workloads.LatchSpec{Count: 1, Counters: 3, Round: spans.Fixed(time.Second)}
		}, "latch.counters = 3, want 1..2"},
		{func(c *workloads.Config) {
			c.Latch = &workloads.LatchSpec{Count: 1, Counters: 1, Round: spans.Fixed(time.Second)}
			c.Hold[1] = spans.Fixed(time.Second)
		}, "hold max 1s is over 0.6"},
		{func(c *workloads.Config) {
			c.Kind = workloads.Mutex
			c.Latch = &workloads.LatchSpec{Count: 1, Counters: 1, Round: spans.Fixed(time.Second)}
		}, "latch applies only to the latch workload"},
		{func(c *workloads.Config) { c.Kind, c.ReadFraction = workloads.Mutex, ptr(1.5) }, "read_fraction = 1.5"},
	} {
		c := base
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", c, err, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
