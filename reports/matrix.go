package reports

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
)

// Matrix is the verdict of catalog rows on several seeds: matrix.json.
type Matrix struct {
	// Shard is the part of the matrix this file holds; nil for a whole
	// matrix (as MergeMatrix returns).
	Shard *Shard `json:"shard,omitempty"`
	// SeedsPerRow is how many seeds each row is meant to run (--seeds N).
	SeedsPerRow int         `json:"seeds_per_row"`
	Rows        []MatrixRow `json:"rows"`
	// Refused are the rows the target could not run (an external
	// deployment of another topology, faults its provider cannot take),
	// left out up front.
	Refused []Refused `json:"refused,omitempty"`
}

// Refused is a row left out of a matrix, and why.
type Refused struct {
	Scenario string `json:"scenario"`
	Server   string `json:"server,omitempty"`
	Reason   string `json:"reason"`
}

// MatrixRow is one catalog row across seeds, on one server.
type MatrixRow struct {
	Scenario string `json:"scenario"`
	// Server is the software the row ran on ("redis", "valkey"); empty in
	// matrices written before servers were a column, meaning redis.
	Server   string       `json:"server,omitempty"`
	Expected Expectation  `json:"expected"`
	Seeds    []SeedResult `json:"seeds"`
	// Status summarizes the seeds (see RowStatus); the writers set it.
	Status Status `json:"status"`
}

// SeedResult is one run of a row.
type SeedResult struct {
	Seed     int64           `json:"seed"`
	Observed checker.Verdict `json:"observed"`
	// Matched: the run engine judged the row reproduced
	// (Judgement.Expected.Reproduced, as the run's report says).
	Matched bool `json:"matched"`
	// FirstAnomaly is ns since the run started to the first anomaly of the
	// expected kind, -1 if none (Reproduction.FirstAnomaly).
	FirstAnomaly int64         `json:"first_anomaly_ns"`
	Elapsed      time.Duration `json:"elapsed_ns"`
	ReportDir    string        `json:"report_dir,omitempty"`
	// Error: the run itself failed (the harness, not the lock); Observed
	// is then empty and the seed counts as neither matched nor mismatched.
	Error string `json:"error,omitempty"`
}

// Status of a matrix row.
type Status string

// Row statuses: Holds when every seed matched, Broken when a seed ran and
// did not match, Errored when a seed could not run (and none mismatched),
// Empty without seeds.
const (
	Holds   Status = "holds"
	Broken  Status = "broken"
	Errored Status = "error"
	Empty   Status = "empty"
)

// RowStatus summarizes a row's seeds.
func RowStatus(seeds []SeedResult) Status {
	if len(seeds) == 0 {
		return Empty
	}
	status := Holds
	for _, s := range seeds {
		switch {
		case s.Error != "":
			status = Errored
		case !s.Matched:
			return Broken
		}
	}
	return status
}

// Shard is part i of n of a matrix (1-based, as in --shard 2/3).
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseShard parses "i/n" with 1 ≤ i ≤ n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("reports: shard %q: want i/n, such as 2/3", s)
	}
	sh := Shard{i, n}
	return sh, sh.Validate()
}

// Validate reports an impossible shard.
func (s Shard) Validate() error {
	if s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("reports: shard %s: want 1 ≤ i ≤ n", s)
	}
	return nil
}

// Owns reports whether the k-th unit of work (0-based, in the matrix's
// order) belongs to this shard: units are dealt round robin, so shards
// get the same number of rows (or row×seed runs) within one.
func (s Shard) Owns(k int) bool { return s.Count > 0 && k%s.Count == s.Index-1 }

// Validate reports a matrix that is not self-consistent: a row without a
// name or with an impossible expectation, a scenario listed twice on one
// server, a seed
// twice in one row.
func (m *Matrix) Validate() error {
	if m.Shard != nil {
		if err := m.Shard.Validate(); err != nil {
			return err
		}
	}
	if m.SeedsPerRow < 0 {
		return fmt.Errorf("reports: matrix: seeds_per_row %d is negative", m.SeedsPerRow)
	}
	seen := map[string]bool{}
	for _, r := range m.Rows {
		if r.Scenario == "" {
			return errors.New("reports: matrix: a row has no scenario name")
		}
		if seen[r.key()] {
			return fmt.Errorf("reports: matrix: scenario %q on %s is listed twice", r.Scenario, r.server())
		}
		seen[r.key()] = true
		if err := r.Expected.Validate(); err != nil {
			return fmt.Errorf("reports: matrix: scenario %q: %w", r.Scenario, err)
		}
		seeds := map[int64]bool{}
		for _, s := range r.Seeds {
			if seeds[s.Seed] {
				return fmt.Errorf("reports: matrix: scenario %q: seed %d is listed twice", r.Scenario, s.Seed)
			}
			seeds[s.Seed] = true
		}
	}
	return nil
}

// server is the row's server with the default filled in.
func (r MatrixRow) server() string {
	if r.Server == "" {
		return "redis"
	}
	return r.Server
}

// key tells a row apart from the same scenario on another server.
func (r MatrixRow) key() string { return r.Scenario + "@" + r.server() }

// Servers are the servers the matrix's rows ran on, in order of first
// appearance.
func (m Matrix) Servers() []string {
	var out []string
	for _, r := range m.Rows {
		if !slices.Contains(out, r.server()) {
			out = append(out, r.server())
		}
	}
	return out
}

// withStatus returns the matrix with every row's Status recomputed.
func (m Matrix) withStatus() Matrix {
	m.Rows = slices.Clone(m.Rows)
	for i := range m.Rows {
		m.Rows[i].Status = RowStatus(m.Rows[i].Seeds)
	}
	return m
}

// WriteMatrixJSON writes matrix.json.
func WriteMatrixJSON(path string, m Matrix) error {
	if err := m.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(m.withStatus(), "", "  ")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// ReadMatrixJSON reads a matrix.json and checks it (Matrix.Validate).
func ReadMatrixJSON(path string) (*Matrix, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Matrix
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("reports: %s is not a matrix.json: %w", path, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m = m.withStatus()
	return &m, nil
}

// MergeMatrix joins the matrix.json files of the shards of one matrix into
// the whole matrix. It refuses shards that do not fit together: different
// shard counts or seeds per row, the same shard twice, a shard missing, a
// scenario expected differently in two files, or the same scenario and seed
// in two files. Rows keep the order of the shards (by index), seeds are
// sorted.
func MergeMatrix(files ...string) (*Matrix, error) {
	if len(files) == 0 {
		return nil, errors.New("reports: merge: no matrix files given")
	}
	type part struct {
		path string
		m    *Matrix
	}
	var parts []part
	for _, f := range files {
		m, err := ReadMatrixJSON(f)
		if err != nil {
			return nil, err
		}
		if m.Shard == nil {
			m.Shard = &Shard{1, 1}
		}
		parts = append(parts, part{f, m})
	}
	first := parts[0]
	byIndex := map[int]string{}
	for _, p := range parts {
		if p.m.Shard.Count != first.m.Shard.Count {
			return nil, fmt.Errorf("reports: merge: %s is shard %s but %s is shard %s: not shards of one matrix",
				first.path, first.m.Shard, p.path, p.m.Shard)
		}
		if p.m.SeedsPerRow != first.m.SeedsPerRow {
			return nil, fmt.Errorf("reports: merge: %s runs %d seeds per row but %s runs %d",
				first.path, first.m.SeedsPerRow, p.path, p.m.SeedsPerRow)
		}
		if other, dup := byIndex[p.m.Shard.Index]; dup {
			return nil, fmt.Errorf("reports: merge: %s and %s are both shard %s", other, p.path, p.m.Shard)
		}
		byIndex[p.m.Shard.Index] = p.path
	}
	var missing []string
	for i := 1; i <= first.m.Shard.Count; i++ {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, Shard{i, first.m.Shard.Count}.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("reports: merge: shard %s missing", strings.Join(missing, ", "))
	}
	slices.SortFunc(parts, func(a, b part) int { return cmp.Compare(a.m.Shard.Index, b.m.Shard.Index) })
	out := &Matrix{SeedsPerRow: first.m.SeedsPerRow}
	rowAt := map[string]int{}
	rowFrom := map[string]string{}
	seedFrom := map[string]map[int64]string{}
	for _, p := range parts {
		for _, r := range p.m.Rows {
			k := r.key()
			i, ok := rowAt[k]
			if !ok {
				i = len(out.Rows)
				rowAt[k], rowFrom[k] = i, p.path
				seedFrom[k] = map[int64]string{}
				out.Rows = append(out.Rows, MatrixRow{Scenario: r.Scenario, Server: r.Server, Expected: r.Expected})
			} else if out.Rows[i].Expected != r.Expected {
				return nil, fmt.Errorf("reports: merge: scenario %q: %s expects %s but %s expects %s",
					r.Scenario, rowFrom[k], out.Rows[i].Expected, p.path, r.Expected)
			}
			for _, s := range r.Seeds {
				if other, dup := seedFrom[k][s.Seed]; dup {
					return nil, fmt.Errorf("reports: merge: scenario %q on %s seed %d is in both %s and %s: overlapping shards",
						r.Scenario, r.server(), s.Seed, other, p.path)
				}
				seedFrom[k][s.Seed] = p.path
				out.Rows[i].Seeds = append(out.Rows[i].Seeds, s)
			}
		}
	}
	for i := range out.Rows {
		slices.SortFunc(out.Rows[i].Seeds, func(a, b SeedResult) int { return cmp.Compare(a.Seed, b.Seed) })
	}
	for _, p := range parts {
		for _, r := range p.m.Refused {
			if !slices.Contains(out.Refused, r) {
				out.Refused = append(out.Refused, r)
			}
		}
	}
	merged := out.withStatus()
	return &merged, nil
}

// WriteMatrixJUnit writes matrix-junit.xml: one test suite per row, one
// test case per seed, failing when the seed did not match the expectation
// and erroring when the run itself failed.
func WriteMatrixJUnit(path string, m Matrix) error {
	var suites []junitSuite
	var total time.Duration
	for _, r := range m.Rows {
		name := r.Scenario
		if len(m.Servers()) > 1 || r.server() != "redis" {
			name += " on " + r.server()
		}
		suite := junitSuite{Name: name, Properties: []junitProperty{{"expected", r.Expected.String()}, {"server", r.server()}, {"status", string(RowStatus(r.Seeds))}}}
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
func WriteMatrixTable(w io.Writer, m Matrix) error {
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

func writeRefused(w io.Writer, m Matrix) {
	for _, r := range m.Refused {
		fmt.Fprintf(w, "refused: %s\n", r.Reason)
	}
}

// rowSummary is a row's seeds as the table shows them.
type rowSummary struct {
	cells, first, slowest, status string
	observed                      []checker.Verdict
}

func summarize(r MatrixRow, seedsPerRow int) rowSummary {
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
		status: fmt.Sprintf("%s (%d/%d)", RowStatus(r.Seeds), matched, want), observed: observed}
}

func writeServerTable(w io.Writer, tw *tabwriter.Writer, m Matrix, servers []string) error {
	header := []string{"SCENARIO", "EXPECTED"}
	for _, s := range servers {
		header = append(header, strings.ToUpper(s))
	}
	fmt.Fprintln(tw, strings.Join(append(header, "DIFFERS"), "\t"))
	var order []string
	cells := map[string]map[string]rowSummary{}
	expected := map[string]Expectation{}
	for _, r := range m.Rows {
		if cells[r.Scenario] == nil {
			order = append(order, r.Scenario)
			cells[r.Scenario] = map[string]rowSummary{}
			expected[r.Scenario] = r.Expected
		}
		cells[r.Scenario][r.server()] = summarize(r, m.SeedsPerRow)
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
