package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tumbler-dev/tumbler/coverage"
)

// CoverageFile is the run's coverage of the dangerous windows.
const CoverageFile = coverage.File

// coverageView is the report's section on the dangerous windows.
type coverageView struct {
	Missing string
	Rows    []coverageRow
	// Others are the windows that do not count for the run, with why.
	Others []coverageRow
}

type coverageRow struct {
	Name, Label, Reason, Why, First string
	Reached                         int
	Followed                        bool
	Reaches                         []string
}

// coverageSection is the section of the run's coverage (Run.Coverage).
func (v *view) coverageSection() coverageView {
	c := v.run.Coverage
	if c == nil {
		return coverageView{Missing: "the run recorded no history, so no window was judged"}
	}
	var out coverageView
	for _, w := range c.Windows {
		row := coverageRow{Name: w.Name, Label: w.Label, Reason: w.Reason, Reached: w.Reached, Followed: w.AnomalyFollowed}
		if !w.Counts() {
			switch {
			case w.NotApplicable == "":
				row.Why = "out of reach of the run's faults: " + w.OutOfReach
			case w.OutOfReach == "":
				row.Why = w.NotApplicable
			default:
				row.Why = w.NotApplicable + "; and " + w.OutOfReach
			}
			out.Others = append(out.Others, row)
			continue
		}
		if w.First >= 0 {
			row.First = secs(w.First)
		}
		for _, r := range w.Reaches {
			s := fmt.Sprintf("%s – %s: %s", secs(r.From), secs(r.To), r.Note)
			if len(r.Faults) > 0 {
				s += " (" + strings.Join(r.Faults, ", ") + ")"
			}
			row.Reaches = append(row.Reaches, s)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// writeCoverage writes coverage.json.
func writeCoverage(w io.Writer, c *coverage.Run) error {
	if c == nil {
		return skip{"the run recorded no history, so no window was judged"}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ReadCoverage reads a run directory's coverage.json; nil and no error
// when the run has none (it recorded no history, or was written before
// coverage was judged).
func ReadCoverage(dir string) (*coverage.Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, CoverageFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c coverage.Run
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, CoverageFile), err)
	}
	return &c, nil
}
