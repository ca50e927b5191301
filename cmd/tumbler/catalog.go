package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/checker"
	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
)

func (a *app) listCmd() *cobra.Command {
	var listClients bool
	cmd := &cobra.Command{
		Use:   "list [--clients]",
		Short: "List the catalog of documented failure modes (or the shipped lock clients)",
		Long: `list prints every row of the scenario catalog: its lock, topology, the verdict
it must give, where the failure mode is documented, and its status — "holds",
or "not reproduced: <reason>" for a row that does not yet give its expected
verdict on every seed.`,
		Example: `  tumbler list
  tumbler reproduce single-failover`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if listClients {
				return a.listClients()
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tLOCK\tTOPOLOGY\tEXPECTED\tSOURCE\tSTATUS")
			for _, s := range scenarios.All() {
				status := "holds"
				if s.NotReproduced != "" {
					status = "not reproduced: " + s.NotReproduced
				}
				expected := s.Expect.Text
				if expected == "" {
					expected = s.Expect.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Plan.LockDesc(), s.Plan.Topology, expected, s.Source, status)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&listClients, "clients", false, "list the shipped lock clients (--lock client:NAME) instead: library, what its leases carry, its options")
	return cmd
}

// listClients prints the shipped lock clients.
func (a *app) listClients() error {
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLIBRARY\tLEASES CARRY\tSTEPS\tOPTIONS\tDOC")
	for _, name := range protocol.Shipped() {
		m, err := protocol.Lookup(name)
		if err != nil {
			return err
		}
		carry := []string{"owner token"}
		if m.Tokens {
			carry = append(carry, "fencing token")
		}
		if m.Validity {
			carry = append(carry, "validity")
		} else {
			carry = append(carry, "no validity")
		}
		var steps, opts []string
		for _, st := range m.Steps {
			steps = append(steps, st.Name)
		}
		for o := range m.Options {
			opts = append(opts, o)
		}
		sort.Strings(opts)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, m.Library, strings.Join(carry, ", "), strings.Join(steps, ", "), strings.Join(opts, ", "), m.Doc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "\nRun one with --lock client:NAME (and --client-option key=value); check one with tumbler conform --client NAME. A program of your own: --client-cmd (clients/PROTOCOL.md).")
	return nil
}

// rowResult is one run of a row in reproduce --json.
type rowResult struct {
	Scenario     string          `json:"scenario"`
	Seed         int64           `json:"seed"`
	Expected     string          `json:"expected"`
	Observed     checker.Verdict `json:"observed,omitempty"`
	Matched      bool            `json:"matched"`
	Why          string          `json:"why"`
	FirstAnomaly *float64        `json:"first_anomaly_s,omitempty"`
	Faults       []string        `json:"faults,omitempty"`
	ElapsedS     float64         `json:"elapsed_s"`
	ReportDir    string          `json:"report_dir,omitempty"`
	Error        string          `json:"error,omitempty"`
}

// reproduceFlags are reproduce's flags.
type reproduceFlags struct {
	all, asJSON bool
	parallel    int
	file, store string
	seed        int64
	target      targetFlags
}

const reproduceLong = `reproduce runs one or more rows of the catalog (see "tumbler list"), or a row
you wrote yourself (--file: the catalog's JSON — name, what, source, expect,
plan), and says plainly whether the run gave the documented verdict: the
anomaly an "invalid" row names, none for a "valid" row. A run slower than 30 s
or interrupted does not count. Each run writes its report under --store.
--parallel N runs N rows at once, each on its own cluster and ports.

--provider, --external, --server and the --auth-*/--tls-* flags run the rows
where "tumbler run" would: in containers, against your deployment (an
external configuration), on Valkey, with credentials. A row the target cannot
run (another topology than the deployment's, a fault it has no hook for) is
refused before anything runs, with the reason.

Exit codes: 0 when every run matched its row's expectation, 1 when one did not,
255 when none mismatched but a run failed, 254 bad arguments or a row refused.`

const reproduceExample = `  tumbler reproduce single-baseline
  tumbler reproduce single-failover redlock-restart-empty --seed 3
  tumbler reproduce single-failover --provider docker
  tumbler reproduce redlock-restart-empty --external deploy/external.json --server valkey
  tumbler reproduce --all --json
  tumbler reproduce --all --parallel 2
  tumbler reproduce --file my-row.json`

func (a *app) reproduceCmd() *cobra.Command {
	var f reproduceFlags
	cmd := &cobra.Command{
		Use:     "reproduce NAME... | --all | --file ROW.json",
		Short:   "Run catalog rows and say whether each documented failure mode was reproduced",
		Long:    reproduceLong,
		Example: reproduceExample,
		RunE: func(cmd *cobra.Command, names []string) error {
			return a.reproduce(cmd, names, &f)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.all, "all", false, "run every catalog row")
	fs.IntVar(&f.parallel, "parallel", runner.DefaultParallel, "run this many rows at once, each on its own cluster and ports")
	fs.StringVar(&f.file, "file", "", "run a row written as JSON (the catalog's format)")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the run")
	fs.StringVar(&f.store, "store", "store", "directory the runs' reports are kept in")
	fs.BoolVar(&f.asJSON, "json", false, "print a machine-readable result per run instead of prose")
	f.target.bind(fs)
	return cmd
}

// reproduce runs the rows and says of each whether it reproduced.
func (a *app) reproduce(cmd *cobra.Command, names []string, f *reproduceFlags) error {
	rows, err := reproduceRows(f.all, f.file, names)
	if err != nil {
		return err
	}
	if f.parallel < 1 {
		return fmt.Errorf("--parallel: %d, want at least 1 run at once", f.parallel)
	}
	t, err := f.target.target()
	if err != nil {
		return err
	}
	// Every row is moved onto the target first: a row the target
	// cannot run is refused before anything runs, with the reason.
	for i, s := range rows {
		if rows[i], err = s.On(t); err != nil {
			return failed(err)
		}
	}
	if f.parallel, err = runner.ParallelFor(scenarios.Plans(rows), f.parallel, "parallel", cmd.Flags().Changed("parallel")); err != nil {
		return failed(err)
	}
	ctx, stop := a.interruptible(cmd.Context())
	defer stop()
	opts := runner.Options{Store: f.store, Log: a.log}
	if f.file != "" {
		opts.Command = "tumbler " + shellJoin([]string{"reproduce", "--file", f.file, "--seed", fmt.Sprint(f.seed)})
	}
	// Runs at once end in any order: each is said as it ends, and
	// --json lists them in the rows' order.
	byRow := make([]*rowResult, len(rows))
	var refused error
	mismatch, errored := false, false
	_, _ = scenarios.RunMatrix(ctx, rows, []int64{f.seed}, nil, f.parallel, opts, func(p scenarios.MatrixProgress) {
		switch {
		case p.Run != nil:
			a.statusFunc(fmt.Sprintf("%s seed %d", p.Scenario.Name, f.seed))(*p.Run)
			return
		case p.Result == nil:
			a.log.Info("reproduce", "scenario", p.Scenario.Name, "seed", f.seed, "expected", p.Scenario.Expect.String())
			return
		}
		a.con.clear()
		j := *p.Result
		if errors.Is(p.Err, outcome.ErrInput) && refused == nil {
			refused = p.Err
		}
		mismatch = mismatch || (j.Error == "" && !j.Matched)
		errored = errored || j.Error != ""
		r := rowResultOf(p.Scenario, j)
		byRow[p.Index-1] = &r
		if !f.asJSON {
			a.con.printf("%s\n", scenarios.Describe(p.Scenario, j))
			if out := p.Outcome; out != nil && out.Result != nil && out.Report.Has("index.html") {
				a.con.printf("  report: %s\n", out.Report.Index())
			}
		}
	})
	if refused != nil {
		return failed(refused)
	}
	var results []rowResult
	for _, r := range byRow {
		if r != nil {
			results = append(results, *r)
		}
	}
	interrupted := ctx.Err() != nil && len(results) < len(rows)
	if f.asJSON {
		b, _ := json.MarshalIndent(results, "", "  ")
		fmt.Fprintf(a.stdout, "%s\n", b)
	} else {
		if interrupted {
			a.con.printf("interrupted after %d of %d rows\n", len(results), len(rows))
		}
		if len(rows) > 1 {
			a.con.printf("%s\n", reproduceSummary(results))
		}
	}
	return exit(outcome.MatchCode(mismatch || interrupted, errored))
}

// reproduceRows are the rows reproduce runs: every row (--all), a row
// written to a file (--file) or the catalog rows named.
func reproduceRows(all bool, file string, names []string) ([]scenarios.Scenario, error) {
	var rows []scenarios.Scenario
	switch {
	case all && (len(names) > 0 || file != ""):
		return nil, errors.New("--all conflicts with naming rows or --file: give one")
	case file != "" && len(names) > 0:
		return nil, errors.New("--file conflicts with naming catalog rows: give one")
	case all:
		rows = scenarios.All()
	case file != "":
		s, err := scenarios.Load(file)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		rows = append(rows, s)
	case len(names) == 0:
		return nil, errors.New("name a row (see tumbler list), or give --all or --file ROW.json")
	}
	for _, n := range names {
		s, err := scenarios.Get(n)
		if err != nil {
			return nil, err
		}
		rows = append(rows, s)
	}
	return rows, nil
}

// rowResultOf is a row's run as reproduce --json prints it.
func rowResultOf(s scenarios.Scenario, j scenarios.SeedRun) rowResult {
	r := rowResult{
		Scenario: s.Name, Seed: j.Seed, Expected: s.Expect.String(), Observed: j.Observed,
		Matched: j.Matched, Why: j.Why,
		ElapsedS: j.Elapsed.Seconds(), ReportDir: j.ReportDir, Error: j.Error,
	}
	if j.Reproduction != nil {
		r.Faults = j.Reproduction.Faults
	}
	if j.FirstAnomaly >= 0 {
		sec := float64(j.FirstAnomaly) / 1e9
		r.FirstAnomaly = &sec
	}
	return r
}

// reproduceSummary is the closing line of a reproduce of several rows: how
// many matched, and by name the rows that did not and the runs that failed,
// so the end of a long log says what went wrong without scrolling back.
func reproduceSummary(results []rowResult) string {
	var missed, failedRuns []string
	for _, r := range results {
		switch {
		case r.Error != "":
			failedRuns = append(failedRuns, r.Scenario)
		case !r.Matched:
			missed = append(missed, r.Scenario)
		}
	}
	s := fmt.Sprintf("reproduce: %d of %d rows as documented", len(results)-len(missed)-len(failedRuns), len(results))
	if len(missed) > 0 {
		s += "; not reproduced: " + strings.Join(missed, ", ")
	}
	if len(failedRuns) > 0 {
		s += "; run failed: " + strings.Join(failedRuns, ", ")
	}
	return s
}

// rowNames parses a comma list of catalog rows.
func rowNames(list []string) ([]scenarios.Scenario, error) {
	var rows []scenarios.Scenario
	for _, n := range list {
		s, err := scenarios.Get(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		rows = append(rows, s)
	}
	return rows, nil
}
