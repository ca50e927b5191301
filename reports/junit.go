package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
)

// JUnit XML in the shape Jenkins, GitLab and the GitHub test reporters
// read: <testsuites> of <testsuite> of <testcase>, a testcase failing with
// <failure>, erroring with <error> or skipped with <skipped>.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func junitTime(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// add appends a case and counts its outcome.
func (s *junitSuite) add(c junitCase) {
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

func writeJUnitSuites(w io.Writer, name string, suites []junitSuite, total time.Duration) error {
	all := junitSuites{Name: name, Time: junitTime(total), Suites: suites}
	for _, s := range suites {
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteJUnit writes a run as one JUnit test suite (junit.xml), one test
// case per checker:
//   - valid: passed;
//   - invalid: <failure type="invalid"> whose text is the checker's anomaly
//     sentences;
//   - unknown: <error type="unknown"> with the reason: the checker could not
//     decide, which is no pass (the run exits 2) and no proven bug either;
//   - not applicable or skipped by configuration: <skipped>.
//
// A catalog row adds the case "expected verdict", failing when the run
// engine judged the row not reproduced (Judgement.Expected). The case "run" errors when the run was interrupted or not
// checked, so a partial report never looks green.
func WriteJUnit(w io.Writer, r Run) error {
	name := r.Name
	if name == "" {
		name = "run"
	}
	class := "tumbler." + name
	suite := junitSuite{Name: name, Time: junitTime(r.Elapsed)}
	if !r.Started.IsZero() {
		suite.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	suite.Properties = []junitProperty{
		{"seed", fmt.Sprint(r.Seed)},
		{"verdict", string(r.Judgement.Verdict)},
		{"exit_code", fmt.Sprint(r.Judgement.ExitCode)},
		{"command", r.Command},
	}
	for _, p := range r.Params {
		suite.Properties = append(suite.Properties, junitProperty{"param." + p.Key, p.Value})
	}
	run := junitCase{Name: "run", Classname: class, Time: junitTime(r.Elapsed)}
	switch {
	case r.Interrupted:
		run.Error = &junitProblem{Message: "the run was interrupted: the verdict covers only what was recorded", Type: "interrupted"}
	case r.Result == nil:
		run.Error = &junitProblem{Message: "the run was not checked: " + r.CheckError, Type: "unchecked"}
	}
	suite.add(run)
	if r.Result != nil {
		anomalies := map[string][]string{}
		for _, a := range r.Result.Anomalies {
			anomalies[a.Checker] = append(anomalies[a.Checker], fmt.Sprintf("%s: %s", a.Kind, a.Explanation))
		}
		for _, c := range r.Result.Checkers {
			tc := junitCase{Name: c.Name, Classname: class, Time: junitTime(c.Duration)}
			switch {
			case c.Skipped:
				tc.Skipped = &junitProblem{Message: c.Reason}
			case c.Verdict == checker.Invalid:
				text := anomalies[c.Name]
				if shown := len(text); c.Anomalies > shown {
					text = append(text, fmt.Sprintf("… and %d more (results.json, index.html)", c.Anomalies-shown))
				}
				tc.Failure = &junitProblem{Message: fmt.Sprintf("%d anomalies", c.Anomalies), Type: "invalid", Text: strings.Join(text, "\n")}
			case c.Verdict == checker.Unknown:
				tc.Error = &junitProblem{Message: "could not decide: " + c.Reason, Type: "unknown"}
			case c.Verdict != checker.Valid:
				tc.Error = &junitProblem{Message: fmt.Sprintf("unexpected verdict %q", c.Verdict), Type: "harness"}
			}
			if len(c.Notes) > 0 {
				tc.SystemOut = strings.Join(c.Notes, "\n")
			}
			suite.add(tc)
		}
	}
	if rep := r.Judgement.Expected; rep != nil {
		tc := junitCase{Name: "expected verdict", Classname: class, Time: junitTime(0)}
		if !rep.Reproduced {
			tc.Failure = &junitProblem{Message: rep.Why, Type: "not-reproduced",
				Text: fmt.Sprintf("expected %s, observed %s", rep.Expected, rep.Observed)}
		} else {
			tc.SystemOut = rep.Why
		}
		suite.add(tc)
	}
	suite.SystemOut = "report: " + IndexFile + "\nreplay: " + r.Command
	return writeJUnitSuites(w, "tumbler", []junitSuite{suite}, r.Elapsed)
}
