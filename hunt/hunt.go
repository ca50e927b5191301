// Package hunt looks for failures nobody scripted: it runs one plan
// template with random compound fault schedules, one seed after another
// (runner.Plan.WithDrawnFaults), until a budget is spent or an anomaly is
// found, and keeps a summary of every attempt (hunt.json and index.html in
// the hunt's directory). What counts as a find, and what fails like one,
// is outcome.Like; a hunt like a catalog row takes the row's configuration
// (LikeRow), and ShrinkFind hands the find to the shrink package, held to
// the find's own Like.
//
// A hunt's directory is Store/hunts/<name>/<time>/. Each attempt runs as
// an ordinary run under it (seed-<N>/<time>/). Every attempt's plan is
// kept (plans/seed-<N>.json: it replays the attempt exactly); the report
// directory of a valid attempt is removed unless Options.KeepAll, since a
// long hunt makes hundreds; those of invalid, unknown and failed attempts
// are kept.
//
// Attempts may run several at once (Options.Parallel), each an ordinary
// run with its own cluster and ports; the seeds are handed out in order
// and hunt.json lists the attempts in seed order, so a parallel hunt tries
// the plans a serial one draws. A hunt may be one shard of a larger one
// (Options.Shard: seeds dealt round robin); Merge joins the shards'
// summaries into one. With Options.Replays, a find is replayed before it
// ends the hunt: one that fails alike in fewer than Need of Replays
// replays is kept and listed, and the hunt goes on for one that does.
//
// A hunt reads the run engine's judgement of each attempt and decides
// nothing about a run; its exit code is outcome.HuntCode's.
package hunt

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// Files in a hunt's directory.
const (
	SummaryFile = "hunt.json"
	IndexFile   = "index.html"
	PlansDir    = "plans"
	// ReplaysDir holds the replays of finds (Options.Replays).
	ReplaysDir = "replays"
)

// RunFunc runs one plan: runner.Run, or a fake in tests.
type RunFunc func(context.Context, runner.Plan, runner.Options) (*runner.Outcome, error)

// Drawer draws one attempt's plan: the template with a fault schedule for
// seed. finished are the attempts that had finished when it was called, in
// seed order; in a parallel hunt those still running are not among them,
// so a drawer guided by what the hunt has seen depends only on attempts
// that ended. The default draws from the hunt's runner.Draw
// (runner.Plan.WithDrawnFaults) and reads no attempt. An error is the
// generator's, not the user's: the hunt stops with it (the first seed's
// draw, made before anything runs, is bad input).
type Drawer func(seed int64, finished []Attempt) (runner.Plan, error)

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
	// MaxSeeds, when positive, bounds the seeds: FirstSeed to
	// FirstSeed+MaxSeeds-1 (a shard tries those it owns).
	MaxSeeds int
	// Parallel is how many attempts run at once (default
	// runner.DefaultParallel), each on its own cluster and ports.
	Parallel int
	// Shard, when set, makes this hunt part i of n of one larger hunt: it
	// tries the seeds FirstSeed+i-1, FirstSeed+i-1+n, … (the plans the
	// larger hunt draws for them); Merge joins the shards.
	Shard *matrix.Shard
	// Like is what counts as a find (outcome.Like): anomalies of its
	// kinds (any, when empty), as late after a fault's start as its After
	// asks (a hunt like a row whose expectation has after_fault_start). An
	// invalid attempt with only other anomalies is kept and listed, but
	// the hunt goes on. A find is then replayed and shrunk against its own
	// Like (Attempt.Like).
	Like outcome.Like
	// Replays (R) and Need (k), when Replays is positive: a find is
	// replayed up to R times and ends the hunt only when k replays fail
	// alike (Attempt.Like); one that does not is listed and the hunt goes on for one
	// that does (Summary.Replayed). Zero: every find counts at once.
	Replays, Need int
	// KeepGoing: go on after a find until the budget is spent.
	KeepGoing bool
	// EachWay: replay every find whose way of failing (Attempt.Way) no
	// find on a lower seed that replayed had, not only the first find (a
	// campaign, which shrinks one find per way).
	EachWay bool
	// KeepAll: keep the report directories of valid attempts too.
	KeepAll bool
	// Store is the runs' store (default "store").
	Store string
	Log   *slog.Logger
	// Status, when set, is called a few times a second (never by two
	// attempts at once).
	Status func(Status)
	// Run runs an attempt (default runner.Run).
	Run RunFunc
	// Drawer draws each attempt's plan (default: from the hunt's draw;
	// with Guided, toward the windows reached least).
	Drawer Drawer
	// UntilCovered, when positive, ends the hunt once every dangerous
	// window that counts for it was reached this many times (coverage.go).
	UntilCovered int
	// Guided: draw each attempt's schedule toward the dangerous windows
	// the attempts finished so far reached least (guide.go).
	Guided bool
}

// Status is a snapshot of a hunt in progress.
type Status struct {
	Elapsed, Budget time.Duration
	// Seed is the attempt whose run Run describes; Running how many
	// attempts run now.
	Seed          int64
	Running       int
	Tried, Found  int
	FaultsApplied int
	// Run is that attempt's own status.
	Run runner.Status
}

// Attempt is one seed's run.
type Attempt struct {
	Seed     int64           `json:"seed"`
	Verdict  checker.Verdict `json:"verdict"`
	ExitCode int             `json:"exit_code"`
	// Kinds are the anomaly kinds found, in order of first appearance.
	Kinds []checker.Kind `json:"kinds,omitempty"`
	// Found: the attempt found an anomaly that counts (Options.Like).
	Found bool `json:"found,omitempty"`
	// Like, for a find, is what fails like it (outcome.Like.Find): the
	// rule its replays, and a shrink of it, are held to. Cause are the
	// kinds of the faults its first anomaly that counts names.
	Like  *outcome.Like `json:"like,omitempty"`
	Cause []string      `json:"cause,omitempty"`
	// Faults planned, and applied (not skipped by the nemesis).
	Faults        int `json:"faults"`
	FaultsApplied int `json:"faults_applied"`
	// Start is when the attempt began, from the start of the hunt;
	// Elapsed how long it took; FirstAnomaly when (from the start of its
	// workload) its first anomaly that counts happened, -1 if none.
	Start        time.Duration `json:"start_ns"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	FirstAnomaly time.Duration `json:"first_anomaly_ns"`
	// Plan is the attempt's plan file (relative to the hunt's directory);
	// Dir its report directory, "" when it was removed (a valid attempt).
	Plan string `json:"plan"`
	Dir  string `json:"dir,omitempty"`
	// Replays, for a find replayed (Options.Replays), says how often it
	// failed alike.
	Replays *Replays `json:"replays,omitempty"`
	// Error is the run's error, if it failed.
	Error string `json:"error,omitempty"`
	// Interrupted: the hunt was interrupted while the attempt ran; it
	// counts among the seeds tried, with the faults it applied.
	Interrupted bool `json:"interrupted,omitempty"`
	// Abandoned: a parallel hunt cut the attempt short because a find on
	// a lower seed ended the hunt (a serial hunt would not have run it).
	// It is kept, plan and run, and counts among the seeds tried; what it
	// found before it was cut short is listed but is never the hunt's
	// first find, which has the lowest seed.
	Abandoned bool `json:"abandoned,omitempty"`
	// Reached counts the dangerous windows the attempt reached, by name
	// (its coverage.json has when).
	Reached map[string]int `json:"reached,omitempty"`
	// cov is the attempt's coverage, added to the hunt's as it is recorded.
	cov *coverage.Run
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
	Template runner.Plan `json:"template"`
	Draw     runner.Draw `json:"draw"`
	// Want and After are what counted as a find (Options.Like: its kinds
	// and its After; Like).
	Want  []checker.Kind `json:"want,omitempty"`
	After time.Duration  `json:"after_fault_start_ns,omitempty"`
	// FirstSeed and MaxSeeds are the hunt's seeds (Options); Shard the
	// part of a larger hunt this is, Parallel its attempts at once.
	FirstSeed int64         `json:"first_seed"`
	MaxSeeds  int           `json:"max_seeds,omitempty"`
	Shard     *matrix.Shard `json:"shard,omitempty"`
	Parallel  int           `json:"parallel,omitempty"`
	// Replays and Need: a find had to fail alike in Need of Replays
	// replays to end the hunt (Options.Replays; 0: not replayed).
	Replays int `json:"replays,omitempty"`
	Need    int `json:"need,omitempty"`
	// Attempts in seed order.
	Attempts []Attempt `json:"attempts"`
	// Tried is the number of attempts (interrupted ones included);
	// FaultsApplied the faults they applied in all.
	Tried         int `json:"tried"`
	FaultsApplied int `json:"faults_applied"`
	// First is the index in Attempts of the first find (the lowest seed),
	// -1 if none; TimeToFirst the time from the start of the hunt to that
	// anomaly.
	First       int           `json:"first"`
	TimeToFirst time.Duration `json:"time_to_first_ns"`
	// Replayed is the index of the first find that failed alike in Need of
	// Replays replays, -1 if none (or finds were not replayed).
	Replayed int `json:"replayed"`
	// Stopped says why the hunt ended.
	Stopped     string `json:"stopped"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// ExitCode: 1 when an anomaly of a wanted kind was found, 0 when the
	// budget passed without one, 2 when interrupted first (or attempts
	// were unknown), 255 when the harness kept failing.
	ExitCode int `json:"exit_code"`
	// Shrink, when the found plan was shrunk, is the shrink's directory.
	Shrink string `json:"shrink,omitempty"`
	// Shards, for a merged hunt (Merge), are the shards' directories,
	// relative to Dir.
	Shards []string `json:"shards,omitempty"`
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

// ToShrink returns the find to shrink: the first that replayed (when
// finds were replayed), else the first find.
func (s *Summary) ToShrink() (Attempt, bool) {
	if s.Replays == 0 {
		return s.Found()
	}
	if s.Replayed < 0 {
		return Attempt{}, false
	}
	return s.Attempts[s.Replayed], true
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

// settle recomputes what the attempts imply: the seeds tried, the faults
// applied, the first find and the first that replayed.
func (s *Summary) settle() {
	s.Tried, s.FaultsApplied, s.First, s.TimeToFirst, s.Replayed = len(s.Attempts), 0, -1, 0, -1
	for i, a := range s.Attempts {
		s.FaultsApplied += a.FaultsApplied
		if !a.Found {
			continue
		}
		if s.First < 0 {
			s.First, s.TimeToFirst = i, a.Start+a.FirstAnomaly
		}
		if s.Replayed < 0 && a.Replays.Reproduced() {
			s.Replayed = i
		}
	}
}

// Run hunts: template (normalized first, runner.Plan.Normalize) with
// schedules drawn from draw (or by o.Drawer), seed after seed. The summary
// is returned (and written) also when the hunt ends early; the error is
// for bad input (wrapping outcome.ErrInput) or a hunt that could not
// record itself.
func Run(ctx context.Context, template runner.Plan, draw runner.Draw, o Options) (*Summary, error) {
	if err := o.validate(draw); err != nil {
		return nil, err
	}
	draw = draw.Normalize()
	o = o.withDefaults()
	template = template.Normalize()
	if o.Guided && o.Drawer == nil {
		o.Drawer = guided(template, draw)
	}
	if o.Drawer == nil {
		o.Drawer = func(seed int64, _ []Attempt) (runner.Plan, error) { return template.WithDrawnFaults(seed, draw) }
	}
	h := &hunter{o: o, running: map[int64]context.CancelFunc{}, abandoned: map[int64]bool{}}
	// The first plan is drawn before anything is written: a template or a
	// mix the run cannot take is bad input, refused up front.
	first, err := o.Drawer(h.seed(0), nil)
	if err != nil {
		return nil, err
	}
	h.began = time.Now()
	dir := filepath.Join(o.Store, "hunts", o.Name, h.began.Format("20060102T150405.000"))
	if err := os.MkdirAll(filepath.Join(dir, PlansDir), 0o755); err != nil {
		return nil, fmt.Errorf("hunt directory: %w", err)
	}
	latest := filepath.Join(o.Store, "hunts", "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(filepath.Join(o.Name, filepath.Base(dir)), latest)

	o.Log.Info("hunt", "dir", dir, "lock", template.Lock.Variant, "topology", template.Topology.String(),
		"kinds", draw.Kinds, "concurrency", draw.Concurrency, "budget", o.Budget, "counts", o.Like,
		"parallel", o.Parallel, "shard", o.Shard)
	h.s = &Summary{
		Name: o.Name, Dir: dir, Started: h.began, Budget: o.Budget, Template: template, Draw: draw,
		Want: o.Like.Kinds, After: o.Like.After, FirstSeed: o.FirstSeed, MaxSeeds: o.MaxSeeds, Shard: o.Shard,
		Parallel: o.Parallel, Replays: o.Replays, Need: o.Need, First: -1, Replayed: -1, Attempts: []Attempt{},
		Coverage: newTally(template, draw), Guided: o.Guided,
	}
	h.s.Template.Faults, h.s.Template.Seed = nil, 0
	h.limit = template.TimeLimit.Resolve(template.TTL.Resolve(0))
	err = h.loop(ctx, first)
	h.s.Elapsed = time.Since(h.began)
	h.s.ExitCode = h.exitCode()
	if werr := h.s.Write(); werr != nil && err == nil {
		err = fmt.Errorf("hunt summary: %w", werr)
	}
	return h.s, err
}

// validate refuses bad options, each error wrapping outcome.ErrInput.
func (o Options) validate(draw runner.Draw) error {
	switch {
	case o.Budget <= 0:
		return fmt.Errorf("%w: budget %v: want a positive duration", runner.ErrPlan, o.Budget)
	case o.Name == "":
		return fmt.Errorf("%w: the hunt has no name", runner.ErrPlan)
	case len(draw.Kinds) == 0 && o.Drawer == nil:
		return fmt.Errorf("%w: no fault kinds to draw schedules from", runner.ErrPlan)
	case o.Parallel < 0:
		return fmt.Errorf("%w: parallel %d: want at least 1 attempt at once", runner.ErrPlan, o.Parallel)
	case o.MaxSeeds < 0:
		return fmt.Errorf("%w: seeds %d is negative", runner.ErrPlan, o.MaxSeeds)
	case o.Replays < 0:
		return fmt.Errorf("%w: replays %d is negative", runner.ErrPlan, o.Replays)
	case o.Replays > 0 && (o.Need < 1 || o.Need > o.Replays):
		return fmt.Errorf("%w: need %d: want 1 to replays (%d)", runner.ErrPlan, o.Need, o.Replays)
	case o.UntilCovered < 0:
		return fmt.Errorf("%w: until covered %d: want a count of reaches, at least 1 (0: not asked)", runner.ErrPlan, o.UntilCovered)
	}
	if o.Shard != nil {
		if err := o.Shard.Validate(); err != nil {
			return fmt.Errorf("%w: %w", runner.ErrPlan, err)
		}
	}
	if err := GuidedShard(o.Shard, o.Guided); err != nil {
		return fmt.Errorf("%w: guided, shard %s: %w", runner.ErrPlan, o.Shard, err)
	}
	if len(o.Like.Windows) > 0 {
		return fmt.Errorf("%w: a hunt counts finds by kind and time; the windows a find followed are its own (Attempt.Like)", runner.ErrPlan)
	}
	if err := o.Like.Validate(); err != nil {
		return err
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.FirstSeed == 0 {
		o.FirstSeed = 1
	}
	if o.Parallel == 0 {
		o.Parallel = runner.DefaultParallel
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
	return o
}

// Way is how a find failed, as finds are told apart before they are
// shrunk: its anomaly kind, the telling windows its anomaly followed and
// the kinds of the faults that anomaly names ("" for an attempt that found
// nothing).
func (a Attempt) Way() string {
	if a.Like == nil || len(a.Like.Kinds) == 0 {
		return ""
	}
	w := slices.Clone(a.Like.Windows)
	slices.Sort(w)
	return fmt.Sprintf("%s | %s | %s", a.Like.Kinds[0], strings.Join(w, "+"), strings.Join(a.Cause, "+"))
}

// Like is what counted as a find: Want and After as an outcome.Like.
func (s *Summary) Like() outcome.Like { return outcome.Like{Kinds: s.Want, After: s.After} }

// FaultKindsOf lists the distinct fault kinds of a plan's schedule, in
// order: what "hunt --like ROW" draws from.
func FaultKindsOf(p runner.Plan) []nemesis.Kind {
	var out []nemesis.Kind
	for _, s := range p.Faults {
		if !slices.Contains(out, s.Fault) {
			out = append(out, s.Fault)
		}
	}
	return out
}
