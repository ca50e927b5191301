package audit

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the report for a person: the deployment, then each
// risk with what was read, why it matters and the rows to reproduce, then
// what was found safe.
func (r Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s, %s, judged for locks with TTL %v\n", r.Server, r.Shape, r.TTL)
	risks := 0
	for _, f := range r.Findings {
		if f.Risky {
			risks++
		}
	}
	if risks == 0 {
		fmt.Fprintln(w, "no risky setting found")
	} else {
		fmt.Fprintf(w, "%d risky settings:\n", risks)
	}
	for _, pass := range []bool{true, false} {
		if !pass {
			fmt.Fprintln(w, "\nsafe:")
		}
		for _, f := range r.Findings {
			if f.Risky != pass {
				continue
			}
			where := f.Check
			if f.Node != "" {
				where += " on " + f.Node
			}
			mark := "RISK"
			if !f.Risky {
				mark = "ok  "
			}
			fmt.Fprintf(w, "\n%s %s: %s\n     %s\n", mark, where, f.Setting, f.Why)
			if len(f.Rows) > 0 {
				fmt.Fprintf(w, "     reproduce: tumbler reproduce %s\n", strings.Join(f.Rows, " "))
			}
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}
