package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/runner"
)

func (a *app) analyzeCmd() *cobra.Command {
	var asJSON bool
	var linMemory, linTimeout string
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Check a stored run's history again and replace its report",
		Long: `analyze checks the history.jsonl of a stored run against its plan.json, with
the checkers of this tumbler, replaces the report in DIR and prints the
verdict. It also takes a run that was killed: its history is streamed to disk
as the run goes, so every complete line is checked and an incomplete last line
is reported and left out.

A stored run is never destroyed. analyze writes nothing until the plan and the
history have been read and checked: when it refuses them (a line that is not
an op, indexes that go backwards, a completion without its invoke or of
another call — the message names the line and the op), it exits 254 and DIR
is left exactly as it was. After a successful check the new report replaces
the old one: it is written beside it, inside DIR, and moved over it only once
all of it is written (report files it no longer has are removed then).
plan.json, history.jsonl and the cluster's logs are never touched. What the
old report said about the run — when it started, how long it took, its
command, a catalog row's expectation — is kept, and the run is judged again
against that expectation.

Linearizability is checked in pieces (each key's history cut where the
lock's state is known); --lin-memory and --lin-timeout replace the plan's
check.linearizability bounds, for a run whose verdict was unknown because a
piece did not fit or did not finish.

Exit codes: 0 valid, 1 invalid, 2 unknown (or valid on a run that did not
finish), 254 DIR is no run directory or its plan or history is malformed, 255
the harness failed.`,
		Example: `  tumbler analyze store/latest
  tumbler analyze store/single-restart-empty/20260101T120000.000 --json
  tumbler analyze store/latest --lin-memory 4GiB --lin-timeout 5m`,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give one run directory (store/<name>/<time>), got %d arguments", len(args))
			}
			opts := runner.Options{Log: a.log}
			if linMemory != "" {
				m, err := runner.ParseByteSize(linMemory)
				if err != nil || m == 0 {
					return failed(fmt.Errorf("%w: --lin-memory %q: want a positive size like 512MiB or 4GiB", runner.ErrPlan, linMemory))
				}
				opts.Linearizability.Memory = m
			}
			if linTimeout != "" {
				sp, err := nemesis.ParseSpan(linTimeout)
				if err != nil || sp.Relative() || sp.Resolve(0) <= 0 {
					return failed(fmt.Errorf("%w: --lin-timeout %q: want a positive duration like 90s or 5m", runner.ErrPlan, linTimeout))
				}
				opts.Linearizability.Timeout = sp
			}
			out, err := runner.Analyze(args[0], opts)
			var truncated *history.TruncatedError
			note := ""
			if errors.As(err, &truncated) {
				note = fmt.Sprintf("history.jsonl: the last line (%d) was incomplete — the run was killed mid-write; checked the complete lines before it", truncated.Line)
				err = nil
			}
			if out == nil {
				return failed(err)
			}
			return a.conclude(out, err, asJSON, note)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a machine-readable summary (verdict, exit code, report dir, anomalies) instead of prose")
	cmd.Flags().StringVar(&linMemory, "lin-memory", "", "memory the linearizability checker may use at once, e.g. 4GiB (default: the plan's check.linearizability.memory, else 1GiB)")
	cmd.Flags().StringVar(&linTimeout, "lin-timeout", "", "time limit of each piece the linearizability checker checks, e.g. 5m (default: the plan's check.linearizability.timeout, else 30s)")
	return cmd
}
