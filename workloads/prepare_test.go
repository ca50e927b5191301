package workloads_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/workloads"
)

// slowBuild is how long the slow test builder takes, as a lock client
// program starting an interpreter would.
const slowBuild = time.Second

const slowBuilder = "test-slow"

func init() {
	workloads.RegisterBuilder(slowBuilder, func(raw json.RawMessage) (workloads.Factory, func() error, error) {
		time.Sleep(slowBuild)
		return buildTest(raw)
	})
}

// firstInvoke is the time of the history's first client invoke.
func firstInvoke(t *testing.T, ops []history.Op) int64 {
	t.Helper()
	for _, op := range ops {
		if op.Type == history.Invoke && op.F == history.Acquire {
			return op.Time
		}
	}
	t.Fatal("no acquire was invoked")
	return 0
}

// TestPrepareStartsAtTimeZero: clients whose locks take 1 s to build start
// their first operation 1 s into a run from Start (a time limit shorter
// than that would see none), but at time zero of a run from Prepare, Ready
// and Begin — in process mode, where the build happens in the worker, as
// in process.
func TestPrepareStartsAtTimeZero(t *testing.T) {
	t.Parallel()
	for _, mode := range []workloads.Mode{workloads.Processes, workloads.InProcess} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := mutexConfig(e, t, mode)
			cfg.Clients, cfg.Lock.Builder = 2, slowBuilder
			cfg.TimeLimit = slowBuild + 600*time.Millisecond

			// Start: the clock runs while the locks are built.
			if _, err := startNow(t, cfg, e.harness(t, false)).Wait(); err != nil {
				t.Fatal(err)
			}
			if first := firstInvoke(t, e.rec.snapshot()); first < int64(slowBuild) {
				t.Fatalf("from Start the first acquire came at %v, before the %v build could end", time.Duration(first), slowBuild)
			}

			// Prepare: time zero comes once the locks are built.
			e.rec = &memRecorder{}
			w, err := workloads.Prepare(testCtx(t), cfg, workloads.Harness{Recorder: e.rec, WorkerLog: testLog{t}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Close)
			if err := w.Ready(testCtx(t)); err != nil {
				t.Fatalf("Ready: %v", err)
			}
			if n := e.rec.len(); n != 0 {
				t.Fatalf("%d ops recorded before Begin: %v", n, e.rec.snapshot())
			}
			clock := history.NewClock()
			if err := w.Begin(clock, nil); err != nil {
				t.Fatal(err)
			}
			if err := w.Begin(clock, nil); err == nil {
				t.Error("a second Begin was accepted")
			}
			if _, err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			ops := e.rec.snapshot()
			checkWellFormed(t, ops, cfg.Clients, clock.Now())
			if first := firstInvoke(t, ops); first >= int64(slowBuild) {
				t.Errorf("from Prepare the first acquire came at %v: the build was counted in the run's time", time.Duration(first))
			}
		})
	}
}

// TestPrepareReadySaysWhyNot: a client whose locks cannot be built makes
// Ready return its builder's error (its kind kept), and Ready returns when
// its context ends; a workload from Start cannot Begin.
func TestPrepareReadySaysWhyNot(t *testing.T) {
	t.Parallel()
	for _, mode := range []workloads.Mode{workloads.Processes, workloads.InProcess} {
		t.Run(string(mode), func(t *testing.T) {
			rec := &memRecorder{}
			cfg := workloads.Config{
				Options:   workloads.Options{Kind: workloads.Mutex, Mode: mode, Clients: 2, Keys: 1},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: refusingBuilder, Spec: json.RawMessage(`{}`)},
				TimeLimit: time.Second, Seed: 1,
			}
			w, err := workloads.Prepare(testCtx(t), cfg, workloads.Harness{Recorder: rec, WorkerLog: testLog{t}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			err = w.Ready(testCtx(t))
			if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "client ") {
				t.Errorf("Ready = %v, want the builder's refusal naming the client", err)
			}
		})
	}
	e := newEnv(t)
	cfg := mutexConfig(e, t, workloads.InProcess)
	cfg.Lock.Builder = slowBuilder
	w, err := workloads.Prepare(testCtx(t), cfg, workloads.Harness{Recorder: e.rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := w.Ready(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ready with an ended context = %v", err)
	}
	w.Close()
	if err := startNow(t, cfg, e.harness(t, false)).Begin(e.clock, nil); err == nil {
		t.Error("a workload from Start was let Begin")
	}
}
