package hunt

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/shrink"
	"github.com/tumbler-dev/tumbler/spans"
)

// LikeTimeLimit is the time limit of an attempt of a hunt like a catalog
// row (LikeRow), unless one is given: a row's own time limit fits its one
// schedule, a random one needs room for a few scenes.
const LikeTimeLimit = 20 * time.Second

// Template is what a hunt draws its attempts from: the plan with no
// faults, the draw of their schedules, its default name and what counts as
// a find.
type Template struct {
	Plan runner.Plan
	Draw runner.Draw
	Name string
	Like outcome.Like
}

// LikeRow is the template of a hunt like the catalog row named row: the
// row's configuration (lock, topology, clients, TTL, workload) with no
// faults, moved onto t; the time limit timeLimit, or LikeTimeLimit when
// it is zero; schedules drawn from draw, whose kinds default to the ones
// the row's schedule uses (not its schedule); its name "like-ROW"; and as
// a find what the row expects (its anomaly kind, as late after a fault's
// start as it asks: Expectation.Like), any anomaly for a row that expects
// none. Errors wrap outcome.ErrInput.
func LikeRow(row string, draw runner.Draw, timeLimit spans.Span, t runner.Target) (Template, error) {
	r, err := scenarios.Get(row)
	if err != nil {
		return Template{}, fmt.Errorf("%w: --like: %w", runner.ErrPlan, err)
	}
	p := r.Plan
	if len(draw.Kinds) == 0 {
		if draw.Kinds = FaultKindsOf(p); len(draw.Kinds) == 0 {
			return Template{}, fmt.Errorf("%w: --like: row %s has no faults to take the kinds from; give --nemesis", runner.ErrPlan, row)
		}
	}
	p.Faults = nil
	p.TimeLimit = spans.Fixed(LikeTimeLimit)
	if !timeLimit.IsZero() {
		p.TimeLimit = timeLimit
	}
	if p, err = t.Apply(p); err != nil {
		return Template{}, err
	}
	return Template{Plan: p, Draw: draw, Name: "like-" + row, Like: r.Expect.Like()}, nil
}

// ShrinkFind shrinks the find a hunt should shrink (Summary.ToShrink),
// held to the find's own Like, into the hunt's shrink/ directory, and
// records that directory in the summary. so gives the replays, the need
// and the budget (its Like, Dir, Found and Confirmed are set here). No
// find to shrink returns nil and no error.
func ShrinkFind(ctx context.Context, s *Summary, so shrink.Options) (*shrink.Result, error) {
	found, ok := s.ToShrink()
	if !ok {
		return nil, nil
	}
	plan, err := runner.LoadPlan(filepath.Join(s.Dir, found.Plan))
	if err != nil {
		return nil, fmt.Errorf("shrink: the find's plan: %w", err)
	}
	if found.Like == nil {
		return nil, fmt.Errorf("shrink: seed %d's find records no rule of what fails like it (a hunt.json written before finds did)", found.Seed)
	}
	so.Like = *found.Like
	so.Dir = filepath.Join(s.Dir, "shrink")
	if found.Replays != nil && len(found.Replays.Dirs) > 0 {
		// The hunt replayed it k of R times already.
		so.Confirmed = filepath.Join(s.Dir, found.Replays.Dirs[0])
	}
	so.Found = fmt.Sprintf("found by tumbler hunt, seed %d", found.Seed)
	res, err := shrink.Shrink(ctx, plan, so)
	if res != nil {
		s.Shrink = "shrink"
		if werr := s.Write(); werr != nil && err == nil {
			err = fmt.Errorf("hunt summary: %w", werr)
		}
	}
	return res, err
}
