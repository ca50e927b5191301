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
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
)

// Analyze checks a stored run again — the plan.json and history.jsonl in
// dir, the directory of an earlier Run, finished, interrupted or killed —
// through the same check, judgement and report as Run, and replaces the
// report in dir with the new one. What the earlier report said about the
// run (when it started, how long it took, the command, a catalog row's
// expectation and source) is kept unless opts sets it;
// Options.Linearizability replaces the plan's bounds of the linearizability
// checker where set; Options.Status is not used. The index.html of
// Options.Store, or without it of the store dir is in (two levels up) if
// that has one, is rewritten to show the new verdict.
//
// A stored run is never destroyed: Analyze reads and checks everything
// before it writes anything, so when it refuses its input — dir is no run
// directory (ErrInput), its plan is invalid (ErrPlan), its history is
// malformed or breaks the checkers' contract (ErrHistory, naming the line
// and the op) — it returns the error and no outcome, and dir is left
// exactly as it was. After a successful check the new report is written
// beside the old one (in a directory inside dir) and moved over it file by
// file only once it is complete; report files the new report does not
// have are removed then. When it cannot be written, the old report stays
// and Analyze returns the error (a failure of the harness) and no outcome.
//
// A run without results.json never finished (it was killed), so its report
// says it was interrupted. When the history's last line is incomplete, as
// when the run was killed in the middle of a write, Analyze checks the
// complete lines and returns the outcome together with the
// *history.TruncatedError (errors.As), the convention of history.Decode.
func Analyze(dir string, opts Options) (*Outcome, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a run directory", outcome.ErrInput, dir)
	}
	planPath := filepath.Join(dir, reports.PlanFile)
	planInfo, err := os.Stat(planPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a run directory (it has no %s): %w", outcome.ErrInput, dir, reports.PlanFile, err)
	}
	plan, err := LoadPlan(planPath)
	if err != nil {
		return nil, err
	}
	if plan, err = plan.Normalized(); err != nil {
		return nil, fmt.Errorf("%s: %w", planPath, err)
	}
	if err := plan.overrideLinearizability(opts.Linearizability); err != nil {
		return nil, err
	}
	histPath := filepath.Join(dir, reports.HistoryFile)
	histInfo, err := os.Stat(histPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %s has no %s to check (the run died before it started?): %w", ErrHistory, dir, reports.HistoryFile, err)
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
		r.elapsed = max(histInfo.ModTime().Sub(r.started), time.Nanosecond)
		r.interrupted = true
	default:
		r.started = prev.Started
		r.elapsed = max(prev.Elapsed, time.Nanosecond)
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
	r.began = r.started

	ops, herr := ReadHistory(histPath)
	var truncated *history.TruncatedError
	var bad *history.LineError
	switch {
	case herr == nil:
	case errors.As(herr, &truncated):
		r.interrupted = true
		herr = truncated
	case errors.As(herr, &bad):
		return nil, fmt.Errorf("%w: %s line %d: %s", ErrHistory, histPath, bad.Line, bad.Reason)
	default:
		return nil, fmt.Errorf("%w: %s: %w", ErrHistory, histPath, herr)
	}
	r.ops = ops
	if err := r.check(); err != nil {
		return nil, historyError(histPath, ops, err)
	}
	out := r.outcome(nil)
	files, err := r.replaceReport(out)
	if err != nil {
		// The judgement above is of a run whose report stays the old one.
		return nil, err
	}
	out.Report = files
	// The store's list of runs shows the new verdict: opts.Store's, or that
	// of the store dir is in (Store/<name>/<time>) if it keeps one.
	if store := filepath.Dir(filepath.Dir(filepath.Clean(dir))); opts.Store != "" {
		r.indexStore(opts.Store)
	} else if reports.IsStoreIndexed(store) {
		r.indexStore(store)
	}
	return out, herr
}

// historyError is the error of a history the checkers refused: ErrHistory
// naming the file's line and the op, or, for anything but the history, a
// failure of the harness.
func historyError(path string, ops []history.Op, err error) error {
	var he *checker.HistoryError
	if !errors.As(err, &he) {
		return fmt.Errorf("check %s: %w", path, err)
	}
	where := path
	if line, lerr := history.LineOf(path, he.Index); lerr == nil && line > 0 {
		where = fmt.Sprintf("%s line %d", path, line)
	}
	return fmt.Errorf("%w: %s: op %d: %s", ErrHistory, where, he.Index, he.Reason)
}

// replaceReport writes the report of a re-analysis beside the old one, in
// a directory inside r.dir, and only once all of it is written moves it
// over the old one; report files it does not have are removed then. On an
// error the old report is left as it was.
func (r *run) replaceReport(out *Outcome) (reports.Files, error) {
	stage, err := os.MkdirTemp(r.dir, ".analyze-")
	if err != nil {
		return reports.Files{Dir: r.dir}, fmt.Errorf("report: %w", err)
	}
	defer os.RemoveAll(stage)
	// The report links to the run's own files and says whether they are
	// there: show it them.
	for _, name := range []string{reports.PlanFile, reports.HistoryFile} {
		if err := os.Symlink(filepath.Join("..", name), filepath.Join(stage, name)); err != nil {
			return reports.Files{Dir: r.dir}, fmt.Errorf("report: %w", err)
		}
	}
	files, err := r.writeReport(stage, out, "")
	files.Dir = r.dir
	if err != nil {
		return files, fmt.Errorf("the new report could not be written, the old one is kept: %w", err)
	}
	for _, name := range files.Written { // index.html last
		dst := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return files, fmt.Errorf("report: %w", err)
		}
		if err := os.Rename(filepath.Join(stage, filepath.FromSlash(name)), dst); err != nil {
			return files, fmt.Errorf("report: %w", err)
		}
	}
	for name := range files.NotWritten {
		if err := os.Remove(filepath.Join(r.dir, filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return files, fmt.Errorf("report: %w", err)
		}
	}
	return files, nil
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
// (one directory per process, named after it, and toxiproxy.log), or else
// the copies an earlier report made in dir/logs, so the new report keeps
// them.
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
	if len(logs) == 0 {
		// The cluster's directory is gone: keep the report's own copies.
		copies, _ := filepath.Glob(filepath.Join(dir, reports.LogsDir, "*.log"))
		for _, f := range copies {
			logs[strings.TrimSuffix(filepath.Base(f), ".log")] = f
		}
	}
	return logs
}
