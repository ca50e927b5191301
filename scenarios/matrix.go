package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/runner"
)

// MaxRunTime is how long one run of a row may take, start to report, for
// the row to count as reproduced (SCENARIOS.md: under 30 s on a 2-core
// machine); a slower run is not matched, whatever its verdict.
const MaxRunTime = 30 * time.Second

// Judgement is one run of a row judged against the row's expectation.
type Judgement struct {
	reports.SeedResult
	// Comparison of the expectation with the checker's result.
	Comparison reports.Comparison
	// Why says in one sentence why the run matched or not: the
	// comparison's reason, or what else kept it from matching.
	Why string
	// Faults are the faults the first anomaly names (Comparison.Faults),
	// as the nemesis recorded them.
	Faults []checker.FaultWindow
}

// Reproduce runs row s with seed, its expectation and source in the
// report, and judges the outcome (Judge); the Judgement embeds the
// reports.SeedResult a matrix keeps. opts.Command defaults to the command
// that replays this run. err is the runner's: an error wrapping
// runner.ErrPlan is bad input, any other a harness failure; the
// SeedResult then carries it in Error, with whatever outcome the run left.
func Reproduce(ctx context.Context, s Scenario, seed int64, opts runner.Options) (Judgement, *runner.Outcome, error) {
	opts.Expected = s.Expected()
	opts.Source = s.Source
	if opts.Command == "" {
		opts.Command = fmt.Sprintf("tumbler reproduce %s --seed %d", s.Name, seed)
	}
	out, err := runner.Run(ctx, s.PlanFor(seed), opts)
	return Judge(s, seed, out, err), out, err
}

// Judge judges one run of row s (out and err as runner.Run returned them):
// matched when the checker's result meets the row's expectation
// (reports.Expectation.Compare), the run was neither interrupted nor
// failed, it took at most MaxRunTime, an invalid row's anomaly names one of
// the row's faults, and every fault took effect (none skipped, every armed
// lock step reached).
func Judge(s Scenario, seed int64, out *runner.Outcome, err error) Judgement {
	j := Judgement{SeedResult: reports.SeedResult{Seed: seed, FirstAnomaly: -1}}
	var res *checker.Result
	if out != nil {
		j.Elapsed, j.ReportDir, res = out.Elapsed, out.Dir, out.Result
	}
	j.Comparison = s.Expect.Compare(res)
	if res != nil {
		for _, id := range j.Comparison.Faults {
			for _, f := range res.Faults {
				if f.ID == id {
					j.Faults = append(j.Faults, f)
				}
			}
		}
	}
	if err != nil {
		j.Error = err.Error()
		j.Why = "the run failed: " + err.Error()
		return j
	}
	j.Observed = j.Comparison.Observed
	j.FirstAnomaly = j.Comparison.FirstAnomaly
	j.Matched = j.Comparison.Reproduced
	j.Why = j.Comparison.Why
	switch {
	case out.Interrupted:
		j.Matched = false
		j.Why = "interrupted before its time limit: " + j.Why
	case j.Elapsed > MaxRunTime:
		j.Matched = false
		j.Why = fmt.Sprintf("took %.1f s, over the %v a row may take (%s)", j.Elapsed.Seconds(), MaxRunTime, j.Why)
	case j.Matched && s.Expect.Verdict == checker.Invalid && len(s.Plan.Faults) > 0 && len(j.Comparison.Faults) == 0:
		// The catalog asks for the cause, not only the symptom: in a row
		// with faults, the anomaly must be tied to one.
		j.Matched = false
		j.Why = "the anomaly names no fault, though the row injects some: " + j.Why
	case j.Matched && res != nil:
		// A verdict under faults that did nothing shows nothing: above all
		// a valid one, which would hold trivially.
		if idle := idleFault(res.Faults); idle != "" {
			j.Matched = false
			j.Why = idle + ", so the run does not show the row: " + j.Why
		}
	}
	return j
}

// idleFault names a fault that did nothing (checker.FaultWindow.Idle).
func idleFault(faults []checker.FaultWindow) string {
	for _, f := range faults {
		if why := f.Idle(); why != "" {
			return fmt.Sprintf("fault %s (%s) was idle: %s", f.ID, f.Desc, why)
		}
	}
	return ""
}

// MatrixProgress reports a run of a matrix as it starts (Result nil) and
// when it is judged.
type MatrixProgress struct {
	Scenario Scenario
	Seed     int64
	// Index counts this shard's runs from 1 to Total.
	Index, Total int
	// Result and Outcome are set when the run is over.
	Result  *Judgement
	Outcome *runner.Outcome
}

// RunMatrix runs every row on every seed — or, with shard, the runs the
// shard owns, dealt round robin over the row×seed runs in order — one
// after another, and collects the verdicts (reports.Matrix). A run that
// fails is an error in its SeedResult and the matrix goes on; only ctx
// stops it early, returning what ran so far with ctx's error. Each run's
// command is its reproduce command (opts.Command is ignored). progress
// may be nil.
func RunMatrix(ctx context.Context, rows []Scenario, seeds []int64, shard *reports.Shard, opts runner.Options, progress func(MatrixProgress)) (reports.Matrix, error) {
	m := reports.Matrix{Shard: shard, SeedsPerRow: len(seeds)}
	if shard != nil {
		if err := shard.Validate(); err != nil {
			return m, fmt.Errorf("%w: %w", runner.ErrPlan, err)
		}
	}
	type unit struct {
		row  int
		seed int64
	}
	var units []unit
	for i := range rows {
		for k, seed := range seeds {
			if shard == nil || shard.Owns(i*len(seeds)+k) {
				units = append(units, unit{i, seed})
			}
		}
	}
	rowAt := map[int]int{}
	opts.Command = ""
	for n, u := range units {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		s := rows[u.row]
		p := MatrixProgress{Scenario: s, Seed: u.seed, Index: n + 1, Total: len(units)}
		if progress != nil {
			progress(p)
		}
		j, out, err := Reproduce(ctx, s, u.seed, opts)
		if ctx.Err() != nil {
			// A run cut short by the caller is no verdict on the row.
			return m, ctx.Err()
		}
		if err != nil && opts.Log != nil {
			opts.Log.Warn("matrix run failed", "scenario", s.Name, "seed", u.seed, "err", err)
		}
		i, ok := rowAt[u.row]
		if !ok {
			i = len(m.Rows)
			rowAt[u.row] = i
			m.Rows = append(m.Rows, reports.MatrixRow{Scenario: s.Name, Expected: s.Expect})
		}
		m.Rows[i].Seeds = append(m.Rows[i].Seeds, j.SeedResult)
		m.Rows[i].Status = reports.RowStatus(m.Rows[i].Seeds)
		if progress != nil {
			p.Result, p.Outcome = &j, out
			progress(p)
		}
	}
	return m, nil
}

// Describe says in one line whether a run reproduced the row's documented
// failure mode, for a person: "single-failover: reproduced — invalid:
// double grant as documented (first anomaly at 3.42 s; fault f1 …)".
func Describe(s Scenario, j Judgement) string {
	var b strings.Builder
	b.WriteString(s.Name + ": ")
	documented := s.Expect.Text
	if documented == "" {
		documented = s.Expect.String()
	}
	switch {
	case j.Error != "":
		fmt.Fprintf(&b, "the run failed — %s", j.Error)
	case j.Matched && j.Comparison.FirstAnomaly >= 0:
		fmt.Fprintf(&b, "reproduced — %s as documented (first anomaly at %.2f s", documented, float64(j.Comparison.FirstAnomaly)/1e9)
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
