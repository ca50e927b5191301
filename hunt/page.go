package hunt

import (
	"bytes"
	"fmt"
	"html/template"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/coverage"
)

var pageTmpl = template.Must(template.New("hunt").Funcs(template.FuncMap{
	"dur": func(d time.Duration) string {
		if d < 0 {
			return "—"
		}
		return d.Round(10 * time.Millisecond).String()
	},
	"kinds": func(a Attempt) string {
		out := make([]string, len(a.Kinds))
		for i, k := range a.Kinds {
			out[i] = string(k)
		}
		return strings.Join(out, ", ")
	},
	"report":  func(dir string) string { return filepath.ToSlash(filepath.Join(dir, "index.html")) },
	"replays": func(r *Replays) string { return r.String() },
	"reached": reachedList,
	"aside":   asideWindows,
	"unreached": func(t *coverage.Tally) bool {
		return slices.ContainsFunc(t.Windows, func(c coverage.Count) bool { return c.Counts() && c.Reached == 0 })
	},
	"why": func(c coverage.Count) string {
		why := []string{}
		if c.NotApplicable != "" {
			why = append(why, c.NotApplicable)
		}
		if c.OutOfReach != "" {
			why = append(why, "out of reach of the faults drawn ("+c.OutOfReach+")")
		}
		return strings.Join(why, "; ")
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>hunt {{.Name}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}
table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left}
.invalid{background:#fdd}.unknown{background:#ffd}.found{font-weight:bold}
.never{background:#fff3cd}.never td:nth-child(2){font-weight:bold;color:#8a5a00}
.n{text-align:right}caption{caption-side:bottom;text-align:left;font-size:.9em;color:#555;padding-top:.3em}
</style></head><body>
<h1>hunt {{.Name}}</h1>
<p><b>{{.Headline}}</b></p>
<p>{{.S.Tried}} seeds tried, {{.S.FaultsApplied}} faults applied, {{dur .S.Elapsed}} of a {{dur .S.Budget}} budget; stopped: {{.S.Stopped}}.
Faults drawn from {{.Kinds}}, at most {{.S.Draw.Concurrency}} at once.
{{if .S.Shard}}Shard {{.S.Shard}} of the hunt from seed {{.S.FirstSeed}}.{{end}}
{{if gt .S.Parallel 1}}{{.S.Parallel}} attempts at once.{{end}}
{{if .S.Guided}}Schedules guided toward the windows reached least (--guided).{{end}}
{{if .S.Replays}}A find ends the hunt when {{.S.Need}} of {{.S.Replays}} replays of its plan fail alike.{{end}}
{{if .S.Shards}}Merged from the shards {{range .S.Shards}}<a href="{{report .}}">{{.}}</a> {{end}}.{{end}}
{{if .S.Shrink}}Shrunk: <a href="{{.S.Shrink}}">{{.S.Shrink}}</a>.{{end}}</p>
{{with .S.Coverage}}<h2>Coverage of the dangerous windows</h2>
<p>How often the {{.Runs}} attempts reached each moment in which a lock can break (judged from their histories and faults as they ran), and in how many of those that reached it an anomaly followed (during a reach, within two TTLs of it, or naming one of its faults).</p>
<table id="coverage">{{if unreached .}}<caption>Highlighted: a window no attempt reached, which this hunt's verdict says nothing about.</caption>{{end}}
<tr><th>window</th><th class="n">reached</th><th>attempts reaching it</th><th>anomaly followed in</th><th>why it matters</th></tr>
{{range .Windows}}{{if .Counts}}<tr id="window-{{.Name}}"{{if not .Reached}} class="never"{{end}}><td>{{.Label}}</td><td class="n">{{.Reached}}</td><td>{{.Runs}} of {{$.S.Coverage.Runs}}</td><td>{{if .Runs}}{{.Followed}} of {{.Runs}}{{else}}—{{end}}</td><td>{{.Reason}}</td></tr>
{{end}}{{end}}</table>
{{with aside .}}<details><summary>windows that do not count for this hunt ({{len .}})</summary><ul>{{range .}}<li id="aside-{{.Name}}">{{.Label}}: {{why .}}</li>{{end}}</ul></details>{{end}}
{{end}}
<h2>Attempts</h2>
<p>Every attempt's plan replays it exactly: <code>tumbler run --plan DIR/plans/seed-N.json</code>. Reports of valid attempts are not kept.</p>
<table><tr><th>seed</th><th>verdict</th><th>anomalies</th><th>faults (applied)</th><th>first anomaly</th><th>windows reached</th><th>replays</th><th>took</th><th>plan</th><th>report</th></tr>
{{range .S.Attempts}}<tr id="seed-{{.Seed}}" class="{{.Verdict}}{{if .Found}} found{{end}}"><td>{{.Seed}}</td><td>{{.Verdict}}{{if .Abandoned}} (abandoned: a lower seed found){{else if .Interrupted}} (interrupted){{end}}</td><td>{{kinds .}}</td>
<td>{{.Faults}} ({{.FaultsApplied}})</td><td>{{dur .FirstAnomaly}}</td><td>{{range $i, $r := reached .Reached}}{{if $i}}, {{end}}<a href="#window-{{$r.Name}}">{{$r.Name}}</a>{{if gt $r.N 1}} ×{{$r.N}}{{end}}{{else}}—{{end}}</td><td>{{replays .Replays}}</td><td>{{dur .Elapsed}}</td><td><a href="{{.Plan}}">plan</a></td>
<td>{{if .Dir}}<a href="{{report .Dir}}">report</a>{{else}}—{{end}}{{if .Error}} {{.Error}}{{end}}</td></tr>
{{end}}</table></body></html>
`))

// Headline is the hunt's result in one sentence.
func (s *Summary) Headline() string {
	a, ok := s.Found()
	if !ok {
		return fmt.Sprintf("no anomaly in %d seeds (%s)", s.Tried, s.Stopped)
	}
	h := fmt.Sprintf("found %s on seed %d, %v into the hunt (attempt %d)", strings.Trim(fmt.Sprint(a.Kinds), "[]"), a.Seed,
		s.TimeToFirst.Round(100*time.Millisecond), s.First+1)
	if s.Replays == 0 || s.Replayed == s.First {
		return h
	}
	switch {
	case a.Replays != nil && a.Replays.Interrupted:
		h += ", whose replays were cut short (" + a.Replays.String() + ")"
	case a.Replays != nil:
		h += ", which did not replay (" + a.Replays.String() + ")"
	}
	if r, ok := s.ToShrink(); ok {
		return h + fmt.Sprintf("; seed %d's find replays (%s)", r.Seed, r.Replays)
	}
	return h + "; no find replayed"
}

// String says how a find's replays went: "failed alike in 1 of 3
// replays (2 needed)".
func (r *Replays) String() string {
	if r == nil {
		return "—"
	}
	out := fmt.Sprintf("failed alike in %d of %d replays (%d needed)", r.Alike, r.Replayed, r.Need)
	if r.Interrupted {
		out += ", interrupted"
	}
	return out
}

func (s *Summary) page() ([]byte, error) {
	kinds := make([]string, len(s.Draw.Kinds))
	for i, k := range s.Draw.Kinds {
		kinds[i] = string(k)
	}
	var b bytes.Buffer
	err := pageTmpl.Execute(&b, struct {
		Name, Headline, Kinds string
		S                     *Summary
	}{s.Name, s.Headline(), strings.Join(kinds, ", "), s})
	return b.Bytes(), err
}

// reach is a window an attempt reached, and how often.
type reach struct {
	Name string
	N    int
}

// reachedList lists the windows an attempt reached, by name.
func reachedList(r map[string]int) []reach {
	out := make([]reach, 0, len(r))
	for n, k := range r {
		out = append(out, reach{n, k})
	}
	slices.SortFunc(out, func(a, b reach) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// asideWindows are the windows of a tally that do not count for the hunt
// (they do not apply, or its faults cannot reach them).
func asideWindows(t *coverage.Tally) []coverage.Count {
	var out []coverage.Count
	for _, c := range t.Windows {
		if !c.Counts() {
			out = append(out, c)
		}
	}
	return out
}
