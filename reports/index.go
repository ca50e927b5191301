package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "embed"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/outcome"
)

//go:embed index.tmpl
var indexTemplate string

var indexTmpl = template.Must(template.New("index").Parse(indexTemplate))

const (
	// opsTableAll: a history this short is shown whole.
	opsTableAll = 2000
	// opsTableMax caps the operations table of a longer history: the ops
	// of the anomalies first, then their neighbours and the faults.
	opsTableMax = 5000
	// opsContext is how many ops either side of an anomaly's op are shown.
	opsContext = 4
	// timelineInlineMax: a larger timeline is linked, not inlined.
	timelineInlineMax = 2 << 20
	// planShownMax: a larger plan.json is only linked.
	planShownMax = 256 << 10
)

type indexPage struct {
	Name, Description, Source string
	Verdict                   checker.Verdict
	VerdictUpper              string
	Expected                  *outcome.Reproduction
	Summary                   []Param
	Interrupted               bool
	End                       string
	CheckError                string
	AnomalyCount              int
	Anomalies                 []anomalyView
	AnomalyNotes              []string
	Warnings                  []anomalyView
	Counters                  []checker.CounterSummary
	TimelineSVG               template.HTML
	TimelineFile              bool
	TimelineMissing           string
	Plots                     []fileView
	Faults                    []faultView
	Coverage                  coverageView
	Availability              []availView
	Checkers                  []checkerView
	OpRows                    []opRow
	OpsNote                   string
	Params                    []Param
	Plan                      string
	Command                   string
	Files                     []fileView
}

type anomalyView struct {
	Anchor, Num, Kind, Checker, Key, Clients, Span string
	Sentence                                       template.HTML
	Ops                                            []opRef
	Faults                                         []faultRef
}

type opRef struct {
	Index  int64
	Anchor string
	Shown  bool
}

type faultRef struct{ ID, Anchor string }

type faultView struct {
	Anchor, ID, Kind, Targets, Desc, Start, Stop, Duration string
	Traits                                                 string // what the fault does (history.Trait)
	Idle                                                   string // checker.FaultWindow.Idle
	Healed, StartShown, StopShown                          bool
	StartAnchor, StopAnchor                                string
}

type availView struct{ Fault, Anchor, Before, During, After string }

type checkerView struct {
	Anchor, Name, Reason, Duration string
	Verdict                        checker.Verdict
	Skipped                        bool
	Anomalies, Warnings            int
	Stats                          []Param
	Notes                          []string
}

type opRow struct {
	Gap                                                           int
	Anchor, Time, Process, Type, F, Key, Value, Token, ValidUntil string
	Note, Class                                                   string
	Index                                                         int64
	Client                                                        string
	Anomalies                                                     []anomalyRef
}

type anomalyRef struct{ Anchor, Label string }

type fileView struct {
	Name, Href, What, Missing string
	Written                   bool
}

// writeIndex renders index.html; files says what else is in the directory.
func (v *view) writeIndex(w io.Writer, files Files) error {
	r := v.run
	p := indexPage{
		Name: r.Name, Description: r.Description, Source: r.Source,
		Verdict: v.verdict, VerdictUpper: strings.ToUpper(string(v.verdict)),
		Interrupted: r.Interrupted, End: secs(v.end), CheckError: r.CheckError, Command: r.Command,
	}
	if p.Name == "" {
		p.Name = "tumbler run"
	}
	p.Expected = r.Judgement.Expected
	rows, shown, note := v.selectOps()
	p.OpsNote = note
	isShown := func(i int64) bool { return shown[i] }
	p.Faults = v.faultViews(isShown)
	p.Coverage = v.coverageSection()
	faultIDs := map[string]string{}
	for _, f := range p.Faults {
		faultIDs[f.ID] = f.Anchor
	}
	hits := map[int64][]anomalyRef{}
	if res := r.Result; res != nil {
		p.AnomalyCount = len(res.Anomalies)
		for i, a := range res.Anomalies {
			av := v.anomalyView(a, anomalyAnchor(i), strconv.Itoa(i+1), isShown, faultIDs)
			p.Anomalies = append(p.Anomalies, av)
			for _, o := range a.Ops {
				hits[o] = append(hits[o], anomalyRef{av.Anchor, "#" + av.Num + " " + string(a.Kind)})
			}
		}
		for i, a := range res.Warnings {
			p.Warnings = append(p.Warnings, v.anomalyView(a, fmt.Sprintf("warning-%d", i+1), "", isShown, faultIDs))
		}
		for _, c := range res.Checkers {
			if kept := countChecker(res.Anomalies, c.Name); c.Anomalies > kept {
				p.AnomalyCount += c.Anomalies - kept
				p.AnomalyNotes = append(p.AnomalyNotes, fmt.Sprintf("%s found %d anomalies; the first %d are listed (results.json has the same).", c.Name, c.Anomalies, kept))
			}
			p.Checkers = append(p.Checkers, checkerViewOf(c))
		}
		for _, a := range res.Availability {
			p.Availability = append(p.Availability, availView{a.Fault, faultIDs[a.Fault], attempts(a.Before), attempts(a.During), attempts(a.After)})
		}
		p.Counters = res.Counters
	}
	for i := range rows {
		if rows[i].Gap == 0 {
			rows[i].Anomalies = hits[rows[i].Index]
			if len(rows[i].Anomalies) > 0 {
				rows[i].Class = "hit"
			}
		}
	}
	p.OpRows = rows
	p.Summary = v.summary()
	p.Params = v.params()
	p.Plan = v.planText()
	v.timelineSection(&p, files)
	for _, name := range []string{LatencyFile, ThroughputFile} {
		p.Plots = append(p.Plots, fileViewOf(name, files))
	}
	p.Files = v.fileList(files)
	var buf bytes.Buffer
	if err := indexTmpl.Execute(&buf, p); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func countChecker(as []checker.Anomaly, name string) int {
	n := 0
	for _, a := range as {
		if a.Checker == name {
			n++
		}
	}
	return n
}

var sentenceRefs = regexp.MustCompile(`\bops? (\d+)\b|\bfault (\S+?)\b`)

// linkSentence escapes an explanation and links the ops ("op 12") and
// faults ("fault f1") it names, where the page shows them.
func linkSentence(s string, shown func(int64) bool, faults map[string]string) template.HTML {
	var b strings.Builder
	last := 0
	for _, m := range sentenceRefs.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(template.HTMLEscapeString(s[last:m[0]]))
		text := s[m[0]:m[1]]
		href := ""
		if m[2] >= 0 {
			if i, err := strconv.ParseInt(s[m[2]:m[3]], 10, 64); err == nil && shown(i) {
				href = opAnchor(i)
			}
		} else if a, ok := faults[s[m[4]:m[5]]]; ok {
			href = a
		}
		if href != "" {
			fmt.Fprintf(&b, `<a href="#%s">%s</a>`, href, template.HTMLEscapeString(text))
		} else {
			b.WriteString(template.HTMLEscapeString(text))
		}
		last = m[1]
	}
	b.WriteString(template.HTMLEscapeString(s[last:]))
	return template.HTML(b.String())
}

func (v *view) anomalyView(a checker.Anomaly, anchor, num string, shown func(int64) bool, faults map[string]string) anomalyView {
	av := anomalyView{
		Anchor: anchor, Num: num, Kind: string(a.Kind), Checker: a.Checker, Key: a.Key,
		Sentence: linkSentence(a.Explanation, shown, faults),
	}
	if len(a.Clients) > 0 {
		cs := make([]string, len(a.Clients))
		for i, c := range a.Clients {
			cs[i] = strconv.Itoa(c)
		}
		av.Clients = strings.Join(cs, ", ")
	}
	if a.To > a.From {
		av.Span = fmt.Sprintf("%s to %s (%s)", secs(a.From), secs(a.To), dur(time.Duration(a.To-a.From)))
	} else {
		av.Span = "at " + secs(a.From)
	}
	for _, o := range a.Ops {
		av.Ops = append(av.Ops, opRef{o, opAnchor(o), shown(o)})
	}
	for _, id := range a.Faults {
		av.Faults = append(av.Faults, faultRef{id, faults[id]})
	}
	return av
}

func (v *view) faultViews(shown func(int64) bool) []faultView {
	var out []faultView
	for _, f := range v.faults {
		fv := faultView{
			Anchor: faultAnchor(f.ID), ID: f.ID, Kind: f.Kind, Traits: f.Traits.String(), Targets: strings.Join(f.Targets, ", "), Desc: f.Desc,
			Start: secs(f.Start), Stop: secs(f.Stop), Healed: f.Healed, Idle: f.Idle(),
			Duration:   dur(time.Duration(f.Stop - f.Start)),
			StartShown: f.StartOp >= 0 && shown(f.StartOp), StartAnchor: opAnchor(f.StartOp),
			StopShown: f.StopOp >= 0 && shown(f.StopOp), StopAnchor: opAnchor(f.StopOp),
		}
		if !f.Healed {
			fv.Duration += " (to the end)"
		}
		out = append(out, fv)
	}
	return out
}

func attempts(a checker.Attempts) string {
	n := a.OK + a.Fail + a.Unknown
	if n == 0 {
		return fmt.Sprintf("no attempts (%s–%s)", secs(a.From), secs(a.To))
	}
	return fmt.Sprintf("%d / %d / %d (%.0f%%), %s–%s", a.OK, a.Fail, a.Unknown, 100*a.SuccessRate, secs(a.From), secs(a.To))
}

func checkerViewOf(c checker.CheckerResult) checkerView {
	cv := checkerView{
		Anchor: "checker-" + safeName(c.Name), Name: c.Name, Verdict: c.Verdict, Skipped: c.Skipped, Reason: c.Reason,
		Anomalies: c.Anomalies, Warnings: c.Warnings, Notes: c.Notes, Duration: dur(c.Duration),
	}
	for _, k := range sortedKeys(c.Stats) {
		cv.Stats = append(cv.Stats, Param{k, strconv.FormatInt(c.Stats[k], 10)})
	}
	return cv
}

// selectOps picks the rows of the operations table: the whole history
// when it is short, otherwise the ops of each anomaly, their calls'
// other halves and a few neighbours, and the fault events.
func (v *view) selectOps() ([]opRow, map[int64]bool, string) {
	ops := v.run.Ops
	shown := map[int64]bool{}
	if len(ops) == 0 {
		return nil, shown, "No operation was recorded."
	}
	var picked []int // positions in ops
	if len(ops) <= opsTableAll {
		picked = make([]int, len(ops))
		for i := range picked {
			picked[i] = i
		}
	} else {
		set := map[int]bool{}
		add := func(pos int) {
			if pos >= 0 && pos < len(ops) && len(set) < opsTableMax {
				set[pos] = true
			}
		}
		var centres []int
		partners := history.Partners(ops)
		if res := v.run.Result; res != nil {
			for _, list := range [][]checker.Anomaly{res.Anomalies, res.Warnings} {
				for _, a := range list {
					for _, i := range a.Ops {
						if pos, ok := v.byIndex[i]; ok {
							add(pos)
							add(partners[pos])
							centres = append(centres, pos)
						}
					}
				}
			}
		}
		for pos, o := range ops {
			if o.IsNemesis() {
				add(pos)
			}
		}
		for d := 1; d <= opsContext; d++ {
			for _, c := range centres {
				add(c - d)
				add(c + d)
			}
		}
		if len(centres) == 0 {
			for pos := range min(len(ops), 200) {
				add(pos)
			}
		}
		for pos := range set {
			picked = append(picked, pos)
		}
		slices.Sort(picked)
	}
	var rows []opRow
	prev := -1
	for _, pos := range picked {
		if gap := pos - prev - 1; gap > 0 {
			rows = append(rows, opRow{Gap: gap})
		}
		prev = pos
		row := opRowOf(ops[pos])
		if shown[row.Index] {
			row.Anchor = "" // a history with repeated indexes: link the first
		}
		rows = append(rows, row)
		shown[row.Index] = true
	}
	if gap := len(ops) - prev - 1; gap > 0 {
		rows = append(rows, opRow{Gap: gap})
	}
	note := fmt.Sprintf("All %d operations.", len(ops))
	if len(picked) < len(ops) {
		note = fmt.Sprintf("%d of %d operations: those of each anomaly with their neighbours, and every fault event.", len(picked), len(ops))
	}
	return rows, shown, note
}

func opRowOf(o history.Op) opRow {
	row := opRow{
		Anchor: opAnchor(o.Index), Index: o.Index, Time: secs(o.Time), Type: string(o.Type), F: o.F, Key: o.Key,
		Value: truncate(o.Value, 80), Client: strconv.Itoa(o.Client), Process: strconv.Itoa(int(o.Process)),
	}
	if o.Token != 0 {
		row.Token = strconv.FormatInt(o.Token, 10)
	}
	switch {
	case history.NoExpiry(o.ValidUntil):
		row.ValidUntil = history.NoExpiryText
	case o.ValidUntil != 0:
		row.ValidUntil = secs(o.ValidUntil)
	}
	row.Note = o.Error
	if o.IsNemesis() {
		row.Process, row.Client, row.Class = "nemesis", "", "nem"
		if o.Fault != nil {
			row.Note = strings.TrimSpace(fmt.Sprintf("%s %s: %s", o.Fault.ID, o.Fault.Kind, o.Fault.Desc))
		}
	}
	return row
}

func (v *view) summary() []Param {
	r := v.run
	s := []Param{{"seed", strconv.FormatInt(r.Seed, 10)}}
	if !r.Started.IsZero() {
		s = append(s, Param{"started", r.Started.Format("2006-01-02 15:04:05 MST")})
	}
	if r.Elapsed > 0 {
		s = append(s, Param{"ran", dur(r.Elapsed)})
	}
	s = append(s, Param{"operations", strconv.Itoa(len(r.Ops))}, Param{"history ends", secs(v.end)}, Param{"faults", strconv.Itoa(len(v.faults))})
	s = append(s, Param{"exit code", strconv.Itoa(r.Judgement.ExitCode)})
	return s
}

func (v *view) params() []Param {
	r := v.run
	ps := slices.Clone(r.Params)
	has := func(k string) bool {
		return slices.ContainsFunc(ps, func(p Param) bool { return strings.EqualFold(p.Key, k) })
	}
	if !has("seed") {
		ps = append(ps, Param{"seed", strconv.FormatInt(r.Seed, 10)})
	}
	if !has("ttl") && r.TTL > 0 {
		ps = append(ps, Param{"TTL", r.TTL.String()})
	}
	return ps
}

// planText pretty-prints plan.json for the page, or says where it is.
func (v *view) planText() string {
	raw := v.run.Plan
	if len(raw) == 0 {
		return ""
	}
	if len(raw) > planShownMax {
		return fmt.Sprintf("(%d bytes: see plan.json)", len(raw))
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

func (v *view) timelineSection(p *indexPage, files Files) {
	if !files.Has(TimelineFile) {
		p.TimelineMissing = files.NotWritten[TimelineFile]
		return
	}
	p.TimelineFile = true
	data, err := os.ReadFile(filepath.Join(files.Dir, TimelineFile))
	if err == nil && len(data) <= timelineInlineMax {
		// Generated by writeTimeline with every text escaped.
		p.TimelineSVG = template.HTML(data)
	}
}

var fileDescriptions = []struct{ name, what string }{
	{PlanFile, "the plan as run: topology, lock, workload, fault schedule, seed"},
	{HistoryFile, "every operation and fault event, one JSON object per line"},
	{ResultsFile, "the checkers' result with the run's metadata, for programs"},
	{TimelineFile, "lock holds per key and client, with faults and anomalies"},
	{LatencyFile, "acquire latency over the run"},
	{ThroughputFile, "completed operations per second over the run"},
	{LinearizabilityFile, "porcupine's interactive view of the lock operations"},
	{JUnitFile, "one test case per checker, for CI"},
	{CoverageFile, "which dangerous windows the run reached, and when"},
}

func fileViewOf(name string, files Files) fileView {
	fv := fileView{Name: name, Href: name, Written: files.Has(name), Missing: files.NotWritten[name]}
	for _, d := range fileDescriptions {
		if d.name == name {
			fv.What = d.what
		}
	}
	if !fv.Written && fv.Missing == "" {
		fv.Missing = "not generated"
	}
	return fv
}

func (v *view) fileList(files Files) []fileView {
	var out []fileView
	for _, d := range fileDescriptions {
		fv := fileViewOf(d.name, files)
		if d.name == PlanFile || d.name == HistoryFile {
			// Written by the run engine before the report.
			_, err := os.Stat(filepath.Join(files.Dir, d.name))
			fv.Written, fv.Missing = err == nil, "not found in the directory"
		}
		out = append(out, fv)
	}
	names := logNames(v.run.Logs)
	for _, node := range sortedKeys(v.run.Logs) {
		fv := fileViewOf(names[node], files)
		fv.What = "Redis log of " + node
		out = append(out, fv)
	}
	return out
}
