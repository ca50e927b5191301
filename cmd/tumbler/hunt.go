package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/hunt"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
	"github.com/tumbler-dev/tumbler/shrink"
	"github.com/tumbler-dev/tumbler/spans"
)

// shrinkFlags are the settings of a shrink, for hunt and shrink.
type shrinkFlags struct {
	replays, need int
	budget        time.Duration
}

func (f *shrinkFlags) bind(cmd *cobra.Command, budgetFlag string) {
	fs := cmd.Flags()
	fs.IntVar(&f.replays, "replays", shrink.DefaultReplays, "shrinking: replays of each candidate plan (R)")
	fs.IntVar(&f.need, "need", shrink.DefaultNeed, "shrinking: a candidate is kept when at least this many of its replays fail the same way (k)")
	fs.DurationVar(&f.budget, budgetFlag, shrink.DefaultBudget, "shrinking: time budget; the smallest plan kept by then is the result")
}

func (f *shrinkFlags) options(cmd *cobra.Command, budgetFlag string) (shrink.Options, error) {
	if cmd.Flags().Changed(budgetFlag) && f.budget <= 0 {
		return shrink.Options{}, fmt.Errorf("%w: --%s: %v: want a positive duration", runner.ErrPlan, budgetFlag, f.budget)
	}
	o := shrink.Options{Replays: f.replays, Need: f.need, Budget: f.budget}
	return o, o.Validate()
}

// huntFlags are hunt's flags.
type huntFlags struct {
	plan                                 planFlags
	sf                                   shrinkFlags
	cov                                  coverageFlags
	like, store, shard                   string
	want                                 []string
	budget                               time.Duration
	firstSeed                            int64
	seeds, parallel                      int
	keepGoing, noShrink, keepAll, asJSON bool
}

const huntLong = `hunt runs one configuration (the flags of "tumbler run", or --like a catalog
row's lock, topology, clients, TTL and workload) with a random compound,
lock-aware fault schedule drawn from the --nemesis kinds (--like: the kinds
the row's schedule uses, not its schedule), one seed after another from
--first-seed, until --budget is spent or an anomaly is found (--keep-going:
go on and collect every find). No attempt starts once the time left is
shorter than its --time-limit.

--parallel N runs N attempts at once, each on its own cluster and ports;
the seeds are handed out in order and hunt.json lists the attempts in seed
order, so the hunt tries the plans a serial one draws (a find stops it once
every lower seed has ended; attempts on higher seeds still running are
cut short, kept and listed as abandoned). --shard i/n makes this hunt part i of n of one hunt over seeds
--first-seed on (seeds first+i-1, first+i-1+n, …: the plans the whole hunt
draws for them); "tumbler hunt merge DIR..." joins the shards.

Unless --no-shrink, a find is first replayed up to --replays times: one that
fails alike (an anomaly of its kinds, as late after a fault's start, that
follows one of the telling dangerous windows the find's anomaly followed)
in fewer than --need of them is kept
and listed, and the hunt goes on, within its budget, for a find that does.
It then shrinks the first find that replays: it replays smaller
plans — fewer steps, shorter faults and time limit, milder magnitudes,
fewer clients and keys — each up to --replays times, and keeps one when at
least --need of them fail alike (timing is not deterministic). It prints the minimal plan and writes it with a ready
catalog row.

The hunt's directory, store/hunts/<name>/<time>/, holds hunt.json and
index.html (every attempt: seed, verdict, anomalies, faults applied, time),
plans/seed-N.json (each attempt's plan: "tumbler run --plan" replays it
exactly), the report directories of invalid, unknown and failed attempts
(those of valid attempts are removed unless --keep-all), and shrink/ with
the shrink's shrink.json, plan.json and row.json.

On a terminal a status line shows the hunt's progress. Ctrl-C stops the
current attempt, heals its faults, and writes the summary.

Exit codes as run: 1 an anomaly of a wanted kind was found (--want; --like:
the row's kind, and as late after a fault's start as the row asks;
otherwise any), 0 none within the budget, 2 interrupted
first (or an attempt was unknown), 254 bad input, 255 the harness failed
three attempts in a row.`

const huntExample = `  tumbler hunt --lock redlock --nodes 5 --nemesis partition,restart,clock --budget 10m
  tumbler hunt --like redlock-restart-empty --budget 3m
  tumbler hunt --lock single --topology replicated:1+sentinels --nemesis failover,pause --budget 5m --keep-going --no-shrink
  tumbler hunt --like latch-failover --budget 20m --parallel 2
  # on three runners, then join
  tumbler hunt --like redlock-restart-empty --budget 30m --shard 2/3 --store shard2
  tumbler hunt merge shard*/hunts/latest --out all/`

func (a *app) huntCmd() *cobra.Command {
	var h huntFlags
	cmd := &cobra.Command{
		Use:     "hunt --nemesis KINDS --budget D [flags] | hunt --like ROW --budget D",
		Short:   "Look for anomalies nobody scripted: random compound fault schedules, seed after seed, then shrink the first find",
		Long:    huntLong,
		Example: huntExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.hunt(cmd, &h)
		},
	}
	fs := cmd.Flags()
	h.plan.bind(fs)
	fs.StringVar(&h.like, "like", "", "hunt with this catalog row's configuration and the fault kinds its schedule uses (not its schedule)")
	fs.DurationVar(&h.budget, "budget", 0, "how long the hunt may take (required)")
	fs.Int64Var(&h.firstSeed, "first-seed", 1, "the first seed tried; each attempt takes the next")
	fs.IntVar(&h.seeds, "seeds", 0, "try at most this many seeds, --first-seed on (0: as many as the budget allows)")
	fs.IntVar(&h.parallel, "parallel", runner.DefaultParallel, "run this many attempts at once, each on its own cluster and ports")
	fs.StringVar(&h.shard, "shard", "", "be part i of n (i/n) of one hunt: try seeds first+i-1, first+i-1+n, … (join the shards with \"hunt merge\"; not with --guided)")
	fs.StringSliceVar(&h.want, "want", nil, "anomaly kinds that count as a find (default: any; --like: the row's)")
	fs.BoolVar(&h.keepGoing, "keep-going", false, "go on after a find until the budget is spent")
	fs.BoolVar(&h.noShrink, "no-shrink", false, "do not shrink the first find")
	fs.BoolVar(&h.keepAll, "keep-all", false, "keep the report directories of valid attempts too")
	fs.StringVar(&h.store, "store", "store", "directory the runs' reports are kept in (the hunt's under store/hunts)")
	fs.BoolVar(&h.asJSON, "json", false, "print hunt.json's summary (and the shrink's) instead of prose")
	h.sf.bind(cmd, "shrink-budget")
	h.cov.bind(cmd)
	cmd.AddCommand(a.huntMergeCmd())
	return cmd
}

// hunt runs the hunt, then shrinks its find unless --no-shrink.
func (a *app) hunt(cmd *cobra.Command, h *huntFlags) error {
	if err := huntArgs(cmd, h.budget, h.seeds, h.parallel); err != nil {
		return failed(err)
	}
	shard, err := huntShard(h.shard)
	if err != nil {
		return failed(err)
	}
	if err := h.cov.check(shard); err != nil {
		return failed(err)
	}
	so, err := h.sf.options(cmd, "shrink-budget")
	if err != nil {
		return failed(err)
	}
	tm, err := a.huntTemplate(cmd, &h.plan, h.like)
	if err != nil {
		return err
	}
	if h.parallel, err = runner.ParallelFor([]runner.Plan{tm.Plan}, h.parallel, "parallel", cmd.Flags().Changed("parallel")); err != nil {
		return failed(err)
	}
	if cmd.Flags().Changed("want") {
		// --want says what counts, instead of the row's kind and timing.
		tm.Like = outcome.Like{}
		for _, w := range h.want {
			tm.Like.Kinds = append(tm.Like.Kinds, checker.Kind(strings.TrimSpace(w)))
		}
	}
	ctx, stop := a.interruptible(cmd.Context())
	defer stop()
	ho := hunt.Options{
		Name: tm.Name, Budget: h.budget, FirstSeed: h.firstSeed, MaxSeeds: h.seeds, Parallel: h.parallel, Shard: shard,
		Like: tm.Like, KeepGoing: h.keepGoing, KeepAll: h.keepAll, Store: h.store, Log: a.log, Status: a.huntStatus,
		UntilCovered: h.cov.until, Guided: h.cov.guided,
	}
	if !h.noShrink {
		// A find is shrunk only if it replays; one that does not is
		// listed and the hunt goes on for one that does.
		ho.Replays, ho.Need = so.Replays, so.Need
	}
	s, err := hunt.Run(ctx, tm.Plan, tm.Draw, ho)
	a.con.clear()
	if err != nil {
		if s == nil {
			return failed(err)
		}
		a.log.Error("hunt", "err", err)
	}
	var sh *shrink.Result
	if !h.noShrink && ctx.Err() == nil {
		so.Log, so.Progress = a.log, a.shrinkStatus
		var serr error
		sh, serr = hunt.ShrinkFind(ctx, s, so)
		a.con.clear()
		if serr != nil && !errors.Is(serr, ctx.Err()) {
			a.log.Error("shrink", "err", serr)
		}
	}
	return a.huntOutcome(s, sh, err, h.asJSON)
}

func (a *app) huntMergeCmd() *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "merge DIR... --out DIR",
		Short: "Join the shards of one hunt (hunt --shard i/n) into one hunt.json and page",
		Long: `merge joins the hunt directories that "tumbler hunt --shard i/n" made on
several runners (each holds hunt.json; store/hunts/latest is the last hunt of a
store) into one hunt.json and index.html in --out: every attempt in seed
order, linked to its plan and report where its shard keeps them, and the
first find over all shards. Shards of different hunts (another
configuration, fault kinds, wanted kinds, seeds, replays or --guided), a
shard given twice and a missing shard are refused.

Exit codes as hunt: 1 a shard found an anomaly of a wanted kind, 0 none did,
2 a shard was interrupted (or an attempt unknown), 255 a shard's harness kept
failing, 254 shards that do not fit together.`,
		Example: `  tumbler hunt merge shard1/hunts/latest shard2/hunts/latest shard3/hunts/latest --out all/`,
		RunE: func(_ *cobra.Command, dirs []string) error {
			s, err := hunt.Merge(out, dirs...)
			if err != nil {
				return failed(err)
			}
			return a.huntOutcome(s, nil, nil, asJSON)
		},
	}
	cmd.Flags().StringVar(&out, "out", ".", "directory for the merged hunt.json and index.html")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the merged hunt.json instead of prose")
	return cmd
}

// huntArgs refuses a hunt without a positive budget, with --seed, with
// a negative number of seeds or fewer than one attempt at once.
func huntArgs(cmd *cobra.Command, budget time.Duration, seeds, parallel int) error {
	if !cmd.Flags().Changed("budget") {
		return fmt.Errorf("%w: --budget is required: how long the hunt may take (\"10m\")", runner.ErrPlan)
	}
	if budget <= 0 {
		return fmt.Errorf("%w: --budget: %v: want a positive duration (\"10m\")", runner.ErrPlan, budget)
	}
	if cmd.Flags().Changed("seed") {
		return fmt.Errorf("%w: --seed: a hunt draws one seed after another; give --first-seed", runner.ErrPlan)
	}
	if seeds < 0 {
		return fmt.Errorf("%w: --seeds: %d is negative", runner.ErrPlan, seeds)
	}
	if parallel < 1 {
		return fmt.Errorf("%w: --parallel: %d: want at least 1 attempt at once", runner.ErrPlan, parallel)
	}
	return nil
}

// huntShard parses --shard ("" for the whole hunt).
func huntShard(flag string) (*matrix.Shard, error) {
	if flag == "" {
		return nil, nil
	}
	sh, err := matrix.ParseShard(flag)
	if err != nil {
		return nil, fmt.Errorf("%w: --shard: %q: want i/n with 1 ≤ i ≤ n, such as 2/3", runner.ErrPlan, flag)
	}
	return &sh, nil
}

// huntOutcome prints the hunt's outcome (and its shrink's) and returns the
// command's exit: the hunt's code, or its error's.
func (a *app) huntOutcome(s *hunt.Summary, sh *shrink.Result, err error, asJSON bool) error {
	if asJSON {
		b, _ := json.MarshalIndent(struct {
			*hunt.Summary
			Shrunk *shrink.Result `json:"shrunk,omitempty"`
		}{s, sh}, "", "  ")
		fmt.Fprintf(a.stdout, "%s\n", b)
	} else {
		a.printHunt(s, sh)
	}
	if err != nil {
		return &exitError{outcome.ErrorCode(err), err}
	}
	return exit(s.ExitCode)
}

// huntTemplate is the configuration the hunt draws schedules into: from
// --like's row (hunt.LikeRow) or from the flags.
func (a *app) huntTemplate(cmd *cobra.Command, f *planFlags, like string) (hunt.Template, error) {
	fs := cmd.Flags()
	name := fs.Lookup("name").Value.String()
	if like == "" {
		if len(f.draw.Kinds) == 0 {
			return hunt.Template{}, failed(fmt.Errorf("%w: --nemesis: a hunt needs fault kinds to draw from (or --like ROW)", runner.ErrPlan))
		}
		// The template has no faults; the hunt draws them, seed by seed.
		p, err := f.template(fs)
		if err != nil {
			return hunt.Template{}, failed(err)
		}
		if name == "" {
			name = p.Lock.Variant
		}
		return hunt.Template{Plan: p, Draw: f.draw, Name: name}, nil
	}
	if err := f.refuseZeros(fs); err != nil {
		return hunt.Template{}, failed(err)
	}
	if err := f.explain(fs, f.draw.Validate()); err != nil {
		return hunt.Template{}, failed(err)
	}
	allowed := []string{"time-limit", "nemesis", "nemesis-interval", "concurrency", "name"}
	var clash []string
	for _, n := range f.shaping {
		if fs.Changed(n) && !slices.Contains(allowed, n) {
			clash = append(clash, "--"+n)
		}
	}
	if len(clash) > 0 {
		return hunt.Template{}, failed(fmt.Errorf("%w: --like conflicts with %s: the row gives the configuration (--time-limit, --nemesis, --nemesis-interval and --concurrency may change it)", runner.ErrPlan, strings.Join(clash, ", ")))
	}
	t, err := f.target.target()
	if err != nil {
		return hunt.Template{}, err
	}
	var limit spans.Span
	if fs.Changed("time-limit") {
		limit = f.plan.TimeLimit
	}
	tm, err := hunt.LikeRow(like, f.draw, limit, t)
	if err != nil {
		return hunt.Template{}, failed(err)
	}
	if name != "" {
		tm.Name = name
	}
	return tm, nil
}

func (a *app) huntStatus(s hunt.Status) {
	running := ""
	if s.Running > 1 {
		running = fmt.Sprintf(" (%d running)", s.Running)
	}
	line := fmt.Sprintf("hunt %s/%s  seed %d%s  tried %d  faults %d  found %d  |  %4.1fs/%.0fs %d ops, anomalies %d",
		s.Elapsed.Round(time.Second), s.Budget, s.Seed, running, s.Tried, s.FaultsApplied, s.Found,
		s.Run.Elapsed.Seconds(), s.Run.Limit.Seconds(), s.Run.Ops, s.Run.Anomalies)
	a.progress(line)
}

func (a *app) shrinkStatus(p shrink.Progress) {
	a.progress(fmt.Sprintf("shrink %s/%s  candidate %d replay %d (%d failed): %s  |  now %d steps, %s, %d clients",
		p.Elapsed.Round(time.Second), p.Budget, p.Candidate, p.Replay, p.Failed, p.Change, p.Steps, p.TimeLimit, p.Clients))
}

// progress shows a line on the terminal's status line, or logs it every
// few seconds otherwise.
func (a *app) progress(line string) {
	if a.con.live {
		a.con.setStatus(line)
		return
	}
	if a.con.progressDue() {
		a.log.Info("progress", "status", line)
	}
}

func (a *app) printHunt(s *hunt.Summary, sh *shrink.Result) {
	a.con.printf("hunt %s: %d seeds tried, %d faults applied, %v; stopped: %s\n",
		s.Name, s.Tried, s.FaultsApplied, s.Elapsed.Round(100*time.Millisecond), s.Stopped)
	if found, ok := s.Found(); ok {
		a.con.printf("found: %s on seed %d, %v into the hunt (attempt %d, %v into its run)\n",
			kindsText(found.Kinds), found.Seed, s.TimeToFirst.Round(100*time.Millisecond), s.First+1, found.FirstAnomaly.Round(10*time.Millisecond))
		if found.Dir != "" {
			a.con.printf("  report: %s\n", filepath.Join(s.Dir, found.Dir, "index.html"))
		}
		a.con.printf("  replay: tumbler run --plan %s\n", filepath.Join(s.Dir, found.Plan))
		a.printReplays(s)
	} else {
		a.con.printf("no anomaly found\n")
	}
	a.printHuntCoverage(s)
	if sh != nil {
		a.printShrink(sh)
	}
	a.con.printf("summary: %s\n", filepath.Join(s.Dir, hunt.IndexFile))
}

// printReplays says which finds did not replay and which one did.
func (a *app) printReplays(s *hunt.Summary) {
	for i, at := range s.Attempts {
		if !at.Found || at.Replays == nil {
			continue
		}
		verdict := "does not replay: kept, not shrunk"
		switch {
		case i == s.Replayed:
			verdict = "replays: the find shrunk"
		case at.Replays.Reproduced():
			verdict = "replays too"
		case at.Replays.Interrupted:
			verdict = "was not replayed to the end: kept, not shrunk"
		}
		a.con.printf("  seed %d's find %s (%s); plan %s\n", at.Seed, verdict, at.Replays, filepath.Join(s.Dir, at.Plan))
	}
	if s.Replays > 0 && s.Replayed < 0 {
		a.con.printf("  no find failed alike in %d of %d replays: nothing to shrink\n", s.Need, s.Replays)
	}
}

func (a *app) printShrink(sh *shrink.Result) {
	o, m := sh.Original, sh.Minimal
	if !sh.Reproduced {
		a.con.printf("shrink: the plan as found failed the same way in fewer than %d of %d replays: not shrunk (%s)\n", sh.Need, sh.Replays, filepath.Join(sh.Dir, shrink.SummaryFile))
		return
	}
	kept := 0
	for _, c := range sh.Candidates {
		if c.Kept {
			kept++
		}
	}
	end := "to a fixed point"
	if sh.Exhausted {
		end = "budget spent"
	}
	if sh.Interrupted {
		end = "interrupted"
	}
	a.con.printf("shrink: %d → %d fault steps, time limit %s → %s, clients %d → %d, keys %d → %d (%d candidates, %d kept, each replayed up to %d times and kept on %d failures; %v, %s)\n",
		len(o.Faults), len(m.Faults), o.TimeLimit, m.TimeLimit, o.Workload.Clients, m.Workload.Clients, o.Workload.Keys, m.Workload.Keys,
		len(sh.Candidates), kept, sh.Replays, sh.Need, sh.Elapsed.Round(time.Second), end)
	for i, st := range m.Faults {
		b, _ := json.Marshal(st)
		a.con.printf("  step %d: %s\n", i+1, b)
	}
	a.con.printf("  minimal plan: %s\n", filepath.Join(sh.Dir, shrink.PlanFile))
	if sh.Report != "" {
		a.con.printf("  its report: %s\n", filepath.Join(sh.Dir, sh.Report, "index.html"))
	}
	if sh.Row != nil {
		a.con.printf("  catalog row: %s\n", filepath.Join(sh.Dir, shrink.RowFile))
	}
}

func kindsText(ks []checker.Kind) string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}
