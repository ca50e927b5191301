package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/hunt"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/shrink"
)

// cell hunts cell i (the n-th of the shard's of cells) within share: a
// hunt that goes on after a find for HuntShare of it, then the shrink and
// confirmation of each find that replayed and fails unlike the ones
// before it.
func (c *campaigner) cell(ctx context.Context, i, n, of int, share time.Duration) error {
	cell := &c.s.Cells[i]
	began := time.Now()
	cell.Budget = share
	defer func() { cell.Elapsed = time.Since(began) }()
	t, err := cluster.ParseTopology(cell.Topology)
	if err != nil {
		return err
	}
	tmpl := c.s.Template
	tmpl.Topology = t
	huntBudget := time.Duration(float64(share) * HuntShare)
	ho := hunt.Options{
		Name: cell.slug(), Budget: huntBudget, FirstSeed: c.o.FirstSeed, MaxSeeds: c.o.Seeds, Parallel: c.o.Parallel,
		KeepGoing: true, EachWay: true, Replays: c.o.Replays, Need: c.o.Need, Store: filepath.Join(c.s.Dir, CellsDir, cell.slug()),
		Log: c.o.Log, Run: c.o.Run,
		Status: func(h hunt.Status) { c.status(n, of, cell.Name(), h, "") },
	}
	c.o.Log.Info("campaign cell", "cell", cell.Name(), "kinds", cell.Kinds, "budget", huntBudget)
	hs, err := hunt.Run(ctx, tmpl, runner.Draw{Kinds: cell.Kinds}, ho)
	if hs == nil {
		// The engine refused the cell's template or draw: a cell the
		// planning let through that cannot run says so and the campaign
		// goes on.
		cell.Error, cell.ExitCode = err.Error(), outcome.ErrorCode(err)
		c.o.Log.Warn("campaign cell could not hunt", "cell", cell.Name(), "err", err)
		return nil
	}
	if err != nil {
		c.o.Log.Warn("campaign cell's hunt", "cell", cell.Name(), "err", err)
		cell.Error = err.Error()
	}
	cell.Hunt = rel(c.s.Dir, hs.Dir)
	cell.Tried, cell.FaultsApplied, cell.Stopped, cell.ExitCode = hs.Tried, hs.FaultsApplied, hs.Stopped, hs.ExitCode
	cell.Windows = windowsOf(hs.Coverage)
	var finds []hunt.Attempt
	for _, a := range hs.Attempts {
		if !a.Found {
			continue
		}
		cell.Found++
		if a.Replays.Reproduced() && a.Like != nil {
			cell.Replayed++
			finds = append(finds, a)
		}
	}
	if hs.Interrupted {
		c.s.Stopped, c.s.Interrupted = "interrupted", true
		return nil
	}
	// One find per way of failing is shrunk (the hunt replayed one per
	// way); the others fold into it.
	seen := map[string]bool{}
	var distinct []hunt.Attempt
	for _, a := range finds {
		if !seen[a.Way()] {
			seen[a.Way()] = true
			distinct = append(distinct, a)
		}
	}
	for k, a := range distinct {
		if ctx.Err() != nil {
			c.s.Stopped, c.s.Interrupted = "interrupted", true
			return nil
		}
		left := share - time.Since(began)
		budget := left / time.Duration(len(distinct)-k)
		if err := c.find(ctx, cell, hs, a, budget, n, of); err != nil {
			return err
		}
		if err := c.s.Write(); err != nil {
			return fmt.Errorf("campaign summary: %w", err)
		}
	}
	return nil
}

// find shrinks one find of a cell's hunt within budget (a fifth of it
// kept to confirm), replays its minimal plan Confirm times, and records it
// — folded into an earlier find with its signature, or as a new one.
func (c *campaigner) find(ctx context.Context, cell *Cell, hs *hunt.Summary, a hunt.Attempt, budget time.Duration, n, of int) error {
	id := fmt.Sprintf("f%d", len(c.s.Finds)+1)
	dir := filepath.Join(c.s.Dir, FindsDir, id)
	plan, err := runner.LoadPlan(filepath.Join(hs.Dir, a.Plan))
	if err != nil {
		return fmt.Errorf("campaign: the find's plan: %w", err)
	}
	f := Find{ID: id, Kind: a.Like.Kinds[0], Like: *a.Like, Topology: cell.Topology, TopClass: cell.Class,
		Family: cell.Family, Cells: []string{cell.Name()}, Seed: a.Seed, Hunt: cell.Hunt,
		Plan: rel(c.s.Dir, filepath.Join(hs.Dir, a.Plan)), FoundSteps: len(plan.Faults)}
	so := shrink.Options{Replays: c.o.Replays, Need: c.o.Need, Budget: budget * 4 / 5, Like: *a.Like,
		Dir: filepath.Join(dir, "shrink"), Log: c.o.Log, Run: shrink.RunFunc(c.o.Run),
		Found: fmt.Sprintf("found by tumbler campaign %s, cell %s, seed %d", c.s.Name, cell.Name(), a.Seed),
		Progress: func(p shrink.Progress) {
			c.status(n, of, cell.Name(), hunt.Status{}, fmt.Sprintf("shrinking %s: candidate %d, %d steps", id, p.Candidate, p.Steps))
		},
	}
	if len(a.Replays.Dirs) > 0 {
		so.Confirmed = filepath.Join(hs.Dir, a.Replays.Dirs[0])
	}
	minimal := plan
	var sh *shrink.Result
	if so.Budget > 0 {
		sh, err = shrink.Shrink(ctx, plan, so)
		if err != nil && !errors.Is(err, ctx.Err()) {
			c.o.Log.Warn("campaign: shrinking a find", "find", id, "err", err)
		}
	} else {
		// The cell's hunt and replays spent its share: the find is
		// confirmed as found, not shrunk.
		c.o.Log.Warn("campaign: no budget left to shrink a find; it is confirmed as found", "find", id, "cell", cell.Name())
	}
	if sh != nil {
		f.Shrink = rel(c.s.Dir, sh.Dir)
		if sh.Reproduced {
			f.Shrunk, minimal = true, sh.Minimal
		}
		if sh.Row != nil {
			f.RowFile = rel(c.s.Dir, filepath.Join(sh.Dir, shrink.RowFile))
		}
	}
	if ctx.Err() != nil {
		c.s.Stopped, c.s.Interrupted = "interrupted", true
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f.Minimal = filepath.Join(FindsDir, id, "minimal.json")
	if err := os.WriteFile(filepath.Join(c.s.Dir, f.Minimal), minimal.JSON(), 0o644); err != nil {
		return err
	}
	f.Steps, f.Faults = stepsText(minimal), faultKinds(minimal)
	c.confirm(ctx, &f, minimal, filepath.Join(dir, "confirm"), n, of, cell)
	f.Signature = Signature(f.Kind, f.Like, minimal)
	for i := range c.s.Finds {
		if g := &c.s.Finds[i]; g.Signature == f.Signature {
			g.Folded++
			if !slices.Contains(g.Cells, cell.Name()) {
				g.Cells = append(g.Cells, cell.Name())
			}
			if !slices.Contains(cell.Finds, g.ID) {
				cell.Finds = append(cell.Finds, g.ID)
			}
			c.o.Log.Info("campaign find folds into an earlier one", "find", id, "into", g.ID, "signature", f.Signature)
			return nil
		}
	}
	Classify(&f, c.s.Lock, c.o.Catalog)
	c.s.Finds = append(c.s.Finds, f)
	cell.Finds = append(cell.Finds, f.ID)
	c.o.Log.Info("campaign find", "find", id, "class", f.Class, "signature", f.Signature, "confirmed", f.Confirmed)
	return nil
}

// confirm replays a find's minimal plan Confirm times into dir and
// records how often it failed alike, the windows the first failing
// replay's anomaly followed, and that replay's report.
func (c *campaigner) confirm(ctx context.Context, f *Find, p runner.Plan, dir string, n, of int, cell *Cell) {
	for r := 0; r < c.o.Confirm && ctx.Err() == nil; r++ {
		c.status(n, of, cell.Name(), hunt.Status{}, fmt.Sprintf("confirming %s: replay %d of %d", f.ID, r+1, c.o.Confirm))
		p.Name = "confirm"
		out, err := c.o.Run(ctx, p, runner.Options{Store: dir, Log: c.o.Log})
		if ctx.Err() != nil {
			return // an interrupted replay says nothing
		}
		f.Confirmed.Replayed++
		if err != nil || out == nil {
			continue
		}
		if _, ok := f.Like.Fails(out.Result, out.Interrupted, out.Coverage); !ok {
			continue
		}
		f.Confirmed.Alike++
		if f.Report == "" {
			f.Report = rel(c.s.Dir, out.Dir)
			f.Followed = out.Coverage.Followed(*f.Like.First(out.Result, out.Coverage))
		}
	}
	if f.Report == "" {
		// No confirming replay failed alike: the windows are those of the
		// shrink's failing replay, if it kept one.
		f.Followed = c.followedIn(f)
	}
}

// followedIn reads the windows the anomaly of a find's shrink's failing
// replay followed (nil when there is none).
func (c *campaigner) followedIn(f *Find) []string {
	if f.Shrink == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.s.Dir, f.Shrink, shrink.SummaryFile))
	if err != nil {
		return nil
	}
	var sr shrink.Result
	if json.Unmarshal(b, &sr) != nil || sr.Report == "" {
		return nil
	}
	report := filepath.Join(c.s.Dir, f.Shrink, sr.Report)
	res, err := reports.ReadResults(report)
	if err != nil {
		return nil
	}
	cov, _ := reports.ReadCoverage(report)
	if a := f.Like.First(res.Result, cov); a != nil {
		return cov.Followed(*a)
	}
	return nil
}

// rel is path relative to base, or path when it cannot be.
func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return r
	}
	return path
}
