package workloads_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/lock/recipes"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

var modes = []workloads.Mode{workloads.InProcess, workloads.Processes}

func isOK(f string) func(history.Op) bool {
	return func(op history.Op) bool { return op.F == f && op.Type == history.OK }
}

// TestPauseStopsWorker pauses a worker that holds a renewed lease: nothing
// is recorded while it is stopped, its renewals stop so the key expires,
// and after Resume it finds the lease gone.
func TestPauseStopsWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const ttl = 600 * time.Millisecond
	cfg := workloads.Config{
		Options: workloads.Options{
			Kind:     workloads.Mutex,
			Mode:     workloads.Processes,
			Clients:  1,
			Keys:     1,
			Hold:     spans.Between(4*time.Second, 4*time.Second),
			ObeyLost: true,
		},
		KeyPrefix: "wl:" + t.Name() + ":",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: ttl, Variant: "watchdog"})},
		TimeLimit: time.Second,
	}
	w := start(t, cfg, e.harness(t, false))
	c := w.Clients()[0]
	acq := e.rec.waitFor(t, "ok acquire", 5*time.Second, isOK(history.Acquire))
	if err := c.Resume(); err != nil { // harmless on a running worker
		t.Fatalf("resume a running worker: %v", err)
	}
	rdb := redisClient(t, e.addr)
	ctx := testCtx(t)
	time.Sleep(2 * ttl)
	if pttl, err := rdb.PTTL(ctx, acq.Key).Result(); err != nil || pttl <= 0 {
		t.Fatalf("PTTL %s = %v, %v after 2×TTL: the renewals are not keeping the lease", acq.Key, pttl, err)
	}
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	pausedAt := e.clock.Now()
	paused := e.rec.len()
	time.Sleep(2 * ttl)
	if n, err := rdb.Exists(ctx, acq.Key).Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS %s = %d, %v after a 2×TTL pause: the paused worker kept renewing", acq.Key, n, err)
	}
	// Ops the worker sent just before the stop may be recorded after it,
	// but none can be stamped during it.
	for _, op := range e.rec.snapshot()[paused:] {
		if op.Time > pausedAt {
			t.Fatalf("op %v stamped while the worker was stopped (since %d)", op, pausedAt)
		}
	}
	resumed := e.clock.Now()
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, 1, e.clock.Now())
	var lost, failedRelease bool
	for _, op := range ops[paused:] {
		lost = lost || (op.F == history.Lost && op.Time >= resumed)
		failedRelease = failedRelease || (op.F == history.Release && op.Type == history.Fail)
	}
	if !lost || !failedRelease {
		t.Fatalf("after the resume: lost op %v, failed release %v; want both (ops %v)", lost, failedRelease, ops[paused:])
	}
	if err := c.Pause(); err == nil {
		t.Fatal("paused a client whose worker has exited")
	}
}

func TestPauseNeedsProcessMode(t *testing.T) {
	e := newEnv(t)
	cfg := mutexConfig(e, t, workloads.InProcess)
	w := start(t, cfg, e.harness(t, false))
	if err := w.Clients()[0].Pause(); !errors.Is(err, workloads.ErrNeedsProcessMode) {
		t.Fatalf("Pause in-process = %v, want ErrNeedsProcessMode", err)
	}
}

// TestCrashAtStep crashes a client right after its first acquire: it
// records the crash, does not release, and continues as a new process that
// gets the key only once the abandoned lease has expired.
func TestCrashAtStep(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := e.waitingMutex(t, mode, 1, 400*time.Millisecond, 1200*time.Millisecond, workloads.Options{
				Hold:         spans.Between(5*time.Millisecond, 5*time.Millisecond),
				Crash:        &workloads.CrashSpec{Step: workloads.StepAfterAcquire, Probability: 1, Limit: 1},
				RestartDelay: spans.Fixed(50 * time.Millisecond),
			})
			stats := run(t, cfg, e.harness(t, false))
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 1, e.clock.Now())
			if stats.Crashes != 1 || stats.Processes != 2 {
				t.Fatalf("stats %+v: want 1 crash, 2 processes", stats)
			}
			var first, crash, next *history.Op
			for i := range ops {
				op := &ops[i]
				switch {
				case op.Process == 0 && op.F == history.Release:
					t.Fatalf("the crashed process released: %v", op)
				case op.Process == 0 && isOK(history.Acquire)(*op):
					first = op
				case op.F == history.Crash:
					crash = op
				case op.Process == 1 && isOK(history.Acquire)(*op) && next == nil:
					next = op
				}
			}
			if first == nil || crash == nil || next == nil {
				t.Fatalf("want process 0's acquire, its crash and process 1's acquire; history %v", ops)
			}
			if crash.Process != 0 || !strings.Contains(crash.Error, workloads.StepAfterAcquire) {
				t.Fatalf("crash op %v: want process 0 at %s", crash, workloads.StepAfterAcquire)
			}
			if next.Time < first.ValidUntil {
				t.Fatalf("process 1 acquired at %d, before the abandoned lease's validity ended at %d: was it released?", next.Time, first.ValidUntil)
			}
		})
	}
}

// TestKillClosesOpenInvokes kills a client while it waits for a held lock:
// its open acquire becomes info, a crash is recorded, and it comes back as
// a new process.
func TestKillClosesOpenInvokes(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := e.waitingMutex(t, mode, 2, 5*time.Second, 1200*time.Millisecond, workloads.Options{
				AcquireTimeout: spans.Fixed(3 * time.Second),
				Hold:           spans.Between(1500*time.Millisecond, 1500*time.Millisecond),
			})
			w := start(t, cfg, e.harness(t, false))
			holder := e.rec.waitFor(t, "ok acquire", 5*time.Second, isOK(history.Acquire))
			waiter := 1 - holder.Client
			e.rec.waitFor(t, "the waiter's acquire", 5*time.Second, func(op history.Op) bool {
				return op.Client == waiter && op.F == history.Acquire && op.Type == history.Invoke
			})
			if err := w.Clients()[waiter].Kill(); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 2, e.clock.Now())
			var info, crash, reborn bool
			for _, op := range ops {
				switch {
				case op.Process == history.Process(waiter) && op.F == history.Acquire && op.Type == history.Info:
					info = true
				case op.Process == history.Process(waiter) && op.F == history.Crash:
					crash = info && strings.Contains(op.Error, "kill")
				case op.Process == history.Process(waiter+2):
					reborn = crash
				}
			}
			if !info || !crash || !reborn {
				t.Fatalf("info acquire %v, crash after it %v, new process after that %v; history %v", info, crash, reborn, ops)
			}
		})
	}
}

func TestMaxOpsAndRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := mutexConfig(e, t, workloads.InProcess)
	cfg.Clients, cfg.MaxOps, cfg.TimeLimit = 2, 10, 20*time.Second
	cfg.Hold = spans.Range{}
	stats := run(t, cfg, e.harness(t, false))
	if stats.Elapsed > 10*time.Second {
		t.Fatalf("a 10-op workload ran for %v: it did not stop by count", stats.Elapsed)
	}
	perClient := map[int]int64{}
	for _, op := range e.rec.snapshot() {
		if op.Type == history.Invoke {
			perClient[op.Client]++
		}
	}
	for c, n := range perClient {
		if n < int64(cfg.MaxOps) || n > int64(cfg.MaxOps)+2 {
			t.Fatalf("client %d invoked %d ops with max_ops %d (one cycle is 2)", c, n, cfg.MaxOps)
		}
	}

	e = newEnv(t)
	cfg = mutexConfig(e, t, workloads.InProcess)
	cfg.Clients, cfg.Rate, cfg.TimeLimit = 1, 20, time.Second
	stats = run(t, cfg, e.harness(t, false))
	if n := stats.Ops[history.Acquire].Invoke + stats.Ops[history.Release].Invoke; n > 24 || n < 4 {
		t.Fatalf("%d ops in 1 s at 20 ops/s", n)
	}
}

// TestClientStart: a client with a start begins its first cycle no earlier
// than that after the run's start; the others start at once.
func TestClientStart(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := mutexConfig(e, t, mode)
			cfg.Clients, cfg.TimeLimit = 2, 1500*time.Millisecond
			cfg.ClientStart = []spans.Span{spans.Fixed(0), spans.Fixed(600 * time.Millisecond)}
			// The clients' starts count from the clock's zero, which a run
			// sets at Begin (runner.Run makes its clock there).
			w := prepared(t, cfg, workloads.Harness{Recorder: e.rec, WorkerLog: testLog{t}})
			e.clock = history.NewClock()
			begin := e.clock.Now()
			h := e.harness(t, false)
			if err := w.Begin(h.Clock, h.Resource); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			first := map[int]int64{}
			for _, op := range e.rec.snapshot() {
				if _, seen := first[op.Client]; !seen && op.Type == history.Invoke {
					first[op.Client] = op.Time - begin
				}
			}
			if got := time.Duration(first[1]); got < 600*time.Millisecond {
				t.Fatalf("client 1 started at %v, before its start 600ms", got)
			}
			if got := time.Duration(first[0]); got >= 600*time.Millisecond {
				t.Fatalf("client 0 (start 0) began only at %v", got)
			}
		})
	}
}

func TestTimeLimit(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := mutexConfig(e, t, mode)
			cfg.TimeLimit = 400 * time.Millisecond
			w := start(t, cfg, e.harness(t, false))
			end := e.clock.Now() + int64(cfg.TimeLimit)
			if _, err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
			const slack = int64(100 * time.Millisecond) // between the check and the stamp
			for _, op := range ops {
				if op.F == history.Acquire && op.Type == history.Invoke && op.Time > end+slack {
					t.Fatalf("%v started %v after the time limit", op, time.Duration(op.Time-end))
				}
			}
		})
	}
}

// TestCancelReleasesHeldLock cancels the workload while a client holds a
// lock: it stops at once, releases that lock and nothing else.
func TestCancelReleasesHeldLock(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t)
			cfg := e.waitingMutex(t, mode, 2, 20*time.Second, 20*time.Second, workloads.Options{
				AcquireTimeout: spans.Fixed(20 * time.Second),
				Hold:           spans.Between(20*time.Second, 20*time.Second),
			})
			ctx, cancel := context.WithCancel(testCtx(t))
			w, err := workloads.Start(ctx, cfg, e.harness(t, false))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Close)
			acq := e.rec.waitFor(t, "ok acquire", 5*time.Second, isOK(history.Acquire))
			time.Sleep(50 * time.Millisecond) // the other client is waiting in Acquire
			cancelled := time.Now()
			cancel()
			select {
			case <-w.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the workload did not stop within 10 s of its context's end")
			}
			t.Logf("stopped %v after cancel", time.Since(cancelled))
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 2, e.clock.Now())
			var released bool
			for _, op := range ops {
				if op.F == history.Release && op.Type != history.Invoke {
					if op.Process != acq.Process || op.Type != history.OK {
						t.Fatalf("release %v: only the holder (process %d) should release, successfully", op, acq.Process)
					}
					released = true
				}
			}
			if n, err := redisClient(t, e.addr).Exists(testCtx(t), acq.Key).Result(); err != nil || n != 0 || !released {
				t.Fatalf("after cancel: released %v, EXISTS %s = %d, %v", released, acq.Key, n, err)
			}
			if left := workerPids(t); len(left) != 0 {
				t.Fatalf("workers %v left running", left)
			}
		})
	}
}

// wallOf reads the wall-clock milliseconds a WallValue lock put in an owner value.
func wallOf(t *testing.T, op history.Op) time.Time {
	ms, err := strconv.ParseInt(strings.SplitN(op.Value, "-", 2)[0], 10, 64)
	if err != nil {
		t.Fatalf("owner value %q has no wall clock reading", op.Value)
	}
	return time.UnixMilli(ms)
}

func TestClockOffsetReachesClient(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := mutexConfig(e, t, mode)
			cfg.Clients, cfg.TimeLimit = 1, 3*time.Second
			cfg.Lock.Spec = spec(t, testSpec{Addr: e.addr, TTL: time.Second, WallValue: true})
			cfg.Think = spans.Between(10*time.Millisecond, 10*time.Millisecond)
			cfg.ClockOffset = spans.Fixed(-2 * time.Hour)
			w := start(t, cfg, e.harness(t, false))
			first := e.rec.waitFor(t, "ok acquire", 5*time.Second, isOK(history.Acquire))
			if d := time.Until(wallOf(t, first)); d > -time.Hour-50*time.Minute || d < -2*time.Hour-10*time.Minute {
				t.Fatalf("first lock read a wall clock %v from now, want the configured -2h", d)
			}
			c := w.Clients()[0]
			if err := c.SetClockOffset(time.Hour); err != nil {
				t.Fatal(err)
			}
			if c.ClockOffset() != time.Hour {
				t.Fatalf("ClockOffset = %v after SetClockOffset(1h)", c.ClockOffset())
			}
			e.rec.waitFor(t, "a lock reading the shifted clock", 5*time.Second, func(op history.Op) bool {
				if !isOK(history.Acquire)(op) {
					return false
				}
				d := time.Until(wallOf(t, op))
				return d > 50*time.Minute && d < 70*time.Minute
			})
			w.Close()
		})
	}
}

// TestClockDriftReachesClient: a drift set on a client (client-drift)
// runs the wall clock its lock reads at the rate, in a worker process too:
// at 61× the clock gains a minute every second.
func TestClockDriftReachesClient(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := mutexConfig(e, t, mode)
			cfg.Clients, cfg.TimeLimit = 1, 4*time.Second
			cfg.Lock.Spec = spec(t, testSpec{Addr: e.addr, TTL: time.Second, WallValue: true})
			cfg.Think = spans.Between(10*time.Millisecond, 10*time.Millisecond)
			w := start(t, cfg, e.harness(t, false))
			e.rec.waitFor(t, "ok acquire", 5*time.Second, isOK(history.Acquire))
			c := w.Clients()[0]
			if err := c.SetClockDrift(clockshim.Rate(61, clockshim.Mono())); err != nil {
				t.Fatal(err)
			}
			ahead := e.rec.waitFor(t, "a lock reading a clock a minute ahead", 5*time.Second, func(op history.Op) bool {
				return isOK(history.Acquire)(op) && time.Until(wallOf(t, op)) > 50*time.Second
			})
			if err := c.SetClockDrift(clockshim.Drift{}); err != nil {
				t.Fatal(err)
			}
			e.rec.waitFor(t, "a lock reading the host's clock again", 5*time.Second, func(op history.Op) bool {
				if !isOK(history.Acquire)(op) || op.Index <= ahead.Index {
					return false
				}
				d := time.Until(wallOf(t, op))
				return d > -time.Second && d < time.Second
			})
			w.Close()
		})
	}
}

func TestConfigErrors(t *testing.T) {
	good := workloads.Config{
		Options: workloads.Options{
			Mode:    workloads.InProcess,
			Kind:    workloads.Mutex,
			Clients: 1,
			Keys:    1,
		},
		TimeLimit: time.Second,
		Lock:      workloads.LockSpec{Builder: testBuilder},
	}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	relative := good
	relative.TTL, relative.OpTimeout, relative.Hold = time.Second, spans.TTLs(0.5), spans.Range{spans.TTLs(0.2), spans.TTLs(0.4)}
	if err := relative.Validate(); err != nil {
		t.Fatalf("spans relative to the config's ttl: %v", err)
	}
	relative.Hold = spans.Range{spans.TTLs(0.4), spans.TTLs(0.2)}
	if err := relative.Validate(); err == nil || !strings.Contains(err.Error(), "hold range [400ms, 200ms] is invalid") {
		t.Fatalf("an inverted relative hold: Validate = %v, want it named with its resolved ends", err)
	}
	cases := []struct {
		name string
		edit func(*workloads.Config)
		want string
	}{
		{"no kind", func(c *workloads.Config) { c.Kind = "" }, "kind is missing"},
		{"bad kind", func(c *workloads.Config) { c.Kind = "mutexx" }, `unknown workload kind "mutexx"`},
		{"bad mode", func(c *workloads.Config) { c.Mode = "thread" }, `unknown client mode "thread"`},
		{"no clients", func(c *workloads.Config) { c.Clients = 0 }, "clients = 0"},
		{"no keys", func(c *workloads.Config) { c.Keys = 0 }, "keys = 0"},
		{"no builder", func(c *workloads.Config) { c.Lock.Builder = "" }, "lock.builder is missing"},
		{"unknown builder", func(c *workloads.Config) { c.Lock.Builder = "nope" }, `"nope" is not registered`},
		{"per client", func(c *workloads.Config) { c.Lock.PerClient = make([]json.RawMessage, 2) }, "2 specs for 1 clients"},
		{"unknown retry", func(c *workloads.Config) { c.Retry = "spin" }, `retry "spin" unknown`},
		{"negative retry", func(c *workloads.Config) { c.Retry, c.RetryDelay = workloads.RetryWait, spans.Fixed(-1) }, "retry_delay = -1ns"},
		{"relative without ttl", func(c *workloads.Config) { c.OpTimeout = spans.TTLs(0.5) }, "op_timeout 0.5ttl is relative to the lock's TTL"},
		{"relative clock offset without ttl", func(c *workloads.Config) { c.ClockOffset = spans.TTLs(-1) }, "clock_offset -1ttl is relative to the lock's TTL"},
		{"no time limit", func(c *workloads.Config) { c.TimeLimit = 0 }, "time_limit"},
		{"hold", func(c *workloads.Config) { c.Hold = spans.Between(2, 1) }, "hold range"},
		{"think", func(c *workloads.Config) { c.Think = spans.Between(-1, 0) }, "think range"},
		{"crash step", func(c *workloads.Config) { c.Crash = &workloads.CrashSpec{Probability: 1} }, "crash.step is empty"},
		{"crash probability", func(c *workloads.Config) { c.Crash = &workloads.CrashSpec{Step: "x"} }, "crash.probability"},
		{"restart", func(c *workloads.Config) { c.RestartDelay = spans.Fixed(-1) }, "restart_delay"},
		{"rate", func(c *workloads.Config) { c.Rate = -1 }, "rate"},
		{"max ops", func(c *workloads.Config) { c.MaxOps = -1 }, "max_ops"},
		{"acquire timeout", func(c *workloads.Config) { c.AcquireTimeout = spans.Fixed(-1) }, "acquire_timeout"},
		{"extend every", func(c *workloads.Config) { c.ExtendEvery = spans.Fixed(-1) }, "extend_every"},
		{"nest", func(c *workloads.Config) { c.Nest = -1 }, "nest = -1"},
		{"client start count", func(c *workloads.Config) { c.ClientStart = make([]spans.Span, 2) }, "client_start has 2 starts for 1 clients"},
		{"client start negative", func(c *workloads.Config) { c.ClientStart = []spans.Span{spans.Fixed(-1)} }, "client_start[0] = -1ns"},
		{"client start late", func(c *workloads.Config) { c.ClientStart = []spans.Span{spans.Fixed(time.Second)} }, "before the time limit"},
		{"deep nest", func(c *workloads.Config) { c.Nest = 1000 }, "nest = 1000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.edit(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
			if _, err := workloads.Start(context.Background(), cfg, workloads.Harness{}); err == nil {
				t.Fatal("Start accepted the config")
			}
		})
	}
	clock, rec := history.NewClock(), &memRecorder{}
	unfenced, _ := workloads.NewResource(clock, rec, false)
	for _, tc := range []struct {
		name string
		kind workloads.Kind
		h    workloads.Harness
		want string
	}{
		{"no clock", workloads.Mutex, workloads.Harness{Recorder: rec}, "no history clock"},
		{"no recorder", workloads.Mutex, workloads.Harness{Clock: clock}, "no recorder"},
		{"no resource", workloads.Counter, workloads.Harness{Clock: clock, Recorder: rec}, "needs a Resource"},
		{"unfenced", workloads.FencedWrite, workloads.Harness{Clock: clock, Recorder: rec, Resource: unfenced}, "fenced Resource"},
	} {
		cfg := good
		cfg.Kind = tc.kind
		if _, err := workloads.Start(context.Background(), cfg, tc.h); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: Start = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestBadLockSpecFailsRun(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			clock, rec := history.NewClock(), &memRecorder{}
			cfg := workloads.Config{
				Options: workloads.Options{
					Kind:    workloads.Mutex,
					Mode:    mode,
					Clients: 2,
					Keys:    1,
				},
				TimeLimit: 5 * time.Second,
				Lock:      workloads.LockSpec{Builder: testBuilder, Spec: json.RawMessage(`{"ttl": 1000000}`)},
			}
			_, err := workloads.Run(testCtx(t), cfg, workloads.Harness{Clock: clock, Recorder: rec, WorkerLog: testLog{t}})
			if err == nil || !strings.Contains(err.Error(), "no addr") {
				t.Fatalf("Run = %v, want the builder's complaint about the missing addr", err)
			}
			if left := workerPids(t); len(left) != 0 {
				t.Fatalf("workers %v left running", left)
			}
		})
	}
}

// TestRenewalsRecorded holds a watchdog lock for longer than its TTL: the
// renewals are recorded as extend ops, and the client's validity check and
// its writes follow the renewed validity.
func TestRenewalsRecorded(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := workloads.Config{
				Options: workloads.Options{
					Kind:          workloads.FencedWrite,
					Mode:          mode,
					Clients:       2,
					Keys:          1,
					Retry:         workloads.RetryWait,
					RetryDelay:    spans.Fixed(10 * time.Millisecond),
					Hold:          spans.Between(500*time.Millisecond, 500*time.Millisecond),
					CheckValidity: true,
					ObeyLost:      true,
				},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: 300 * time.Millisecond, Variant: "watchdog", Inner: "fenced"})},
				TimeLimit: 900 * time.Millisecond,
			}
			run(t, cfg, e.harness(t, true))
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
			checkExclusive(t, ops)
			acquired := map[history.Process]history.Op{}
			var extends, writes int
			for _, op := range ops {
				switch {
				case isOK(history.Acquire)(op):
					acquired[op.Process] = op
				case isOK(history.Extend)(op):
					if a := acquired[op.Process]; op.ValidUntil <= a.ValidUntil || op.Value != a.Value || op.Token != a.Token {
						t.Fatalf("extend %v does not renew acquire %v", op, a)
					}
					extends++
				case isOK(history.Write)(op):
					if a := acquired[op.Process]; op.ValidUntil <= a.ValidUntil {
						t.Fatalf("write %v carries the acquire's validity %d, not the renewed one", op, a.ValidUntil)
					}
					writes++
				case op.F == history.Lost:
					t.Fatalf("lease lost without any fault: %v", op)
				}
			}
			if extends == 0 || writes == 0 {
				t.Fatalf("%d renewals, %d writes: want both (a hold outlasts the TTL)", extends, writes)
			}
		})
	}
}

// TestCrashInsideRecipe crashes a client between SETNX and EXPIRE of the
// setnx-expire recipe (the warning blog posts give): the key is left without an
// expiry and nobody gets the lock again.
func TestCrashInsideRecipe(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := workloads.Config{
				Options: workloads.Options{
					Kind:         workloads.Mutex,
					Mode:         mode,
					Clients:      1,
					Keys:         1,
					Hold:         spans.Between(time.Millisecond, time.Millisecond),
					Think:        spans.Between(20*time.Millisecond, 20*time.Millisecond),
					Crash:        &workloads.CrashSpec{Step: recipes.StepAfterSetNX, Probability: 1, Limit: 1},
					RestartDelay: spans.Fixed(50 * time.Millisecond),
				},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: 200 * time.Millisecond, Variant: recipes.NameSetNXExpire})},
				TimeLimit: 800 * time.Millisecond,
			}
			stats := run(t, cfg, e.harness(t, false))
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 1, e.clock.Now())
			if stats.Crashes != 1 || stats.Ops[history.Acquire].OK != 0 || stats.Ops[history.Acquire].Fail == 0 {
				t.Fatalf("stats %+v: want one crash, then only failed acquires", stats)
			}
			var crash history.Op
			for _, op := range ops {
				if op.F == history.Crash {
					crash = op
				}
			}
			if !strings.Contains(crash.Error, recipes.StepAfterSetNX) {
				t.Fatalf("crash op %v does not name the step", crash)
			}
			if pttl, err := redisClient(t, e.addr).PTTL(testCtx(t), cfg.Key(0)).Result(); err != nil || pttl != -time.Nanosecond {
				t.Fatalf("PTTL = %v, %v; want -1 (a lock that never expires)", pttl, err)
			}
		})
	}
}

func TestForgottenWorkerMain(t *testing.T) {
	t.Setenv(forgetWorkerMain, "1")
	e := newEnv(t)
	cfg := mutexConfig(e, t, workloads.Processes)
	_, err := workloads.Run(testCtx(t), cfg, e.harness(t, false))
	if err == nil || !strings.Contains(err.Error(), "WorkerMain") {
		t.Fatalf("Run = %v, want an error pointing at WorkerMain", err)
	}
}
