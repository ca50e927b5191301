package matrix

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
)

// Matrix is the verdict of catalog rows on several seeds: matrix.json.
type Matrix struct {
	// Shard is the part of the matrix this file holds; nil for a whole
	// matrix (as Merge returns).
	Shard *Shard `json:"shard,omitempty"`
	// SeedsPerRow is how many seeds each row is meant to run (--seeds N).
	SeedsPerRow int   `json:"seeds_per_row"`
	Rows        []Row `json:"rows"`
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

// Row is one catalog row across seeds, on one server.
type Row struct {
	Scenario string `json:"scenario"`
	// Server is the software the row ran on ("redis", "valkey"); empty in
	// matrices written before servers were a column, meaning redis.
	Server   string              `json:"server,omitempty"`
	Expected outcome.Expectation `json:"expected"`
	Seeds    []SeedResult        `json:"seeds"`
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
		return Shard{}, fmt.Errorf("matrix: shard %q: want i/n, such as 2/3", s)
	}
	sh := Shard{i, n}
	return sh, sh.Validate()
}

// Validate reports an impossible shard.
func (s Shard) Validate() error {
	if s.Count < 1 || s.Index < 1 || s.Index > s.Count {
		return fmt.Errorf("matrix: shard %s: want 1 ≤ i ≤ n", s)
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
		return fmt.Errorf("matrix: seeds_per_row %d is negative", m.SeedsPerRow)
	}
	seen := map[string]bool{}
	for _, r := range m.Rows {
		if r.Scenario == "" {
			return errors.New("matrix: a row has no scenario name")
		}
		if seen[r.key()] {
			return fmt.Errorf("matrix: scenario %q on %s is listed twice", r.Scenario, r.ServerName())
		}
		seen[r.key()] = true
		if err := r.Expected.Validate(); err != nil {
			return fmt.Errorf("matrix: scenario %q: %w", r.Scenario, err)
		}
		seeds := map[int64]bool{}
		for _, s := range r.Seeds {
			if seeds[s.Seed] {
				return fmt.Errorf("matrix: scenario %q: seed %d is listed twice", r.Scenario, s.Seed)
			}
			seeds[s.Seed] = true
		}
	}
	return nil
}

// ServerName is the row's server with the default filled in.
func (r Row) ServerName() string {
	if r.Server == "" {
		return "redis"
	}
	return r.Server
}

// key tells a row apart from the same scenario on another server.
func (r Row) key() string { return r.Scenario + "@" + r.ServerName() }

// Servers are the servers the matrix's rows ran on, in order of first
// appearance.
func (m Matrix) Servers() []string {
	var out []string
	for _, r := range m.Rows {
		if !slices.Contains(out, r.ServerName()) {
			out = append(out, r.ServerName())
		}
	}
	return out
}

// WithStatus returns the matrix with every row's Status recomputed.
func (m Matrix) WithStatus() Matrix {
	m.Rows = slices.Clone(m.Rows)
	for i := range m.Rows {
		m.Rows[i].Status = RowStatus(m.Rows[i].Seeds)
	}
	return m
}

// Read reads a matrix.json and checks it (Matrix.Validate).
func Read(path string) (*Matrix, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
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
	m = m.WithStatus()
	return &m, nil
}

// Merge joins the matrix.json files of the shards of one matrix into
// the whole matrix. It refuses shards that do not fit together: different
// shard counts or seeds per row, the same shard twice, a shard missing, a
// scenario expected differently in two files, or the same scenario and seed
// in two files. Rows keep the order of the shards (by index), seeds are
// sorted.
func Merge(files ...string) (*Matrix, error) {
	if len(files) == 0 {
		return nil, errors.New("matrix: merge: no matrix files given")
	}
	type part struct {
		path string
		m    *Matrix
	}
	var parts []part
	for _, f := range files {
		m, err := Read(f)
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
			return nil, fmt.Errorf("matrix: merge: %s is shard %s but %s is shard %s: not shards of one matrix",
				first.path, first.m.Shard, p.path, p.m.Shard)
		}
		if p.m.SeedsPerRow != first.m.SeedsPerRow {
			return nil, fmt.Errorf("matrix: merge: %s runs %d seeds per row but %s runs %d",
				first.path, first.m.SeedsPerRow, p.path, p.m.SeedsPerRow)
		}
		if other, dup := byIndex[p.m.Shard.Index]; dup {
			return nil, fmt.Errorf("matrix: merge: %s and %s are both shard %s", other, p.path, p.m.Shard)
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
		return nil, fmt.Errorf("matrix: merge: shard %s missing", strings.Join(missing, ", "))
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
				out.Rows = append(out.Rows, Row{Scenario: r.Scenario, Server: r.Server, Expected: r.Expected})
			} else if out.Rows[i].Expected != r.Expected {
				return nil, fmt.Errorf("matrix: merge: scenario %q: %s expects %s but %s expects %s",
					r.Scenario, rowFrom[k], out.Rows[i].Expected, p.path, r.Expected)
			}
			for _, s := range r.Seeds {
				if other, dup := seedFrom[k][s.Seed]; dup {
					return nil, fmt.Errorf("matrix: merge: scenario %q on %s seed %d is in both %s and %s: overlapping shards",
						r.Scenario, r.ServerName(), s.Seed, other, p.path)
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
	merged := out.WithStatus()
	return &merged, nil
}
