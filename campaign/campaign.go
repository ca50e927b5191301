// Package campaign analyses one lock the way a person would spend a week
// on it, unattended: it hunts the lock on every topology it can run on
// (one node, independent masters, replicated with Sentinel, groups, a
// Redis Cluster) under every family of faults (nemesis.Families: the
// network, the data nodes' processes, clocks, persistence, memory and
// refused writes, lost replies with the library's own retries, client
// pauses and starvation, the lock's own steps, failovers), each hunt with
// its share of the budget and its attempts run in parallel as hunt runs
// them. Every find that replays is shrunk and its minimal plan replayed
// again for its rate; finds are folded by what failed (Signature: the
// anomaly, the minimal plan's fault shape and lock steps, the telling
// windows its anomaly followed), using the one rule of what fails like a
// find (outcome.Like) that hunt, replay and shrink share.
//
// Each find is then set in one of three classes (Classify): known — a
// catalog row shows it (the same lock, topology class and anomaly);
// generic — its anomaly followed only the windows any lock without
// fencing or a checked validity fails in (a holder stopped past its
// lease, a grant that reached its holder after its lease ran out:
// coverage.Window.Generic), which says nothing about the lock; or
// candidate — the rest, for a person to read. The verdicts are the
// checkers' own: a campaign decides no anomaly; it only sorts them.
//
// A campaign's directory, Store/campaigns/<name>/<time>/, holds
// campaign.json and index.html, each cell's hunt under cells/, and each
// find's shrink and confirming replays under finds/<id>/. A campaign may
// be one shard of a larger one (Options.Shard: the cells dealt round
// robin); Merge joins the shards. Its exit code is outcome.HuntCode's over
// its cells: 1 when anything was found.
package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tumbler-dev/tumbler/hunt"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
	"github.com/tumbler-dev/tumbler/shrink"
	"github.com/tumbler-dev/tumbler/spans"
)

// Files in a campaign's directory.
const (
	SummaryFile = "campaign.json"
	IndexFile   = "index.html"
	CellsDir    = "cells"
	FindsDir    = "finds"
)

// Defaults.
const (
	// DefaultConfirm is how often a find's minimal plan is replayed for its
	// rate.
	DefaultConfirm = 3
	// HuntShare is the share of a cell's budget its hunt takes; the rest
	// shrinks and confirms its finds (and passes to the next cells when
	// there are none).
	HuntShare = 0.6
	// AttemptTimeLimit is an attempt's time limit unless the template
	// sets one: room for a few scenes (hunt.LikeTimeLimit).
	AttemptTimeLimit = hunt.LikeTimeLimit
)

// Options configure a campaign.
type Options struct {
	// Name of the campaign (its directory under Store/campaigns).
	// Required.
	Name string
	// Template is the lock under test, its workload, clients and TTL; its
	// topology and faults are the campaign's (each cell sets its own).
	Template runner.Plan
	// Topologies are the topologies tried (default Topologies()); a lock
	// that cannot run on one has the cell skipped, with why.
	Topologies []string
	// Families are the fault families' names (default: every one,
	// nemesis.Families).
	Families []string
	// Budget bounds the campaign (the shard). Required, positive.
	Budget time.Duration
	// FirstSeed is the first seed each hunt tries (default 1); Seeds, when
	// positive, bounds each hunt to that many seeds (a cell whose seeds are
	// spent ends early, and its time passes to the cells after it).
	FirstSeed int64
	Seeds     int
	// Parallel is how many attempts a hunt runs at once (default
	// runner.DefaultParallel).
	Parallel int
	// Shard, when set, makes this campaign part i of n of a larger one: it
	// runs the cells whose index is i-1 modulo n.
	Shard *matrix.Shard
	// Replays and Need: a find is replayed R times and shrunk when k fail
	// alike (defaults shrink.DefaultReplays and DefaultNeed); its shrink
	// keeps a candidate on the same k of R.
	Replays, Need int
	// Confirm is how often a find's minimal plan is replayed for its rate
	// (default DefaultConfirm).
	Confirm int
	// Store is the runs' store (default "store").
	Store string
	Log   *slog.Logger
	// Status, when set, is told the campaign's progress.
	Status func(Status)
	// Run runs one plan (default runner.Run).
	Run hunt.RunFunc
	// Catalog is what finds are matched against (default
	// scenarios.All()).
	Catalog []scenarios.Scenario
}

// Status is a snapshot of a campaign in progress.
type Status struct {
	Elapsed, Budget time.Duration
	// Cell is the cell whose hunt runs (1-based, of Cells).
	Cell, Cells int
	Name        string
	Finds       int
	// Hunt is the cell's hunt's own status; Shrinking names the find being
	// shrunk or confirmed instead.
	Hunt      hunt.Status
	Shrinking string
}

// Summary is a campaign's record, campaign.json, written as it goes.
type Summary struct {
	Name string `json:"name"`
	// Dir is the campaign's directory.
	Dir string `json:"dir"`
	// Lock names the lock under test (variants.Options.Label).
	Lock    string        `json:"lock"`
	Started time.Time     `json:"started"`
	Budget  time.Duration `json:"budget_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Template is the lock, workload and TTL every cell's hunt starts from.
	Template runner.Plan `json:"template"`
	// Replays, Need and Confirm are the campaign's settings (Options).
	Replays int `json:"replays"`
	Need    int `json:"need"`
	Confirm int `json:"confirm"`
	// Shard is the part of a larger campaign this is; Shards, for a merged
	// campaign (Merge), the shards' directories relative to Dir.
	Shard  *matrix.Shard `json:"shard,omitempty"`
	Shards []string      `json:"shards,omitempty"`
	// Cells are every topology × family of the campaign, in order; those
	// of other shards are listed as not this shard's.
	Cells []Cell `json:"cells"`
	// Finds are the distinct finds, in the order they were made.
	Finds []Find `json:"finds"`
	// Stopped says why the campaign ended.
	Stopped     string `json:"stopped"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// ExitCode is outcome.HuntCode's over the cells.
	ExitCode int `json:"exit_code"`
}

// Write writes campaign.json and index.html into the campaign's
// directory, replacing them atomically.
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

// Load reads a campaign's summary from its directory (or campaign.json).
func Load(dir string) (*Summary, error) {
	path := dir
	if filepath.Base(dir) != SummaryFile {
		path = filepath.Join(dir, SummaryFile)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, outcome.Input(fmt.Errorf("%s: no campaign here (no %s)", dir, SummaryFile))
	}
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, outcome.Input(fmt.Errorf("%s: %w", path, err))
	}
	s.Dir = filepath.Dir(path)
	if real, err := filepath.EvalSymlinks(s.Dir); err == nil {
		s.Dir = real
	}
	return &s, nil
}

// Counts are a summary's finds by class.
func (s *Summary) Counts() (candidates, generic, known int) {
	for _, f := range s.Finds {
		switch f.Class {
		case Candidate:
			candidates++
		case Generic:
			generic++
		case Known:
			known++
		}
	}
	return
}

func (o Options) withDefaults() Options {
	if o.FirstSeed == 0 {
		o.FirstSeed = 1
	}
	if o.Parallel == 0 {
		o.Parallel = runner.DefaultParallel
	}
	if o.Replays == 0 {
		o.Replays = shrink.DefaultReplays
	}
	if o.Need == 0 {
		o.Need = min(shrink.DefaultNeed, o.Replays)
	}
	if o.Confirm == 0 {
		o.Confirm = DefaultConfirm
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
	if o.Catalog == nil {
		o.Catalog = scenarios.All()
	}
	if len(o.Topologies) == 0 {
		o.Topologies = Topologies()
	}
	return o
}

// validate refuses bad options, each error wrapping outcome.ErrInput.
func (o Options) validate() error {
	switch {
	case o.Name == "":
		return fmt.Errorf("%w: the campaign has no name", runner.ErrPlan)
	case o.Budget <= 0:
		return fmt.Errorf("%w: budget %v: want a positive duration", runner.ErrPlan, o.Budget)
	case o.Seeds < 0:
		return fmt.Errorf("%w: seeds %d is negative", runner.ErrPlan, o.Seeds)
	case o.Parallel < 0:
		return fmt.Errorf("%w: parallel %d: want at least 1 attempt at once", runner.ErrPlan, o.Parallel)
	case o.Replays < 0 || o.Confirm < 0:
		return fmt.Errorf("%w: replays %d, confirm %d: want positive counts", runner.ErrPlan, o.Replays, o.Confirm)
	case o.Replays > 0 && (o.Need < 1 || o.Need > o.Replays):
		return fmt.Errorf("%w: need %d: want 1 to replays (%d)", runner.ErrPlan, o.Need, o.Replays)
	case len(o.Template.Faults) > 0:
		return fmt.Errorf("%w: the campaign draws its own faults; its template has %d", runner.ErrPlan, len(o.Template.Faults))
	}
	if o.Shard != nil {
		if err := o.Shard.Validate(); err != nil {
			return fmt.Errorf("%w: %w", runner.ErrPlan, err)
		}
	}
	for _, f := range o.Families {
		if _, ok := familyNamed(f); !ok {
			return fmt.Errorf("%w: fault family %q unknown (valid: %s)", runner.ErrPlan, f, familyNames())
		}
	}
	return nil
}

// Run runs the campaign. The summary is returned (and written) also when
// the campaign ends early; the error is for bad input (wrapping
// outcome.ErrInput) or a campaign that could not record itself.
func Run(ctx context.Context, o Options) (*Summary, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	tmpl, err := o.Template.Normalized()
	if err != nil {
		return nil, err
	}
	if o.Template.TimeLimit.IsZero() {
		tmpl.TimeLimit = spans.Fixed(AttemptTimeLimit)
	}
	cells, err := planCells(tmpl, o.Topologies, o.Families, o.Shard)
	if err != nil {
		return nil, err
	}
	c := &campaigner{o: o, began: time.Now()}
	dir := filepath.Join(o.Store, "campaigns", o.Name, c.began.Format("20060102T150405.000"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("campaign directory: %w", err)
	}
	latest := filepath.Join(o.Store, "campaigns", "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(filepath.Join(o.Name, filepath.Base(dir)), latest)
	tmpl.Name, tmpl.Seed = o.Name, 0
	c.s = &Summary{Name: o.Name, Dir: dir, Lock: tmpl.Lock.Options.Label(), Started: c.began, Budget: o.Budget,
		Template: tmpl, Replays: o.Replays, Need: o.Need, Confirm: o.Confirm, Shard: o.Shard, Cells: cells, Finds: []Find{}}
	o.Log.Info("campaign", "dir", dir, "lock", c.s.Lock, "cells", len(cells), "budget", o.Budget, "shard", o.Shard)
	if err := c.s.Write(); err != nil {
		return nil, fmt.Errorf("campaign summary: %w", err)
	}
	err = c.loop(ctx)
	c.s.Elapsed = time.Since(c.began)
	c.s.ExitCode = exitCode(c.s)
	if werr := c.s.Write(); werr != nil && err == nil {
		err = fmt.Errorf("campaign summary: %w", werr)
	}
	return c.s, err
}

// exitCode is outcome.HuntCode over a campaign's cells: anything found,
// else every hunt that ran failed in the harness, else interrupted or
// unsure.
func exitCode(s *Summary) int {
	found, ran, broke, unsure := len(s.Finds) > 0, 0, 0, s.Interrupted
	for _, c := range s.Cells {
		if c.Hunt == "" {
			continue
		}
		ran++
		found = found || c.Found > 0
		switch c.ExitCode {
		case outcome.ExitHarness:
			broke++
		case outcome.ExitUnknown:
			unsure = true
		}
	}
	return outcome.HuntCode(found, ran > 0 && broke == ran, unsure)
}

// campaigner is a campaign in progress.
type campaigner struct {
	o     Options
	began time.Time
	s     *Summary
}

func (c *campaigner) left() time.Duration { return c.o.Budget - time.Since(c.began) }

// loop runs the shard's cells one after another, each with an even share
// of the budget left.
func (c *campaigner) loop(ctx context.Context) error {
	var todo []int
	for i, cell := range c.s.Cells {
		if cell.runnable() {
			todo = append(todo, i)
		}
	}
	for n, i := range todo {
		if ctx.Err() != nil {
			c.s.Stopped, c.s.Interrupted = "interrupted", true
			return nil
		}
		// A cell gets an even share of what is left, and at least enough
		// for its hunt to make one run: a budget too small for every cell
		// hunts the first cells and leaves the rest unhunted, said so.
		share := c.left() / time.Duration(len(todo)-n)
		limit := c.s.Template.TimeLimit.Resolve(c.s.Template.TTL.Resolve(0))
		least := time.Duration(float64(limit) / HuntShare)
		if c.left() < least {
			c.s.Stopped = fmt.Sprintf("budget spent: %d of %d cells hunted", n, len(todo))
			return nil
		}
		if share < least {
			if n == 0 {
				c.o.Log.Warn("campaign: the budget gives each cell less than one run; the first cells get one run's time each and the rest go unhunted",
					"budget", c.o.Budget, "cells", len(todo), "per cell at least", least)
			}
			share = least
		}
		if err := c.cell(ctx, i, n+1, len(todo), share); err != nil {
			return err
		}
		if err := c.s.Write(); err != nil {
			return fmt.Errorf("campaign summary: %w", err)
		}
	}
	if ctx.Err() != nil {
		c.s.Stopped, c.s.Interrupted = "interrupted", true
	} else {
		c.s.Stopped = fmt.Sprintf("every cell hunted (%d)", len(todo))
	}
	return nil
}

// status passes progress on.
func (c *campaigner) status(n, of int, name string, h hunt.Status, shrinking string) {
	if c.o.Status == nil {
		return
	}
	c.o.Status(Status{Elapsed: time.Since(c.began), Budget: c.o.Budget, Cell: n, Cells: of, Name: name,
		Finds: len(c.s.Finds), Hunt: h, Shrinking: shrinking})
}
