package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/hunt"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// coverageFlags are a hunt's settings about the dangerous windows.
type coverageFlags struct {
	until  int
	guided bool
}

func (f *coverageFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntVar(&f.until, "until-covered", 0, "end the hunt once every dangerous window that counts for it was reached this many times (0: run the budget out)")
	fs.BoolVar(&f.guided, "guided", hunt.DefaultGuided, "draw each attempt's schedule toward the dangerous windows reached least so far (each plan is saved and replays exactly; not with --shard)")
}

// check refuses a negative --until-covered and --guided on a shard of a
// hunt (--shard, hunt.GuidedShard).
func (f *coverageFlags) check(shard *matrix.Shard) error {
	if f.until < 0 {
		return fmt.Errorf("%w: --until-covered: %d is negative: want how many times every window must be reached", runner.ErrPlan, f.until)
	}
	if err := hunt.GuidedShard(shard, f.guided); err != nil {
		return fmt.Errorf("%w: --guided with --shard %s: %w", runner.ErrPlan, shard, err)
	}
	return nil
}

// printHuntCoverage prints how often the hunt reached each dangerous
// window: with nothing found, that is what its "nothing" is worth.
func (a *app) printHuntCoverage(s *hunt.Summary) {
	lines := s.CoverageLines()
	if len(lines) == 0 {
		return
	}
	a.con.printf("coverage of the dangerous windows over %d attempts:\n", s.Coverage.Runs)
	for _, l := range lines {
		a.con.printf("  %s\n", l)
	}
}
