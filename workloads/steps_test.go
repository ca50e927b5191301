package workloads_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/recipes"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

func isPause(prefix string) func(history.Op) bool {
	return func(op history.Op) bool { return op.F == history.Pause && strings.HasPrefix(op.Value, prefix) }
}

// procState is the state letter of pid in /proc ('T' when stopped).
func procState(t *testing.T, pid int) byte {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read the state of worker %d: %v", pid, err)
	}
	return stat[bytes.LastIndexByte(stat, ')')+2]
}

// sleepUntil sleeps until the history clock reads at.
func (e *env) sleepUntil(at int64) { time.Sleep(time.Duration(at - e.clock.Now())) }

// pauseWindow returns the begin and end records of the one step pause in ops.
func pauseWindow(t *testing.T, ops []history.Op) (begin, end history.Op) {
	t.Helper()
	var begins, ends []history.Op
	for _, op := range ops {
		switch {
		case isPause("stop ")(op):
			begins = append(begins, op)
		case isPause("resume after ")(op):
			ends = append(ends, op)
		case op.F == history.Pause:
			t.Fatalf("pause op with an unexpected value: %v", op)
		}
	}
	if len(begins) != 1 || len(ends) != 1 {
		t.Fatalf("want one pause begin and one end, got %v and %v", begins, ends)
	}
	begin, end = begins[0], ends[0]
	if begin.Type != history.Info || end.Type != history.Info || begin.Process != end.Process || begin.Key != end.Key || end.Time < begin.Time {
		t.Fatalf("pause records %v and %v do not make one pause", begin, end)
	}
	return begin, end
}

// TestArmPauseAtGranted stops a client for 2×TTL right after Redis granted
// its lock (single, no validity check): the client wakes up with a lease
// that expired before it could look at it, another client took the lock
// meanwhile, and the stale write is what the checker flags (single-gc-pause).
func TestArmPauseAtGranted(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			const ttl = 400 * time.Millisecond
			cfg := workloads.Config{
				Options: workloads.Options{
					Kind:        workloads.FencedWrite,
					Mode:        mode,
					Clients:     2,
					Keys:        1,
					Retry:       workloads.RetryWait,
					RetryDelay:  spans.Fixed(10 * time.Millisecond),
					RetryJitter: spans.Fixed(10 * time.Millisecond),
					Hold:        spans.Between(20*time.Millisecond, 20*time.Millisecond),
					Think:       spans.Between(20*time.Millisecond, 20*time.Millisecond),
				},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: ttl})},
				TimeLimit: 1500 * time.Millisecond,
			}
			w := start(t, cfg, e.harness(t, true))
			c := w.Clients()[0]
			if err := c.ArmStep(lock.StepGranted, workloads.StepAction{Pause: 2 * ttl}); err != nil {
				t.Fatal(err)
			}
			e.rec.waitFor(t, "pause begin", 5*time.Second, isPause("stop "))
			if mode == workloads.Processes {
				if st := procState(t, c.Pid()); st != 'T' {
					t.Fatalf("worker %d is in state %c during its pause, want T (stopped)", c.Pid(), st)
				}
				if err := c.Pause(); err == nil || !strings.Contains(err.Error(), "armed step pause") {
					t.Fatalf("Pause during a step pause = %v, want a refusal", err)
				}
			}
			if _, err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
			begin, end := pauseWindow(t, ops)
			if begin.Client != 0 || begin.Key != cfg.Key(0) || !strings.HasSuffix(begin.Value, " at "+lock.StepGranted) {
				t.Fatalf("pause %v: want client 0 on %s at step %s", begin, cfg.Key(0), lock.StepGranted)
			}
			if d := time.Duration(end.Time - begin.Time); d < 2*ttl {
				t.Fatalf("the pause lasted %v, want at least %v", d, 2*ttl)
			}
			var woke, other *history.Op
			for i, op := range ops {
				switch {
				case op.Client == 0 && op.F != history.Pause && op.Time > begin.Time && op.Time < end.Time:
					t.Fatalf("client 0 recorded %v during its pause [%d, %d]", op, begin.Time, end.Time)
				case op.Client == 0 && isOK(history.Acquire)(op) && op.Time > end.Time && woke == nil:
					woke = &ops[i]
				case op.Client == 1 && isOK(history.Acquire)(op) && op.Time > begin.Time && op.Time < end.Time:
					other = &ops[i]
				}
			}
			if woke == nil || woke.ValidUntil >= woke.Time {
				t.Fatalf("client 0's acquire after the pause %v: want an ok whose validity ended before it was recorded", woke)
			}
			if other == nil {
				t.Fatal("client 1 never took the lock while client 0 was stopped past its TTL")
			}
			res, err := checker.Check(ops, checker.Config{TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			var stale bool
			for _, a := range res.Anomalies {
				stale = stale || (a.Kind == checker.StaleWrite && len(a.Clients) > 0 && a.Clients[0] == 0)
			}
			if res.Verdict != checker.Invalid || !stale {
				t.Fatalf("verdict %s, anomalies %+v: want client 0's stale write", res.Verdict, res.Anomalies)
			}
		})
	}
}

// TestArmPauseStopsWatchdog pauses a client holding a watchdog lock for
// 2×TTL. In process mode the stop is real: the watchdog cannot renew, so
// the key expires during the pause. In-process the pause only sleeps in
// the step and the watchdog keeps the key alive, which is why a client
// pause scenario needs process mode.
func TestArmPauseStopsWatchdog(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			const ttl = 500 * time.Millisecond
			cfg := workloads.Config{
				Options: workloads.Options{
					Kind:    workloads.Mutex,
					Mode:    mode,
					Clients: 1,
					Keys:    1,
					Hold:    spans.Between(50*time.Millisecond, 50*time.Millisecond),
					Think:   spans.Between(20*time.Millisecond, 20*time.Millisecond),
				},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: ttl, Variant: "watchdog"})},
				TimeLimit: 1500 * time.Millisecond,
			}
			w := start(t, cfg, e.harness(t, false))
			c := w.Clients()[0]
			if err := c.ArmStep(workloads.StepAfterAcquire, workloads.StepAction{Pause: 2 * ttl}); err != nil {
				t.Fatal(err)
			}
			begin := e.rec.waitFor(t, "pause begin", 5*time.Second, isPause("stop "))
			// The last renewal came before the stop, so the key lives at
			// most a TTL into the pause; look 0.4×TTL later, 0.6×TTL before
			// the pause ends.
			e.sleepUntil(begin.Time + int64(14*ttl/10))
			n, err := redisClient(t, e.addr).Exists(testCtx(t), begin.Key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if mode == workloads.Processes {
				if st := procState(t, c.Pid()); st != 'T' {
					t.Fatalf("worker %d in state %c 1.4×TTL into its pause, want T", c.Pid(), st)
				}
				if n != 0 {
					t.Fatalf("%s still exists 1.4×TTL into a real stop: the watchdog renewed while the client was stopped", begin.Key)
				}
			} else if n != 1 {
				t.Fatalf("%s is gone 1.4×TTL into an in-process pause: the watchdog should have renewed it meanwhile", begin.Key)
			}
			if _, err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 1, e.clock.Now())
			b, end := pauseWindow(t, ops)
			var renewals int
			for _, op := range ops {
				if op.F == history.Extend && op.Time > b.Time && op.Time < end.Time {
					renewals++
				}
			}
			if mode == workloads.Processes && renewals != 0 {
				t.Fatalf("%d renewal records during a real stop", renewals)
			}
			if mode == workloads.InProcess && renewals == 0 {
				t.Fatal("no renewal recorded during the in-process pause")
			}
		})
	}
}

// TestArmPauseInsideRelease stops a check-then-del client between its GET
// and its DEL for 2×TTL (as blog posts do it): meanwhile the other client takes the
// expired lock, the DEL frees that client's lock, and the next acquire is
// a double grant. OpTimeout exceeds the pause so that the DEL goes out.
func TestArmPauseInsideRelease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const ttl = time.Second
	cfg := workloads.Config{
		Options: workloads.Options{
			Kind:        workloads.Mutex,
			Mode:        workloads.Processes,
			Clients:     2,
			Keys:        1,
			Retry:       workloads.RetryWait,
			RetryDelay:  spans.Fixed(5 * time.Millisecond),
			RetryJitter: spans.Fixed(5 * time.Millisecond),
			OpTimeout:   spans.Fixed(3 * ttl),
			// Holds just short of the TTL, back to back: the other client holds
			// the lock almost all the time once it has it.
			Hold: spans.Between(8*ttl/10, 8*ttl/10),
		},
		KeyPrefix: "wl:" + t.Name() + ":",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: ttl, Variant: recipes.NameCheckThenDel})},
		TimeLimit: 3500 * time.Millisecond,
	}
	w := start(t, cfg, e.harness(t, false))
	// Back-to-back holds starve the other client: arm the first holder.
	first := e.rec.waitFor(t, "ok acquire", 5*time.Second, isOK(history.Acquire))
	if err := w.Clients()[first.Client].ArmStep(recipes.StepBetweenGetAndDel, workloads.StepAction{Pause: 2 * ttl}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	ops := e.rec.snapshot()
	checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
	_, end := pauseWindow(t, ops)
	var del *history.Op
	for i, op := range ops {
		if op.Client == first.Client && op.F == history.Release && op.Type != history.Invoke && op.Time > end.Time {
			del = &ops[i]
			break
		}
	}
	if del == nil || del.Type != history.OK {
		t.Fatalf("client %d's release after the pause: %v; want ok (its DEL went out and deleted a key)", first.Client, del)
	}
	res, err := checker.Check(ops, checker.Config{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	var double bool
	for _, a := range res.Anomalies {
		double = double || a.Kind == checker.DoubleGrant
	}
	if res.Verdict != checker.Invalid || !double {
		t.Fatalf("verdict %s, anomalies %+v: want the double grant the late DEL causes", res.Verdict, res.Anomalies)
	}
}

// TestArmCrash crashes a client once at an armed step, then arms a pause
// while the client is down: it hits the next process.
func TestArmCrash(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := e.waitingMutex(t, mode, 1, 300*time.Millisecond, 1500*time.Millisecond, workloads.Options{
				Hold:         spans.Between(10*time.Millisecond, 10*time.Millisecond),
				Think:        spans.Between(10*time.Millisecond, 10*time.Millisecond),
				RestartDelay: spans.Fixed(500 * time.Millisecond),
			})
			w := start(t, cfg, e.harness(t, false))
			c := w.Clients()[0]
			for _, bad := range []struct {
				step string
				a    workloads.StepAction
				want string
			}{
				{"", workloads.StepAction{Crash: true}, "empty step"},
				{"x", workloads.StepAction{Pause: time.Second, Crash: true}, "not both"},
				{"x", workloads.StepAction{Pause: -1}, "negative"},
			} {
				if err := c.ArmStep(bad.step, bad.a); err == nil || !strings.Contains(err.Error(), bad.want) {
					t.Fatalf("ArmStep(%q, %+v) = %v, want an error containing %q", bad.step, bad.a, err, bad.want)
				}
			}
			// Armed and disarmed at once (the zero action, as a nemesis heal
			// sends it): it must never fire; the pause checked below is the
			// only one.
			if err := c.ArmStep(workloads.StepBeforeRelease, workloads.StepAction{Pause: 10 * time.Second}); err != nil {
				t.Fatal(err)
			}
			if err := c.ArmStep(workloads.StepBeforeRelease, workloads.StepAction{}); err != nil {
				t.Fatalf("disarm: %v", err)
			}
			if err := c.ArmStep(workloads.StepAfterAcquire, workloads.StepAction{Crash: true}); err != nil {
				t.Fatal(err)
			}
			e.rec.waitFor(t, "crash", 5*time.Second, func(op history.Op) bool { return op.F == history.Crash })
			if mode == workloads.Processes && c.Pid() != 0 {
				t.Fatalf("client has worker %d right after its crash, want none during the %v restart delay", c.Pid(), cfg.RestartDelay)
			}
			if err := c.ArmStep(workloads.StepBeforeRelease, workloads.StepAction{Pause: 50 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			stats, err := w.Wait()
			if err != nil {
				t.Fatal(err)
			}
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 1, e.clock.Now())
			if stats.Crashes != 1 || stats.Processes != 2 {
				t.Fatalf("stats %+v: want exactly one crash and two processes", stats)
			}
			for _, op := range ops {
				if op.F == history.Crash && (op.Process != 0 || !strings.Contains(op.Error, workloads.StepAfterAcquire+" (armed)")) {
					t.Fatalf("crash %v: want process 0 at the armed %s", op, workloads.StepAfterAcquire)
				}
			}
			begin, _ := pauseWindow(t, ops)
			if begin.Process != 1 || !strings.HasSuffix(begin.Value, workloads.StepBeforeRelease) {
				t.Fatalf("pause %v: want the restarted process 1 at %s", begin, workloads.StepBeforeRelease)
			}
			if err := c.ArmStep(workloads.StepAfterAcquire, workloads.StepAction{Crash: true}); err == nil || !strings.Contains(err.Error(), "stopped for good") {
				t.Fatalf("ArmStep on a stopped client = %v, want an error", err)
			}
			if err := c.GateResource(true); err == nil || !strings.Contains(err.Error(), "stopped for good") {
				t.Fatalf("closing a stopped client's gate = %v, want an error", err)
			}
			if err := c.GateResource(false); err != nil {
				t.Fatalf("opening a stopped client's gate: %v", err)
			}
		})
	}
}

// TestGateResource holds a client's writes while its gate is closed: they
// are decided, in the order sent, only after it opens, including the one
// whose sender stopped waiting for an answer.
func TestGateResource(t *testing.T) {
	t.Parallel()
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := workloads.Config{
				Options: workloads.Options{
					Kind:      workloads.FencedWrite,
					Mode:      mode,
					Clients:   1,
					Keys:      1,
					OpTimeout: spans.Fixed(300 * time.Millisecond),
					Hold:      spans.Between(100*time.Millisecond, 100*time.Millisecond),
					Think:     spans.Between(10*time.Millisecond, 10*time.Millisecond),
				},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: 2 * time.Second, Variant: "fenced"})},
				TimeLimit: 1500 * time.Millisecond,
			}
			h := e.harness(t, true)
			w := start(t, cfg, h)
			c := w.Clients()[0]
			if err := c.GateResource(true); err != nil {
				t.Fatal(err)
			}
			e.rec.waitFor(t, "ok acquire", 5*time.Second, isOK(history.Acquire))
			// One write times out (OpTimeout) and the next cycle sends another.
			time.Sleep(900 * time.Millisecond)
			if n := count(e.rec.snapshot(), history.Write, history.Invoke); n != 0 {
				t.Fatalf("%d writes reached the resource through a closed gate", n)
			}
			opened := e.clock.Now()
			if err := c.GateResource(false); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 1, e.clock.Now())
			var held []history.Op
			var last history.Op
			for _, op := range ops {
				if op.F != history.Write {
					continue
				}
				if op.Type == history.Invoke && op.Time < opened {
					held = append(held, op)
				}
				if op.Type != history.Invoke {
					if op.Time < opened {
						t.Fatalf("write %v decided before the gate opened at %d", op, opened)
					}
					if op.Type == history.OK {
						last = op
					}
				}
			}
			if len(held) < 2 {
				t.Fatalf("%d writes sent while the gate was closed, want at least 2 (one timed out): %v", len(held), ops)
			}
			for i := 1; i < len(held); i++ {
				if held[i].Time <= held[i-1].Time {
					t.Fatalf("held writes delivered out of order: %v before %v", held[i-1], held[i])
				}
			}
			if got := h.Resource.State(cfg.Key(0)).Value; got != last.Value {
				t.Fatalf("resource holds %q, want the last accepted write %q", got, last.Value)
			}
		})
	}
}

// TestExtendEvery has the client extend its own lease during a hold
// longer than the TTL.
func TestExtendEvery(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	for _, tc := range []struct {
		name  string
		mode  workloads.Mode
		lock  testSpec
		every time.Duration
		// lapse: extends come too late, so the lease lapses before each.
		lapse, extendOK bool
	}{
		{"in-time", workloads.InProcess, testSpec{TTL: ttl}, ttl / 3, false, true},
		{"too-late", workloads.InProcess, testSpec{TTL: ttl}, 5 * ttl / 3, true, false},
		{"too-late", workloads.Processes, testSpec{TTL: ttl}, 5 * ttl / 3, true, false},
		// redsync #147: with WithSetNXOnExtend an extend re-creates the
		// lapsed key, so the client believes it held throughout.
		{"redsync-setnx", workloads.InProcess, testSpec{TTL: ttl, Variant: "redsync", SetNXOnExtend: true}, 5 * ttl / 3, true, true},
	} {
		t.Run(tc.name+"/"+string(tc.mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.lock.Addr = e.addr
			cfg := workloads.Config{
				Options: workloads.Options{
					Kind:        workloads.FencedWrite,
					Mode:        tc.mode,
					Clients:     1,
					Keys:        1,
					Hold:        spans.Between(700*time.Millisecond, 700*time.Millisecond),
					ExtendEvery: spans.Fixed(tc.every),
				},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, tc.lock)},
				TimeLimit: 500 * time.Millisecond,
			}
			run(t, cfg, e.harness(t, true))
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, 1, e.clock.Now())
			var acq history.Op
			var oks, fails int
			writes := count(ops, history.Write, history.OK)
			for _, op := range ops {
				switch {
				case isOK(history.Acquire)(op):
					acq = op
				case op.F == history.Extend && op.Type == history.Invoke:
					if tc.lapse && op.Time < acq.ValidUntil {
						t.Fatalf("extend %v sent before the lease (valid until %d) lapsed", op, acq.ValidUntil)
					}
				case isOK(history.Extend)(op):
					if op.Value != acq.Value || op.ValidUntil <= acq.ValidUntil || op.ValidUntil <= op.Time {
						t.Fatalf("ok extend %v does not renew %v", op, acq)
					}
					acq.ValidUntil = op.ValidUntil
					oks++
				case op.F == history.Extend && op.Type == history.Fail:
					if !strings.Contains(op.Error, lock.ErrNotHeld.Error()) {
						t.Fatalf("failed extend %v: want %v", op, lock.ErrNotHeld)
					}
					fails++
				case isOK(history.Write)(op):
					if op.ValidUntil != acq.ValidUntil {
						t.Fatalf("write %v carries validity %d, want the latest extend's %d", op, op.ValidUntil, acq.ValidUntil)
					}
				}
			}
			if tc.extendOK && (oks == 0 || fails != 0 || writes == 0) {
				t.Fatalf("%d ok and %d failed extends, %d writes: want ok extends and the write", oks, fails, writes)
			}
			if !tc.extendOK && (oks != 0 || fails != 1 || writes != 0 || count(ops, history.Write, history.Invoke) != 0) {
				t.Fatalf("%d ok and %d failed extends, %d writes: want one failed extend that ends the section before any write", oks, fails, writes)
			}
		})
	}
}

// TestNest nests acquires: a reentrant lock takes them all and is released
// as often; a plain lock refuses the nested acquire and the client gives
// back what it holds without hanging.
func TestNest(t *testing.T) {
	t.Parallel()
	t.Run("reentrant", func(t *testing.T) {
		e := newEnv(t)
		const ttl = 2 * time.Second
		cfg := workloads.Config{
			Options: workloads.Options{
				Mode:       workloads.InProcess,
				Kind:       workloads.Counter,
				Clients:    2,
				Keys:       1,
				Nest:       3,
				Retry:      workloads.RetryWait,
				RetryDelay: spans.Fixed(5 * time.Millisecond),
				Hold:       spans.Between(2*time.Millisecond, 5*time.Millisecond),
			},
			KeyPrefix: "wl:" + t.Name() + ":",
			Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: ttl, Variant: "reentrant"})},
			TimeLimit: 600 * time.Millisecond,
		}
		h := e.harness(t, false)
		stats := run(t, cfg, h)
		ops := e.rec.snapshot()
		checkWellFormed(t, ops, cfg.Clients, e.clock.Now())
		depth := map[history.Process]int{}
		for _, op := range ops {
			switch {
			case isOK(history.Acquire)(op):
				depth[op.Process]++
			case op.F == history.Acquire && op.Type != history.Invoke:
				t.Fatalf("acquire %v failed: a waiting reentrant acquire should get the lock", op)
			case op.F == history.Read && op.Type == history.Invoke:
				if depth[op.Process] != 3 {
					t.Fatalf("%v inside a hold of depth %d, want 3", op, depth[op.Process])
				}
			case op.F == history.Release && op.Type == history.Invoke:
				depth[op.Process]--
			case op.F == history.Release && op.Type != history.OK:
				t.Fatalf("release %v did not succeed", op)
			}
		}
		acq := stats.Ops[history.Acquire]
		if acq.OK == 0 || acq.OK%3 != 0 || stats.Ops[history.Release].OK != acq.OK {
			t.Fatalf("stats %+v: want acquires and releases in threes", stats.Ops)
		}
		res, err := checker.Check(ops, checker.Config{TTL: ttl, Subject: checker.Subject{Counter: true, Reentrant: true}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != checker.Valid {
			t.Fatalf("verdict %s for nested holds of a correct reentrant lock: %+v", res.Verdict, res.Anomalies)
		}
		if n, err := redisClient(t, e.addr).Exists(testCtx(t), cfg.Key(0)).Result(); err != nil || n != 0 {
			t.Fatalf("EXISTS %s = %d, %v after every hold was released", cfg.Key(0), n, err)
		}
	})
	t.Run("not-reentrant", func(t *testing.T) {
		e := newEnv(t)
		cfg := workloads.Config{
			Options: workloads.Options{
				Mode:           workloads.InProcess,
				Kind:           workloads.FencedWrite,
				Clients:        1,
				Keys:           1,
				Nest:           2,
				Retry:          workloads.RetryWait,
				RetryDelay:     spans.Fixed(20 * time.Millisecond),
				AcquireTimeout: spans.Fixed(200 * time.Millisecond),
				Hold:           spans.Between(time.Millisecond, time.Millisecond),
			},
			KeyPrefix: "wl:" + t.Name() + ":",
			Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(t, testSpec{Addr: e.addr, TTL: 5 * time.Second})},
			TimeLimit: 700 * time.Millisecond,
		}
		stats := run(t, cfg, e.harness(t, true))
		ops := e.rec.snapshot()
		checkWellFormed(t, ops, 1, e.clock.Now())
		// Whether the refused acquire is fail or info depends on where its
		// timeout cut it; either way it is not a hold.
		acq, rel := stats.Ops[history.Acquire], stats.Ops[history.Release]
		if acq.OK < 2 || acq.Invoke != 2*acq.OK || rel.Invoke != acq.OK || rel.OK != acq.OK || count(ops, history.Write, history.Invoke) != 0 {
			t.Fatalf("acquires %+v, releases %+v, writes %d: want each cycle's nested acquire refused, the outer one released, no write",
				acq, rel, count(ops, history.Write, history.Invoke))
		}
	})
}
