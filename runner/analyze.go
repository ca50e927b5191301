package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/reports"
)

// Analyze checks a stored run again — the plan.json and history.jsonl in
// dir, the directory of an earlier Run, finished, interrupted or killed —
// and rewrites the report in dir through the same check and report path as
// Run. What the earlier report said about the run (when it started, how
// long it took, the command, a catalog row's expectation and source) is
// kept unless opts sets it; Options.Store and Status are not used.
//
// A run without results.json never finished (it was killed), so its report
// says it was interrupted. When the history's last line is incomplete, as
// when the run was killed in the middle of a write, Analyze checks the
// complete lines and returns the outcome together with the
// *history.TruncatedError (errors.As), the convention of history.Decode.
// An error wrapping ErrPlan is bad input: dir is no run directory, its
// plan is invalid, or its history is malformed (the report then says
// why it could not be checked).
func Analyze(dir string, opts Options) (*Outcome, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a run directory", ErrPlan, dir)
	}
	planPath := filepath.Join(dir, reports.PlanFile)
	planInfo, err := os.Stat(planPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a run directory: %w", ErrPlan, dir, err)
	}
	plan, err := LoadPlan(planPath)
	if err != nil {
		return nil, err
	}
	plan = plan.withDefaults()
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", planPath, err)
	}
	histPath := filepath.Join(dir, reports.HistoryFile)
	histInfo, err := os.Stat(histPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: no history to check (the run died before it started?): %w", ErrPlan, dir, err)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	r := &run{plan: plan, opts: opts, log: opts.Log, dir: dir, logs: clusterLogs(dir)}
	prev, err := readResults(filepath.Join(dir, reports.ResultsFile))
	switch {
	case err != nil:
		opts.Log.Warn("earlier results unreadable; analyzing without them", "err", err)
		fallthrough
	case prev == nil:
		// Killed before it could write its report: plan.json was its first
		// write and history.jsonl its last.
		r.started = planInfo.ModTime()
		r.began = time.Now().Add(-histInfo.ModTime().Sub(r.started))
		r.interrupted = true
	default:
		r.started = prev.Started
		// Keep the run's own duration: Elapsed is measured from began.
		r.began = time.Now().Add(-prev.Elapsed)
		r.interrupted = prev.Interrupted
		if r.opts.Command == "" {
			r.opts.Command = prev.Command
		}
		if r.opts.Source == "" {
			r.opts.Source = prev.Source
		}
		if r.opts.Expected == nil && prev.Expected != nil {
			e := prev.Expected.Expected
			r.opts.Expected = &e
		}
	}

	ops, herr := history.ReadFile(histPath)
	var truncated *history.TruncatedError
	var checkErr string
	switch {
	case herr == nil:
	case errors.As(herr, &truncated):
		r.interrupted = true
		herr = truncated
	default:
		checkErr = fmt.Sprintf("%s: %v", reports.HistoryFile, herr)
		herr = fmt.Errorf("%w: %s: %w", ErrPlan, histPath, herr)
	}
	r.ops = ops
	return r.checkAndReport(nil, checkErr), herr
}

// readResults reads an earlier results.json; nil without one.
func readResults(path string) (*reports.Results, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}

// clusterLogs finds the Redis logs a run's cluster left in dir/cluster
// (one directory per process, named after it, and toxiproxy.log), so the
// rewritten report keeps them.
func clusterLogs(dir string) map[string]string {
	logs := map[string]string{}
	root := filepath.Join(dir, "cluster")
	if _, err := os.Stat(filepath.Join(root, "toxiproxy.log")); err == nil {
		logs["toxiproxy"] = filepath.Join(root, "toxiproxy.log")
	}
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.log"))
	for _, f := range files {
		logs[filepath.Base(filepath.Dir(f))] = f
	}
	return logs
}
