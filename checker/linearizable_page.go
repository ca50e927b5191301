package checker

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tumbler-dev/tumbler/history"
)

// Porcupine's interactive page of a check.

// VisualMaxOps bounds WriteLinearizationHTML: porcupine's page for more
// lock operations than this is too slow to produce and to open (the
// verdict does not depend on it), so Check keeps what it needs to draw only
// up to this many.
const VisualMaxOps = 20000

// linVisual keeps what porcupine needs to draw the check.
type linVisual struct {
	model       porcupine.Model
	ops         []porcupine.Operation
	annotations []porcupine.Annotation
	timeout     time.Duration
}

// WriteLinearizationHTML writes porcupine's interactive view of the lock
// operations (one lane per process, the faults as annotations on a
// "nemesis" lane, crashes and lost leases on their process's lane) as a
// self-contained HTML page, one partition per piece checked. It runs
// porcupine again, in the mode that keeps the partial orders the page
// shows, within Config.LinearizabilityTimeout. A check of more than
// VisualMaxOps lock operations has no page.
func (r *Result) WriteLinearizationHTML(w io.Writer) error {
	if r.lin == nil {
		if c, ok := r.Checker(Linearizability); ok && !c.Skipped && c.Stats["operations"] > VisualMaxOps {
			return fmt.Errorf("checker: %d lock operations: too many for porcupine's page (limit %d, VisualMaxOps)", c.Stats["operations"], VisualMaxOps)
		}
		return errNoVisual
	}
	_, info := porcupine.CheckOperationsVerbose(r.lin.model, r.lin.ops, r.lin.timeout)
	info.AddAnnotations(r.lin.annotations)
	return porcupine.Visualize(r.lin.model, info, w)
}

// WriteLinearizationHTMLFile writes WriteLinearizationHTML's page to path.
func (r *Result) WriteLinearizationHTMLFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	if err := r.WriteLinearizationHTML(f); err != nil {
		f.Close()
		return fmt.Errorf("checker: visualization: %w", err)
	}
	return f.Close()
}

func linAnnotations(p *prepared) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range p.faults {
		desc := f.Desc
		if desc == "" {
			desc = f.Kind
		}
		out = append(out, porcupine.Annotation{
			Tag: "nemesis", Start: f.Start, End: f.Effect,
			Description: f.ID + " " + f.Kind, Details: desc,
			BackgroundColor: "#f6c6c6",
		})
	}
	for _, e := range p.events {
		desc := "crash"
		if e.f == history.Lost {
			desc = "lease lost " + e.key
		}
		out = append(out, porcupine.Annotation{
			ClientId: int(e.proc), Start: e.time,
			Description: desc, Details: fmt.Sprintf("op %d", e.index),
			BackgroundColor: "#fbe3a6",
		})
	}
	return out
}
