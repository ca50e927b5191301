package campaign

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios"
)

// A find's classes (Classify).
const (
	// Known: a catalog row shows it (the same lock, topology class and
	// anomaly).
	Known = "known"
	// Generic: its anomaly followed only generic windows — the limit of
	// any lock that neither fences nor exposes a validity its holder
	// checks.
	Generic = "generic"
	// Candidate: neither; for a person to read.
	Candidate = "candidate"
)

// Find is one distinct find of a campaign: what failed, where it was
// found, its minimal plan and how often that plan fails alike.
type Find struct {
	// ID names it in the campaign ("f1"); its shrink and replays are under
	// finds/<ID>/.
	ID string `json:"id"`
	// Class, Row and Why: Classify's verdict on it.
	Class string `json:"class"`
	Row   string `json:"row,omitempty"`
	Why   string `json:"why"`
	// Signature is what failed, the key finds are folded by (Signature).
	Signature string `json:"signature"`
	// Kind is its anomaly; Like what fails like it (outcome.Like); Followed
	// every window the anomaly of its minimal plan's failing replay
	// followed, generic ones included.
	Kind     checker.Kind `json:"kind"`
	Like     outcome.Like `json:"like"`
	Followed []string     `json:"followed,omitempty"`
	// Topology, Class of it, Family: the cell that made it first; Cells
	// every cell that made it.
	Topology string   `json:"topology"`
	TopClass string   `json:"topology_class"`
	Family   string   `json:"family"`
	Cells    []string `json:"cells"`
	// Seed is the hunt's attempt that found it; Hunt its hunt's directory
	// and Plan its plan, relative to the campaign's directory.
	Seed int64  `json:"seed"`
	Hunt string `json:"hunt"`
	Plan string `json:"plan"`
	// Shrink is its shrink's directory; Minimal the minimal plan's file;
	// Steps describe the minimal plan's fault steps; FoundSteps is how many
	// the plan as found had. Shrunk is false when the shrink did not
	// reproduce the find (then Minimal is the plan as found).
	Shrink  string   `json:"shrink,omitempty"`
	Minimal string   `json:"minimal"`
	Steps   []string `json:"steps"`
	// Faults are the minimal plan's fault kinds.
	Faults     []nemesis.Kind `json:"faults"`
	FoundSteps int            `json:"found_steps"`
	Shrunk     bool           `json:"shrunk"`
	// Confirmed is how the minimal plan fared when replayed Confirm times;
	// Report a failing replay's report.
	Confirmed Rate   `json:"confirmed"`
	Report    string `json:"report,omitempty"`
	// RowFile is a ready catalog row of the minimal plan.
	RowFile string `json:"row_file,omitempty"`
	// Folded counts the other finds with its signature.
	Folded int `json:"folded,omitempty"`
}

// Rate is how often a plan failed alike when replayed.
type Rate struct {
	Replayed int `json:"replayed"`
	Alike    int `json:"alike"`
}

func (r Rate) String() string { return fmt.Sprintf("%d of %d", r.Alike, r.Replayed) }

// Signature is what failed, as finds are folded: the anomaly kind, the
// telling windows its anomaly followed (Like.Windows), and the minimal
// plan's fault shape — its steps' kinds with the lock steps they stop a
// client at, in order of kind. Two finds with one signature failed the
// same way, whatever their seeds and timings.
func Signature(kind checker.Kind, like outcome.Like, minimal runner.Plan) string {
	var shape []string
	for _, st := range minimal.Faults {
		s := string(st.Fault)
		if st.LockStep != "" {
			s += "@" + st.LockStep
		}
		if !slices.Contains(shape, s) {
			shape = append(shape, s)
		}
	}
	sort.Strings(shape)
	if len(shape) == 0 {
		shape = []string{"no fault"}
	}
	windows := slices.Clone(like.Windows)
	sort.Strings(windows)
	if len(windows) == 0 {
		windows = []string{"no telling window"}
	}
	return fmt.Sprintf("%s | %s | %s", kind, strings.Join(windows, "+"), strings.Join(shape, "+"))
}

// Classify sets f's class:
//
//   - known, when a catalog row shows the same lock on the same topology
//     class with one of the find's anomaly kinds under a fault of a family
//     of the minimal plan's faults (a row with no faults matches a minimal
//     plan with none) — the same failure, not only the same symptom: a
//     double grant after a restart is not the row of a double grant after
//     a lost reply; or when the find's anomaly followed only windows of
//     the deployment (coverage.Window.Deployment: a node restarted empty,
//     a clock moved, a replica promoted without the key) and generic ones,
//     and a row that shows a failure of the deployment (Scenario.Deployment)
//     shows it the same way for another lock: any lock whose lease lives
//     there fails so;
//   - generic, when its anomaly followed windows and every one is generic
//     (the limit of any lock without fencing or a checked validity);
//   - else a candidate.
//
// It judges nothing about the run: the anomaly is the checkers', the
// windows coverage's.
func Classify(f *Find, lock string, catalog []scenarios.Scenario) {
	f.Class, f.Row = Candidate, ""
	same := func(r scenarios.Scenario) bool {
		return r.Expect.Verdict == checker.Invalid && slices.Contains(f.Like.Kinds, r.Expect.Kind) &&
			Class(r.Plan.Topology) == f.TopClass && sharesFault(r.Plan, f.Faults)
	}
	for _, r := range catalog {
		if same(r) && r.Plan.Lock.Options.Label() == lock {
			f.Class, f.Row = Known, r.Name
			f.Why = fmt.Sprintf("known: catalog row %s shows %s on %s (%s) under %s", r.Name, r.Expect.Kind, lock, f.TopClass, faultKindsText(r.Plan))
			return
		}
	}
	var telling []string
	generic := len(f.Followed) > 0
	for _, w := range f.Followed {
		generic = generic && coverage.IsGeneric(w)
		if !coverage.IsGeneric(w) {
			telling = append(telling, w)
		}
	}
	deployment := len(telling) > 0
	for _, w := range telling {
		deployment = deployment && coverage.IsDeployment(w)
	}
	if deployment {
		for _, r := range catalog {
			if same(r) && r.Deployment {
				f.Class, f.Row = Known, r.Name
				f.Why = fmt.Sprintf("known: a failure of the deployment (%s), which catalog row %s shows for %s on %s under %s — any lock whose lease lives there fails so",
					strings.Join(telling, ", "), r.Name, r.Plan.Lock.Options.Label(), f.TopClass, faultKindsText(r.Plan))
				return
			}
		}
	}
	switch {
	case generic:
		f.Class = Generic
		f.Why = fmt.Sprintf("generic: the %s followed only %s — the limit of any lock without fencing or a validity its holder checks", f.Kind, strings.Join(f.Followed, ", "))
	case len(f.Followed) == 0:
		f.Why = fmt.Sprintf("candidate: the %s followed no dangerous window tumbler knows", f.Kind)
	default:
		f.Why = fmt.Sprintf("candidate: the %s followed %s, and no catalog row shows it for %s on %s", f.Kind, strings.Join(telling, ", "), lock, f.TopClass)
	}
}

// stepsText describes a plan's fault steps, one line each, as the plan
// gives them.
func stepsText(p runner.Plan) []string {
	out := []string{}
	for _, st := range p.Faults {
		out = append(out, stepText(st))
	}
	return out
}

func stepText(st nemesis.Step) string {
	b, err := json.Marshal(st)
	if err != nil {
		return string(st.Fault)
	}
	return string(b)
}

// sharesFault reports whether row plan p injects a fault of one of the
// families of kinds (nemesis.Families: a kill without persistence and a
// restart empty are one failure), or neither has any fault.
func sharesFault(p runner.Plan, kinds []nemesis.Kind) bool {
	if len(p.Faults) == 0 {
		return len(kinds) == 0
	}
	for _, f := range nemesis.Families() {
		row := slices.ContainsFunc(p.Faults, func(st nemesis.Step) bool { return slices.Contains(f.Kinds, st.Fault) })
		find := slices.ContainsFunc(kinds, func(k nemesis.Kind) bool { return slices.Contains(f.Kinds, k) })
		if row && find {
			return true
		}
	}
	return false
}

// faultKinds are the distinct fault kinds of a plan, in order.
func faultKinds(p runner.Plan) []nemesis.Kind {
	var out []nemesis.Kind
	for _, st := range p.Faults {
		if !slices.Contains(out, st.Fault) {
			out = append(out, st.Fault)
		}
	}
	return out
}

func faultKindsText(p runner.Plan) string {
	ks := faultKinds(p)
	if len(ks) == 0 {
		return "no fault"
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}
