// Package coverage is the one home of the dangerous windows: the moments
// of a run in which a lock can break (a fault on a node of the live lease,
// a lease resting on a bare majority, a node of the lease restarted empty
// within the TTL, …), each with a name and a one-line reason, which of them
// apply to a lock and a topology, and the judgement of which ones a run
// reached and when.
//
// A window is judged from the history and the faults as they ran: the
// nemesis's start and stop records with what it saw as it applied each
// fault (history.Fault's Lease, Empty, Offset, Rate, CutReplication),
// never from the plan. A fault is known by its traits (history.Fault's
// Traits: what it does, as its kind declares it), never by its kind's
// name: each window lists the traits that reach it (Window.Traits), so a
// new fault kind reaches every window whose traits it declares. A window
// is generic (Window.Generic) when an anomaly that follows it is the limit
// of any lock without fencing or a validity its holder checks, not news
// about the lock; Run.Followed says which windows an anomaly followed. A run writes its coverage to coverage.json beside its report
// (Run); a hunt adds its attempts' up (Tally) and says, when it found
// nothing, how often each window was reached.
//
// Which windows apply is decided from Setup, the facts a run's lock and
// topology declare (the runner derives them from variants.Info and
// cluster.Traits), never from a variant's or a topology's name.
package coverage

import (
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// File is the name of a run's coverage in its directory.
const File = "coverage.json"

// Setup are the facts about a run's lock and topology the windows depend
// on.
type Setup struct {
	// TTL of the lock, and Validity, the part of it a holder may act in
	// (TTL less the drift allowance).
	TTL      time.Duration
	Validity time.Duration
	// Leases: the lock grants leases on a key (every kind but a latch).
	Leases bool
	// Quorum: the lock takes its lease on a majority of independent
	// masters (a lock over every node of independent masters).
	Quorum bool
	// Nodes are the topology's data nodes.
	Nodes []string
	// LeaseNodes are the nodes every lease rests on while the topology is
	// as it started (its one primary; every node for a lock over every
	// node): until the first failover, a fault on one of them is on the
	// lease even when no selector read it.
	LeaseNodes []string
	// Failover: the topology can promote a replica.
	Failover bool
	// Renews: the lock renews its leases in the background, or the
	// workload extends them.
	Renews bool
	// Traits are those of the fault kinds the run or the hunt draws from
	// (the runner asks each kind, nemesis.Kind.Traits); a window none of
	// them can reach is out of reach. Empty: any.
	Traits history.TraitSet
}

// Window is one dangerous window.
type Window struct {
	// Name is its stable identifier (coverage.json, hunt.json).
	Name string
	// Label says what it is, as a person reads it in a line.
	Label string
	// Reason is one line: why a lock can break in it.
	Reason string
	// Generic: an anomaly that follows the window is the limit of any lock
	// that neither fences nor exposes a validity its holder checks — a
	// holder stopped past its lease, a grant that reached its holder after
	// the lease ran out — and says nothing about the lock itself. A
	// campaign sets finds that followed only generic windows apart from
	// its candidates.
	Generic bool
	// Deployment: the window is the deployment's, not the lock's — a node
	// of the lease that forgets it (restarted empty), expires it early
	// (its clock moved), or is replaced by a replica without it, or any
	// fault on a node the lease lives on: every lock whose lease lives
	// there fails in it the same way. A campaign takes a find that
	// followed only such windows (and generic ones) as known when a
	// catalog row that shows a failure of the deployment shows it.
	Deployment bool
	// Traits are those of the faults that can reach it (any one of them):
	// its judgement reads a fault's traits, never its kind's name.
	Traits history.TraitSet
	// applies says why the window does not apply to a setup, "" when it
	// does.
	applies func(Setup) string
	// judge finds the window's reaches in a run.
	judge func(*view) []Reach
}

// Applies says why w does not apply to s, "" when it does.
func (w Window) Applies(s Setup) string { return w.applies(s) }

// OutOfReach says why no fault with traits can reach w, "" when one can
// or traits is empty (any fault may be drawn).
func (w Window) OutOfReach(traits history.TraitSet) string {
	if len(traits) == 0 || traits.Has(w.Traits...) {
		return ""
	}
	return "needs a fault that " + w.Traits.Or()
}

// Reach is one time a run was in a window.
type Reach struct {
	// From and To (ns since the run started) delimit it.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Faults are the IDs of the faults that made it.
	Faults []string `json:"faults,omitempty"`
	// Note says what happened, for a person.
	Note string `json:"note"`
}

// Heading is a window as a run's coverage and a hunt's tally list it: its
// name, label and reason, and whether it counts under their setup.
type Heading struct {
	Name   string `json:"name"`
	Label  string `json:"label"`
	Reason string `json:"reason"`
	// NotApplicable says why the window does not apply to the run's lock
	// and topology; OutOfReach why none of the faults drawn can reach it.
	// Either makes it not count (Counts).
	NotApplicable string `json:"not_applicable,omitempty"`
	OutOfReach    string `json:"out_of_reach,omitempty"`
}

// Counts reports whether the window counts (it applies, and its faults can
// reach it).
func (h Heading) Counts() bool { return h.NotApplicable == "" && h.OutOfReach == "" }

// heading is w's Heading under setup s.
func (w Window) heading(s Setup) Heading {
	return Heading{Name: w.Name, Label: w.Label, Reason: w.Reason,
		NotApplicable: w.Applies(s), OutOfReach: w.OutOfReach(s.Traits)}
}

// Result is one window's coverage in a run.
type Result struct {
	Heading
	// Reached is how often the run was in the window; Reaches lists the
	// first MaxReaches of them, First is the first one's start (-1: never).
	Reached int     `json:"reached"`
	First   int64   `json:"first_ns"`
	Reaches []Reach `json:"reaches,omitempty"`
	// AnomalyFollowed: an anomaly came during a reach or within two TTLs
	// after it, or names one of its faults.
	AnomalyFollowed bool `json:"anomaly_followed,omitempty"`
}

// Run is a run's coverage, coverage.json.
type Run struct {
	Windows []Result `json:"windows"`
	// Anomalies are the run's first MaxAnomalies anomalies, each with the
	// windows it followed (Followed).
	Anomalies []Followed `json:"anomalies,omitempty"`
}

// Followed is one anomaly and the windows it followed: it came during one
// of a window's reaches or within two TTLs after it, or names one of the
// reach's faults (the rule of Result.AnomalyFollowed, applied to it alone).
type Followed struct {
	Kind    checker.Kind `json:"kind"`
	At      int64        `json:"at_ns"`
	Windows []string     `json:"windows,omitempty"`
}

// MaxAnomalies bounds the anomalies a Run ties to windows.
const MaxAnomalies = 100

// Followed returns the windows anomaly a of the run followed, in the order
// reports list windows; nil when the run did not tie it to windows (a run
// judged before they were, or past MaxAnomalies), or r is nil.
func (r *Run) Followed(a checker.Anomaly) []string {
	if r == nil {
		return nil
	}
	for _, f := range r.Anomalies {
		if f.Kind == a.Kind && f.At == a.At {
			return f.Windows
		}
	}
	return nil
}

// Get returns the result of the window named name.
func (r *Run) Get(name string) (Result, bool) {
	if r == nil {
		return Result{}, false
	}
	for _, w := range r.Windows {
		if w.Name == name {
			return w, true
		}
	}
	return Result{}, false
}

// MaxReaches bounds the reaches a Result lists (all are counted).
const MaxReaches = 20

// Input is what a run's coverage is judged from.
type Input struct {
	Setup Setup
	// Ops is the history.
	Ops []history.Op
	// Holds are the history's holds (checker.Holds); Faults its faults as
	// the checkers saw them (checker.Result.Faults, or
	// checker.FaultWindows); Anomalies what the checkers found.
	Holds     []checker.Hold
	Faults    []checker.FaultWindow
	Anomalies []checker.Anomaly
}

// Judge finds which windows the run reached and when. Every window is
// listed, those that do not count for the run with why.
func Judge(in Input) *Run {
	v := newView(in)
	out := &Run{Windows: []Result{}}
	n := min(len(v.anomalies), MaxAnomalies)
	for i := range n {
		out.Anomalies = append(out.Anomalies, Followed{Kind: v.anomalies[i].Kind, At: v.anomalies[i].At})
	}
	for _, w := range Windows() {
		r := Result{Heading: w.heading(in.Setup), First: -1}
		if r.NotApplicable == "" {
			reaches := w.judge(v)
			for i := range n {
				if v.follows(&v.anomalies[i], reaches) {
					out.Anomalies[i].Windows = append(out.Anomalies[i].Windows, w.Name)
				}
			}
			slices.SortStableFunc(reaches, func(a, b Reach) int { return int(a.From - b.From) })
			r.Reached = len(reaches)
			if len(reaches) > 0 {
				r.First = reaches[0].From
				r.AnomalyFollowed = v.followed(reaches)
			}
			r.Reaches = reaches[:min(len(reaches), MaxReaches)]
		}
		out.Windows = append(out.Windows, r)
	}
	return out
}

// Lookup returns the window named name.
func Lookup(name string) (Window, bool) {
	for _, w := range Windows() {
		if w.Name == name {
			return w, true
		}
	}
	return Window{}, false
}

// Names are the windows' names, in order.
func Names() []string {
	var out []string
	for _, w := range Windows() {
		out = append(out, w.Name)
	}
	return out
}
