package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// makeDir creates the run directory with plan.json and points latest at it.
func (r *run) makeDir() error {
	name := r.plan.Name
	if err := os.MkdirAll(filepath.Join(r.opts.Store, name), 0o755); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	// Runs of one plan may start in the same millisecond (a matrix's
	// seeds run at once): each takes a directory of its own.
	stamp := r.began.Format("20060102T150405.000")
	for i := 2; ; i++ {
		r.dir = filepath.Join(r.opts.Store, name, stamp)
		err := os.Mkdir(r.dir, 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return fmt.Errorf("run directory: %w", err)
		}
		stamp = fmt.Sprintf("%s-%d", r.began.Format("20060102T150405.000"), i)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "plan.json"), r.plan.JSON(), 0o644); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	for _, l := range []struct{ link, target string }{
		{filepath.Join(r.opts.Store, "latest"), filepath.Join(name, stamp)},
		{filepath.Join(r.opts.Store, name, "latest"), stamp},
	} {
		// A link made aside and renamed over the old one: runs at once
		// may each replace it.
		tmp := fmt.Sprintf("%s.%d-%s", l.link, os.Getpid(), filepath.Base(r.dir))
		err := os.Symlink(l.target, tmp)
		if err == nil {
			err = os.Rename(tmp, l.link)
		}
		if err != nil {
			_ = os.Remove(tmp)
			r.log.Warn("cannot update the latest link", "link", l.link, "err", err)
		}
	}
	return nil
}

// DefaultParallel is how many runs the commands that make many (hunt,
// matrix, reproduce --all) run at once unless told otherwise: each run has
// its own cluster, ports and directory. A run mostly waits (TTL-scale
// sleeps, fault windows), so on 2 cores four at once still took no longer
// each than one alone and the catalog held on seeds 1–3; docs/measurements.md,
// "Parallel attempts".
const DefaultParallel = 4
