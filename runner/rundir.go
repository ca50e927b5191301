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

// SharesServers reports whether runs of this plan share their servers with
// every other run of it, as its provider says (cluster.ProviderKind.Shares):
// on an external deployment they all reach the same nodes through the same
// toxiproxy, so one run's faults and keys would be another's.
func (p Plan) SharesServers() bool {
	k, err := p.providerKind()
	return err == nil && k.Shares
}

// ParallelFor is how many of plans run at once when asked is (flag names
// the flag, explicit whether the user gave it): asked, unless a plan
// shares its servers (SharesServers), when runs go one at a time and
// asking for more is an error naming the flag.
func ParallelFor(plans []Plan, asked int, flag string, explicit bool) (int, error) {
	for _, p := range plans {
		if !p.SharesServers() {
			continue
		}
		if explicit && asked > 1 {
			return 0, fmt.Errorf("%w: --%s %d: runs on an external deployment share its servers and its toxiproxy, so they run one at a time (--%s 1)",
				ErrPlan, flag, asked, flag)
		}
		return 1, nil
	}
	return asked, nil
}
