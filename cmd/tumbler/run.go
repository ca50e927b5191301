package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

func kindList() string {
	s := make([]string, len(nemesis.Kinds))
	for i, k := range nemesis.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// adhocPlan builds the plan from the flags; the seed, when not given, is
// drawn and logged.
func (a *app) adhocPlan(cmd *cobra.Command, f *planFlags) (runner.Plan, error) {
	p, drawn, err := f.build(cmd.Flags())
	if err == nil && drawn {
		a.log.Info("no --seed given: drew one", "seed", p.Seed)
	}
	return p, failed(err)
}

const adhocExamples = `  # the single-node lock under contention, no faults
  tumbler %[1]s --lock single --time-limit 5s --seed 1
  # Redlock on five masters while nodes are killed and partitioned
  tumbler %[1]s --lock redlock --nodes 5 --nemesis kill,partition,partition --seed 7
  # a watchdog over the single lock, one replica, failovers by Sentinel
  tumbler %[1]s --lock watchdog --inner single --topology replicated:1+sentinels --nemesis failover
  # redsync with WithSetNXOnExtend on three masters, clients in-process
  tumbler %[1]s --lock redsync --nodes 3 --setnx-on-extend --client-mode inprocess`

func (a *app) runCmd() *cobra.Command {
	var f planFlags
	var planFile, store, toxiAPI string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Run a lock against real Redis servers under faults, check the history, write a report",
		Long: `run brings a Redis topology up, runs the workload's clients against the lock
while the nemesis applies its fault schedule, checks the recorded history and
writes the report directory (store/<name>/<time>/index.html; store/latest
points to it).

The run comes from flags, the fault schedule drawn from --seed and --nemesis,
or from a plan file (--plan) as "tumbler plan" prints it or a run stored
(store/<name>/<time>/plan.json): the plan file is the whole run, so the flags
that shape one conflict with it; --provider and --external may move it.

On a terminal a status line shows the run's progress; otherwise progress is
logged. Ctrl-C stops the run, heals the faults, stops every process and still
writes the report of what was recorded; a second Ctrl-C quits at once.

A number given explicitly must be in its range: --clients 0, --nodes 0,
--keys 0, --ttl 0s, --time-limit 0s, --nemesis-interval 0s and zero timeouts
are refused; leave a flag out for its default.

Exit codes: 0 valid, 1 invalid, 2 unknown (or valid but interrupted), 254 bad
input (arguments, a plan), 255 the harness failed (a missing redis-server,
say). results.json holds the same code.`,
		Example: fmt.Sprintf(adhocExamples, "run") + `
  # replay a stored run exactly
  tumbler run --plan store/latest/plan.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var p runner.Plan
			var err error
			if planFile != "" {
				p, err = a.planFromFile(cmd, &f, planFile)
			} else {
				p, err = a.adhocPlan(cmd, &f)
			}
			if err != nil {
				return err
			}
			command := a.replayCommand(cmd, p)
			ctx, stop := a.interruptible(cmd.Context())
			defer stop()
			a.log.Info("run", "name", p.Name, "seed", p.Seed, "topology", p.Topology.String(), "lock", p.Lock.Variant,
				"workload", p.Workload.Kind, "faults", len(p.Faults), "time_limit", p.TimeLimit.String())
			out, err := runner.Run(ctx, p, runner.Options{
				Store: store, Log: a.log, Status: a.statusFunc(p.Name), Command: command, ToxiproxyAPI: toxiAPI,
			})
			a.con.clear()
			return a.conclude(out, err, asJSON, "")
		},
	}
	fs := cmd.Flags()
	f.bind(fs)
	fs.StringVar(&planFile, "plan", "", "run this plan file (JSON) instead of a plan from flags")
	fs.StringVar(&store, "store", "store", "directory the runs' reports are kept in")
	fs.BoolVar(&asJSON, "json", false, "print a machine-readable summary (verdict, exit code, report dir, anomalies) instead of prose")
	fs.StringVar(&toxiAPI, "toxiproxy-api", "", "serve the embedded toxiproxy's HTTP API on this address during the run (e.g. 127.0.0.1:8474), to inspect the proxies and toxics")
	return cmd
}

// planFromFile loads --plan, refusing the flags that would reshape it.
func (a *app) planFromFile(cmd *cobra.Command, f *planFlags, file string) (runner.Plan, error) {
	var clash []string
	for _, name := range f.shaping {
		if cmd.Flags().Changed(name) {
			clash = append(clash, "--"+name)
		}
	}
	if len(clash) > 0 {
		return runner.Plan{}, fmt.Errorf("--plan conflicts with %s: the plan file is the whole run (edit the file, or drop --plan)", strings.Join(clash, ", "))
	}
	p, err := runner.LoadPlan(file)
	if err != nil {
		return runner.Plan{}, failed(err)
	}
	t, err := f.target.target()
	if err != nil {
		return runner.Plan{}, err
	}
	if p, err = t.Apply(p); err != nil {
		return runner.Plan{}, failed(err)
	}
	p, err = p.Normalized()
	return p, failed(err)
}

// replayCommand is the command line that replays the run, for its report.
func (a *app) replayCommand(cmd *cobra.Command, p runner.Plan) string {
	args := append([]string(nil), a.args...)
	if !cmd.Flags().Changed("seed") && !cmd.Flags().Changed("plan") {
		args = append(args, "--seed", fmt.Sprint(p.Seed))
	}
	return "tumbler " + shellJoin(args)
}

func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, s := range args {
		if s != "" && strings.IndexFunc(s, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r))
		}) < 0 {
			out[i] = s
			continue
		}
		out[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

func (a *app) planCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan [flags]",
		Short: "Print the plan (JSON) a run with these flags would execute",
		Long: `plan prints, as JSON, the plan "tumbler run" would execute with the same
flags: topology, lock, workload and the fault schedule generated from --seed.
Save it, edit it, and replay it exactly with "tumbler run --plan FILE". The
same flags and seed always print the same plan.`,
		Example: fmt.Sprintf(adhocExamples, "plan") + `
  # edit a schedule, then run it
  tumbler plan --lock redlock --nodes 5 --nemesis restart --seed 3 > p.json
  tumbler run --plan p.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.adhocPlan(cmd, &f)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(p.JSON())
			return err
		},
	}
	f.bind(cmd.Flags())
	return cmd
}

// noArgs refuses positional arguments, naming them.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

// summary is the --json output of a run or an analysis.
type summary struct {
	Verdict     checker.Verdict `json:"verdict"`
	ExitCode    int             `json:"exit_code"`
	Name        string          `json:"name,omitempty"`
	Seed        int64           `json:"seed"`
	ReportDir   string          `json:"report_dir,omitempty"`
	Index       string          `json:"index,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
	// FirstAnomaly is seconds from the start of the workload.
	FirstAnomaly *float64          `json:"first_anomaly_s,omitempty"`
	Anomalies    []checker.Anomaly `json:"anomalies"`
	Error        string            `json:"error,omitempty"`
	Note         string            `json:"note,omitempty"`
}

// conclude prints a run's (or an analysis's) outcome and returns its exit:
// the verdict and exit code the run engine decided (out.Judgement, as the
// report has them), or without an outcome the code of runErr. runErr is the
// runner's error; note a remark for the reader.
func (a *app) conclude(out *runner.Outcome, runErr error, asJSON bool, note string) error {
	v, code := checker.Unknown, outcome.ErrorCode(runErr)
	if out != nil {
		v, code = out.Judgement.Verdict, out.Judgement.ExitCode
	}
	s := summary{Verdict: v, ExitCode: code, Anomalies: []checker.Anomaly{}, Note: note}
	if out != nil {
		s.Name, s.Seed, s.ReportDir, s.Interrupted = out.Plan.Name, out.Plan.Seed, out.Dir, out.Interrupted
		if out.Report.Has("index.html") {
			s.Index = out.Report.Index()
		}
		if out.Result != nil {
			s.Anomalies = out.Result.Anomalies
		}
		if out.FirstAnomaly >= 0 {
			sec := out.FirstAnomaly.Seconds()
			s.FirstAnomaly = &sec
		}
	}
	if runErr != nil {
		s.Error = runErr.Error()
	}
	if asJSON {
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Fprintf(a.stdout, "%s\n", b)
		return exit(code)
	}
	if note != "" {
		a.con.printf("%s\n", note)
	}
	if runErr != nil {
		if out != nil && out.Result != nil && s.Index != "" {
			a.con.printf("report of what was recorded: %s\n", s.Index)
		}
		return &exitError{code, runErr}
	}
	a.con.printf("%s\n", verdictLine(out, v))
	if out.Interrupted {
		a.con.printf("interrupted: the verdict covers only what was recorded before the run stopped\n")
	}
	switch {
	case s.Index != "":
		a.con.printf("report: %s\n", s.Index)
	case out.Dir != "":
		a.con.printf("report directory: %s (index.html could not be written)\n", out.Dir)
	}
	return exit(code)
}

// verdictLine says the verdict in a sentence, with the first anomalies.
func verdictLine(out *runner.Outcome, v checker.Verdict) string {
	res := out.Result
	if res == nil {
		return "unknown — the history could not be checked; the report says why"
	}
	var b strings.Builder
	switch {
	case len(res.Anomalies) == 0:
		fmt.Fprintf(&b, "%s — no anomaly in %d operations", v, res.Ops)
		switch n := len(res.Faults); n {
		case 0:
		case 1:
			b.WriteString(" under 1 fault")
		default:
			fmt.Fprintf(&b, " under %d faults", n)
		}
		if v == checker.Unknown {
			for _, c := range res.Checkers {
				if c.Verdict == checker.Unknown {
					fmt.Fprintf(&b, "; %s could not decide: %s", c.Name, c.Reason)
				}
			}
		}
	default:
		fmt.Fprintf(&b, "%s — %d anomalies, the first at %.2f s:", v, len(res.Anomalies), out.FirstAnomaly.Seconds())
		const shown = 5
		for i, an := range res.Anomalies {
			if i == shown {
				fmt.Fprintf(&b, "\n  … and %d more (see the report)", len(res.Anomalies)-shown)
				break
			}
			fmt.Fprintf(&b, "\n  %s at %.3f s: %s", an.Kind, float64(an.From)/1e9, an.Explanation)
			if len(an.Faults) > 0 {
				fmt.Fprintf(&b, " [faults %s]", strings.Join(an.Faults, ", "))
			}
		}
	}
	return b.String()
}
