package hunt

import (
	"context"
	"path/filepath"

	"github.com/tumbler-dev/tumbler/runner"
)

// Replays is how a find fared when its plan was replayed
// (Options.Replays): Replayed runs, Alike of them failing alike (by the
// find's own outcome.Like, Attempt.Like), Need wanted.
// Replaying stops as soon as the outcome is decided.
type Replays struct {
	Replayed int `json:"replayed"`
	Alike    int `json:"alike"`
	Need     int `json:"need"`
	// Dirs are the reports of the replays that failed alike, relative to
	// the hunt's directory (under replays/).
	Dirs []string `json:"dirs,omitempty"`
	// Interrupted: the hunt was interrupted before the outcome was decided.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Reproduced says whether the find replayed: Need of its replays failed
// alike.
func (r *Replays) Reproduced() bool { return r != nil && r.Need > 0 && r.Alike >= r.Need }

// replay replays a find's plan up to Replays times into the hunt's
// replays/ directory and records how often it failed alike in a.Replays.
// A find is not replayed when one with a lower seed already replayed (the
// hunt has its find to shrink) — with Options.EachWay, one that failed the
// same way (Attempt.Way). It runs on the attempt's goroutine.
func (h *hunter) replay(ctx context.Context, plan runner.Plan, a *Attempt) {
	if h.o.Replays == 0 || a.Like == nil || h.replayedBelow(*a) {
		return
	}
	plan.Name = seedName(plan.Seed)
	r := &Replays{Need: h.o.Need}
	a.Replays = r
	store := filepath.Join(h.s.Dir, ReplaysDir)
	for r.Alike < r.Need && r.Replayed-r.Alike <= h.o.Replays-r.Need {
		if ctx.Err() != nil {
			r.Interrupted = true
			return
		}
		h.o.Log.Info("replaying a find", "seed", a.Seed, "replay", r.Replayed+1, "of", h.o.Replays, "alike", r.Alike)
		out, err := h.o.Run(ctx, plan, runner.Options{Store: store, Log: h.o.Log, Status: h.status(a.Seed)})
		if ctx.Err() != nil {
			r.Interrupted = true // an interrupted replay says nothing
			return
		}
		r.Replayed++
		if err != nil {
			h.o.Log.Warn("replay failed", "seed", a.Seed, "err", err)
			continue
		}
		if _, alike := a.Like.Fails(out.Result, out.Interrupted, out.Coverage); alike {
			r.Alike++
			if rel, err := filepath.Rel(h.s.Dir, out.Dir); err == nil && out.Dir != "" {
				r.Dirs = append(r.Dirs, rel)
			}
		}
	}
}

// replayedBelow says whether a find with a seed below a's replayed (with
// Options.EachWay: one that failed a's way).
func (h *hunter) replayedBelow(a Attempt) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.s.Attempts {
		if b.Seed < a.Seed && b.Replays.Reproduced() && (!h.o.EachWay || b.Way() == a.Way()) {
			return true
		}
	}
	return false
}
