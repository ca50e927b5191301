package hunt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

// consecutiveFailures is how many attempts in a row may fail in the
// harness before the hunt gives up (a missing server fails them all).
const consecutiveFailures = 3

// hunter is a hunt in progress. One goroutine (loop) starts attempts,
// draws their plans and records them; each attempt runs (and replays its
// find) on its own goroutine, which reads only the options and s.Dir.
type hunter struct {
	o     Options
	began time.Time
	s     *Summary
	// limit is an attempt's time limit: no attempt starts once less of
	// the budget is left (the first always does).
	limit time.Duration
	// mu guards s and the status calls while attempts run.
	mu sync.Mutex
	// next counts the attempts started; running holds those not yet
	// recorded, by seed; abandoned those cancelled because a find with a
	// lower seed ended the hunt (a serial hunt would not have run them).
	next      int
	running   map[int64]context.CancelFunc
	abandoned map[int64]bool
	// failedInARow counts attempts in a row the harness failed.
	failedInARow int
	unknown      bool
}

// finished is one attempt's result, sent to the loop.
type finished struct {
	a   Attempt
	err error
}

// seed is the k-th seed this hunt tries: FirstSeed+k, or a shard's k-th.
func (h *hunter) seed(k int) int64 {
	if sh := h.o.Shard; sh != nil {
		return h.o.FirstSeed + int64(sh.Index-1) + int64(k)*int64(sh.Count)
	}
	return h.o.FirstSeed + int64(k)
}

// loop starts attempts while the hunt may go on, up to Parallel at once,
// and records each as it ends, until none runs.
func (h *hunter) loop(ctx context.Context, first runner.Plan) error {
	done := make(chan finished)
	var failure error
	for {
		if h.s.Stopped == "" && failure == nil {
			failure = h.launch(ctx, first, done)
		}
		if len(h.running) == 0 {
			return failure
		}
		if err := h.record(<-done); err != nil && failure == nil {
			failure = err
		}
	}
}

// launch starts attempts until Parallel run or the hunt must stop (then
// it says why in s.Stopped). An error is the generator's.
func (h *hunter) launch(ctx context.Context, first runner.Plan, done chan<- finished) error {
	for len(h.running) < h.o.Parallel {
		seed := h.seed(h.next)
		switch {
		case ctx.Err() != nil:
			h.s.Stopped, h.s.Interrupted = "interrupted", true
			return nil
		case h.o.MaxSeeds > 0 && seed >= h.o.FirstSeed+int64(h.o.MaxSeeds):
			h.s.Stopped = fmt.Sprintf("%d seeds tried", h.next)
			return nil
		case h.next > 0 && h.o.Budget-time.Since(h.began) < h.limit:
			h.s.Stopped = "budget spent"
			return nil
		}
		plan := first
		if h.next > 0 {
			var err error
			if plan, err = h.o.Drawer(seed, slices.Clone(h.s.Attempts)); err != nil {
				// The first seed's draw worked: this is the generator's
				// fault, not the user's input.
				h.s.Stopped = "the schedule could not be drawn"
				return fmt.Errorf("seed %d: drawing the schedule: %w", seed, err)
			}
		}
		actx, cancel := context.WithCancel(ctx)
		h.running[seed] = cancel
		h.next++
		go func() {
			defer cancel()
			a, err := h.attempt(actx, plan)
			if err == nil && a.Found && !a.Interrupted {
				h.replay(actx, plan, &a)
			}
			done <- finished{a, err}
		}()
	}
	return nil
}

// record files an attempt that ended: in seed order in the summary, which
// is written; and decides whether the hunt goes on.
func (h *hunter) record(f finished) error {
	a, err := f.a, f.err
	delete(h.running, a.Seed)
	a.Abandoned = h.abandoned[a.Seed]
	h.mu.Lock()
	defer h.mu.Unlock()
	i, _ := slices.BinarySearchFunc(h.s.Attempts, a.Seed, func(x Attempt, s int64) int { return int(x.Seed - s) })
	h.s.Attempts = slices.Insert(h.s.Attempts, i, a)
	h.s.settle()
	h.cover(a)
	if a.Abandoned {
		h.o.Log.Info("hunt attempt abandoned: a find with a lower seed ended the hunt; kept", "seed", a.Seed)
		h.s.Elapsed = time.Since(h.began)
		return h.s.Write()
	}
	if a.Verdict == checker.Unknown && err == nil && !a.Interrupted {
		h.unknown = true
	}
	if a.Dir == "" {
		h.fixLatest()
	}
	switch {
	case a.Interrupted:
		h.s.Stopped, h.s.Interrupted = "interrupted", true
	case errors.Is(err, outcome.ErrInput):
		// A drawn plan the run refuses: the generator's fault.
		h.stop("the run refused a drawn plan")
		err = fmt.Errorf("seed %d: the run refused the drawn plan: %w", a.Seed, err)
	case err != nil:
		if h.failedInARow++; h.failedInARow >= consecutiveFailures {
			h.stop(fmt.Sprintf("the harness failed %d attempts in a row", h.failedInARow))
		}
		err = nil
	default:
		h.failedInARow = 0
		if a.Found && a.Replays != nil && !a.Replays.Reproduced() && !a.Replays.Interrupted {
			h.o.Log.Warn("a find that does not replay: kept; the hunt goes on for one that does", "seed", a.Seed,
				"alike", a.Replays.Alike, "replays", a.Replays.Replayed, "need", a.Replays.Need)
		}
		if a.Found && !h.o.KeepGoing && (h.o.Replays == 0 || a.Replays.Reproduced()) {
			h.stop("anomaly found")
			h.abandonAbove(a.Seed)
		}
		if why := h.covered(); why != "" && h.s.Stopped == "" {
			h.stop(why)
		}
	}
	h.s.Elapsed = time.Since(h.began)
	if werr := h.s.Write(); werr != nil {
		return fmt.Errorf("hunt summary: %w", werr)
	}
	return err
}

// stop ends the hunt for why, unless it was interrupted.
func (h *hunter) stop(why string) {
	if !h.s.Interrupted {
		h.s.Stopped = why
	}
}

// abandonAbove cancels the attempts running with a seed above seed: a
// serial hunt would have stopped before them.
func (h *hunter) abandonAbove(seed int64) {
	for s, cancel := range h.running {
		if s > seed {
			h.abandoned[s] = true
			cancel()
		}
	}
}

func seedName(seed int64) string { return fmt.Sprintf("seed-%d", seed) }

// status passes a run's status on as the hunt's, one call at a time.
func (h *hunter) status(seed int64) func(runner.Status) {
	if h.o.Status == nil {
		return nil
	}
	return func(rs runner.Status) {
		h.mu.Lock()
		defer h.mu.Unlock()
		found := 0
		for _, a := range h.s.Attempts {
			if a.Found {
				found++
			}
		}
		h.o.Status(Status{Elapsed: time.Since(h.began), Budget: h.o.Budget, Seed: seed, Running: len(h.running),
			Tried: h.s.Tried, Found: found, FaultsApplied: h.s.FaultsApplied, Run: rs})
	}
}

// attempt runs one seed's plan and records it. It runs on its own
// goroutine: it reads the options and s.Dir, nothing else of the hunt.
func (h *hunter) attempt(ctx context.Context, plan runner.Plan) (Attempt, error) {
	plan.Name = seedName(plan.Seed)
	a := Attempt{Seed: plan.Seed, Faults: len(plan.Faults), Start: time.Since(h.began), FirstAnomaly: -1,
		Plan: filepath.Join(PlansDir, plan.Name+".json")}
	if err := os.WriteFile(filepath.Join(h.s.Dir, a.Plan), plan.JSON(), 0o644); err != nil {
		return a, fmt.Errorf("attempt plan: %w", err)
	}
	h.o.Log.Info("hunt attempt", "seed", plan.Seed, "faults", len(plan.Faults))
	opts := runner.Options{Store: h.s.Dir, Log: h.o.Log, Status: h.status(plan.Seed),
		Command: fmt.Sprintf("tumbler run --plan %s", filepath.Join(h.s.Dir, a.Plan))}
	out, err := h.o.Run(ctx, plan, opts)
	a.Elapsed = time.Since(h.began) - a.Start
	// An attempt cut short counts as tried, with what it did: whether it
	// had started its workload or not.
	a.Interrupted = (out != nil && out.Interrupted) || (ctx.Err() != nil && (out == nil || err != nil))
	if err != nil && !a.Interrupted {
		a.Error = err.Error()
	}
	if out == nil {
		a.Verdict, a.ExitCode = checker.Unknown, outcome.ErrorCode(err)
		return a, h.quiet(a, err)
	}
	a.Verdict, a.ExitCode = out.Judgement.Verdict, out.Judgement.ExitCode
	a.covered(out.Coverage)
	if out.Dir != "" {
		a.Dir, _ = filepath.Rel(h.s.Dir, out.Dir)
	}
	if res := out.Result; res != nil {
		for _, f := range res.Faults {
			if f.Idle() == "" {
				a.FaultsApplied++
			}
		}
		a.Kinds = anomalyKinds(res)
		if like, ok := h.o.Like.Find(res, out.Coverage); ok {
			first := h.o.Like.First(res, out.Coverage)
			a.Like, a.Cause = &like, causeOf(first, res.Faults)
			a.FirstAnomaly = time.Duration(first.At)
		}
		a.Found = a.FirstAnomaly >= 0
		// The workload starts after the cluster is up: the anomaly's time
		// from the start of the hunt counts that too.
		if a.Found && !out.Started.IsZero() {
			a.FirstAnomaly += out.Started.Sub(h.began) - a.Start
		}
	}
	a.Found = a.Found && a.Verdict == checker.Invalid && !a.Interrupted
	if !a.Found {
		a.Like, a.Cause = nil, nil
	}
	if a.Verdict == checker.Valid && err == nil && !a.Interrupted && !h.o.KeepAll && out.Dir != "" {
		// A valid attempt's plan is kept (a.Plan); its report is not.
		if rerr := os.RemoveAll(filepath.Join(h.s.Dir, plan.Name)); rerr != nil {
			h.o.Log.Warn("cannot remove a valid attempt's report", "dir", out.Dir, "err", rerr)
		} else {
			a.Dir = ""
		}
	}
	return a, h.quiet(a, err)
}

// quiet is an attempt's error as the hunt counts it: none when the
// attempt was interrupted (its error is the interruption's).
func (h *hunter) quiet(a Attempt, err error) error {
	if a.Interrupted {
		return nil
	}
	return err
}

// causeOf lists the kinds of the faults anomaly an names, sorted.
func causeOf(an *checker.Anomaly, faults []checker.FaultWindow) []string {
	var out []string
	for _, f := range faults {
		if slices.Contains(an.Faults, f.ID) && !slices.Contains(out, f.Kind) {
			out = append(out, f.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// anomalyKinds lists a result's anomaly kinds in order of first
// appearance.
func anomalyKinds(res *checker.Result) []checker.Kind {
	var out []checker.Kind
	for _, an := range res.Anomalies {
		if !slices.Contains(out, an.Kind) {
			out = append(out, an.Kind)
		}
	}
	return out
}

// fixLatest removes the hunt directory's latest link when it points to a
// removed attempt.
func (h *hunter) fixLatest() {
	l := filepath.Join(h.s.Dir, "latest")
	if _, err := os.Stat(l); errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(l)
	}
}

// exitCode is the hunt's exit code (outcome.HuntCode).
func (h *hunter) exitCode() int {
	return outcome.HuntCode(h.s.First >= 0, h.failedInARow >= consecutiveFailures, h.s.Interrupted || h.unknown)
}
