// Package shrink searches for a smaller plan that still fails the same way
// as a failing run: fewer fault steps, a shorter time limit, shorter and
// milder faults, fewer clients and keys. Timing is not deterministic, so a
// candidate is replayed up to R times and kept when at least k of those
// replays show an anomaly of the original's kinds (Options.Replays and
// Need); the plan as found is replayed the same way first, and a plan that
// does not fail k of R times is not shrunk.
//
// The search is greedy, in passes, to a fixed point or the budget: cut the
// schedule and the time limit just after the anomaly, drop fault steps in
// halves, then in quarters… then one by one (as delta debugging does),
// halve the time limit, each step's spans but its start (its duration,
// its trigger's timeout, its magnitudes: Step.Spans), then fewer
// clients and keys. Each kept candidate is the new base.
//
// A shrink's directory holds shrink.json (every candidate and its replays),
// plan.json (the minimal plan), row.json (a ready catalog row) and the
// report directories of the kept candidates' failing replays; the reports
// of rejected candidates are removed (their plans are in shrink.json).
// The command's exit code is outcome.ShrinkCode's.
package shrink

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
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/spans"
)

// Files in a shrink's directory.
const (
	SummaryFile = "shrink.json"
	PlanFile    = "plan.json"
	RowFile     = "row.json"
)

// Defaults.
const (
	DefaultReplays = 3
	DefaultNeed    = 2
	DefaultBudget  = 5 * time.Minute
)

// RunFunc runs one plan: runner.Run, or a fake in tests.
type RunFunc func(context.Context, runner.Plan, runner.Options) (*runner.Outcome, error)

// Options configure a shrink.
type Options struct {
	// Replays (R) and Need (k): a candidate is kept when k of R replays
	// fail the same way. Defaults 3 and 2; 1 ≤ k ≤ R.
	Replays, Need int
	// Budget bounds the search (default 5 minutes); when it is spent the
	// smallest plan kept so far is the result.
	Budget time.Duration
	// Like is what "fails the same way" means (outcome.Like: the found
	// run's anomaly kinds, how late after a fault's start, the dangerous
	// windows it followed; hunt's Attempt.Like, or LikeOf a stored run).
	// Its Kinds are required.
	Like outcome.Like
	// Dir is the shrink's directory (created). Required.
	Dir string
	// Found says where the plan was found, for the catalog row's source
	// ("found by tumbler hunt, seed 7").
	Found string
	Log   *slog.Logger
	// Progress, when set, is told about every replay.
	Progress func(Progress)
	// Run runs a replay (default runner.Run).
	Run RunFunc
	// Confirmed, when set, is the report directory of a replay of the
	// plan as found that failed alike, made by a caller that already
	// replayed the plan k of R times (a hunt, Options.Replays there): the
	// shrink starts from it instead of replaying the plan as found again.
	Confirmed string
}

// Progress is a snapshot of a shrink in progress.
type Progress struct {
	Elapsed, Budget time.Duration
	Candidate       int
	Change          string
	Replay          int
	Failed          int
	// Steps, TimeLimit, Clients and Keys describe the smallest plan kept.
	Steps     int
	TimeLimit string
	Clients   int
	Keys      int
}

// Candidate is one plan tried.
type Candidate struct {
	// Change says how it differs from the base it was made from.
	Change   string        `json:"change"`
	Plan     runner.Plan   `json:"plan"`
	Replayed int           `json:"replayed"`
	Failed   int           `json:"failed"`
	Kept     bool          `json:"kept"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Dir is a failing replay's report (kept candidates only), relative
	// to the shrink's directory.
	Dir string `json:"dir,omitempty"`
}

// Result is a shrink's record (shrink.json).
type Result struct {
	Dir string `json:"dir"`
	// Kinds are Like's anomaly kinds (as shrink.json always named them).
	Kinds   []checker.Kind `json:"kinds"`
	Like    outcome.Like   `json:"like"`
	Replays int            `json:"replays"`
	Need    int            `json:"need"`
	Budget  time.Duration  `json:"budget_ns"`
	Elapsed time.Duration  `json:"elapsed_ns"`
	// Exhausted: the budget ran out before no candidate was left to try.
	Exhausted bool `json:"exhausted"`
	// Reproduced: the plan as found failed k of R times (else nothing was
	// shrunk).
	Reproduced bool        `json:"reproduced"`
	Original   runner.Plan `json:"original"`
	Minimal    runner.Plan `json:"minimal"`
	// Report is a failing replay of the minimal plan (relative to Dir).
	Report     string      `json:"report,omitempty"`
	Candidates []Candidate `json:"candidates"`
	// Row is the minimal plan as a catalog row.
	Row         *scenarios.Scenario `json:"row,omitempty"`
	Interrupted bool                `json:"interrupted,omitempty"`
}

func (o Options) withDefaults() Options {
	if o.Replays == 0 {
		o.Replays = DefaultReplays
	}
	if o.Need == 0 {
		o.Need = min(DefaultNeed, o.Replays)
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	return o
}

// Validate checks the replays, the failures needed and the budget (zero
// values take the defaults); errors wrap outcome.ErrInput.
func (o Options) Validate() error {
	o = o.withDefaults()
	switch {
	case o.Replays < 1:
		return fmt.Errorf("%w: replays %d: want at least 1", runner.ErrPlan, o.Replays)
	case o.Need < 1 || o.Need > o.Replays:
		return fmt.Errorf("%w: need %d: want 1 to replays (%d)", runner.ErrPlan, o.Need, o.Replays)
	case o.Budget < 0:
		return fmt.Errorf("%w: budget %v is negative", runner.ErrPlan, o.Budget)
	}
	return nil
}

// ErrNotFailing: the run to shrink did not fail with an anomaly.
var ErrNotFailing = errors.New("nothing to shrink")

// LikeOf is what fails like the stored run in dir (outcome.Like.Find:
// its anomaly kinds and the telling windows its first anomaly followed),
// or an error wrapping outcome.ErrInput when the run has no anomaly (it
// was valid or not checked).
func LikeOf(dir string) (outcome.Like, error) {
	res, err := reports.ReadResults(dir)
	if err != nil {
		return outcome.Like{}, fmt.Errorf("%w: %s is not a checked run: %w", runner.ErrPlan, dir, err)
	}
	cov, err := reports.ReadCoverage(dir)
	if err != nil {
		return outcome.Like{}, fmt.Errorf("%w: %w", runner.ErrPlan, err)
	}
	if like, ok := (outcome.Like{}).Find(res.Result, cov); ok && res.Result.Verdict == checker.Invalid {
		return like, nil
	}
	v := checker.Unknown
	if res.Result != nil {
		v = res.Result.Verdict
	}
	return outcome.Like{}, fmt.Errorf("%w: %w: the run in %s is %s, not invalid: only a run with an anomaly can be shrunk", runner.ErrPlan, ErrNotFailing, dir, v)
}

// Shrink searches for the smallest plan that still fails like plan
// (normalized first, runner.Plan.Normalize: its candidates and the minimal
// plan carry every default). The result is returned (and written) also
// when the search ends early; the error is for bad options (wrapping
// outcome.ErrInput), an interrupted search returns its result and the
// context's error.
func Shrink(ctx context.Context, plan runner.Plan, o Options) (*Result, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch {
	case len(o.Like.Kinds) == 0:
		return nil, fmt.Errorf("%w: %w: no anomaly kinds to preserve", runner.ErrPlan, ErrNotFailing)
	case o.Dir == "":
		return nil, fmt.Errorf("%w: the shrink has no directory", runner.ErrPlan)
	}
	var err error
	if plan, err = plan.Normalized(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Run == nil {
		o.Run = runner.Run
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("shrink directory: %w", err)
	}
	s := &shrinker{o: o, began: time.Now(), res: &Result{
		Dir: o.Dir, Kinds: o.Like.Kinds, Like: o.Like, Replays: o.Replays, Need: o.Need, Budget: o.Budget,
		Original: plan, Minimal: plan, Candidates: []Candidate{},
	}}
	err = s.search(ctx, plan)
	s.res.Elapsed = time.Since(s.began)
	s.res.Exhausted = s.res.Exhausted || s.spent()
	if ctx.Err() != nil {
		s.res.Interrupted = true
		err = ctx.Err()
	}
	if s.res.Reproduced {
		row := s.row()
		s.res.Row = &row
	}
	if werr := s.write(); werr != nil && err == nil {
		err = werr
	}
	return s.res, err
}

type shrinker struct {
	o     Options
	began time.Time
	res   *Result
	// at is when the base's last failing replay's first anomaly of a
	// wanted kind happened, from the start of its workload; faults is
	// that replay's fault windows.
	at     time.Duration
	faults []checker.FaultWindow
	// tried holds the plans replayed already (as JSON): a plan rejected
	// once is not replayed again in a later pass.
	tried map[string]bool
}

func (s *shrinker) spent() bool { return time.Since(s.began) >= s.o.Budget }

// search replays the plan as found (unless Options.Confirmed), then
// shrinks it pass after pass.
func (s *shrinker) search(ctx context.Context, plan runner.Plan) error {
	if s.o.Confirmed != "" {
		if err := s.confirmed(plan); err != nil {
			return err
		}
	} else if !s.try(ctx, "the plan as found", plan) {
		if ctx.Err() == nil {
			s.o.Log.Warn("the plan as found does not fail often enough to shrink", "need", s.o.Need, "replays", s.o.Replays)
		}
		return nil
	}
	s.res.Reproduced = true
	for {
		progress := false
		for _, pass := range []func(context.Context) bool{s.truncate, s.dropSteps, s.halveTimeLimit, s.milder, s.fewer} {
			if ctx.Err() != nil || s.spent() {
				s.res.Exhausted = s.spent()
				return nil
			}
			if pass(ctx) {
				progress = true
			}
		}
		if !progress {
			return nil
		}
	}
}

// try replays a candidate up to R times, stopping as soon as the outcome
// is decided, and makes it the new base when k replays failed the same way.
func (s *shrinker) try(ctx context.Context, change string, p runner.Plan) bool {
	if ctx.Err() != nil || (len(s.res.Candidates) > 0 && s.spent()) {
		return false
	}
	key := string(p.JSON())
	if s.tried[key] {
		return false
	}
	if s.tried == nil {
		s.tried = map[string]bool{}
	}
	s.tried[key] = true
	n := len(s.res.Candidates)
	c := Candidate{Change: change, Plan: p}
	began := time.Now()
	name := fmt.Sprintf("candidate-%02d", n)
	p.Name = name
	var failing string
	var at time.Duration
	var faults []checker.FaultWindow
	for r := 0; r < s.o.Replays; r++ {
		if c.Failed >= s.o.Need || c.Replayed-c.Failed > s.o.Replays-s.o.Need || ctx.Err() != nil {
			break
		}
		s.report(Progress{Candidate: n, Change: change, Replay: r + 1, Failed: c.Failed})
		out, err := s.o.Run(ctx, p, runner.Options{Store: s.o.Dir, Log: s.o.Log})
		if ctx.Err() != nil {
			break // an interrupted replay says nothing
		}
		c.Replayed++
		if err != nil {
			s.o.Log.Warn("replay failed", "candidate", n, "err", err)
			continue
		}
		if d, ok := s.failsAlike(out); ok {
			c.Failed++
			if failing == "" {
				failing, at, faults = out.Dir, d, out.Result.Faults
			}
		}
	}
	c.Elapsed = time.Since(began)
	c.Kept = c.Failed >= s.o.Need
	runs := filepath.Join(s.o.Dir, name)
	if c.Kept {
		// Keep the failing replay's report; drop the others.
		c.Dir, _ = filepath.Rel(s.o.Dir, failing)
		entries, _ := os.ReadDir(runs)
		for _, e := range entries {
			if e.IsDir() && filepath.Join(runs, e.Name()) != failing {
				_ = os.RemoveAll(filepath.Join(runs, e.Name()))
			}
		}
		_ = os.Remove(filepath.Join(runs, "latest"))
		c.Plan.Name = s.res.Original.Name
		s.res.Minimal, s.res.Report, s.at, s.faults = c.Plan, c.Dir, at, faults
	} else {
		_ = os.RemoveAll(runs)
	}
	_ = os.Remove(filepath.Join(s.o.Dir, "latest"))
	s.res.Candidates = append(s.res.Candidates, c)
	s.o.Log.Info("shrink candidate", "n", n, "change", change, "failed", c.Failed, "replayed", c.Replayed, "kept", c.Kept)
	if err := s.write(); err != nil {
		s.o.Log.Warn("shrink summary", "err", err)
	}
	return c.Kept
}

// confirmed takes the plan as found as replayed by the caller
// (Options.Confirmed): the base, with its failing replay's anomaly time
// and faults, listed as a candidate kept.
func (s *shrinker) confirmed(plan runner.Plan) error {
	res, err := reports.ReadResults(s.o.Confirmed)
	if err != nil {
		return fmt.Errorf("%w: the confirmed replay: %w", runner.ErrPlan, err)
	}
	cov, err := reports.ReadCoverage(s.o.Confirmed)
	if err != nil {
		return fmt.Errorf("%w: the confirmed replay: %w", runner.ErrPlan, err)
	}
	at, ok := s.o.Like.Fails(res.Result, res.Interrupted, cov)
	if !ok {
		return fmt.Errorf("%w: the confirmed replay in %s does not fail like the find (%s)", runner.ErrPlan, s.o.Confirmed, s.o.Like)
	}
	s.at, s.faults = time.Duration(at), res.Result.Faults
	key := string(plan.JSON())
	s.tried = map[string]bool{key: true}
	dir := s.o.Confirmed
	if ad, err := filepath.Abs(s.o.Dir); err == nil {
		if ac, err := filepath.Abs(dir); err == nil {
			if rel, err := filepath.Rel(ad, ac); err == nil {
				dir = rel
			}
		}
	}
	s.res.Candidates = append(s.res.Candidates, Candidate{Change: "the plan as found, replayed before the shrink",
		Plan: plan, Replayed: s.o.Need, Failed: s.o.Need, Kept: true, Dir: dir})
	s.res.Report = dir
	return nil
}

// failsAlike says whether a replay fails like the find (Options.Like),
// and when its first anomaly that counts happened.
func (s *shrinker) failsAlike(out *runner.Outcome) (time.Duration, bool) {
	if out == nil {
		return 0, false
	}
	at, ok := s.o.Like.Fails(out.Result, out.Interrupted, out.Coverage)
	return time.Duration(at), ok
}

func (s *shrinker) report(p Progress) {
	if s.o.Progress == nil {
		return
	}
	m := s.res.Minimal
	p.Elapsed, p.Budget = time.Since(s.began), s.o.Budget
	p.Steps, p.TimeLimit, p.Clients, p.Keys = len(m.Faults), m.TimeLimit.String(), m.Workload.Clients, m.Workload.Keys
	s.o.Progress(p)
}

// candidate validates a changed plan; false when the change makes it
// invalid (a step aimed at a client that no longer exists, say).
func valid(p runner.Plan) bool { return p.Validate() == nil }

func (s *shrinker) base() runner.Plan {
	p := s.res.Minimal
	p.Faults = slices.Clone(p.Faults)
	return p
}

func (s *shrinker) ttl() time.Duration { return s.res.Minimal.TTL.Resolve(0) }

// row is the minimal plan as a catalog row: its faults as the failing
// replay describes them, the anomaly kind expected.
func (s *shrinker) row() scenarios.Scenario {
	m := s.res.Minimal
	var what []string
	for _, f := range s.faults {
		what = append(what, fmt.Sprintf("%s at %.2f s", f.Desc, time.Duration(f.Start).Seconds()))
	}
	desc := "no fault"
	if len(what) > 0 {
		desc = strings.Join(what, "; ")
	}
	kind := s.o.Like.Kinds[0]
	name := fmt.Sprintf("found-%s-%s-seed-%d", m.Lock.Variant, kind, m.Seed)
	m.Name = name
	source := s.o.Found
	if source == "" {
		source = fmt.Sprintf("found by tumbler shrink, seed %d", m.Seed)
	}
	return scenarios.Scenario{
		Name:   name,
		What:   fmt.Sprintf("%s on %s with %d clients: %s; a %s follows (shrunk from %d to %d fault steps)", m.Lock.Variant, m.Topology, m.Workload.Clients, desc, kind, len(s.res.Original.Faults), len(m.Faults)),
		Source: source,
		Expect: outcome.Expectation{Verdict: checker.Invalid, Kind: kind, Text: "invalid: " + strings.ReplaceAll(string(kind), "-", " "),
			AfterFaultStart: spans.Fixed(s.o.Like.After)},
		Plan: m,
	}
}

// write records the shrink: shrink.json, the minimal plan and its row.
func (s *shrinker) write() error {
	s.res.Elapsed = time.Since(s.began)
	b, err := json.MarshalIndent(s.res, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{SummaryFile: append(b, '\n'), PlanFile: s.res.Minimal.JSON()}
	if s.res.Row != nil {
		rb, err := json.MarshalIndent(s.res.Row, "", "  ")
		if err != nil {
			return err
		}
		files[RowFile] = append(rb, '\n')
	}
	for name, b := range files {
		path := filepath.Join(s.o.Dir, name)
		if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
			return fmt.Errorf("shrink: %w", err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return fmt.Errorf("shrink: %w", err)
		}
	}
	return nil
}
