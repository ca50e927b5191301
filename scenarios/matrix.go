package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// SeedRun is one run of a row as reproduce and the matrix show it: the
// seed's result a matrix keeps, taken from the judgement the run engine
// made (runner.Outcome.Judgement, the same the run's report shows), and
// the faults its first anomaly names, as the nemesis recorded them.
type SeedRun struct {
	matrix.SeedResult
	// Reproduction is the run engine's judgement of the row's expectation;
	// nil when the run failed before it could be judged.
	Reproduction *outcome.Reproduction
	// Why says in one sentence why the run matched or not
	// (Reproduction.Why), or why it failed.
	Why string
	// Faults are the faults the first anomaly names (Reproduction.Faults).
	Faults []checker.FaultWindow
}

// Reproduce runs row s with seed, its expectation and source in the
// report (the run engine judges the run against the expectation), and
// returns the run as a matrix keeps it (SeedRunOf). opts.Command defaults
// to the command that replays this run. err is the runner's: an error
// wrapping outcome.ErrInput is bad input, any other a harness failure; the
// SeedRun then carries it in Error, with whatever outcome the run left.
func Reproduce(ctx context.Context, s Scenario, seed int64, opts runner.Options) (SeedRun, *runner.Outcome, error) {
	opts.Expected = s.Expected()
	opts.Source = s.Source
	if opts.Command == "" {
		opts.Command = fmt.Sprintf("tumbler reproduce %s --seed %d", s.Name, seed)
	}
	out, err := runner.Run(ctx, s.PlanFor(seed), opts)
	return SeedRunOf(seed, out, err), out, err
}

// SeedRunOf is a row's run (out and err as runner.Run returned them, with
// the row's expectation in its options) as reproduce and the matrix show
// it. It decides nothing: matched is the run engine's judgement
// (Judgement.Expected.Reproduced). A run that failed is an error, neither
// matched nor mismatched.
func SeedRunOf(seed int64, out *runner.Outcome, err error) SeedRun {
	sr := SeedRun{SeedResult: matrix.SeedResult{Seed: seed, FirstAnomaly: -1}}
	if out != nil {
		sr.Elapsed, sr.ReportDir = out.Elapsed, out.Dir
		sr.Reproduction = out.Judgement.Expected
	}
	if err != nil {
		sr.Error = err.Error()
		sr.Why = "the run failed: " + err.Error()
		return sr
	}
	rep := sr.Reproduction
	if rep == nil {
		sr.Error = "the run was not judged against an expectation"
		sr.Why = sr.Error
		return sr
	}
	sr.Observed = out.Judgement.Verdict
	sr.FirstAnomaly = rep.FirstAnomaly
	sr.Matched = rep.Reproduced
	sr.Why = rep.Why
	if out.Result != nil {
		for _, id := range rep.Faults {
			for _, f := range out.Result.Faults {
				if f.ID == id {
					sr.Faults = append(sr.Faults, f)
				}
			}
		}
	}
	return sr
}

// MatrixProgress reports a run of a matrix as it starts (Result nil), as
// it goes (Run set: its status) and when it is judged.
type MatrixProgress struct {
	Scenario Scenario
	Seed     int64
	// Index counts this shard's runs from 1 to Total.
	Index, Total int
	// Run, while the run goes, is its status (runner.Options.Status).
	Run *runner.Status
	// Result, Outcome and Err are set when the run is over (Err is the
	// runner's error, as Reproduce returned it).
	Result  *SeedRun
	Outcome *runner.Outcome
	Err     error

	row int // index of the row in RunMatrix's rows
}

// RunMatrix runs every row on every seed — or, with shard, the runs the
// shard owns, dealt round robin over the row×seed runs in order — up to
// parallel at once (each run on its own cluster and ports; below 1: one),
// and collects the verdicts (matrix.Matrix), in the order of the runs
// whatever order they end in. A run that fails is an error in its
// SeedResult and the matrix goes on; only ctx stops it early, returning
// the runs that ended before with ctx's error. Each run's command is its
// reproduce command unless opts.Command is set; opts.Status is replaced
// by progress's Run. progress may be nil; it is never called by two runs
// at once.
func RunMatrix(ctx context.Context, rows []Scenario, seeds []int64, shard *matrix.Shard, parallel int, opts runner.Options, progress func(MatrixProgress)) (matrix.Matrix, error) {
	m := matrix.Matrix{Shard: shard, SeedsPerRow: len(seeds)}
	if shard != nil {
		if err := shard.Validate(); err != nil {
			return m, fmt.Errorf("%w: %w", outcome.ErrInput, err)
		}
	}
	var units []MatrixProgress
	for i, s := range rows {
		for k, seed := range seeds {
			if shard == nil || shard.Owns(i*len(seeds)+k) {
				units = append(units, MatrixProgress{Scenario: s, Seed: seed, Index: len(units) + 1, row: i})
			}
		}
	}
	for n := range units {
		units[n].Total = len(units)
	}
	var mu sync.Mutex
	report := func(p MatrixProgress) {
		if progress != nil {
			mu.Lock()
			defer mu.Unlock()
			progress(p)
		}
	}
	results := make([]*SeedRun, len(units))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(parallel, 1), len(units)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				results[n] = runUnit(ctx, units[n], opts, report)
			}
		}()
	}
feed:
	for n := range units {
		select {
		case next <- n:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	rowAt := map[int]int{}
	for n, j := range results {
		if j == nil {
			continue // not run, or cut short: no verdict on the row
		}
		s := units[n].Scenario
		i, ok := rowAt[units[n].row]
		if !ok {
			i = len(m.Rows)
			rowAt[units[n].row] = i
			m.Rows = append(m.Rows, matrix.Row{Scenario: s.Name, Server: s.Plan.Server.Name(), Expected: s.Expect})
		}
		m.Rows[i].Seeds = append(m.Rows[i].Seeds, j.SeedResult)
		m.Rows[i].Status = matrix.RowStatus(m.Rows[i].Seeds)
	}
	return m, ctx.Err()
}

// runUnit runs one row on one seed for RunMatrix: nil when ctx cut it short.
func runUnit(ctx context.Context, p MatrixProgress, opts runner.Options, report func(MatrixProgress)) *SeedRun {
	if ctx.Err() != nil {
		return nil
	}
	report(p)
	opts.Status = func(rs runner.Status) {
		q := p
		q.Run = &rs
		report(q)
	}
	j, out, err := Reproduce(ctx, p.Scenario, p.Seed, opts)
	if ctx.Err() != nil {
		return nil // a run cut short by the caller is no verdict on the row
	}
	if err != nil && opts.Log != nil {
		opts.Log.Warn("matrix run failed", "scenario", p.Scenario.Name, "seed", p.Seed, "err", err)
	}
	p.Result, p.Outcome, p.Err = &j, out, err
	report(p)
	return &j
}

// Describe says in one line whether a run reproduced the row's documented
// failure mode, for a person: "single-failover: reproduced — invalid:
// double grant as documented (first anomaly at 3.42 s; fault f1 …)".
func Describe(s Scenario, j SeedRun) string {
	var b strings.Builder
	b.WriteString(s.Name + ": ")
	documented := s.Expect.Text
	if documented == "" {
		documented = s.Expect.String()
	}
	switch {
	case j.Error != "":
		fmt.Fprintf(&b, "the run failed — %s", j.Error)
	case j.Matched && j.FirstAnomaly >= 0:
		fmt.Fprintf(&b, "reproduced — %s as documented (first anomaly at %.2f s", documented, float64(j.FirstAnomaly)/1e9)
		for _, f := range j.Faults {
			fmt.Fprintf(&b, "; fault %s %s at %.2f s", f.ID, f.Desc, float64(f.Start)/1e9)
		}
		b.WriteString(")")
	case j.Matched:
		fmt.Fprintf(&b, "reproduced — %s as documented", documented)
	default:
		fmt.Fprintf(&b, "NOT reproduced — expected %s; %s", documented, j.Why)
	}
	if s.NotReproduced != "" {
		fmt.Fprintf(&b, " [catalog: not reproduced: %s]", s.NotReproduced)
	}
	return b.String()
}
