package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
)

// TestCatalogValid: every row parses, validates, and is named in the
// catalog's order; every row of tableOrder is present.
func TestCatalogValid(t *testing.T) {
	for _, s := range All() {
		if s.What == "" || s.Source == "" {
			t.Errorf("%s: what and source are required", s.Name)
		}
		if err := s.PlanFor(42).Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	for _, n := range Missing(tableOrder...) {
		t.Errorf("catalog row %s is missing", n)
	}
}

// TestMissingNamesWhatIsNoRow: Missing, with which code that names rows
// checks them, passes the catalog's rows and names a misspelt or renamed
// one.
func TestMissingNamesWhatIsNoRow(t *testing.T) {
	if m := Missing(Names()...); m != nil {
		t.Errorf("Missing(every row) = %v", m)
	}
	if m := Missing("single-failover", "single-failovr", "redlock-restart-empty", "redlock-restart-emtpy"); strings.Join(m, " ") != "single-failovr redlock-restart-emtpy" {
		t.Errorf("Missing = %v, want the two misspelt names", m)
	}
}

func TestGetUnknownListsNames(t *testing.T) {
	_, err := Get("nope")
	if err == nil || !strings.Contains(err.Error(), "single-baseline") {
		t.Fatalf("Get(nope) = %v, want an error listing the rows", err)
	}
}

// TestReadmeListsTheCatalog: the README's catalog table has a line for
// every row, and names no row the catalog lacks; its last column, hunts,
// agrees with the row: a valid row has none ("—"), an invalid row with no
// faults has no fault kinds to hunt with, and an invalid row with faults
// gives "found/hunts" with at least 4 of every 5 hunts finding it.
func TestReadmeListsTheCatalog(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## The catalog\n")
	if !ok {
		t.Fatal("the README has no section \"The catalog\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	hunts, seeds := map[string]string{}, map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			if i := strings.Index(name, "` |"); i > 0 {
				cells := strings.Split(strings.TrimSuffix(line, " |"), " | ")
				hunts[name[:i]] = cells[len(cells)-1]
				seeds[name[:i]] = cells[len(cells)-2]
			}
		}
	}
	measured := catalogSeeds(t)
	for _, n := range Names() {
		cell, ok := hunts[n]
		if !ok {
			t.Errorf("catalog row %s has no line in the README's catalog table", n)
			continue
		}
		if err := checkHuntsCell(mustGet(t, n), cell); err != nil {
			t.Errorf("README, catalog row %s: hunts %q: %v", n, cell, err)
		}
		if seeds[n] != measured[n] || !strings.HasSuffix(seeds[n], "/10") {
			t.Errorf("README, catalog row %s: seeds 1–10 %q, docs/catalog.md measured %q", n, seeds[n], measured[n])
		}
	}
	for _, n := range Missing(slices.Collect(maps.Keys(hunts))...) {
		t.Errorf("the README's catalog table names %s, which is no catalog row", n)
	}
}

// catalogSeeds reads docs/catalog.md's "seeds 1–10" column, by row: the
// README's column repeats it.
func catalogSeeds(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../docs/catalog.md")
	if err != nil {
		t.Fatal(err)
	}
	col, out := -1, map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.TrimSuffix(line, " |"), " | ")
		switch {
		case strings.HasPrefix(line, "| row |"):
			col = slices.Index(cells, "seeds 1–10")
		case col > 0 && strings.HasPrefix(line, "| `") && len(cells) > col:
			name, _, _ := strings.Cut(strings.TrimPrefix(cells[0], "| `"), "`")
			out[name] = cells[col]
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/catalog.md: no seeds 1–10 column read")
	}
	return out
}

func mustGet(t *testing.T, name string) Scenario {
	t.Helper()
	s, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkHuntsCell says what is wrong with the README's hunts cell of s.
// namedHuntGap: docs/measurements.md's "Hunt gaps" section names row.
func namedHuntGap(row string) error {
	b, err := os.ReadFile("../docs/measurements.md")
	if err != nil {
		return err
	}
	_, section, ok := strings.Cut(string(b), "\n## Hunt gaps\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok || !strings.Contains(section, "`"+row+"`") {
		return fmt.Errorf("a hunt gap that docs/measurements.md's \"Hunt gaps\" does not name")
	}
	return nil
}

func checkHuntsCell(s Scenario, cell string) error {
	switch {
	case s.Expect.Verdict != checker.Invalid:
		if cell != "—" {
			return fmt.Errorf("a %s row has no hunts: want —", s.Expect.Verdict)
		}
	case len(s.Plan.Faults) == 0:
		if cell != "no faults to draw" {
			return errors.New("an invalid row without faults: want \"no faults to draw\"")
		}
	default:
		// A row the hunts do not reach says so — "0/2, a hunt gap" — and
		// docs/measurements.md's "Hunt gaps" names it with why; that is a
		// measured shortfall of the hunts, not a pass.
		var found, of int
		counts, gap := strings.CutSuffix(cell, ", a hunt gap")
		if _, err := fmt.Sscanf(counts, "%d/%d", &found, &of); err != nil || fmt.Sprintf("%d/%d", found, of) != counts {
			return errors.New("want found/hunts, such as 5/5")
		}
		switch {
		case found > of:
			return errors.New("more finds than hunts")
		case gap:
			if err := namedHuntGap(s.Name); err != nil {
				return err
			}
		case of < 5 || 5*found < 4*of:
			return fmt.Errorf("want at least 5 hunts with 4 of every 5 finding the row's anomaly (or \"k/n, a hunt gap\" named in docs/measurements.md)")
		}
	}
	return nil
}
