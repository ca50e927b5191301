package scenarios

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rowHomes are the non-test Go files that name catalog rows, each with the
// test that checks its names against the catalog (with Missing).
var rowHomes = map[string]string{
	"audit/rows.go":              "audit's TestRowsInCatalog",
	"scenarios/scenarios.go":     "TestCatalogValid (tableOrder)",
	"scripts/hunttable/main.go":  "hunttable's TestRepresentativeRowsInCatalog",
	"scripts/huntguided/main.go": "huntguided's TestRowsInCatalog",
}

// TestRowNamesInCode: the module's non-test Go code names catalog rows
// only in rowHomes, whose names their tests check; no string literal
// elsewhere is a row's name, or a near miss of one (a misspelt row).
func TestRowNamesInCode(t *testing.T) {
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, lit := range stringLiterals(t, path) {
			switch row := nearRow(lit); {
			case row == "":
			case row != lit:
				t.Errorf("%s: %q looks like catalog row %q misspelt", rel, lit, row)
			case rowHomes[rel] == "":
				t.Errorf("%s names catalog row %q: name rows only where a test checks them against the catalog (%s)",
					rel, lit, strings.Join(slices.Sorted(maps.Keys(rowHomes)), ", "))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for home := range rowHomes {
		if lits := stringLiterals(t, filepath.Join(root, home)); !containsRow(lits) {
			t.Errorf("%s names no catalog row: drop it from rowHomes", home)
		}
	}
}

// TestNearRowCatchesMisspelling: the check above finds a misspelt row and
// leaves other strings alone.
func TestNearRowCatchesMisspelling(t *testing.T) {
	for lit, want := range map[string]string{
		"single-failover":       "single-failover",
		"single-failovr":        "single-failover",
		"redlock-restart-emtpy": "redlock-restart-empty",
		"sentinel-split-brian":  "sentinel-split-brain",
		"mutual-exclusion":      "",
		"single":                "",
		"min-replicas-to-write": "",
	} {
		if got := nearRow(lit); got != want {
			t.Errorf("nearRow(%q) = %q, want %q", lit, got, want)
		}
	}
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)+$`)

// nearRow is the catalog row lit names or nearly names (at most two
// letters changed, added or dropped), "" when it names none.
func nearRow(lit string) string {
	if !kebab.MatchString(lit) {
		return ""
	}
	best, dist := "", 3
	for _, row := range Names() {
		if d := editDistance(lit, row, dist); d < dist {
			best, dist = row, d
		}
	}
	return best
}

func containsRow(lits []string) bool {
	for _, l := range lits {
		if nearRow(l) == l {
			return true
		}
	}
	return false
}

// editDistance is the Levenshtein distance of a and b, or limit when it
// is limit or more.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return min(prev[len(b)], limit)
}

// stringLiterals are the string literals of a Go file (not its comments).
func stringLiterals(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}
