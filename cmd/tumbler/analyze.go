package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/runner"
)

func (a *app) analyzeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "analyze DIR",
		Short: "Check a stored run's history again and rewrite its report",
		Long: `analyze checks the history.jsonl of a stored run against its plan.json, with
the checkers of this tumbler, rewrites the report in DIR and prints the
verdict. It also takes a run that was killed: its history is streamed to disk
as the run goes, so every complete line is checked and an incomplete last line
is reported and left out.

Exit codes: 0 valid, 1 invalid, 2 unknown (or valid on a run that did not
finish), 254 DIR is no run directory or its files are malformed, 255 the
harness failed.`,
		Example: `  tumbler analyze store/latest
  tumbler analyze store/single-restart-empty/20260101T120000.000 --json`,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("give one run directory (store/<name>/<time>), got %d arguments", len(args))
			}
			out, err := runner.Analyze(args[0], runner.Options{Log: a.log})
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
	return cmd
}
