package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

const (
	matrixJSON  = "matrix.json"
	matrixJUnit = "matrix-junit.xml"
)

func (a *app) matrixCmd() *cobra.Command {
	var seeds, parallel int
	var shardFlag, out, store string
	var only, servers []string
	var target targetFlags
	cmd := &cobra.Command{
		Use:   "matrix --seeds N [--shard i/n] [--out DIR]",
		Short: "Run every catalog row over seeds 1..N and tabulate the verdicts",
		Long: `matrix runs every catalog row (or those --only names) on seeds 1..N, one run
after another, prints a table of the verdicts and writes matrix.json and
matrix-junit.xml into --out. A row holds when every seed matched its
expectation within 30 s.

--parallel N runs N of them at once, each on its own cluster and ports (the
table and matrix.json keep the rows' order).

--shard i/n runs the i-th of n interleaved parts of the row×seed runs, so n
machines share a matrix; "tumbler matrix merge" joins their matrix.json files.

--server valkey runs the rows on Valkey; --server redis,valkey runs every row
on both, and the table has a column per server and marks the rows whose
verdicts differ. --provider, --external and the --auth-*/--tls-* flags run
the matrix where "tumbler run" would; the rows that target cannot run (an
external deployment of another topology, faults it has no hook for) are left
out up front and listed with the reason.

Exit codes: 0 when every run matched its row's expectation, 1 when one did not
(or the matrix was interrupted), 255 when none mismatched but a run failed,
254 bad arguments.`,
		Example: `  tumbler matrix --seeds 10 --out ci/
  tumbler matrix --seeds 3 --only single-baseline,single-restart-empty
  tumbler matrix --seeds 1 --server redis,valkey
  tumbler matrix --seeds 3 --provider docker --only single-failover,sentinel-split-brain
  tumbler matrix --seeds 1 --external deploy/external.json
  # on three machines, then join
  tumbler matrix --seeds 10 --shard 2/3 --out shard2/
  tumbler matrix merge shard*/matrix.json --out all/`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if seeds < 1 {
				return fmt.Errorf("--seeds: %d, want at least 1", seeds)
			}
			if parallel < 1 {
				return fmt.Errorf("--parallel: %d, want at least 1 run at once", parallel)
			}
			var shard *matrix.Shard
			if shardFlag != "" {
				sh, err := matrix.ParseShard(shardFlag)
				if err != nil {
					return fmt.Errorf("--shard: %w", err)
				}
				shard = &sh
			}
			rows := scenarios.All()
			if len(only) > 0 {
				var err error
				if rows, err = rowNames(only); err != nil {
					return fmt.Errorf("--only: %w", err)
				}
			}
			rows, refused, err := a.placeRows(rows, target, servers)
			if err != nil {
				return err
			}
			if parallel, err = runner.ParallelFor(scenarios.Plans(rows), parallel, "parallel", cmd.Flags().Changed("parallel")); err != nil {
				return failed(err)
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return failed(fmt.Errorf("--out: %w", err))
			}
			seedList := make([]int64, seeds)
			for i := range seedList {
				seedList[i] = int64(i + 1)
			}
			ctx, stop := a.interruptible(cmd.Context())
			defer stop()
			opts := runner.Options{Store: store, Log: a.log}
			m, err := scenarios.RunMatrix(ctx, rows, seedList, shard, parallel, opts, a.matrixProgress())
			a.con.clear()
			m.Refused = refused
			interrupted := err != nil
			if err != nil && !errors.Is(err, ctx.Err()) {
				return failed(err)
			}
			return a.writeMatrix(m, out, interrupted)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&seeds, "seeds", 10, "run seeds 1..N of every row")
	fs.StringVar(&shardFlag, "shard", "", "run part i of n (i/n) of the row×seed runs")
	fs.IntVar(&parallel, "parallel", runner.DefaultParallel, "run this many rows×seeds at once, each on its own cluster and ports")
	fs.StringVar(&out, "out", ".", "directory for matrix.json and matrix-junit.xml")
	fs.StringVar(&store, "store", "store", "directory the runs' reports are kept in")
	fs.StringSliceVar(&only, "only", nil, "run only these rows (comma separated)")
	fs.StringSliceVar(&servers, "server", nil, "server software, comma separated for a column per server: redis, valkey (default redis)")
	target.bindWhere(fs)
	target.bindAccess(fs)
	cmd.AddCommand(a.mergeCmd())
	return cmd
}

// matrixProgress shows a matrix's runs: the status line names the run
// whose status it shows, and a line says how each run ended.
func (a *app) matrixProgress() func(scenarios.MatrixProgress) {
	return func(p scenarios.MatrixProgress) {
		name := fmt.Sprintf("[%d/%d] %s seed %d", p.Index, p.Total, p.Scenario.Name, p.Seed)
		if p.Run != nil {
			a.statusFunc(name)(*p.Run)
			return
		}
		if p.Result == nil {
			return
		}
		a.con.clear()
		r := p.Result
		switch {
		case r.Error != "":
			a.con.printf("%s: ERROR: %s\n", name, r.Error)
		case r.Matched:
			a.con.printf("%s: %s as expected (%.1f s)\n", name, r.Observed, r.Elapsed.Seconds())
		default:
			a.con.printf("%s: NOT matched: %s (%.1f s)\n", name, r.Why, r.Elapsed.Seconds())
		}
	}
}

// placeRows moves every row onto the target once per server. Rows the
// target cannot run are left out and returned with the reason; when none
// is left, that is an error.
func (a *app) placeRows(rows []scenarios.Scenario, f targetFlags, servers []string) ([]scenarios.Scenario, []matrix.Refused, error) {
	if len(servers) == 0 {
		servers = []string{""}
	}
	var placed []scenarios.Scenario
	var refused []matrix.Refused
	var reasons []string
	for _, s := range rows {
		for _, srv := range servers {
			f.server = srv
			t, err := f.target()
			if err != nil {
				return nil, nil, err
			}
			on, err := s.On(t)
			if err != nil {
				if !errors.Is(err, scenarios.ErrRefused) {
					return nil, nil, failed(err) // a bad flag, not a row that does not fit
				}
				reason := strings.TrimPrefix(err.Error(), scenarios.ErrRefused.Error()+": ")
				refused = append(refused, matrix.Refused{Scenario: s.Name, Server: t.Server, Reason: reason})
				reasons = append(reasons, reason)
				continue
			}
			placed = append(placed, on)
		}
	}
	for _, r := range refused {
		a.log.Warn("row refused", "scenario", r.Scenario, "reason", r.Reason)
	}
	if len(placed) == 0 {
		return nil, nil, failed(fmt.Errorf("%w: no row can run there: %s", runner.ErrPlan, strings.Join(reasons, "; ")))
	}
	return placed, refused, nil
}

// writeMatrix prints the table, writes the matrix files and returns the exit.
func (a *app) writeMatrix(m matrix.Matrix, out string, interrupted bool) error {
	if err := reports.WriteMatrixTable(a.stdout, m); err != nil {
		return failed(err)
	}
	for _, w := range []struct {
		name  string
		write func(string, matrix.Matrix) error
	}{{matrixJSON, reports.WriteMatrixJSON}, {matrixJUnit, reports.WriteMatrixJUnit}} {
		if err := w.write(filepath.Join(out, w.name), m); err != nil {
			return failed(err)
		}
	}
	fmt.Fprintf(a.stdout, "wrote %s and %s\n", filepath.Join(out, matrixJSON), filepath.Join(out, matrixJUnit))
	mismatch, errored := interrupted, false
	for _, r := range m.Rows {
		switch matrix.RowStatus(r.Seeds) {
		case matrix.Broken:
			mismatch = true
		case matrix.Errored:
			errored = true
		}
	}
	if interrupted {
		fmt.Fprintln(a.stdout, "interrupted: the matrix covers only the runs that finished")
	}
	return exit(outcome.MatchCode(mismatch, errored))
}

func (a *app) mergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge FILE... --out DIR",
		Short: "Join the matrix.json files of the shards of one matrix",
		Long: `merge joins the matrix.json files that "tumbler matrix --shard i/n" wrote on
several machines into the whole matrix: it prints the table and writes
matrix.json and matrix-junit.xml into --out. Shards that do not fit together
(different seeds, a shard missing or given twice) are refused.`,
		Example: `  tumbler matrix merge shard1/matrix.json shard2/matrix.json shard3/matrix.json --out all/`,
		RunE: func(_ *cobra.Command, files []string) error {
			if len(files) == 0 {
				return errors.New("give the matrix.json files of the shards")
			}
			m, err := matrix.Merge(files...)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return failed(fmt.Errorf("--out: %w", err))
			}
			return a.writeMatrix(*m, out, false)
		},
	}
	cmd.Flags().StringVar(&out, "out", ".", "directory for the merged matrix.json and matrix-junit.xml")
	return cmd
}
