package racebuild

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSample(t *testing.T) {
	want := 100
	if Enabled {
		want = 25
	}
	if got := Sample(100, 4); got != want {
		t.Errorf("Sample(100, 4) = %d with Enabled %v, want %d", got, Enabled, want)
	}
	if got := Sample(int64(3), 4); Enabled && got != 1 {
		t.Errorf("Sample(3, 4) = %d under -race, want at least 1", got)
	}
}

// TestSampledTestsRunInFull: every test that samples its cases under
// -race is named in scripts/test's run without -race, so none is cut down
// for good.
func TestSampledTestsRunInFull(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test"))
	if err != nil {
		t.Fatal(err)
	}
	full := regexp.MustCompile(`go test -count=1 -run '\^\(([A-Za-z0-9_|]+)\)\$'`).FindSubmatch(script)
	if full == nil {
		t.Fatal("scripts/test has no `go test -count=1 -run '^(…)$'` line for the sampled tests")
	}
	named := map[string]bool{}
	for _, n := range strings.Split(string(full[1]), "|") {
		named[n] = true
	}
	var sampling []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "store" || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || strings.Contains(path, "racebuild") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sample" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "racebuild" {
						sampling = append(sampling, fn.Name.Name)
						if !named[fn.Name.Name] {
							t.Errorf("%s (%s) samples under -race but scripts/test does not run it in full", fn.Name.Name, path)
						}
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sampling) == 0 {
		t.Error("no test calls racebuild.Sample: the walk found nothing")
	}
}
