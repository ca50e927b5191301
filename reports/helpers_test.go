package reports

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// corpusConfig is the checker configuration of each corpus history
// (checker/testdata/README.md).
var corpusConfig = map[string]checker.Config{
	"fenced-stale-rejected": {Subject: checker.Subject{Fenced: true}},
	"token-reuse":           {Subject: checker.Subject{Fenced: true}},
	"lost-increment":        {Subject: checker.Subject{Counter: true}},
}

func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "checker", "testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus histories found (%v)", err)
	}
	return files
}

// corpusRun checks a corpus history as the run engine would and returns
// the Run it would hand to Write.
func corpusRun(t *testing.T, path string) Run {
	t.Helper()
	ops, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	cfg := corpusConfig[name]
	cfg.TTL = time.Second
	res, err := checker.Check(ops, cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return Run{
		Name: name, Description: "corpus history " + name, Seed: 7,
		Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Elapsed: 2 * time.Second,
		Command: "tumbler run --plan runs/" + name + "/plan.json --seed 7",
		Plan:    json.RawMessage(`{"seed":7,"steps":[]}`),
		Params:  []Param{{"lock", "single"}, {"topology", "independent:1"}, {"clients", "3"}},
		TTL:     time.Second, Ops: ops, Result: res,
	}
}

// judged gives a run without one the judgement the run engine would
// hand over with it (the runner decides judgements; these tests only check
// that every file shows the one it is given).
func judged(r Run) Run {
	if r.Judgement.Verdict != "" {
		return r
	}
	r.Judgement.Verdict = checker.Unknown
	if r.Result != nil {
		r.Judgement.Verdict = r.Result.Verdict
	}
	r.Judgement.ExitCode = map[checker.Verdict]int{checker.Valid: 0, checker.Invalid: 1, checker.Unknown: 2}[r.Judgement.Verdict]
	if r.Interrupted && r.Judgement.Verdict == checker.Valid {
		r.Judgement.ExitCode = 2
	}
	return r
}

// writeReport does what the run engine does: a directory with plan.json
// and history.jsonl, then Write.
func writeReport(t *testing.T, r Run) (string, Files) {
	t.Helper()
	r = judged(r)
	dir := t.TempDir()
	if len(r.Plan) > 0 {
		if err := os.WriteFile(filepath.Join(dir, PlanFile), r.Plan, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for _, o := range r.Ops {
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	files, err := Write(dir, r)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return dir, files
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var (
	tagRe  = regexp.MustCompile(`<[^>]*>`)
	hrefRe = regexp.MustCompile(`href="(?:index\.html)?#([^"]*)"`)
	idRe   = regexp.MustCompile(`\sid="([^"]*)"`)
)

// pageText is what a reader sees of a page: tags removed, entities decoded.
func pageText(page string) string {
	return html.UnescapeString(tagRe.ReplaceAllString(page, ""))
}

// checkAnchors fails the test for an in-page link without its target.
func checkAnchors(t *testing.T, page string) int {
	t.Helper()
	ids := map[string]bool{}
	for _, m := range idRe.FindAllStringSubmatch(page, -1) {
		if ids[m[1]] {
			t.Errorf("id %q appears twice", m[1])
		}
		ids[m[1]] = true
	}
	links := hrefRe.FindAllStringSubmatch(page, -1)
	for _, m := range links {
		if !ids[m[1]] {
			t.Errorf("link to #%s has no target in the page", m[1])
		}
	}
	return len(links)
}

// svgRect is a rect of the timeline with its class and geometry.
type svgRect struct {
	class   string
	x, w, y float64
}

// parseSVG checks that the SVG is well-formed XML and returns its rects.
func parseSVG(t *testing.T, data string) []svgRect {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(data))
	var rects []svgRect
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("timeline.svg is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		if se.Name.Local != "rect" {
			continue
		}
		var r svgRect
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "class":
				r.class = a.Value
			case "x":
				r.x = atof(t, a.Value)
			case "y":
				r.y = atof(t, a.Value)
			case "width":
				r.w = atof(t, a.Value)
			}
		}
		rects = append(rects, r)
	}
	if root != "svg" {
		t.Fatalf("timeline root element is %q, want svg", root)
	}
	return rects
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad number %q in SVG: %v", s, err)
	}
	return f
}
