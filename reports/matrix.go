package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// WriteMatrixJSON writes matrix.json.
func WriteMatrixJSON(path string, m matrix.Matrix) error {
	if err := m.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(m.WithStatus(), "", "  ")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// WriteMatrixJUnit writes matrix-junit.xml: one test suite per row, one
// test case per seed, failing when the seed did not match the expectation
// and erroring when the run itself failed.
func WriteMatrixJUnit(path string, m matrix.Matrix) error {
	var suites []junitSuite
	var total time.Duration
	for _, r := range m.Rows {
		name := r.Scenario
		if len(m.Servers()) > 1 || r.ServerName() != "redis" {
			name += " on " + r.ServerName()
		}
		suite := junitSuite{Name: name, Properties: []junitProperty{{"expected", r.Expected.String()}, {"server", r.ServerName()}, {"status", string(matrix.RowStatus(r.Seeds))}}}
		var rowTime time.Duration
		for _, s := range r.Seeds {
			rowTime += s.Elapsed
			tc := junitCase{Name: fmt.Sprintf("seed %d", s.Seed), Classname: "tumbler.matrix." + r.Scenario, Time: junitTime(s.Elapsed)}
			out := fmt.Sprintf("observed %s", s.Observed)
			if s.FirstAnomaly >= 0 {
				out += ", first anomaly at " + secs(s.FirstAnomaly)
			}
			if s.ReportDir != "" {
				out += "\nreport: " + s.ReportDir
			}
			switch {
			case s.Error != "":
				tc.Error = &junitProblem{Message: s.Error, Type: "harness"}
			case !s.Matched:
				tc.Failure = &junitProblem{Message: fmt.Sprintf("expected %s, observed %s", r.Expected, s.Observed), Type: "not-reproduced", Text: out}
			}
			tc.SystemOut = out
			suite.add(tc)
		}
		suite.Time = junitTime(rowTime)
		total += rowTime
		suites = append(suites, suite)
	}
	var buf bytes.Buffer
	if err := writeJUnitSuites(&buf, "tumbler matrix", suites, total); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// WriteMatrixTable renders the matrix for a terminal: per row the
// expectation, the verdict observed on each seed (a mismatch marked "!",
// a failed run "ERR"), the range of times to the first anomaly, the slowest
// run and the status with how many seeds matched.
//
// A matrix of several servers (tumbler matrix --server redis,valkey) has
// a column per server instead, each with the seeds' verdicts, the first
// anomalies, the slowest run and the status, and a last column marking the
// rows whose observed verdicts differ between the servers.
func WriteMatrixTable(w io.Writer, m matrix.Matrix) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	servers := m.Servers()
	if len(servers) > 1 {
		return writeServerTable(w, tw, m, servers)
	}
	if len(servers) == 1 && servers[0] != "redis" {
		fmt.Fprintf(w, "server: %s\n", servers[0])
	}
	fmt.Fprintln(tw, "SCENARIO\tEXPECTED\tOBSERVED PER SEED\tFIRST ANOMALY\tSLOWEST\tSTATUS")
	for _, r := range m.Rows {
		c := summarize(r, m.SeedsPerRow)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Scenario, r.Expected, c.cells, c.first, c.slowest, c.status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "val/inv/unk: observed verdict per seed; !: did not match the expectation; ERR: the run failed.")
	writeRefused(w, m)
	return err
}

func writeRefused(w io.Writer, m matrix.Matrix) {
	for _, r := range m.Refused {
		fmt.Fprintf(w, "refused: %s\n", r.Reason)
	}
}

// rowSummary is a row's seeds as the table shows them.
type rowSummary struct {
	cells, first, slowest, status string
	observed                      []checker.Verdict
}

func summarize(r matrix.Row, seedsPerRow int) rowSummary {
	cells := make([]string, 0, len(r.Seeds))
	var first []int64
	var slowest time.Duration
	var observed []checker.Verdict
	matched := 0
	for _, s := range r.Seeds {
		slowest = max(slowest, s.Elapsed)
		cell := "ERR"
		if s.Error == "" {
			cell = shortVerdict(s.Observed)
			if !slices.Contains(observed, s.Observed) {
				observed = append(observed, s.Observed)
			}
			if !s.Matched {
				cell += "!"
			}
		}
		if s.Matched {
			matched++
		}
		if s.FirstAnomaly >= 0 {
			first = append(first, s.FirstAnomaly)
		}
		cells = append(cells, cell)
	}
	firstCol := "-"
	if len(first) > 0 {
		lo, hi := slices.Min(first), slices.Max(first)
		firstCol = fmt.Sprintf("%.2fs", float64(lo)/1e9)
		if hi != lo {
			firstCol += fmt.Sprintf("–%.2fs", float64(hi)/1e9)
		}
	}
	slices.Sort(observed)
	want := max(seedsPerRow, len(r.Seeds))
	return rowSummary{cells: strings.Join(cells, " "), first: firstCol, slowest: dur(slowest),
		status: fmt.Sprintf("%s (%d/%d)", matrix.RowStatus(r.Seeds), matched, want), observed: observed}
}

func writeServerTable(w io.Writer, tw *tabwriter.Writer, m matrix.Matrix, servers []string) error {
	header := []string{"SCENARIO", "EXPECTED"}
	for _, s := range servers {
		header = append(header, strings.ToUpper(s))
	}
	fmt.Fprintln(tw, strings.Join(append(header, "DIFFERS"), "\t"))
	var order []string
	cells := map[string]map[string]rowSummary{}
	expected := map[string]outcome.Expectation{}
	for _, r := range m.Rows {
		if cells[r.Scenario] == nil {
			order = append(order, r.Scenario)
			cells[r.Scenario] = map[string]rowSummary{}
			expected[r.Scenario] = r.Expected
		}
		cells[r.Scenario][r.ServerName()] = summarize(r, m.SeedsPerRow)
	}
	for _, name := range order {
		line := []string{name, expected[name].String()}
		differs := ""
		var ref []checker.Verdict
		for i, srv := range servers {
			c, ok := cells[name][srv]
			if !ok {
				line = append(line, "(not run)")
				continue
			}
			line = append(line, fmt.Sprintf("%s  %s  %s  %s", c.cells, c.first, c.slowest, c.status))
			if i == 0 {
				ref = c.observed
			} else if !slices.Equal(ref, c.observed) {
				differs = "yes"
			}
		}
		fmt.Fprintln(tw, strings.Join(append(line, differs), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "per server: observed verdict per seed (val/inv/unk; !: did not match; ERR: the run failed), first anomaly, slowest run, status. DIFFERS: the servers gave different verdicts.")
	writeRefused(w, m)
	return err
}

func shortVerdict(v checker.Verdict) string {
	switch v {
	case checker.Valid:
		return "val"
	case checker.Invalid:
		return "inv"
	case checker.Unknown:
		return "unk"
	}
	return "?"
}
