package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/shrink"
)

func (a *app) shrinkCmd() *cobra.Command {
	var sf shrinkFlags
	var store string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "shrink RUN_DIR",
		Short: "Search for the smallest plan that still fails like a stored invalid run",
		Long: `shrink takes a stored invalid run (its plan.json and results.json) and searches
for a smaller plan that still fails like it — an anomaly of the same kinds
that follows one of the telling dangerous windows the stored run's first
anomaly followed (a restart empty, a clock moved…; outcome.Like, the rule
hunt and campaign share), so that a smaller plan breaking the lock another
way does not pass for it: it cuts the
schedule and the time limit just after the anomaly, drops fault steps (in
halves, then smaller chunks, then one by one), halves the time limit, each
span of each fault but its start (its duration, its trigger's timeout and its
magnitudes: offset, strobe, latency, jitter, pause, delay, lag), and lowers
the number of clients (not below two) and keys. Timing is not
deterministic, so each candidate is replayed up to --replays (R) times and
kept when at least --need (k) replays fail the same way; the plan as stored
is replayed the same way first, and is not shrunk unless it fails k of R
times. The search ends at a fixed point or when --budget is spent.

It writes store/shrinks/<name>/<time>/: shrink.json (every candidate, its
change and its replays), plan.json (the minimal plan: "tumbler run --plan"
replays it), row.json (a catalog row: what, expect from the anomaly, source)
and the report of a failing replay of each kept candidate; rejected
candidates' reports are removed (their plans are in shrink.json). The run
directory given is only read.

Exit codes: 1 when the minimal plan fails the same way (it always does when
the plan as stored did), 0 when the plan as stored did not fail k of R
times, 2 interrupted, 254 bad input (not a run directory, a valid run), 255
the harness failed.`,
		Example: `  tumbler shrink store/hunts/latest/seed-7/latest
  tumbler shrink store/redlock-clock-jump/latest --replays 5 --need 3 --budget 10m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			so, err := sf.options(cmd, "budget")
			if err != nil {
				return failed(err)
			}
			plan, err := runner.LoadPlan(filepath.Join(dir, reports.PlanFile))
			if err != nil {
				return failed(fmt.Errorf("%s is not a stored run: %w", dir, err))
			}
			if so.Like, err = shrink.LikeOf(dir); err != nil {
				return failed(err)
			}
			so.Dir = filepath.Join(store, "shrinks", plan.Name, time.Now().Format("20060102T150405.000"))
			so.Found = fmt.Sprintf("found in %s, seed %d; shrunk by tumbler shrink", dir, plan.Seed)
			so.Log, so.Progress = a.log, a.shrinkStatus
			ctx, stop := a.interruptible(cmd.Context())
			defer stop()
			a.log.Info("shrink", "run", dir, "like", so.Like, "replays", so.Replays, "need", so.Need, "budget", so.Budget)
			sh, err := shrink.Shrink(ctx, plan, so)
			a.con.clear()
			if sh == nil {
				return failed(err)
			}
			if asJSON {
				printJSON(a, sh)
			} else {
				a.printShrink(sh)
			}
			code := outcome.ShrinkCode(sh.Reproduced, sh.Interrupted, err)
			if err != nil && !sh.Interrupted {
				return &exitError{code, err} // the error is printed too
			}
			return exit(code)
		},
	}
	sf.bind(cmd, "budget")
	cmd.Flags().StringVar(&store, "store", "store", "directory the shrink's directory goes under (store/shrinks)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print shrink.json's content instead of prose")
	return cmd
}

func printJSON(a *app, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(a.stdout, "%s\n", b)
}
