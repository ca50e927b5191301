// Package hunt looks for failures nobody scripted: it runs one plan
// template with random compound fault schedules, one seed after another
// (runner.Plan.WithDrawnFaults), until a budget is spent or an anomaly is
// found, and keeps a summary of every attempt (hunt.json and index.html in
// the hunt's directory). Shrinking what it found is the shrink package's
// job; the command line chains the two.
//
// A hunt's directory is Store/hunts/<name>/<time>/. Each attempt runs as
// an ordinary run under it (seed-<N>/<time>/). Every attempt's plan is
// kept (plans/seed-<N>.json: it replays the attempt exactly); the report
// directory of a valid attempt is removed unless Options.KeepAll, since a
// long hunt makes hundreds; those of invalid, unknown and failed attempts
// are kept.
//
// A hunt reads the run engine's judgement of each attempt and decides
// nothing about a run; its exit code is outcome.HuntCode's.
package hunt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

// Files in a hunt's directory.
const (
	SummaryFile = "hunt.json"
	IndexFile   = "index.html"
	PlansDir    = "plans"
)

// RunFunc runs one plan: runner.Run, or a fake in tests.
type RunFunc func(context.Context, runner.Plan, runner.Options) (*runner.Outcome, error)

// Options configure a hunt.
type Options struct {
	// Name of the hunt (its directory under Store/hunts). Required.
	Name string
	// Budget bounds the hunt: no attempt starts once the time left is
	// shorter than an attempt's time limit (the first always starts).
	// Required, positive.
	Budget time.Duration
	// FirstSeed is the first seed tried (default 1); seeds go up by one.
	FirstSeed int64
	// MaxSeeds, when positive, bounds the number of attempts.
	MaxSeeds int
	// Want are the anomaly kinds that count as a find (empty: any). An
	// invalid attempt with only other kinds is kept and listed, but the
	// hunt goes on.
	Want []checker.Kind
	// After, when positive, counts as a find only an anomaly that came at
	// least this long after the start of a fault it names (outcome.Late):
	// a hunt like a row whose expectation has after_fault_start.
	After time.Duration
	// KeepGoing: go on after a find until the budget is spent.
	KeepGoing bool
	// KeepAll: keep the report directories of valid attempts too.
	KeepAll bool
	// Store is the runs' store (default "store").
	Store string
	Log   *slog.Logger
	// Status, when set, is called a few times a second.
	Status func(Status)
	// Run runs an attempt (default runner.Run).
	Run RunFunc
	// UntilCovered, when positive, ends the hunt once every dangerous
	// window that counts for it was reached this many times (coverage.go).
	UntilCovered int
	// Guided: draw each attempt's schedule toward the dangerous windows
	// reached least so far (guide.go).
	Guided bool
}

// Status is a snapshot of a hunt in progress.
type Status struct {
	Elapsed, Budget time.Duration
	Seed            int64
	Tried, Found    int
	FaultsApplied   int
	// Run is the current attempt's own status.
	Run runner.Status
}

// Attempt is one seed's run.
type Attempt struct {
	Seed     int64           `json:"seed"`
	Verdict  checker.Verdict `json:"verdict"`
	ExitCode int             `json:"exit_code"`
	// Kinds are the anomaly kinds found, in order of first appearance.
	Kinds []checker.Kind `json:"kinds,omitempty"`
	// Found: the attempt found an anomaly of a wanted kind.
	Found bool `json:"found,omitempty"`
	// Faults planned, and applied (not skipped by the nemesis).
	Faults        int `json:"faults"`
	FaultsApplied int `json:"faults_applied"`
	// Start is when the attempt began, from the start of the hunt;
	// Elapsed how long it took; FirstAnomaly when (from the start of its
	// workload) its first anomaly of a wanted kind happened, -1 if none.
	Start        time.Duration `json:"start_ns"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	FirstAnomaly time.Duration `json:"first_anomaly_ns"`
	// Plan is the attempt's plan file (relative to the hunt's directory);
	// Dir its report directory, "" when it was removed (a valid attempt).
	Plan string `json:"plan"`
	Dir  string `json:"dir,omitempty"`
	// Error is the run's error, if it failed.
	Error       string `json:"error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// Reached counts the dangerous windows the attempt reached, by name
	// (its coverage.json has when).
	Reached map[string]int `json:"reached,omitempty"`
}

// Summary is a hunt's record, written to hunt.json as the hunt goes.
type Summary struct {
	Name string `json:"name"`
	// Dir is the hunt's directory.
	Dir     string        `json:"dir"`
	Started time.Time     `json:"started"`
	Budget  time.Duration `json:"budget_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Template is the plan every attempt draws its schedule into (its
	// seed and faults are the attempt's), Draw what the schedules are
	// drawn from.
	Template runner.Plan    `json:"template"`
	Draw     runner.Draw    `json:"draw"`
	Want     []checker.Kind `json:"want,omitempty"`
	After    time.Duration  `json:"after_fault_start_ns,omitempty"`
	Attempts []Attempt      `json:"attempts"`
	// Tried is the number of attempts; FaultsApplied the faults they
	// applied in all.
	Tried         int `json:"tried"`
	FaultsApplied int `json:"faults_applied"`
	// First is the index in Attempts of the first find, -1 if none;
	// TimeToFirst the time from the start of the hunt to that anomaly.
	First       int           `json:"first"`
	TimeToFirst time.Duration `json:"time_to_first_ns"`
	// Stopped says why the hunt ended.
	Stopped     string `json:"stopped"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// ExitCode: 1 when an anomaly of a wanted kind was found, 0 when the
	// budget passed without one, 2 when interrupted first (or attempts
	// were unknown), 255 when the harness kept failing.
	ExitCode int `json:"exit_code"`
	// Shrink, when the found plan was shrunk, is the shrink's directory.
	Shrink string `json:"shrink,omitempty"`
	// Coverage adds up the attempts' coverage of the dangerous windows;
	// Guided: the schedules were drawn toward the windows reached least.
	Coverage *coverage.Tally `json:"coverage,omitempty"`
	Guided   bool            `json:"guided,omitempty"`
}

// Found returns the first find, if any.
func (s *Summary) Found() (Attempt, bool) {
	if s.First < 0 {
		return Attempt{}, false
	}
	return s.Attempts[s.First], true
}

// Write writes hunt.json and index.html into the hunt's directory,
// replacing them atomically.
func (s *Summary) Write() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(s.Dir, SummaryFile), append(b, '\n')); err != nil {
		return err
	}
	page, err := s.page()
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(s.Dir, IndexFile), page)
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// consecutiveFailures is how many attempts in a row may fail in the
// harness before the hunt gives up (a missing server fails them all).
const consecutiveFailures = 3

// Run hunts: template (normalized first, runner.Plan.Normalize) with
// schedules drawn from draw, seed after seed. The summary is returned (and written) also when the hunt ends early; the
// error is for bad input (wrapping outcome.ErrInput) or a hunt that could
// not record itself.
func Run(ctx context.Context, template runner.Plan, draw runner.Draw, o Options) (*Summary, error) {
	if o.Budget <= 0 {
		return nil, fmt.Errorf("%w: budget %v: want a positive duration", runner.ErrPlan, o.Budget)
	}
	if o.Name == "" {
		return nil, fmt.Errorf("%w: the hunt has no name", runner.ErrPlan)
	}
	if len(draw.Kinds) == 0 {
		return nil, fmt.Errorf("%w: no fault kinds to draw schedules from", runner.ErrPlan)
	}
	for _, k := range o.Want {
		if !slices.Contains(checker.AnomalyKinds, k) {
			return nil, fmt.Errorf("%w: anomaly kind %q unknown (valid: %v)", runner.ErrPlan, k, checker.AnomalyKinds)
		}
	}
	if o.UntilCovered < 0 {
		return nil, fmt.Errorf("%w: until covered %d: want a count of reaches, at least 1 (0: not asked)", runner.ErrPlan, o.UntilCovered)
	}
	if draw.Concurrency == 0 {
		draw.Concurrency = nemesis.DefaultConcurrency
	}
	if o.FirstSeed == 0 {
		o.FirstSeed = 1
	}
	if o.Store == "" {
		o.Store = "store"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Run == nil {
		o.Run = runner.Run
	}
	template = template.Normalize()
	tally := newTally(template, draw)
	if o.Guided {
		draw.Prefer = guide(template, tally, template.CoverageSetup(draw.Kinds))
	}
	// The first plan is drawn before anything is written: a template or a
	// mix the run cannot take is bad input, refused up front.
	first, err := template.WithDrawnFaults(o.FirstSeed, draw)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	dir := filepath.Join(o.Store, "hunts", o.Name, began.Format("20060102T150405.000"))
	if err := os.MkdirAll(filepath.Join(dir, PlansDir), 0o755); err != nil {
		return nil, fmt.Errorf("hunt directory: %w", err)
	}
	latest := filepath.Join(o.Store, "hunts", "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(filepath.Join(o.Name, filepath.Base(dir)), latest)

	o.Log.Info("hunt", "dir", dir, "lock", template.Lock.Variant, "topology", template.Topology.String(),
		"kinds", draw.Kinds, "concurrency", draw.Concurrency, "budget", o.Budget, "want", o.Want)
	h := &hunter{o: o, draw: draw, began: began, s: &Summary{
		Name: o.Name, Dir: dir, Started: began, Budget: o.Budget, Template: template, Draw: draw,
		Want: o.Want, After: o.After, First: -1, Attempts: []Attempt{},
		Coverage: tally, Guided: o.Guided,
	}}
	h.s.Template.Faults, h.s.Template.Seed = nil, 0
	err = h.loop(ctx, first)
	h.s.Elapsed = time.Since(began)
	h.s.ExitCode = h.exitCode()
	if werr := h.s.Write(); werr != nil && err == nil {
		err = fmt.Errorf("hunt summary: %w", werr)
	}
	return h.s, err
}

type hunter struct {
	o     Options
	draw  runner.Draw
	began time.Time
	s     *Summary
	// failedInARow counts attempts in a row the harness failed.
	failedInARow int
	unknown      bool
}

func (h *hunter) loop(ctx context.Context, plan runner.Plan) error {
	limit := plan.TimeLimit.Resolve(plan.TTL.Resolve(0))
	for seed := h.o.FirstSeed; ; seed++ {
		switch {
		case ctx.Err() != nil:
			h.s.Stopped, h.s.Interrupted = "interrupted", true
			return nil
		case h.o.MaxSeeds > 0 && h.s.Tried >= h.o.MaxSeeds:
			h.s.Stopped = fmt.Sprintf("%d seeds tried", h.s.Tried)
			return nil
		case h.s.Tried > 0 && h.o.Budget-time.Since(h.began) < limit:
			h.s.Stopped = "budget spent"
			return nil
		case h.covered() != "":
			h.s.Stopped = h.covered()
			return nil
		}
		if seed != h.o.FirstSeed {
			var err error
			if plan, err = h.s.Template.WithDrawnFaults(seed, h.draw); err != nil {
				// The first seed's draw worked: this is the generator's
				// fault, not the user's input.
				return fmt.Errorf("seed %d: drawing the schedule: %w", seed, err)
			}
		}
		a, err := h.attempt(ctx, plan)
		h.s.Attempts = append(h.s.Attempts, a)
		if a.Interrupted {
			h.s.Stopped, h.s.Interrupted = "interrupted", true
		} else {
			h.s.Tried++
			h.s.FaultsApplied += a.FaultsApplied
		}
		if a.Found && h.s.First < 0 {
			h.s.First = len(h.s.Attempts) - 1
			h.s.TimeToFirst = a.Start + a.FirstAnomaly
		}
		h.s.Elapsed = time.Since(h.began)
		if werr := h.s.Write(); werr != nil {
			return fmt.Errorf("hunt summary: %w", werr)
		}
		switch {
		case errors.Is(err, outcome.ErrInput):
			// A drawn plan the run refuses: the generator's fault.
			return fmt.Errorf("seed %d: the run refused the drawn plan: %w", seed, err)
		case err != nil:
			if h.failedInARow++; h.failedInARow >= consecutiveFailures {
				h.s.Stopped = fmt.Sprintf("the harness failed %d attempts in a row", h.failedInARow)
				return nil
			}
		default:
			h.failedInARow = 0
		}
		if a.Interrupted {
			return nil
		}
		if a.Found && !h.o.KeepGoing {
			h.s.Stopped = "anomaly found"
			return nil
		}
	}
}

// attempt runs one seed's plan and records it.
func (h *hunter) attempt(ctx context.Context, plan runner.Plan) (Attempt, error) {
	plan.Name = fmt.Sprintf("seed-%d", plan.Seed)
	a := Attempt{Seed: plan.Seed, Faults: len(plan.Faults), Start: time.Since(h.began), FirstAnomaly: -1,
		Plan: filepath.Join(PlansDir, plan.Name+".json")}
	if err := os.WriteFile(filepath.Join(h.s.Dir, a.Plan), plan.JSON(), 0o644); err != nil {
		return a, fmt.Errorf("attempt plan: %w", err)
	}
	h.o.Log.Info("hunt attempt", "seed", plan.Seed, "faults", len(plan.Faults))
	opts := runner.Options{Store: h.s.Dir, Log: h.o.Log,
		Command: fmt.Sprintf("tumbler run --plan %s", filepath.Join(h.s.Dir, a.Plan))}
	if h.o.Status != nil {
		opts.Status = func(rs runner.Status) {
			h.o.Status(Status{Elapsed: time.Since(h.began), Budget: h.o.Budget, Seed: plan.Seed,
				Tried: h.s.Tried, Found: h.found(), FaultsApplied: h.s.FaultsApplied, Run: rs})
		}
	}
	out, err := h.o.Run(ctx, plan, opts)
	a.Elapsed = time.Since(h.began) - a.Start
	if err != nil {
		a.Error = err.Error()
	}
	if out == nil {
		a.Verdict, a.ExitCode = checker.Unknown, outcome.ErrorCode(err)
		return a, err
	}
	a.Verdict, a.ExitCode, a.Interrupted = out.Judgement.Verdict, out.Judgement.ExitCode, out.Interrupted
	h.cover(&a, out.Coverage)
	if out.Dir != "" {
		a.Dir, _ = filepath.Rel(h.s.Dir, out.Dir)
	}
	if res := out.Result; res != nil {
		for _, f := range res.Faults {
			if f.Idle() == "" {
				a.FaultsApplied++
			}
		}
		for _, an := range res.Anomalies {
			if !slices.Contains(a.Kinds, an.Kind) {
				a.Kinds = append(a.Kinds, an.Kind)
			}
			if (len(h.o.Want) == 0 || slices.Contains(h.o.Want, an.Kind)) && outcome.Late(&an, res.Faults, h.o.After) {
				a.Found = true
				if d := time.Duration(an.At); a.FirstAnomaly < 0 || d < a.FirstAnomaly {
					a.FirstAnomaly = d
				}
			}
		}
		// The workload starts after the cluster is up: the anomaly's time
		// from the start of the hunt counts that too.
		if a.Found && !out.Started.IsZero() {
			a.FirstAnomaly += out.Started.Sub(h.began) - a.Start
		}
	}
	a.Found = a.Found && a.Verdict == checker.Invalid && !a.Interrupted
	if a.Verdict == checker.Unknown && err == nil && !a.Interrupted {
		h.unknown = true
	}
	if a.Verdict == checker.Valid && err == nil && !a.Interrupted && !h.o.KeepAll && out.Dir != "" {
		// A valid attempt's plan is kept (a.Plan); its report is not.
		if rerr := os.RemoveAll(filepath.Join(h.s.Dir, plan.Name)); rerr != nil {
			h.o.Log.Warn("cannot remove a valid attempt's report", "dir", out.Dir, "err", rerr)
		} else {
			a.Dir = ""
			h.fixLatest()
		}
	}
	return a, err
}

// fixLatest removes the hunt directory's latest link when it points to a
// removed attempt.
func (h *hunter) fixLatest() {
	l := filepath.Join(h.s.Dir, "latest")
	if _, err := os.Stat(l); errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(l)
	}
}

func (h *hunter) found() int {
	n := 0
	for _, a := range h.s.Attempts {
		if a.Found {
			n++
		}
	}
	return n
}

// exitCode is the hunt's exit code (outcome.HuntCode).
func (h *hunter) exitCode() int {
	return outcome.HuntCode(h.s.First >= 0, h.failedInARow >= consecutiveFailures, h.s.Interrupted || h.unknown)
}

// KindsOf lists the distinct fault kinds of a plan's schedule, in order:
// what "hunt --like ROW" draws from.
func KindsOf(p runner.Plan) []nemesis.Kind {
	var out []nemesis.Kind
	for _, s := range p.Faults {
		if !slices.Contains(out, s.Fault) {
			out = append(out, s.Fault)
		}
	}
	return out
}
