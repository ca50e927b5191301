package campaign

import (
	"bytes"
	"fmt"
	"html/template"
	"path/filepath"
	"strings"
	"time"
)

// Headline is the campaign's outcome in one sentence.
func (s *Summary) Headline() string {
	hunted, tried := 0, 0
	for _, c := range s.Cells {
		if c.Hunt != "" {
			hunted++
			tried += c.Tried
		}
	}
	cand, gen, known := s.Counts()
	if len(s.Finds) == 0 {
		return fmt.Sprintf("%s: nothing found in %d cells hunted (%d attempts)", s.Lock, hunted, tried)
	}
	return fmt.Sprintf("%s: %d distinct finds in %d cells hunted (%d attempts) — %d candidates, %d generic, %d known",
		s.Lock, len(s.Finds), hunted, tried, cand, gen, known)
}

// grid is the page's table: one row per topology, one column per family.
type grid struct {
	Families []string
	Rows     []gridRow
}

type gridRow struct {
	Topology string
	Cells    []Cell
}

func (s *Summary) grid() grid {
	var g grid
	for _, c := range s.Cells {
		if !containsStr(g.Families, c.Family) {
			g.Families = append(g.Families, c.Family)
		}
	}
	for _, c := range s.Cells {
		if len(g.Rows) == 0 || g.Rows[len(g.Rows)-1].Topology != c.Topology {
			g.Rows = append(g.Rows, gridRow{Topology: c.Topology})
		}
		r := &g.Rows[len(g.Rows)-1]
		r.Cells = append(r.Cells, c)
	}
	return g
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

var pageTmpl = template.Must(template.New("campaign").Funcs(template.FuncMap{
	"dur": func(d time.Duration) string { return d.Round(time.Second).String() },
	"covered": func(c Cell) string {
		r, n := c.Covered()
		return fmt.Sprintf("%d of %d", r, n)
	},
	"unreached": func(c Cell) string {
		var out []string
		for _, w := range c.Windows {
			if w.Reached == 0 {
				out = append(out, w.Name)
			}
		}
		return strings.Join(out, ", ")
	},
	"join":   func(xs []string) string { return strings.Join(xs, ", ") },
	"report": func(dir string) string { return filepath.ToSlash(filepath.Join(dir, "index.html")) },
	"slash":  filepath.ToSlash,
	"kinds": func(c Cell) string {
		out := make([]string, len(c.Kinds))
		for i, k := range c.Kinds {
			out[i] = string(k)
		}
		return strings.Join(out, ", ")
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>campaign {{.S.Name}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}
table{border-collapse:collapse;margin-bottom:1.5em}td,th{padding:.25em .6em;border:1px solid #ddd;text-align:left;vertical-align:top}
.candidate{background:#fdd}.generic{background:#eef}.known{background:#efe}.skipped{color:#888;background:#f6f6f6}
.found{font-weight:bold}.small{font-size:.85em;color:#555}code{font-size:.85em}
</style></head><body>
<h1>campaign {{.S.Name}}</h1>
<p><b id="headline">{{.Headline}}</b></p>
<p>{{dur .S.Elapsed}} of a {{dur .S.Budget}} budget; stopped: {{.S.Stopped}}.
Each find replayed {{.S.Replays}} times and shrunk when {{.S.Need}} failed alike; each minimal plan replayed {{.S.Confirm}} times.
{{if .S.Shard}}Shard {{.S.Shard}} of a larger campaign.{{end}}{{if .S.Shards}}Merged from {{len .S.Shards}} shards.{{end}}
The verdicts are the checkers' own; the campaign only sorts the finds: <b>known</b> (a catalog row shows the same lock, topology class and anomaly),
<b>generic</b> (the anomaly followed only windows any lock without fencing or a checked validity fails in), <b>candidate</b> (the rest).</p>

<h2>Finds</h2>
{{if .S.Finds}}
<table id="finds"><tr><th>find</th><th>class</th><th>anomaly</th><th>where</th><th>minimal plan</th><th>fails alike</th><th>windows its anomaly followed</th><th>why</th></tr>
{{range .S.Finds}}<tr id="find-{{.ID}}" class="{{.Class}}"><td>{{.ID}}</td><td>{{.Class}}{{if .Row}} ({{.Row}}){{end}}</td><td>{{.Kind}}</td>
<td>{{.Topology}} × {{.Family}}{{if gt (len .Cells) 1}}<div class="small">also {{join .Cells}}</div>{{end}}<div class="small">seed {{.Seed}}{{if .Folded}}, {{.Folded}} more folded{{end}}</div></td>
<td>{{len .Steps}} steps (found with {{.FoundSteps}}){{if not .Shrunk}}, not shrunk{{end}}<div class="small">{{range .Steps}}<code>{{.}}</code><br>{{end}}</div><a href="{{slash .Minimal}}">plan</a>{{if .RowFile}} · <a href="{{slash .RowFile}}">row</a>{{end}}</td>
<td>{{.Confirmed}}{{if .Report}} · <a href="{{report .Report}}">report</a>{{end}}</td><td>{{join .Followed}}</td><td class="small">{{.Why}}</td></tr>
{{end}}</table>
{{else}}<p id="nothing">Nothing found. Coverage of the dangerous windows, per cell, is below: what was reached, and what was not.</p>{{end}}

<h2>Cells</h2>
<p class="small">Each cell: attempts, faults applied, the dangerous windows its attempts reached of those that count for it, and its finds.</p>
<table id="cells"><tr><th>topology</th>{{range .G.Families}}<th>{{.}}</th>{{end}}</tr>
{{range .G.Rows}}<tr><th>{{.Topology}}</th>{{range .Cells}}{{if .Skipped}}<td class="skipped" title="{{.Skipped}}">skipped<div class="small">{{.Skipped}}</div></td>{{else}}<td id="cell-{{.Topology}}-{{.Family}}"{{if .Finds}} class="found"{{end}}>
{{if .Hunt}}<a href="{{slash .Hunt}}/index.html">{{.Tried}} attempts</a>, {{.FaultsApplied}} faults<div class="small">{{kinds .}}</div>
<div class="small">windows reached: {{covered .}}{{with unreached .}}; never: {{.}}{{end}}</div>
{{if .Finds}}<div>finds {{join .Finds}}</div>{{end}}{{if .Error}}<div class="small">error: {{.Error}}</div>{{end}}
{{else}}not hunted{{if .Error}}: {{.Error}}{{end}}{{end}}</td>{{end}}{{end}}</tr>
{{end}}</table>
</body></html>
`))

func (s *Summary) page() ([]byte, error) {
	var b bytes.Buffer
	err := pageTmpl.Execute(&b, struct {
		S        *Summary
		Headline string
		G        grid
	}{s, s.Headline(), s.grid()})
	return b.Bytes(), err
}
