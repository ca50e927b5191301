package workloads_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

type env struct {
	addr  string
	clock *history.Clock
	rec   *memRecorder
}

func newEnv(t *testing.T) *env {
	srv := redistest.Start(t, 1)[0]
	return &env{addr: srv.Addr, clock: history.NewClock(), rec: &memRecorder{}}
}

// waitingMutex is the workload most control tests run: mutex clients on
// one key, retrying every 20 ms, with the test lock of TTL ttl on e's
// server, starting operations for limit; o adds the test's own fields.
func (e *env) waitingMutex(t *testing.T, mode workloads.Mode, clients int, ttl, limit time.Duration, o workloads.Options) workloads.Config {
	o.Kind, o.Mode, o.Clients, o.Keys = workloads.Mutex, mode, clients, 1
	o.Retry, o.RetryDelay = workloads.RetryWait, spans.Fixed(20*time.Millisecond)
	return workloads.Config{
		Options:   o,
		KeyPrefix: "wl:" + t.Name() + ":",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: ttl})},
		TimeLimit: limit,
	}
}

func (e *env) harness(t *testing.T, fenced bool) workloads.Harness {
	res, err := workloads.NewResource(e.clock, e.rec, fenced)
	if err != nil {
		t.Fatal(err)
	}
	return workloads.Harness{Clock: e.clock, Recorder: e.rec, Resource: res, WorkerLog: testLog{t}}
}

// testLog sends workers' stderr to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("worker: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mutexConfig(e *env, t *testing.T, mode workloads.Mode) workloads.Config {
	return workloads.Config{
		Options: workloads.Options{
			Kind:    workloads.Mutex,
			Mode:    mode,
			Clients: 4,
			Keys:    2,
			Hold:    spans.Between(time.Millisecond, 4*time.Millisecond),
		},
		KeyPrefix: "wl:" + t.Name() + ":",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: 2 * time.Second})},
		TimeLimit: 700 * time.Millisecond,
		Seed:      1,
	}
}

// start runs cfg as a run does (runner.Run): Prepare, wait until every
// client is ready, then Begin, so that the time limit and the test's
// schedule count from time zero, not from a race-built worker's start-up
// (which on a loaded host can take longer than a short test's limit).
func start(t *testing.T, cfg workloads.Config, h workloads.Harness) *workloads.Workload {
	t.Helper()
	w := prepared(t, cfg, h)
	if err := w.Begin(h.Clock, h.Resource); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return w
}

// prepared is start up to Begin: every client ready, none begun.
func prepared(t *testing.T, cfg workloads.Config, h workloads.Harness) *workloads.Workload {
	t.Helper()
	w := made(t, "Prepare")(workloads.Prepare(testCtx(t), cfg, h))
	if err := w.Ready(testCtx(t)); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	return w
}

// startNow runs cfg from Start: its clock runs while the clients get ready.
func startNow(t *testing.T, cfg workloads.Config, h workloads.Harness) *workloads.Workload {
	t.Helper()
	return made(t, "Start")(workloads.Start(testCtx(t), cfg, h))
}

// made takes what Prepare or Start (named how) returned: the workload,
// closed when the test ends, or the test's end.
func made(t *testing.T, how string) func(*workloads.Workload, error) *workloads.Workload {
	return func(w *workloads.Workload, err error) *workloads.Workload {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		t.Cleanup(w.Close)
		return w
	}
}

func run(t *testing.T, cfg workloads.Config, h workloads.Harness) workloads.Stats {
	t.Helper()
	w := start(t, cfg, h)
	stats, err := w.Wait()
	if err != nil {
		t.Fatalf("workload: %v", err)
	}
	return stats
}

func TestMutex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		retry         string
		delay, jitter time.Duration
	}{
		{"try", workloads.RetryTry, 0, 0},
		{"wait", workloads.RetryWait, time.Millisecond, 2 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := mutexConfig(e, t, workloads.InProcess)
			cfg.Retry, cfg.RetryDelay, cfg.RetryJitter = tc.retry, spans.Fixed(tc.delay), spans.Fixed(tc.jitter)
			stats := run(t, cfg, e.harness(t, false))
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
			checkExclusive(t, ops)
			acq, rel := stats.Ops[history.Acquire], stats.Ops[history.Release]
			if acq.OK == 0 || rel.OK != acq.OK {
				t.Fatalf("acquires %+v, releases %+v: want some ok acquires, each released", acq, rel)
			}
			if acq.Invoke != count(ops, history.Acquire, history.Invoke) || stats.Processes != cfg.Clients {
				t.Fatalf("stats %+v disagree with the history", stats)
			}
			// 4 clients on 2 keys: try-once must lose races, waiting must not.
			if tc.retry == workloads.RetryTry && acq.Fail == 0 {
				t.Fatalf("try-once acquires never failed under contention: %+v", acq)
			}
			if tc.retry == workloads.RetryWait && acq.Fail != 0 {
				t.Fatalf("waiting acquires failed %d times with a 1 s acquire timeout", acq.Fail)
			}
		})
	}
}

func TestFencedResource(t *testing.T) {
	clock, rec := history.NewClock(), &memRecorder{}
	res, err := workloads.NewResource(clock, rec, true)
	if err != nil {
		t.Fatal(err)
	}
	write := func(token int64, value string) history.Op {
		done, err := res.Apply(history.Op{Process: 1, Client: 1, Type: history.Invoke, F: history.Write, Key: "k", Value: value, Token: token, ValidUntil: 99, Time: clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return done
	}
	if op := write(5, "a"); op.Type != history.OK || op.Token != 5 || op.ValidUntil != 99 {
		t.Fatalf("first write: %v, want ok carrying token and validity", op)
	}
	op := write(3, "b")
	if op.Type != history.Fail || !strings.Contains(op.Error, "token 3") || !strings.Contains(op.Error, "token 5") {
		t.Fatalf("lower token: %v, want a fail naming tokens 3 and 5", op)
	}
	if op := write(5, "c"); op.Type != history.OK {
		t.Fatalf("equal token: %v, want ok (the holder writes again)", op)
	}
	if s := res.State("k"); s.Value != "c" || s.Token != 5 || s.Accepted != 2 || s.Rejected != 1 {
		t.Fatalf("state %+v", s)
	}
	ops := rec.snapshot()
	if len(ops) != 6 || ops[2].Type != history.Invoke || ops[3].Type != history.Fail || ops[3].Time < ops[2].Time {
		t.Fatalf("recorded %v: want invoke, outcome for each write, in order", ops)
	}
	if _, err := res.Apply(history.Op{Type: history.OK, F: history.Write, Key: "k"}); err == nil {
		t.Fatal("a completion was accepted as a request")
	}
	if _, err := res.Apply(history.Op{Type: history.Invoke, F: history.Acquire, Key: "k"}); err == nil {
		t.Fatal("an acquire was accepted as a resource request")
	}
	if len(rec.snapshot()) != 6 {
		t.Fatal("malformed requests were recorded")
	}
	unfenced, _ := workloads.NewResource(clock, rec, false)
	unfenced.Apply(history.Op{Type: history.Invoke, F: history.Write, Key: "k", Value: "1", Token: 5})
	if op, _ := unfenced.Apply(history.Op{Type: history.Invoke, F: history.Write, Key: "k", Value: "2", Token: 3}); op.Type != history.OK {
		t.Fatalf("unfenced resource rejected a write: %v", op)
	}
	if _, err := workloads.NewResource(nil, rec, true); err == nil {
		t.Fatal("resource without a clock accepted")
	}
}

// fencedStale runs clients that hold a fenced lock longer than its TTL, so
// a later holder (higher token) writes before an earlier one wakes up.
func fencedStale(t *testing.T, check bool) []history.Op {
	e := newEnv(t)
	cfg := workloads.Config{
		Options: workloads.Options{
			Mode:        workloads.InProcess,
			Kind:        workloads.FencedWrite,
			Clients:     3,
			Keys:        1,
			Retry:       workloads.RetryWait,
			RetryDelay:  spans.Fixed(5 * time.Millisecond),
			RetryJitter: spans.Fixed(5 * time.Millisecond),
			// A later holder writes first when its hold is shorter by more
			// than a TTL: the wide range makes that likely every run.
			Hold:          spans.Between(250*time.Millisecond, 900*time.Millisecond),
			CheckValidity: check,
		},
		KeyPrefix: "wl:" + t.Name() + ":",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: 200 * time.Millisecond, Variant: "fenced"})},
		TimeLimit: 2 * time.Second,
		Seed:      7,
	}
	run(t, cfg, e.harness(t, true))
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	return ops
}

func TestFencedWriteRejectsStaleToken(t *testing.T) {
	t.Parallel()
	ops := fencedStale(t, false)
	highest := map[string]int64{}
	rejected := 0
	for _, op := range ops {
		if op.F != history.Write || op.Type == history.Invoke {
			continue
		}
		if op.Token == 0 || op.ValidUntil == 0 {
			t.Fatalf("write without the writer's token or validity: %v", op)
		}
		switch op.Type {
		case history.OK:
			if op.Token < highest[op.Key] {
				t.Fatalf("accepted %v below token %d", op, highest[op.Key])
			}
			highest[op.Key] = op.Token
		case history.Fail:
			if op.Token >= highest[op.Key] || !strings.Contains(op.Error, "token "+strconv.FormatInt(highest[op.Key], 10)) {
				t.Fatalf("rejected %v though the highest accepted token was %d", op, highest[op.Key])
			}
			rejected++
		}
	}
	if rejected == 0 {
		t.Fatalf("holds beyond the TTL produced no rejected write; writes: %d", count(ops, history.Write, history.Invoke))
	}
}

func TestCheckValidityStopsExpiredWrites(t *testing.T) {
	t.Parallel()
	ops := fencedStale(t, true)
	if n := count(ops, history.Acquire, history.OK); n == 0 {
		t.Fatal("no acquire succeeded")
	}
	// Every hold outlasts the validity, so a careful client never writes.
	if n := count(ops, history.Write, history.Invoke); n != 0 {
		t.Fatalf("%d writes after the lease expired, with check_validity on", n)
	}
}

func TestCounter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := workloads.Config{
		Options: workloads.Options{
			Mode:        workloads.InProcess,
			Kind:        workloads.Counter,
			Clients:     3,
			Keys:        1,
			Retry:       workloads.RetryWait,
			RetryDelay:  spans.Fixed(time.Millisecond),
			RetryJitter: spans.Fixed(2 * time.Millisecond),
			Hold:        spans.Between(time.Millisecond, 3*time.Millisecond),
		},
		KeyPrefix: "wl:" + t.Name() + ":",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: 2 * time.Second})},
		TimeLimit: 600 * time.Millisecond,
	}
	h := e.harness(t, false)
	run(t, cfg, h)
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	checkExclusive(t, ops)
	lastRead := map[history.Process]int{}
	writes := 0
	for _, op := range ops {
		switch {
		case op.F == history.Read && op.Type == history.OK:
			v, err := strconv.Atoi(op.Value)
			if err != nil {
				t.Fatalf("read ok without a number: %v", op)
			}
			lastRead[op.Process] = v
		case op.F == history.Write && op.Type == history.OK:
			if v, _ := strconv.Atoi(op.Value); v != lastRead[op.Process]+1 {
				t.Fatalf("write %v is not the process's last read %d + 1", op, lastRead[op.Process])
			}
			writes++
		}
	}
	key := cfg.Key(0)
	if got := h.Resource.State(key).Value; writes == 0 || got != strconv.Itoa(writes) {
		t.Fatalf("counter = %s after %d acknowledged increments under a correct lock", got, writes)
	}
}

// workerPids lists this process's children that are workload workers:
// every test's, so a test that calls it must not run beside others. t.Setenv
// panics in a parallel test, which makes that mistake a failure.
func workerPids(t *testing.T) []int {
	t.Helper()
	t.Setenv("TUMBLER_TEST_SERIAL", "workerPids")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != me {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if strings.Contains(string(environ), workloads.WorkerEnv+"=1\x00") {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestProcessModeMatchesInProcess(t *testing.T) {
	e := newEnv(t)
	cfg := mutexConfig(e, t, workloads.Processes)
	w := start(t, cfg, e.harness(t, false))
	seen := map[int]bool{}
	for _, c := range w.Clients() {
		deadline := time.Now().Add(5 * time.Second)
		for c.Pid() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if c.Pid() == 0 || c.Pid() == os.Getpid() {
			t.Fatalf("client %d has no worker process of its own (pid %d)", c.ID(), c.Pid())
		}
		seen[c.Pid()] = true
	}
	if len(seen) != cfg.Clients {
		t.Fatalf("%d distinct worker pids for %d clients", len(seen), cfg.Clients)
	}
	stats, err := w.Wait()
	if err != nil {
		t.Fatal(err)
	}
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	checkExclusive(t, ops)
	if left := workerPids(t); len(left) != 0 {
		t.Fatalf("worker processes %v still running after the workload ended", left)
	}
	for pid := range seen {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("worker %d still exists after the workload ended (kill 0: %v)", pid, err)
		}
	}
	// The same config in-process records the same kinds of ops.
	e2 := newEnv(t)
	cfg2 := mutexConfig(e2, t, workloads.InProcess)
	stats2 := run(t, cfg2, e2.harness(t, false))
	for _, s := range []workloads.Stats{stats, stats2} {
		acq, rel := s.Ops[history.Acquire], s.Ops[history.Release]
		if acq.OK == 0 || acq.Fail == 0 || rel.OK != acq.OK || len(s.Ops) != 2 || s.Processes != cfg.Clients {
			t.Fatalf("stats %+v: want ok and failed acquires, every ok released, only acquire and release ops", s)
		}
	}
}
