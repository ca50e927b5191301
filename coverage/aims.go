package coverage

import (
	"slices"
	"time"
)

// Shape is what a planned fault step looks like to the windows, before it
// runs: what a guided hunt weighs schedules by (hunt's guide). It is a
// prediction; a run's coverage is judged from what happened (Judge).
type Shape struct {
	Kind string
	// Lease: the step aims at a node of the lease (selector "lease" or
	// "primary"); Nodes are the nodes it names.
	Lease bool
	Nodes []string
	// Holder: it stops the holder of the next grant (selector "holder", or
	// every client armed at a step on the way to a grant); Acquiring: it
	// stops a client inside its acquire (a step on the way to a grant).
	Holder    bool
	Acquiring bool
	// Empty: the nodes come back without their data.
	Empty bool
	// Offset is the clock offset it sets; Stop how long it stops or cuts
	// its clients (a pause, or the fault's length).
	Offset time.Duration
	Stop   time.Duration
	// Cut is how many nodes a partition cuts from the clients.
	Cut int
	// CutReplication: it cuts replication.
	CutReplication bool
}

// Aims reports whether a step of shape sh aims at the window under s.
func (w Window) Aims(sh Shape, s Setup) bool {
	onLease := sh.Lease || len(sh.Nodes) > 0 && overlaps(sh.Nodes, s.LeaseNodes)
	switch w.Name {
	case LeaseNodeFault:
		return slices.Contains(nodeKinds, sh.Kind) && onLease
	case BareMajority:
		return sh.Kind == "partition" && sh.Cut > 0 && sh.Cut == len(s.Nodes)-(len(s.Nodes)/2+1)
	case RestartEmpty:
		return slices.Contains(startKinds, sh.Kind) && sh.Empty && onLease
	case ClockPastValidity:
		return slices.Contains(clockKinds, sh.Kind) && sh.Offset > s.Validity && onLease
	case HolderStopped:
		return slices.Contains(stopKinds, sh.Kind) && sh.Holder && sh.Stop > s.Validity
	case AcquireStalled:
		return slices.Contains(stallKinds, sh.Kind) && sh.Acquiring && sh.Stop > s.Validity
	case PromotedLackingKey:
		return sh.Kind == "failover" && sh.CutReplication
	case LateRenewal:
		return slices.Contains(renewKinds, sh.Kind) && (sh.Holder || onLease) && sh.Stop > s.Validity/2
	case LostAcquireReply:
		return slices.Contains(replyKinds, sh.Kind)
	}
	return false
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// Weight is how much a guided hunt wants a scene whose steps have shapes:
// a little for any scene, and for each window that counts and that one of
// them aims at, one over one more than the times the hunt reached it so
// far. A scene aimed at windows never reached weighs most.
func (t *Tally) Weight(shapes []Shape, s Setup) float64 {
	weight := 0.1
	for _, w := range Windows() {
		n := t.Reached(w.Name)
		if n < 0 {
			continue
		}
		for _, sh := range shapes {
			if w.Aims(sh, s) {
				weight += 1 / float64(1+n)
				break
			}
		}
	}
	return weight
}
