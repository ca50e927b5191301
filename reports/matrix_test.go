package reports

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

var (
	expDouble = outcome.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant, Text: "invalid: double grant"}
	expValid  = outcome.Expectation{Verdict: checker.Valid}
)

func writeShard(t *testing.T, dir, name string, m matrix.Matrix) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := WriteMatrixJSON(path, m); err != nil {
		t.Fatal(err)
	}
	return path
}

// seed is a seed result of a row, elapsed s seconds.
func seed(s int64, observed checker.Verdict, matched bool, first int64) matrix.SeedResult {
	return matrix.SeedResult{Seed: s, Observed: observed, Matched: matched, FirstAnomaly: first, Elapsed: time.Duration(s) * time.Second, ReportDir: "runs/x/" + string(rune('0'+s))}
}

// A matrix that contradicts itself is not written; one written is read
// back as it was.
func TestWriteMatrixJSON(t *testing.T) {
	dir := t.TempDir()
	m := matrix.Matrix{SeedsPerRow: 2, Rows: []matrix.Row{{Scenario: "single-failover", Expected: expDouble,
		Seeds: []matrix.SeedResult{seed(1, checker.Invalid, true, 2e9), seed(2, checker.Valid, false, -1)}}}}
	back, err := matrix.Read(writeShard(t, dir, "m.json", m))
	if err != nil || len(back.Rows) != 1 || back.Rows[0].Status != matrix.Broken || len(back.Rows[0].Seeds) != 2 {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if err := WriteMatrixJSON(filepath.Join(dir, "x.json"), matrix.Matrix{Rows: []matrix.Row{{Scenario: "a", Expected: expValid}, {Scenario: "a", Expected: expValid}}}); err == nil {
		t.Error("a scenario listed twice was written")
	}
	if err := WriteMatrixJSON(filepath.Join(dir, "x.json"), matrix.Matrix{Rows: []matrix.Row{{Scenario: "a", Expected: outcome.Expectation{Verdict: "perhaps"}}}}); err == nil {
		t.Error("an impossible expectation was written")
	}
}

func TestMatrixJUnitAndTable(t *testing.T) {
	m := matrix.Matrix{SeedsPerRow: 3, Rows: []matrix.Row{
		{Scenario: "single-failover", Expected: expDouble, Seeds: []matrix.SeedResult{seed(1, checker.Invalid, true, 2e9), seed(2, checker.Valid, false, -1), seed(3, checker.Invalid, true, 3_500_000_000)}},
		{Scenario: "single-baseline", Expected: expValid, Seeds: []matrix.SeedResult{seed(1, checker.Valid, true, -1), {Seed: 2, Error: "redis-server exited", FirstAnomaly: -1}}},
	}}
	path := filepath.Join(t.TempDir(), "matrix-junit.xml")
	if err := WriteMatrixJUnit(path, m); err != nil {
		t.Fatal(err)
	}
	j := parseJUnit(t, path)
	if j.Tests != 5 || j.Fails != 1 || j.Errors != 1 || len(j.Suites) != 2 {
		t.Errorf("junit: %d tests, %d failures, %d errors, %d suites", j.Tests, j.Fails, j.Errors, len(j.Suites))
	}
	for _, c := range j.Suites[0].Cases {
		if (c.Failure != nil) != (c.Name == "seed 2") {
			t.Errorf("case %s failure %v", c.Name, c.Failure)
		}
	}
	var buf bytes.Buffer
	if err := WriteMatrixTable(&buf, m); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	t.Logf("\n%s", out)
	for _, want := range []string{"single-failover", "invalid (double-grant)", "inv val! inv", "2.00s–3.50s", "broken (2/3)", "val ERR", "error (1/3)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

// A matrix over two servers: merged shards keep a row per scenario and
// server, the table has a column per server and marks where the verdicts
// differ, and refused rows are listed.
func TestMatrixPerServer(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, "a.json", matrix.Matrix{Shard: &matrix.Shard{Index: 1, Count: 2}, SeedsPerRow: 2,
		Rows: []matrix.Row{
			{Scenario: "same", Server: "redis", Expected: expDouble, Seeds: []matrix.SeedResult{seed(1, checker.Invalid, true, 5e8)}},
			{Scenario: "same", Server: "valkey", Expected: expDouble, Seeds: []matrix.SeedResult{seed(1, checker.Invalid, true, 6e8)}},
			{Scenario: "apart", Server: "redis", Expected: expValid, Seeds: []matrix.SeedResult{seed(1, checker.Valid, true, -1)}},
			{Scenario: "apart", Server: "valkey", Expected: expValid, Seeds: []matrix.SeedResult{seed(1, checker.Invalid, false, 9e8)}},
		},
		Refused: []matrix.Refused{{Scenario: "clocky", Server: "valkey", Reason: "clocky cannot run on the external provider: no clock hook"}}})
	b := writeShard(t, dir, "b.json", matrix.Matrix{Shard: &matrix.Shard{Index: 2, Count: 2}, SeedsPerRow: 2,
		Rows: []matrix.Row{
			{Scenario: "same", Server: "redis", Expected: expDouble, Seeds: []matrix.SeedResult{seed(2, checker.Invalid, true, 4e8)}},
			{Scenario: "same", Server: "valkey", Expected: expDouble, Seeds: []matrix.SeedResult{seed(2, checker.Invalid, true, 4e8)}},
			{Scenario: "apart", Server: "redis", Expected: expValid, Seeds: []matrix.SeedResult{seed(2, checker.Valid, true, -1)}},
			{Scenario: "apart", Server: "valkey", Expected: expValid, Seeds: []matrix.SeedResult{seed(2, checker.Valid, true, -1)}},
		},
		Refused: []matrix.Refused{{Scenario: "clocky", Server: "valkey", Reason: "clocky cannot run on the external provider: no clock hook"}}})
	m, err := matrix.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 4 || len(m.Refused) != 1 || !slices.Equal(m.Servers(), []string{"redis", "valkey"}) {
		t.Fatalf("merged %d rows, %d refused, servers %v: want 4, 1, [redis valkey]", len(m.Rows), len(m.Refused), m.Servers())
	}
	var buf bytes.Buffer
	if err := WriteMatrixTable(&buf, *m); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if !strings.Contains(lines[0], "REDIS") || !strings.Contains(lines[0], "VALKEY") || !strings.Contains(lines[0], "DIFFERS") {
		t.Fatalf("header %q: want a column per server", lines[0])
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "same ") && strings.HasSuffix(strings.TrimSpace(l), "yes"):
			t.Errorf("row with the same verdicts marked as differing: %q", l)
		case strings.HasPrefix(l, "apart ") && !strings.HasSuffix(strings.TrimSpace(l), "yes"):
			t.Errorf("row with different verdicts not marked: %q", l)
		}
	}
	if !strings.Contains(buf.String(), "refused: clocky cannot run") {
		t.Errorf("refused rows not listed:\n%s", buf.String())
	}
	// The same scenario and seed on two servers is no overlap; on one it is.
	if _, err := matrix.Merge(a, writeShard(t, dir, "c.json", matrix.Matrix{Shard: &matrix.Shard{Index: 2, Count: 2}, SeedsPerRow: 2,
		Rows: []matrix.Row{{Scenario: "same", Server: "valkey", Expected: expDouble, Seeds: []matrix.SeedResult{seed(1, checker.Invalid, true, 1)}}}})); err == nil || !strings.Contains(err.Error(), "valkey seed 1") {
		t.Errorf("overlap on one server: %v", err)
	}
}
