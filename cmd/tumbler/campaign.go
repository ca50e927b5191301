package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/campaign"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/shrink"
	"github.com/tumbler-dev/tumbler/spans"
)

const campaignLong = `campaign analyses one lock (--lock NAME, --lock client:NAME, --client-cmd …,
with the workload, clients and TTL the run flags give) the way a person
would spend a week on it, unattended: it hunts the lock on every topology
it can run on (--topologies; default one node, independent masters,
replicated with Sentinel, groups, a Redis Cluster) under every family of
faults (--families: network, process, clock, persistence, memory, replies,
clients, steps, failover), one hunt per topology × family with an even
share of --budget (no hunt starts with less than an attempt's
--time-limit, default 20s, left for it), its attempts --parallel at once.
A cell the lock or the topology cannot take (a lock on one node on
independent masters, a family none of whose faults can run there) is
listed as skipped, with why.

Every find is replayed --replays times; one that fails alike in --need of
them is shrunk (each candidate held to the same rule) and its minimal plan
replayed --confirm more times for its rate. "Fails alike" is one rule for
hunt, replay, shrink and campaign: an anomaly of the find's kinds that
follows one of the telling dangerous windows the find's own anomaly
followed. Finds are folded by what failed (the anomaly, the minimal plan's
fault kinds and lock steps, those windows), and each is sorted:

  known      a catalog row shows it (same lock, topology class, anomaly)
  generic    its anomaly followed only windows any lock without fencing or
             a checked validity fails in (a holder stopped past its lease,
             a grant that reached its holder after the lease ran out)
  candidate  the rest: read its minimal plan, its report and its windows

The verdicts are the checkers' own; a campaign only sorts them.

It writes store/campaigns/<name>/<time>/: campaign.json and index.html
(per topology × family: attempts, faults, the dangerous windows reached;
the finds with their minimal plans and replay rates), each cell's hunt
under cells/ and each find's shrink, minimal plan, catalog row and
confirming replays under finds/<id>/.

--shard i/n makes this campaign part i of n (the cells dealt round robin);
"tumbler campaign merge DIR... --out DIR" joins the shards.

Exit codes: 1 something was found (look at the classes), 0 nothing was
within the budget, 2 interrupted, 254 bad input, 255 every hunt's harness
failed.`

const campaignExample = `  tumbler campaign --lock redsync --budget 2h
  tumbler campaign --lock client:redis-py --budget 6h --families network,replies,clients,failover
  tumbler campaign --lock single --topologies independent:1 --families process --budget 10m
  # a week on four runners, then join
  tumbler campaign --lock client:symfony --budget 40h --shard 3/4 --store shard3
  tumbler campaign merge shard*/campaigns/latest --out all/`

// campaignFlags are campaign's flags.
type campaignFlags struct {
	plan               planFlags
	topologies         []string
	families           []string
	budget             time.Duration
	firstSeed          int64
	parallel, seeds    int
	replays, need      int
	confirm            int
	shard, store, name string
	asJSON             bool
}

func (a *app) campaignCmd() *cobra.Command {
	var f campaignFlags
	cmd := &cobra.Command{
		Use:     "campaign --lock NAME --budget D [flags]",
		Short:   "Analyse one lock unattended: hunts over every topology × fault family, every find shrunk, confirmed and sorted (known, generic, candidate)",
		Long:    campaignLong,
		Example: campaignExample,
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return a.campaign(cmd, &f) },
	}
	fs := cmd.Flags()
	f.plan.bind(fs)
	fs.StringSliceVar(&f.topologies, "topologies", nil, "topologies to hunt on (default "+strings.Join(campaign.Topologies(), ",")+")")
	fs.StringSliceVar(&f.families, "families", nil, "fault families to hunt with (default: every one)")
	fs.DurationVar(&f.budget, "budget", 0, "how long the campaign (this shard) may take (required)")
	fs.Int64Var(&f.firstSeed, "first-seed", 1, "the first seed each cell's hunt tries")
	fs.IntVar(&f.seeds, "seeds", 0, "each cell's hunt tries at most this many seeds (0: as many as its share of the budget allows)")
	fs.IntVar(&f.parallel, "parallel", runner.DefaultParallel, "attempts each hunt runs at once, each on its own cluster and ports")
	fs.IntVar(&f.replays, "replays", shrink.DefaultReplays, "a find is replayed this many times, and a shrink's candidate (R)")
	fs.IntVar(&f.need, "need", shrink.DefaultNeed, "a find is shrunk, and a candidate kept, when this many replays fail alike (k)")
	fs.IntVar(&f.confirm, "confirm", campaign.DefaultConfirm, "a find's minimal plan is replayed this many times for its rate")
	fs.StringVar(&f.shard, "shard", "", "be part i of n (i/n) of one campaign: the cells dealt round robin (join with \"campaign merge\")")
	fs.StringVar(&f.store, "store", "store", "directory the campaign's directory goes under (store/campaigns)")
	fs.BoolVar(&f.asJSON, "json", false, "print campaign.json instead of prose")
	cmd.AddCommand(a.campaignMergeCmd(), a.campaignSortCmd())
	return cmd
}

// campaign runs the campaign the flags describe.
func (a *app) campaign(cmd *cobra.Command, f *campaignFlags) error {
	fs := cmd.Flags()
	if !fs.Changed("budget") || f.budget <= 0 {
		return failed(fmt.Errorf("%w: --budget is required and positive: how long the campaign may take (\"6h\")", runner.ErrPlan))
	}
	for _, n := range []string{"topology", "nodes", "nemesis", "seed", "nemesis-interval", "plan"} {
		if fs.Lookup(n) != nil && fs.Changed(n) {
			return failed(fmt.Errorf("%w: --%s: a campaign chooses the topologies (--topologies), the fault kinds (--families) and the seeds (--first-seed) itself", runner.ErrPlan, n))
		}
	}
	if f.parallel < 1 || f.confirm < 1 || f.seeds < 0 {
		return failed(fmt.Errorf("%w: --parallel %d, --confirm %d, --seeds %d: want at least 1 (--seeds: 0 for no bound)", runner.ErrPlan, f.parallel, f.confirm, f.seeds))
	}
	shard, err := huntShard(f.shard)
	if err != nil {
		return failed(err)
	}
	p, err := f.plan.template(fs)
	if err != nil {
		return failed(err)
	}
	if !fs.Changed("time-limit") {
		p.TimeLimit = spans.Span{} // the campaign's own (campaign.AttemptTimeLimit)
	}
	name := p.Name
	if !fs.Changed("name") {
		name = "campaign-" + strings.ReplaceAll(p.Lock.Label(), ":", "-")
	}
	ctx, stop := a.interruptible(cmd.Context())
	defer stop()
	s, err := campaign.Run(ctx, campaign.Options{
		Name: name, Template: p, Topologies: f.topologies, Families: f.families, Budget: f.budget,
		FirstSeed: f.firstSeed, Seeds: f.seeds, Parallel: f.parallel, Shard: shard, Replays: f.replays, Need: f.need,
		Confirm: f.confirm, Store: f.store, Log: a.log, Status: a.campaignStatus,
	})
	a.con.clear()
	if s == nil {
		return failed(err)
	}
	if err != nil {
		a.log.Error("campaign", "err", err)
	}
	return a.campaignOutcome(s, err, f.asJSON)
}

func (a *app) campaignMergeCmd() *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "merge DIR... --out DIR",
		Short: "Join the shards of one campaign (campaign --shard i/n) into one campaign.json and page",
		Long: `merge joins the campaign directories that "tumbler campaign --shard i/n" made on
several runners (each holds campaign.json; store/campaigns/latest is the last
campaign of a store) into one campaign.json and index.html in --out: every cell
as its shard hunted it, the finds of all shards folded by what failed and
sorted again against this tumbler's catalog. Shards of different campaigns
(another lock, cells or settings), a shard given twice and a missing shard
are refused.

Exit codes as campaign.`,
		Example: `  tumbler campaign merge shard1/campaigns/latest shard2/campaigns/latest --out all/`,
		RunE: func(_ *cobra.Command, dirs []string) error {
			s, err := campaign.Merge(out, nil, dirs...)
			if err != nil {
				return failed(err)
			}
			return a.campaignOutcome(s, nil, asJSON)
		},
	}
	cmd.Flags().StringVar(&out, "out", ".", "directory for the merged campaign.json and index.html")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the merged campaign.json instead of prose")
	return cmd
}

func (a *app) campaignSortCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sort DIR",
		Short: "Sort a stored campaign's finds again against this tumbler's catalog (known, generic, candidate) and rewrite its campaign.json and page",
		Long: `sort reads a campaign directory (campaign.json; store/campaigns/latest is the
last campaign of a store), sorts its finds again against this tumbler's
catalog and dangerous windows — after a row was added for one of its finds,
say — and writes campaign.json and index.html back. The finds, their plans
and replays are as the campaign recorded them; only their classes change.

Exit codes as campaign.`,
		Example: `  tumbler campaign sort store/campaigns/latest`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, dirs []string) error {
			s, err := campaign.Resort(dirs[0], nil)
			if err != nil {
				return failed(err)
			}
			return a.campaignOutcome(s, nil, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the campaign.json instead of prose")
	return cmd
}

// campaignOutcome prints the campaign and returns the command's exit.
func (a *app) campaignOutcome(s *campaign.Summary, err error, asJSON bool) error {
	if asJSON {
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Fprintf(a.stdout, "%s\n", b)
	} else {
		a.printCampaign(s)
	}
	if err != nil {
		return &exitError{outcome.ErrorCode(err), err}
	}
	return exit(s.ExitCode)
}

func (a *app) printCampaign(s *campaign.Summary) {
	a.con.printf("campaign %s: %s; %v, stopped: %s\n", s.Name, s.Headline(), s.Elapsed.Round(time.Second), s.Stopped)
	for _, c := range s.Cells {
		switch {
		case c.Skipped != "":
			continue
		case c.Hunt == "":
			a.con.printf("  %-40s not hunted%s\n", c.Name(), errText(c.Error))
		default:
			r, n := c.Covered()
			finds := ""
			if len(c.Finds) > 0 {
				finds = ", finds " + strings.Join(c.Finds, " ")
			}
			a.con.printf("  %-40s %3d attempts, %3d faults, windows reached %d of %d%s\n", c.Name(), c.Tried, c.FaultsApplied, r, n, finds)
		}
	}
	for _, f := range s.Finds {
		a.con.printf("%s %s: %s on %s × %s, %d steps, fails alike %s — %s\n", f.ID, f.Class, f.Kind, f.Topology, f.Family, len(f.Steps), f.Confirmed, f.Why)
		a.con.printf("  minimal plan: %s\n", filepath.Join(s.Dir, f.Minimal))
	}
	a.con.printf("summary: %s\n", filepath.Join(s.Dir, campaign.IndexFile))
}

func errText(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func (a *app) campaignStatus(s campaign.Status) {
	what := fmt.Sprintf("seed %d tried %d found %d | %4.1fs/%.0fs", s.Hunt.Seed, s.Hunt.Tried, s.Hunt.Found, s.Hunt.Run.Elapsed.Seconds(), s.Hunt.Run.Limit.Seconds())
	if s.Shrinking != "" {
		what = s.Shrinking
	}
	a.progress(fmt.Sprintf("campaign %s/%s  cell %d/%d %s  finds %d  |  %s",
		s.Elapsed.Round(time.Second), s.Budget, s.Cell, s.Cells, s.Name, s.Finds, what))
}
