package matrix

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
)

var (
	expDouble = outcome.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant, Text: "invalid: double grant"}
	expValid  = outcome.Expectation{Verdict: checker.Valid}
)

func seed(s int64, observed checker.Verdict, matched bool, first int64) SeedResult {
	return SeedResult{Seed: s, Observed: observed, Matched: matched, FirstAnomaly: first, Elapsed: time.Duration(s) * time.Second, ReportDir: "runs/x/" + string(rune('0'+s))}
}

// writeShard writes m as matrix.json holds it (reports.WriteMatrixJSON
// renders it so).
func writeShard(t *testing.T, dir, name string, m Matrix) string {
	t.Helper()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(m.WithStatus(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRowStatus(t *testing.T) {
	for _, tc := range []struct {
		seeds []SeedResult
		want  Status
	}{
		{nil, Empty},
		{[]SeedResult{seed(1, checker.Invalid, true, 5), seed(2, checker.Invalid, true, 7)}, Holds},
		{[]SeedResult{seed(1, checker.Invalid, true, 5), seed(2, checker.Valid, false, -1)}, Broken},
		{[]SeedResult{seed(1, checker.Invalid, true, 5), {Seed: 2, Error: "redis-server did not start", FirstAnomaly: -1}}, Errored},
		{[]SeedResult{{Seed: 2, Error: "boom", FirstAnomaly: -1}, seed(3, checker.Valid, false, -1)}, Broken},
	} {
		if got := RowStatus(tc.seeds); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.seeds, got, tc.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("2/3"); err != nil || s != (Shard{2, 3}) {
		t.Errorf("2/3: %v %v", s, err)
	}
	for _, bad := range []string{"", "3", "0/3", "4/3", "a/b", "1/0", "-1/2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q parses", bad)
		}
	}
	// Round robin: every unit in exactly one shard.
	for k := range 10 {
		n := 0
		for i := 1; i <= 3; i++ {
			if (Shard{i, 3}).Owns(k) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("unit %d is in %d shards", k, n)
		}
	}
}

// Shards split by row and by seed merge into one matrix; shards that do
// not fit together are refused with an error naming the problem.
func TestMerge(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, "a.json", Matrix{Shard: &Shard{1, 2}, SeedsPerRow: 3, Rows: []Row{
		{Scenario: "single-failover", Expected: expDouble, Seeds: []SeedResult{seed(3, checker.Invalid, true, 3e9), seed(1, checker.Invalid, true, 2e9)}},
		{Scenario: "single-baseline", Expected: expValid, Seeds: []SeedResult{seed(1, checker.Valid, true, -1), seed(2, checker.Valid, true, -1), seed(3, checker.Valid, true, -1)}},
	}})
	b := writeShard(t, dir, "b.json", Matrix{Shard: &Shard{2, 2}, SeedsPerRow: 3, Rows: []Row{
		{Scenario: "single-failover", Expected: expDouble, Seeds: []SeedResult{seed(2, checker.Valid, false, -1)}},
		{Scenario: "redlock-restart-empty", Expected: expDouble, Seeds: []SeedResult{seed(1, checker.Invalid, true, 1e9), {Seed: 2, Error: "redis-server exited", FirstAnomaly: -1}}},
	}})
	m, err := Merge(b, a)
	if err != nil {
		t.Fatal(err)
	}
	if m.Shard != nil || m.SeedsPerRow != 3 || len(m.Rows) != 3 {
		t.Fatalf("merged: %+v", m)
	}
	var names []string
	for _, r := range m.Rows {
		names = append(names, r.Scenario)
	}
	if !slices.Equal(names, []string{"single-failover", "single-baseline", "redlock-restart-empty"}) {
		t.Errorf("row order %v", names)
	}
	var seeds []int64
	for _, s := range m.Rows[0].Seeds {
		seeds = append(seeds, s.Seed)
	}
	if !slices.Equal(seeds, []int64{1, 2, 3}) || m.Rows[0].Status != Broken || m.Rows[1].Status != Holds || m.Rows[2].Status != Errored {
		t.Errorf("rows: %+v", m.Rows)
	}

	// Written and read back, it is the same matrix.
	whole := writeShard(t, dir, "whole.json", *m)
	back, err := Read(whole)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(m)
	j2, _ := json.Marshal(back)
	if !bytes.Equal(j1, j2) {
		t.Errorf("round trip changed the matrix:\n%s\n%s", j1, j2)
	}

	bad := func(name string, m Matrix) string { return writeShard(t, dir, name, m) }
	overlap := bad("overlap.json", Matrix{Shard: &Shard{2, 2}, SeedsPerRow: 3, Rows: []Row{
		{Scenario: "single-failover", Expected: expDouble, Seeds: []SeedResult{seed(3, checker.Invalid, true, 1)}}}})
	otherExp := bad("exp.json", Matrix{Shard: &Shard{2, 2}, SeedsPerRow: 3, Rows: []Row{
		{Scenario: "single-baseline", Expected: expDouble, Seeds: []SeedResult{seed(9, checker.Invalid, true, 1)}}}})
	otherCount := bad("count.json", Matrix{Shard: &Shard{2, 3}, SeedsPerRow: 3})
	otherSeeds := bad("seeds.json", Matrix{Shard: &Shard{2, 2}, SeedsPerRow: 10})
	dupShard := bad("dup.json", Matrix{Shard: &Shard{1, 2}, SeedsPerRow: 3})
	notJSON := filepath.Join(dir, "garbage.json")
	os.WriteFile(notJSON, []byte("{\"rows\": [}"), 0o644)
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{a, overlap}, "seed 3 is in both"},
		{[]string{a, otherExp}, `scenario "single-baseline"`},
		{[]string{a, otherCount}, "not shards of one matrix"},
		{[]string{a, otherSeeds}, "runs 3 seeds per row but"},
		{[]string{a, dupShard}, "are both shard 1/2"},
		{[]string{a}, "shard 2/2 missing"},
		{[]string{a, notJSON}, "is not a matrix.json"},
		{[]string{a, filepath.Join(dir, "none.json")}, "no such file"},
		{nil, "no matrix files"},
	} {
		_, err := Merge(tc.files...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("merge %v: error %v, want %q", tc.files, err, tc.want)
		}
	}

	// A matrix that contradicts itself is refused.
	if err := (&Matrix{Rows: []Row{{Scenario: "a", Expected: expValid}, {Scenario: "a", Expected: expValid}}}).Validate(); err == nil {
		t.Error("a scenario listed twice validates")
	}
	if err := (&Matrix{Rows: []Row{{Scenario: "a", Expected: outcome.Expectation{Verdict: "perhaps"}}}}).Validate(); err == nil {
		t.Error("an impossible expectation validates")
	}
}
