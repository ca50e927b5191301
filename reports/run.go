package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/outcome"
)

// Run is everything the run engine knows at the end of a run.
type Run struct {
	// Name of the plan or catalog row; Description says what it does.
	Name, Description string
	// Source is where the failure mode is documented (catalog rows).
	Source  string
	Seed    int64
	Started time.Time
	Elapsed time.Duration
	// Command replays this run exactly ("tumbler run --plan <dir>/plan.json …").
	Command string
	// Plan is plan.json as written (shown on the index, and kept in
	// results.json when it is valid JSON).
	Plan json.RawMessage
	// Params are shown at the top, in order (topology, lock, workload,
	// clients, TTL, faults…).
	Params []Param
	TTL    time.Duration
	Ops    []history.Op
	// Check is the configuration the history was checked with: the
	// timeline draws the holds the checker computes under it.
	Check checker.Config
	// Result is nil when the run was not checked; CheckError then says why
	// (the history broke the contract, the run died before the check…).
	Result     *checker.Result
	CheckError string
	// Judgement is the run engine's verdict, exit code and, for a catalog
	// row, reproduction: every file shows it as given.
	Judgement outcome.Judgement
	// Logs maps a node's name to the path of its Redis log.
	Logs map[string]string
	// Interrupted: the run was stopped (Ctrl-C, killed) and the report
	// covers what was recorded until then.
	Interrupted bool
	// Coverage is which dangerous windows the run reached (coverage.json),
	// nil when nothing was judged.
	Coverage *coverage.Run
}

// Param is one parameter of the run, as shown to people.
type Param struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Files says what Write left in the directory.
type Files struct {
	Dir string
	// Written lists the files written, relative to Dir, in the order
	// written (index.html last).
	Written []string
	// NotWritten maps a file that is not there to the reason: a checker
	// skipped, a log that could not be copied, a generator that failed.
	NotWritten map[string]string
}

// Index is the path of the report's index.html.
func (f Files) Index() string { return filepath.Join(f.Dir, IndexFile) }

// Has reports whether name (relative to Dir) was written.
func (f Files) Has(name string) bool { return slices.Contains(f.Written, name) }

// The files of a report directory.
const (
	IndexFile           = "index.html"
	ResultsFile         = "results.json"
	TimelineFile        = "timeline.svg"
	LatencyFile         = "latency.svg"
	ThroughputFile      = "throughput.svg"
	LinearizabilityFile = "linearizability.html"
	JUnitFile           = "junit.xml"
	LogsDir             = "logs"
	// PlanFile and HistoryFile are written by the run engine; the report
	// links to them.
	PlanFile    = "plan.json"
	HistoryFile = "history.jsonl"
)

// Write renders the report of r into dir, which must exist. Every file is
// generated on its own: the error joins the failures (a file that could not
// be generated, a log that could not be copied), and whatever could be
// written is, index.html always unless the directory itself is unwritable.
// Files skipped on purpose (linearizability.html when the checker did not
// run) are in Files.NotWritten without an error.
func Write(dir string, r Run) (Files, error) {
	files := Files{Dir: dir, NotWritten: map[string]string{}}
	if st, err := os.Stat(dir); err != nil {
		return files, fmt.Errorf("reports: %w", err)
	} else if !st.IsDir() {
		return files, fmt.Errorf("reports: %s is not a directory", dir)
	}
	if r.Result == nil && r.CheckError == "" {
		r.CheckError = "the run ended before its history was checked"
	}
	v := newView(r)
	var errs []error
	gen := func(name string, fn func(path string) error) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := safely(func() error { return fn(path) }); err != nil {
			var s skip
			if errors.As(err, &s) {
				files.NotWritten[name] = s.reason
				return
			}
			files.NotWritten[name] = err.Error()
			errs = append(errs, fmt.Errorf("reports: %s: %w", name, err))
			return
		}
		files.Written = append(files.Written, name)
	}
	names := logNames(r.Logs)
	for _, node := range sortedKeys(r.Logs) {
		gen(names[node], func(path string) error { return copyLog(r.Logs[node], path) })
	}
	gen(TimelineFile, func(path string) error { return writeFileWith(path, v.writeTimeline) })
	gen(LatencyFile, v.writeLatencyPlot)
	gen(ThroughputFile, v.writeThroughputPlot)
	gen(LinearizabilityFile, func(path string) error { return writeLinearization(r.Result, path) })
	gen(JUnitFile, func(path string) error {
		return writeFileWith(path, func(w io.Writer) error { return WriteJUnit(w, r) })
	})
	gen(CoverageFile, func(path string) error {
		if r.Coverage == nil {
			return skip{"the run recorded no history, so no window was judged"}
		}
		return writeFileWith(path, func(w io.Writer) error { return writeCoverage(w, r.Coverage) })
	})
	gen(ResultsFile, func(path string) error {
		return writeFileWith(path, func(w io.Writer) error { return writeResults(w, r) })
	})
	gen(IndexFile, func(path string) error {
		return writeFileWith(path, func(w io.Writer) error { return v.writeIndex(w, files) })
	})
	return files, errors.Join(errs...)
}

// skip is a file left out on purpose.
type skip struct{ reason string }

func (s skip) Error() string { return s.reason }

// safely turns a panic of a generator into its error: a bug in one plot
// must not cost the index of a long run.
func safely(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v\n%s", p, debug.Stack())
		}
	}()
	return fn()
}

func writeFileWith(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeLinearization(res *checker.Result, path string) error {
	if res == nil {
		return skip{"the run was not checked"}
	}
	c, ok := res.Checker(checker.Linearizability)
	switch {
	case !ok:
		return skip{"the linearizability checker did not run"}
	case c.Skipped:
		return skip{"the linearizability checker was skipped: " + c.Reason}
	case c.Verdict == checker.Unknown:
		return skip{"the linearizability checker could not decide (" + c.Reason + "); its page would not either"}
	case c.Stats["operations"] > checker.VisualMaxOps:
		return skip{fmt.Sprintf("%d lock operations: too many for porcupine's page (limit %d)", c.Stats["operations"], checker.VisualMaxOps)}
	}
	return res.WriteLinearizationHTMLFile(path)
}

// logNames says where each node's log is copied: logs/<node>.log, the
// node's name made safe for a file name (and numbered if two names become
// one).
func logNames(logs map[string]string) map[string]string {
	names := map[string]string{}
	used := map[string]bool{}
	for _, node := range sortedKeys(logs) {
		base := safeName(node)
		name := base
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		used[name] = true
		names[node] = LogsDir + "/" + name + ".log"
	}
	return names
}

func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || strings.Trim(b.String(), ".") == "" {
		return "node"
	}
	return b.String()
}

func copyLog(src, dst string) error {
	if src == "" {
		return errors.New("no log path given")
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// secs renders a history time: "4.210 s".
func secs(ns int64) string { return fmt.Sprintf("%.3f s", history.Seconds(ns)) }

// dur renders a span for people: "690ms", "1.5s".
func dur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}
