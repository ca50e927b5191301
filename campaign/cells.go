package campaign

import (
	"fmt"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// Topologies are the topologies a campaign tries by default, one of each
// class a lock meets in production: one node, independent masters
// (Redlock's), replicated with Sentinel, groups of replicated masters, a
// Redis Cluster with a replica per shard.
func Topologies() []string {
	return []string{"independent:1", "independent:5", "replicated:2+sentinels", "groups:3", "cluster:3+1"}
}

// Class is a topology's class, what a catalog row is matched on: "one
// node", "independent masters", or the kind's name.
func Class(t cluster.Topology) string {
	if t.Kind == cluster.Independent {
		if t.N == 1 {
			return "one node"
		}
		return "independent masters"
	}
	return string(t.Kind)
}

// Cell is one topology × fault family of a campaign, and what its hunt
// did.
type Cell struct {
	Topology string `json:"topology"`
	Class    string `json:"class"`
	Family   string `json:"family"`
	// Kinds are the family's fault kinds the cell's runs can take.
	Kinds []nemesis.Kind `json:"kinds,omitempty"`
	// Skipped says why the cell is not hunted: the lock cannot run on the
	// topology, none of the family's kinds can run there, or the cell is
	// another shard's.
	Skipped string `json:"skipped,omitempty"`
	// Hunt is the cell's hunt directory, relative to the campaign's.
	Hunt    string        `json:"hunt,omitempty"`
	Budget  time.Duration `json:"budget_ns,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns,omitempty"`
	// Tried, FaultsApplied and Found are its hunt's attempts, faults
	// applied and finds; Replayed the finds that failed alike in Need of
	// Replays replays.
	Tried         int `json:"tried"`
	FaultsApplied int `json:"faults_applied"`
	Found         int `json:"found"`
	Replayed      int `json:"replayed"`
	// Windows are the dangerous windows that count for the cell, with how
	// often its attempts reached each.
	Windows []Window `json:"windows,omitempty"`
	// Finds are the IDs of the campaign's finds this cell made (a find
	// several cells made lists them all).
	Finds    []string `json:"finds,omitempty"`
	Stopped  string   `json:"stopped,omitempty"`
	ExitCode int      `json:"exit_code"`
	// Error is the hunt's error, when it could not run.
	Error string `json:"error,omitempty"`
}

// Window is a dangerous window as a cell counts it.
type Window struct {
	Name    string `json:"name"`
	Reached int    `json:"reached"`
	// Attempts is how many attempts reached it.
	Attempts int `json:"attempts"`
}

// Name is the cell's name: "replicated:2+sentinels × failover".
func (c Cell) Name() string { return c.Topology + " × " + c.Family }

// slug is the cell's directory name.
func (c Cell) slug() string {
	r := strings.NewReplacer(":", "-", "+", "-")
	return r.Replace(c.Topology) + "_" + c.Family
}

// runnable reports whether the cell is this shard's and can be hunted.
func (c Cell) runnable() bool { return c.Skipped == "" }

// Covered are the windows the cell's attempts reached, of those that
// count.
func (c Cell) Covered() (reached, counted int) {
	for _, w := range c.Windows {
		counted++
		if w.Reached > 0 {
			reached++
		}
	}
	return
}

// notThisShard is a cell's Skipped when another shard hunts it.
const notThisShard = "another shard's"

// planCells lists every topology × family of the campaign, each with the
// family's kinds its runs can take or why it is skipped, and marks the
// cells of other shards. What a lock and a topology can take is asked of
// the engine (runner.Plan.Normalized, WithDrawnFaults), never decided
// here.
func planCells(tmpl runner.Plan, topologies, families []string, shard *matrix.Shard) ([]Cell, error) {
	fams := nemesis.Families()
	if len(families) > 0 {
		fams = fams[:0:0]
		for _, name := range families {
			f, _ := familyNamed(name)
			fams = append(fams, f)
		}
	}
	var cells []Cell
	for _, ts := range topologies {
		t, err := cluster.ParseTopology(ts)
		if err != nil {
			return nil, fmt.Errorf("%w: topology %q: %w", runner.ErrPlan, ts, err)
		}
		p := tmpl
		p.Topology = t
		np, perr := p.Normalized()
		for _, f := range fams {
			c := Cell{Topology: t.String(), Class: Class(t), Family: f.Name}
			switch {
			case perr != nil:
				c.Skipped = "the lock cannot run on it: " + firstLine(perr)
			default:
				c.Kinds, c.Skipped = drawable(np, f)
			}
			cells = append(cells, c)
		}
	}
	n := 0
	for i := range cells {
		if cells[i].Skipped != "" {
			continue
		}
		if shard != nil && n%shard.Count != shard.Index-1 {
			cells[i].Skipped = notThisShard
		}
		n++
	}
	return cells, nil
}

// drawable are the kinds of family f a schedule can be drawn from for plan
// p (each alone), or why none can.
func drawable(p runner.Plan, f nemesis.Family) ([]nemesis.Kind, string) {
	var ok []nemesis.Kind
	var why []string
	for _, k := range f.Kinds {
		if _, err := p.WithDrawnFaults(1, runner.Draw{Kinds: []nemesis.Kind{k}}); err != nil {
			why = append(why, fmt.Sprintf("%s: %s", k, firstLine(err)))
			continue
		}
		ok = append(ok, k)
	}
	if len(ok) == 0 {
		return nil, "none of its faults can run here (" + strings.Join(why, "; ") + ")"
	}
	return ok, ""
}

// firstLine is an error's message up to its first line break, without
// the bad-input prefix a plan error carries.
func firstLine(err error) string {
	s := err.Error()
	for _, prefix := range []string{runner.ErrPlan.Error() + ": "} {
		s = strings.TrimPrefix(s, prefix)
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func familyNamed(name string) (nemesis.Family, bool) { return nemesis.FamilyNamed(name) }

func familyNames() string {
	var out []string
	for _, f := range nemesis.Families() {
		out = append(out, f.Name)
	}
	return strings.Join(out, ", ")
}

// windowsOf are the windows that count for a hunt, with its attempts'
// reaches.
func windowsOf(t *coverage.Tally) []Window {
	if t == nil {
		return nil
	}
	var out []Window
	for _, w := range t.Windows {
		if !w.Counts() {
			continue
		}
		out = append(out, Window{Name: w.Name, Reached: w.Reached, Attempts: w.Runs})
	}
	return out
}
