package reports

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/outcome"
)

// parsedJUnit is read with its own types, not the writer's.
type parsedJUnit struct {
	XMLName xml.Name `xml:"testsuites"`
	Tests   int      `xml:"tests,attr"`
	Fails   int      `xml:"failures,attr"`
	Errors  int      `xml:"errors,attr"`
	Suites  []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, path string) parsedJUnit {
	t.Helper()
	var j parsedJUnit
	if err := xml.Unmarshal([]byte(readFile(t, path)), &j); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	return j
}

// Every corpus history gives a complete report: every file, the verdict,
// every anomaly's sentence and links that resolve.
func TestCorpusReports(t *testing.T) {
	for _, path := range corpusFiles(t) {
		r := corpusRun(t, path)
		t.Run(r.Name, func(t *testing.T) {
			dir, files := writeReport(t, r)
			for _, name := range []string{IndexFile, ResultsFile, TimelineFile, LatencyFile, ThroughputFile, JUnitFile, LinearizabilityFile} {
				st, err := os.Stat(filepath.Join(dir, name))
				if err != nil || st.Size() == 0 {
					t.Errorf("%s missing or empty (%v); not written: %v", name, err, files.NotWritten)
				}
				if !files.Has(name) {
					t.Errorf("Files does not list %s", name)
				}
			}
			page := readFile(t, files.Index())
			text := pageText(page)
			want := strings.ToUpper(string(r.Result.Verdict))
			if !strings.Contains(page, `id="verdict-badge">`+want+"<") {
				t.Errorf("index.html does not show the verdict %s", want)
			}
			for i, a := range r.Result.Anomalies {
				if !strings.Contains(text, a.Explanation) {
					t.Errorf("index.html lacks anomaly sentence %q", a.Explanation)
				}
				if !strings.Contains(page, fmt.Sprintf(`id="%s"`, anomalyAnchor(i))) {
					t.Errorf("no anchor for anomaly %d", i+1)
				}
				for _, o := range a.Ops {
					if !strings.Contains(page, fmt.Sprintf(`<a href="#op-%d">`, o)) {
						t.Errorf("anomaly %d does not link op %d", i+1, o)
					}
				}
				for _, f := range a.Faults {
					if !strings.Contains(page, fmt.Sprintf(`href="#%s"`, faultAnchor(f))) {
						t.Errorf("anomaly %d does not link fault %s", i+1, f)
					}
				}
			}
			if n := checkAnchors(t, page); len(r.Result.Anomalies) > 0 && n == 0 {
				t.Error("no in-page links")
			}
			svg := readFile(t, filepath.Join(dir, TimelineFile))
			rects := parseSVG(t, svg)
			dg := 0
			for _, rc := range rects {
				if rc.class == "tl-dg" {
					dg++
				}
			}
			doubles := 0
			for _, a := range r.Result.Anomalies {
				if a.Kind == checker.DoubleGrant {
					doubles++
				}
			}
			if (dg > 0) != (doubles > 0) {
				t.Errorf("timeline has %d double-grant marks for %d double grants", dg, doubles)
			}
			j := parseJUnit(t, filepath.Join(dir, JUnitFile))
			if (j.Fails > 0) != (r.Result.Verdict == checker.Invalid) {
				t.Errorf("junit.xml has %d failures for verdict %s", j.Fails, r.Result.Verdict)
			}
			for _, c := range j.Suites[0].Cases {
				cr, ok := r.Result.Checker(c.Name)
				if !ok {
					continue
				}
				if (c.Failure != nil) != (cr.Verdict == checker.Invalid) {
					t.Errorf("junit case %s: failure %v for verdict %s", c.Name, c.Failure != nil, cr.Verdict)
				}
				if (c.Skipped != nil) != cr.Skipped {
					t.Errorf("junit case %s: skipped %v, checker skipped %v", c.Name, c.Skipped != nil, cr.Skipped)
				}
				if c.Failure != nil {
					for _, a := range r.Result.Anomalies {
						if a.Checker == c.Name && !strings.Contains(c.Failure.Text, a.Explanation) {
							t.Errorf("junit failure of %s lacks %q", c.Name, a.Explanation)
						}
					}
				}
			}
			var res Results
			if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ResultsFile))), &res); err != nil {
				t.Fatal(err)
			}
			if res.Verdict != r.Result.Verdict || res.Result == nil || len(res.Result.Anomalies) != len(r.Result.Anomalies) || res.ExitCode != judged(r).Judgement.ExitCode {
				t.Errorf("results.json: verdict %s, exit %d, %v", res.Verdict, res.ExitCode, res.Result)
			}
		})
	}
}

// A double grant is drawn in red over the overlap, on both clients' lanes.
func TestTimelineMarksDoubleGrantOverlap(t *testing.T) {
	r := corpusRun(t, filepath.Join("..", "checker", "testdata", "double-grant.jsonl"))
	var a checker.Anomaly
	for _, x := range r.Result.Anomalies {
		if x.Kind == checker.DoubleGrant {
			a = x
		}
	}
	if a.Kind == "" {
		t.Fatal("the corpus double grant has no double-grant anomaly")
	}
	dir, _ := writeReport(t, r)
	rects := parseSVG(t, readFile(t, filepath.Join(dir, TimelineFile)))
	v := newView(r)
	l := &timelineLayout{v: v}
	var marks []svgRect
	for _, rc := range rects {
		if rc.class == "tl-dg" {
			marks = append(marks, rc)
		}
	}
	if len(marks) != 2 {
		t.Fatalf("%d double-grant marks, want one on each client's lane", len(marks))
	}
	if marks[0].y == marks[1].y {
		t.Error("both marks are on the same lane")
	}
	for _, m := range marks {
		if d := m.x - l.x(a.From); d < -0.1 || d > 0.1 {
			t.Errorf("mark starts at x=%.1f, the overlap at %.1f", m.x, l.x(a.From))
		}
		if d := m.x + m.w - l.x(a.To); d < -0.1 || d > 0.1 {
			t.Errorf("mark ends at x=%.1f, the overlap at %.1f", m.x+m.w, l.x(a.To))
		}
	}
	// A clean history has none.
	clean := corpusRun(t, filepath.Join("..", "checker", "testdata", "clean-contention.jsonl"))
	dir, _ = writeReport(t, clean)
	for _, rc := range parseSVG(t, readFile(t, filepath.Join(dir, TimelineFile))) {
		if rc.class == "tl-dg" {
			t.Fatal("a clean history has a double-grant mark")
		}
	}
}

// A lease with no expiry (a library that exposes no validity) is shown as
// one in the operation table and the timeline, never as an instant a
// century after the run.
func TestNoExpiryShownAsSuch(t *testing.T) {
	r := corpusRun(t, filepath.Join("..", "checker", "testdata", "double-grant.jsonl"))
	never := int64(100*365*24*time.Hour) + r.Ops[len(r.Ops)-1].Time
	n := 0
	for i := range r.Ops {
		if o := &r.Ops[i]; o.F == history.Acquire && o.Type == history.OK {
			o.ValidUntil = never
			n++
		}
	}
	if n == 0 {
		t.Fatal("the corpus history has no ok acquire")
	}
	res, err := checker.Check(r.Ops, checker.Config{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.Result = res
	dir, _ := writeReport(t, r)
	for _, f := range []string{IndexFile, TimelineFile} {
		page := readFile(t, filepath.Join(dir, f))
		if !strings.Contains(page, history.NoExpiryText) {
			t.Errorf("%s does not say %q", f, history.NoExpiryText)
		}
		if secs := fmt.Sprintf("%.3f", history.Seconds(never)); strings.Contains(page, secs) {
			t.Errorf("%s shows the no-expiry instant %s s", f, secs)
		}
	}
}

// The holds drawn are what clients believed: extend-after-lapse shows
// client 0 holding past its validity (hatched), and the bars end where the
// history says.
func TestDeriveHolds(t *testing.T) {
	ops, err := history.ReadFile(filepath.Join("..", "checker", "testdata", "extend-after-lapse.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := deriveHolds(ops, checker.Config{TTL: time.Second})
	if len(m.lanes) != 2 || len(m.holds) != 2 || m.noHolds != "" {
		t.Fatalf("lanes %v, holds %+v (%s)", m.lanes, m.holds, m.noHolds)
	}
	h0 := m.holds[0]
	if h0.Client != 0 || h0.Start != 101_000_000 || h0.HeldUntil != 1_700_000_000 || h0.HeldUntilBy != "release" || h0.ValidUntil != 2_488_000_000 {
		t.Errorf("client 0's hold %+v", h0)
	}
	// Without the extend the hold lapses at 1.088 s but the client held on
	// until its release: hatched.
	ops2, err := history.ReadFile(filepath.Join("..", "checker", "testdata", "release-others-lock.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m2 := deriveHolds(ops2, checker.Config{TTL: time.Second})
	past := 0
	for _, h := range m2.holds {
		if h.HeldUntil > h.ValidUntil {
			past++
		}
	}
	if past == 0 {
		t.Errorf("release-others-lock: no hold past its validity: %+v", m2.holds)
	}
	// A history the checker rejects draws its lanes and says why it has no
	// bars.
	bad := append(slices.Clone(ops), op(ops[len(ops)-1].Index+1, 0, history.OK, history.Release, "lock", 1e9))
	m3 := deriveHolds(bad, checker.Config{TTL: time.Second})
	if len(m3.holds) != 0 || !strings.Contains(m3.noHolds, "no pending invoke") || len(m3.lanes) != 2 {
		t.Errorf("rejected history: holds %+v, lanes %v, reason %q", m3.holds, m3.lanes, m3.noHolds)
	}
}

func op(i int64, proc int, typ history.Type, f, key string, t int64) history.Op {
	return history.Op{Index: i, Process: history.Process(proc), Client: proc, Type: typ, F: f, Key: key, Time: t}
}

func fault(i int64, f, id string, t int64) history.Op {
	return history.Op{Index: i, Process: history.NemesisProcess, Type: history.Info, F: f, Time: t,
		Fault: &history.Fault{ID: id, Kind: "partition", Targets: []string{"n1"}, Desc: "cut <n1> & friends",
			Traits: history.TraitSet{history.TouchesNode, history.IsolatesNode}}}
}

// Reports are written for degenerate runs too: no ops, only faults, an
// unknown verdict, an unchecked or interrupted run.
func TestDegenerateRuns(t *testing.T) {
	onlyFaults := []history.Op{fault(0, history.Start, "f1", 1e8), fault(1, history.Stop, "f1", 5e8), fault(2, history.Start, "f2", 6e8)}
	resFaults, err := checker.Check(onlyFaults, checker.Config{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	skippedFault := []history.Op{fault(0, history.Start, "f1", 1e8), fault(1, history.Stop, "f1", 1e8)}
	skippedFault[0].Type, skippedFault[1].Type = history.Fail, history.Fail
	resSkipped, err := checker.Check(skippedFault, checker.Config{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	contention := corpusRun(t, filepath.Join("..", "checker", "testdata", "clean-contention.jsonl")).Ops
	slowRelease := corpusRun(t, filepath.Join("..", "checker", "testdata", "slow-release-reply.jsonl")).Ops // needs a search
	unknownRes, err := checker.Check(slowRelease, checker.Config{TTL: time.Second, LinearizabilityMemory: 1})
	if err != nil {
		t.Fatal(err)
	}
	if unknownRes.Verdict != checker.Unknown {
		t.Fatalf("a 1-byte porcupine budget gave %s", unknownRes.Verdict)
	}
	cases := []struct {
		name    string
		run     Run
		verdict string
		phrases []string
		notLin  string // why linearizability.html is missing
	}{
		{"no ops", Run{Name: "empty"}, "UNKNOWN",
			[]string{"The history was not checked: the run ended before its history was checked", "No operation was recorded", "No fault was injected"}, "not checked"},
		{"no ops checked", Run{Name: "empty-checked", Result: mustCheck(t, nil)}, "VALID", []string{"No anomaly"}, ""},
		{"only faults", Run{Name: "faults", Ops: onlyFaults, Result: resFaults}, "VALID",
			[]string{"cut <n1> & friends", "never stopped", "f2", "touches-node, isolates-node"}, ""},
		{"skipped fault", Run{Name: "skipped", Ops: skippedFault, Result: resSkipped}, "VALID",
			[]string{"idle: skipped: it never took effect"}, ""},
		{"unknown verdict", Run{Name: "unknown", Ops: slowRelease, Result: unknownRes}, "UNKNOWN",
			[]string{"porcupine would need"}, "could not decide"},
		{"unchecked with a reason", Run{Name: "broken", Ops: onlyFaults, CheckError: "op 3: completed before its invoke"}, "UNKNOWN",
			[]string{"op 3: completed before its invoke", "cut <n1> & friends"}, "not checked"},
		{"interrupted", Run{Name: "stopped", Ops: contention[:7], Result: mustCheck(t, contention[:7]), Interrupted: true}, "VALID",
			[]string{"The run was interrupted"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, files := writeReport(t, tc.run)
			page := readFile(t, files.Index())
			if !strings.Contains(page, `id="verdict-badge">`+tc.verdict+"<") {
				t.Errorf("verdict %s not shown", tc.verdict)
			}
			text := pageText(page)
			for _, p := range tc.phrases {
				if !strings.Contains(text, p) {
					t.Errorf("index.html lacks %q", p)
				}
			}
			checkAnchors(t, page)
			parseSVG(t, readFile(t, filepath.Join(dir, TimelineFile)))
			if tc.notLin != "" && !strings.Contains(files.NotWritten[LinearizabilityFile], tc.notLin) {
				t.Errorf("linearizability.html: not written because %q, want %q", files.NotWritten[LinearizabilityFile], tc.notLin)
			}
			for _, name := range []string{LatencyFile, ThroughputFile, JUnitFile, ResultsFile} {
				if !files.Has(name) {
					t.Errorf("%s not written: %s", name, files.NotWritten[name])
				}
			}
			j := parseJUnit(t, filepath.Join(dir, JUnitFile))
			var runCase bool
			for _, c := range j.Suites[0].Cases {
				if c.Name == "run" {
					runCase = c.Error != nil
				}
				if cr, ok := resultOf(tc.run).Checker(c.Name); ok && cr.Verdict == checker.Unknown && c.Error == nil {
					t.Errorf("junit: unknown checker %s is not an error", c.Name)
				}
			}
			if want := tc.run.Interrupted || tc.run.Result == nil; runCase != want {
				t.Errorf("junit case run errors: %v, want %v", runCase, want)
			}
		})
	}
}

func resultOf(r Run) *checker.Result {
	if r.Result == nil {
		return &checker.Result{}
	}
	return r.Result
}

func mustCheck(t *testing.T, ops []history.Op) *checker.Result {
	t.Helper()
	res, err := checker.Check(ops, checker.Config{TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Every file shows the judgement the run engine hands over, as given:
// whether a catalog row was reproduced (and why) in the page, in
// results.json and as a JUnit case, and the exit code in the page, in
// results.json and in the JUnit properties — even where the checker's
// result alone would suggest otherwise (an interrupted run whose verdict
// met the expectation is not reproduced, and its valid verdict exits 2).
func TestJudgementShownAsGiven(t *testing.T) {
	base := corpusRun(t, filepath.Join("..", "checker", "testdata", "double-grant.jsonl"))
	exp := outcome.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant, Text: "invalid: double grant"}
	for _, tc := range []struct {
		name string
		j    outcome.Judgement
	}{
		{"reproduced", outcome.Judgement{Verdict: checker.Invalid, ExitCode: 1, Expected: &outcome.Reproduction{Expected: exp, Observed: checker.Invalid,
			Reproduced: true, Why: "invalid as expected: double-grant at 0.401 s", FirstAnomaly: 401_000_000, Faults: []string{"f1"}}}},
		{"interrupted", outcome.Judgement{Verdict: checker.Invalid, ExitCode: 1, Expected: &outcome.Reproduction{Expected: exp, Observed: checker.Invalid,
			Why: "interrupted before its time limit: invalid as expected", FirstAnomaly: 401_000_000}}},
		{"valid but interrupted", outcome.Judgement{Verdict: checker.Valid, ExitCode: 2, Expected: &outcome.Reproduction{Expected: outcome.Expectation{Verdict: checker.Valid},
			Observed: checker.Valid, Why: "interrupted before its time limit: valid as expected", FirstAnomaly: -1}}},
		{"no expectation", outcome.Judgement{Verdict: checker.Invalid, ExitCode: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			r.Judgement = tc.j
			r.Source = "Redis docs"
			dir, files := writeReport(t, r)
			page := readFile(t, files.Index())
			text := pageText(page)
			if !strings.Contains(page, `id="verdict-badge">`+strings.ToUpper(string(tc.j.Verdict))+"<") {
				t.Errorf("the page does not show verdict %s", tc.j.Verdict)
			}
			if !regexp.MustCompile(`exit code\s*` + strconv.Itoa(tc.j.ExitCode) + `\b`).MatchString(text) {
				t.Errorf("the page does not show exit code %d", tc.j.ExitCode)
			}
			var res Results
			if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ResultsFile))), &res); err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.j.Verdict || res.ExitCode != tc.j.ExitCode {
				t.Errorf("results.json: verdict %s, exit %d; given %s, %d", res.Verdict, res.ExitCode, tc.j.Verdict, tc.j.ExitCode)
			}
			junit := parseJUnit(t, filepath.Join(dir, JUnitFile))
			props := map[string]string{}
			for _, p := range junit.Suites[0].Properties {
				props[p.Name] = p.Value
			}
			if props["verdict"] != string(tc.j.Verdict) || props["exit_code"] != strconv.Itoa(tc.j.ExitCode) {
				t.Errorf("junit properties %v", props)
			}
			expCase := -1
			for i, c := range junit.Suites[0].Cases {
				if c.Name == "expected verdict" {
					expCase = i
				}
			}
			rep := tc.j.Expected
			if rep == nil {
				if strings.Contains(page, `id="reproduced"`) || res.Expected != nil || expCase >= 0 {
					t.Errorf("a run without expectation shows a reproduction")
				}
				return
			}
			word := map[bool]string{true: "yes", false: "no"}[rep.Reproduced]
			if !strings.Contains(page, "reproduced: "+word) {
				t.Errorf("the page does not say reproduced: %s", word)
			}
			if res.Expected == nil || res.Expected.Reproduced != rep.Reproduced || res.Expected.Why != rep.Why {
				t.Errorf("results.json expected %+v", res.Expected)
			}
			if expCase < 0 {
				t.Fatal("no expected verdict case")
			}
			c := junit.Suites[0].Cases[expCase]
			switch {
			case (c.Failure == nil) != rep.Reproduced:
				t.Errorf("junit expected-verdict failure %v", c.Failure)
			case !rep.Reproduced && c.Failure.Message != rep.Why:
				t.Errorf("junit failure says %q, the judgement %q", c.Failure.Message, rep.Why)
			}
		})
	}
}

// Logs are copied; one that cannot be copied is an error, and the index is
// written anyway and says so.
func TestLogsAndFailures(t *testing.T) {
	src := filepath.Join(t.TempDir(), "n1.log")
	if err := os.WriteFile(src, []byte("1:M 01 Jan 00:00:00.000 * Ready to accept connections\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := corpusRun(t, filepath.Join("..", "checker", "testdata", "double-grant.jsonl"))
	r.Logs = map[string]string{"n1": src, "n/1": src, "n_1": src, "../n2": filepath.Join(t.TempDir(), "missing.log")}
	dir := t.TempDir()
	files, err := Write(dir, judged(r))
	if err == nil || !strings.Contains(err.Error(), "missing.log") {
		t.Fatalf("a missing log gave error %v", err)
	}
	for _, name := range []string{"n1.log", "n_1.log", "n_1-2.log"} {
		if got := readFile(t, filepath.Join(dir, "logs", name)); !strings.Contains(got, "Ready to accept") {
			t.Errorf("copied log %s: %q", name, got)
		}
	}
	if !files.Has("logs/.._n2.log") && files.NotWritten["logs/.._n2.log"] == "" {
		t.Errorf("the missing log is not accounted for: %+v", files)
	}
	page := readFile(t, files.Index())
	if !strings.Contains(page, `<a href="logs/n1.log">`) || !strings.Contains(pageText(page), "logs/.._n2.log (not written:") {
		t.Error("index.html does not list the logs")
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "n2.log")); err == nil {
		t.Error("a node name escaped the report directory")
	}
	if _, err := Write(filepath.Join(t.TempDir(), "nope"), r); err == nil {
		t.Error("Write to a missing directory succeeded")
	}
}

// bigRun is a synthetic 30 s run: 6 clients on 3 keys taking turns, a
// fault, and one double grant in the middle.
func bigRun(t *testing.T, holdsPerLane int) Run {
	t.Helper()
	var ops []history.Op
	idx := int64(0)
	add := func(o history.Op) {
		o.Index = idx
		idx++
		ops = append(ops, o)
	}
	const clients, keys = 6, 3
	span := int64(30e9)
	per := span / int64(holdsPerLane*clients/keys)
	var evs []history.Op
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		for h := range holdsPerLane * clients / keys {
			c := k*clients/keys + h%(clients/keys)
			t0 := int64(h) * per
			owner := fmt.Sprintf("c%d-%d", c, h)
			evs = append(evs,
				history.Op{Process: history.Process(c), Client: c, Type: history.Invoke, F: history.Acquire, Key: key, Time: t0},
				history.Op{Process: history.Process(c), Client: c, Type: history.OK, F: history.Acquire, Key: key, Value: owner, ValidUntil: t0 + per*3, Time: t0 + per/10},
				history.Op{Process: history.Process(c), Client: c, Type: history.Invoke, F: history.Release, Key: key, Value: owner, Time: t0 + per*8/10},
				history.Op{Process: history.Process(c), Client: c, Type: history.OK, F: history.Release, Key: key, Value: owner, Time: t0 + per*9/10},
			)
		}
	}
	// The double grant: client 5 takes k0 while its turn-taking holder has it.
	evs = append(evs,
		history.Op{Process: 5, Client: 5, Type: history.Invoke, F: history.Acquire, Key: "k0", Time: 15e9},
		history.Op{Process: 5, Client: 5, Type: history.OK, F: history.Acquire, Key: "k0", Value: "intruder", ValidUntil: 16e9, Time: 15e9 + 1},
		history.Op{Process: 5, Client: 5, Type: history.Invoke, F: history.Release, Key: "k0", Value: "intruder", Time: 15e9 + 5e8},
		history.Op{Process: 5, Client: 5, Type: history.OK, F: history.Release, Key: "k0", Value: "intruder", Time: 15e9 + 6e8},
		history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.Start, Time: 14e9, Fault: &history.Fault{ID: "f1", Kind: "kill", Desc: "kill n1"}},
		history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.Stop, Time: 16e9, Fault: &history.Fault{ID: "f1", Kind: "kill", Desc: "kill n1"}},
	)
	slices.SortStableFunc(evs, func(a, b history.Op) int { return int(a.Time - b.Time) })
	for _, o := range evs {
		add(o)
	}
	res, err := checker.Check(ops, checker.Config{TTL: time.Second, Skip: []string{checker.Linearizability}})
	if err != nil {
		t.Fatal(err)
	}
	return Run{Name: "big", Ops: ops, Result: res, TTL: time.Second, Elapsed: 30 * time.Second}
}

// A long history keeps the report small: the operations table shows the
// anomalies' neighbourhoods, the timeline merges bars below a pixel.
func TestLargeHistory(t *testing.T) {
	t.Parallel()
	r := bigRun(t, 4000) // 24k holds, ~96k ops
	if r.Result.Verdict != checker.Invalid {
		t.Fatalf("the synthetic double grant gave %s", r.Result.Verdict)
	}
	start := time.Now()
	dir, files := writeReport(t, r)
	t.Logf("report of %d ops written in %v", len(r.Ops), time.Since(start))
	page := readFile(t, files.Index())
	if !strings.Contains(pageText(page), "operations not shown") {
		t.Error("the operations table of a long history is not capped")
	}
	checkAnchors(t, page)
	for _, a := range r.Result.Anomalies {
		for _, o := range a.Ops {
			if !strings.Contains(page, fmt.Sprintf(`id="op-%d"`, o)) {
				t.Errorf("anomaly op %d is not in the table", o)
			}
		}
	}
	if !strings.Contains(files.NotWritten[LinearizabilityFile], "skipped") {
		t.Errorf("linearizability.html: %q", files.NotWritten[LinearizabilityFile])
	}
	svg := readFile(t, filepath.Join(dir, TimelineFile))
	rects := parseSVG(t, svg)
	if !strings.Contains(svg, "merged") {
		t.Error("the timeline does not say it merged bars")
	}
	for name, limit := range map[string]int64{IndexFile: 4 << 20, TimelineFile: 2 << 20, LatencyFile: 4 << 20, ThroughputFile: 1 << 20} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d KiB", name, st.Size()>>10)
		if st.Size() > limit {
			t.Errorf("%s is %d bytes (limit %d)", name, st.Size(), limit)
		}
	}
	dg := 0
	for _, rc := range rects {
		if rc.class == "tl-dg" {
			dg++
		}
	}
	if dg == 0 {
		t.Error("the double grant is not marked")
	}
}

// A typical run: readable without merging, every hold with its tooltip.
func TestTypicalRunSizes(t *testing.T) {
	r := bigRun(t, 200) // 1200 holds over 30 s
	dir, files := writeReport(t, r)
	var total int64
	for _, name := range files.Written {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
		t.Logf("%-22s %6d KiB", name, st.Size()>>10)
	}
	svg := readFile(t, filepath.Join(dir, TimelineFile))
	if strings.Contains(svg, "merged") {
		t.Error("1200 holds over 30 s should not need merging")
	}
	if strings.Count(svg, "<title>client ") < 1200 {
		t.Errorf("only %d holds have a tooltip", strings.Count(svg, "<title>client "))
	}
	t.Logf("total %d KiB", total>>10)
}

// Whatever the ops, Write writes every file without an internal error:
// the report of a run must not die on the history it reports.
func TestArbitraryOpsNeverBreakWrite(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	types := []history.Type{history.Invoke, history.OK, history.Fail, history.Info, "weird"}
	fs := []string{history.Acquire, history.Release, history.Extend, history.Write, history.Read, history.Crash, history.Lost, history.Start, history.Stop, "noise"}
	checked := 0
	for round := range 30 {
		var ops []history.Op
		for i := range rng.IntN(300) {
			o := history.Op{
				Index: int64(rng.IntN(400) - 50), Process: history.Process(rng.IntN(5) - 1), Client: rng.IntN(4) - 1,
				Type: types[rng.IntN(len(types))], F: fs[rng.IntN(len(fs))], Key: []string{"", "k", "<k&\x01>"}[rng.IntN(3)],
				Value: []string{"", "c1", "c2", "\"quoted\" </script>"}[rng.IntN(4)],
				Token: rng.Int64N(5) - 1, ValidUntil: rng.Int64N(4e9) - 1e9, Time: rng.Int64N(6e9) - 1e9,
			}
			if o.Process == history.NemesisProcess || rng.IntN(10) == 0 {
				o.Fault = &history.Fault{ID: []string{"f1", "f 2", ""}[rng.IntN(3)], Kind: "kill", Desc: "<b>boom</b>"}
			}
			if i == 0 && round%3 == 0 {
				o.Time = 1 << 62
			}
			ops = append(ops, o)
		}
		r := Run{Name: fmt.Sprintf("random-%d <&>", round), Ops: ops, Plan: json.RawMessage("{not json"), Params: []Param{{"<p>", "\x00"}}}
		// The checker refuses most of these; when it accepts one, report it.
		if res, err := checker.Check(ops, checker.Config{TTL: time.Second}); err == nil {
			r.Result = res
			checked++
		} else {
			r.CheckError = err.Error()
		}
		dir := t.TempDir()
		files, err := Write(dir, judged(r))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !files.Has(IndexFile) || !files.Has(TimelineFile) || !files.Has(JUnitFile) {
			t.Fatalf("round %d: written %v", round, files.Written)
		}
		page := readFile(t, files.Index())
		if strings.Contains(page, "<b>boom</b>") || strings.Contains(page, "</script> ") {
			t.Fatalf("round %d: unescaped text in index.html", round)
		}
		checkAnchors(t, page)
		parseSVG(t, readFile(t, filepath.Join(dir, TimelineFile)))
		parseJUnit(t, filepath.Join(dir, JUnitFile))
		var res Results
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, ResultsFile))), &res); err != nil {
			t.Fatalf("round %d: results.json: %v", round, err)
		}
	}
	t.Logf("%d of 30 random histories passed the checker's contract", checked)
}

// randomWellFormed makes a history that keeps the checker's contract:
// clients invoke and complete calls on a few keys with random outcomes,
// faults start and stop, clients crash and lose leases.
func randomWellFormed(rng *rand.Rand, n int) []history.Op {
	var ops []history.Op
	now := int64(0)
	type pending struct {
		f, key, owner string
	}
	calls := map[int]*pending{}
	faultOpen := map[string]bool{}
	fns := []string{history.Acquire, history.Acquire, history.Release, history.Extend, history.Write, history.Read}
	for len(ops) < n {
		now += rng.Int64N(50e6)
		o := history.Op{Index: int64(len(ops)), Time: now}
		switch rng.IntN(20) {
		case 0:
			id := fmt.Sprintf("f%d", rng.IntN(3))
			o.Process, o.Type, o.F = history.NemesisProcess, history.Info, history.Start
			if faultOpen[id] {
				o.F = history.Stop
			}
			faultOpen[id] = !faultOpen[id]
			o.Fault = &history.Fault{ID: id, Kind: "partition", Desc: "cut " + id}
		case 1:
			c := rng.IntN(4)
			o.Process, o.Client, o.Type = history.Process(c), c, history.Info
			o.F = []string{history.Lost, history.Message, history.Pause}[rng.IntN(3)]
		default:
			c := rng.IntN(4)
			o.Process, o.Client = history.Process(c), c
			if p := calls[c]; p != nil {
				o.Type = []history.Type{history.OK, history.Fail, history.Info}[rng.IntN(3)]
				o.F, o.Key, o.Value = p.f, p.key, p.owner
				if p.f == history.Acquire && o.Type == history.OK || p.f == history.Extend && o.Type == history.OK {
					o.ValidUntil = now + rng.Int64N(2e9) + 1
					o.Token = rng.Int64N(20) + 1
				}
				if p.f == history.Read && o.Type == history.OK {
					o.Value = fmt.Sprint(rng.IntN(5))
				}
				if o.Type == history.Info {
					// An unknown outcome ends the client's process, as a timeout would.
					delete(calls, c)
					ops = append(ops, o)
					continue
				}
				delete(calls, c)
			} else {
				p := &pending{f: fns[rng.IntN(len(fns))], key: fmt.Sprintf("k%d", rng.IntN(2)), owner: fmt.Sprintf("c%d-%d", c, rng.IntN(3))}
				if p.f == history.Write {
					p.owner = fmt.Sprint(rng.IntN(5))
				}
				if p.f == history.Read {
					p.owner = ""
				}
				calls[c] = p
				o.Type, o.F, o.Key, o.Value = history.Invoke, p.f, p.key, p.owner
			}
		}
		ops = append(ops, o)
	}
	return ops
}

// Random well-formed histories pass the checker, and Write reports every
// one of them in full.
func TestRandomCheckedRuns(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	verdicts := map[checker.Verdict]int{}
	for round := range 20 {
		ops := randomWellFormed(rng, 50+rng.IntN(400))
		res, err := checker.Check(ops, checker.Config{TTL: time.Second, Subject: checker.Subject{Counter: round%2 == 0, Fenced: round%3 == 0}, LinearizabilityTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("round %d: the generator broke the contract: %v", round, err)
		}
		verdicts[res.Verdict]++
		r := Run{Name: fmt.Sprintf("random-%d", round), Ops: ops, Result: res, TTL: time.Second}
		r = judged(r)
		r.Judgement.Expected = &outcome.Reproduction{Expected: outcome.Expectation{Verdict: checker.Invalid, Kind: checker.DoubleGrant}, Observed: res.Verdict, Why: "as given", FirstAnomaly: -1}
		dir, files := writeReport(t, r)
		page := readFile(t, files.Index())
		checkAnchors(t, page)
		text := pageText(page)
		for _, a := range res.Anomalies {
			if !strings.Contains(text, a.Explanation) {
				t.Errorf("round %d: no sentence %q", round, a.Explanation)
			}
		}
		rects := parseSVG(t, readFile(t, filepath.Join(dir, TimelineFile)))
		dg := 0
		for _, rc := range rects {
			if rc.class == "tl-dg" {
				dg++
			}
		}
		if c, _ := res.Checker(checker.MutualExclusion); (c.Anomalies > 0) != (dg > 0) {
			t.Errorf("round %d: %d double grants, %d marks", round, c.Anomalies, dg)
		}
		j := parseJUnit(t, filepath.Join(dir, JUnitFile))
		fails := 0
		for _, c := range j.Suites[0].Cases {
			if c.Failure != nil && c.Name != "expected verdict" {
				fails++
			}
		}
		if (fails > 0) != (res.Verdict == checker.Invalid) {
			t.Errorf("round %d: %d failing checkers for verdict %s", round, fails, res.Verdict)
		}
	}
	t.Logf("verdicts: %v", verdicts)
}
