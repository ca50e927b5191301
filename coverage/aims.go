package coverage

import (
	"math"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// Shape is what a planned fault step looks like to the windows, before it
// runs: what a guided hunt weighs schedules by (hunt's guide). It is a
// prediction; a run's coverage is judged from what happened (Judge).
type Shape struct {
	// Traits are the step's kind's (nemesis.Kind.Traits).
	Traits history.TraitSet
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
	// Offset is how far it steps a clock (negative: behind), Rate the pace
	// a drift runs it at; Stop how long it stops or cuts its clients (a
	// pause, or the fault's length); Delay how long it delays each reply
	// (a latency).
	Offset time.Duration
	Rate   float64
	Stop   time.Duration
	Delay  time.Duration
	// Cut is how many nodes a partition cuts from the clients.
	Cut int
	// CutReplication: it cuts replication.
	CutReplication bool
}

// Aims reports whether a step of shape sh aims at the window under s: it
// has one of the window's traits, and the magnitudes the window needs.
func (w Window) Aims(sh Shape, s Setup) bool {
	if !sh.Traits.Has(w.Traits...) {
		return false
	}
	onLease := sh.Lease || len(sh.Nodes) > 0 && overlaps(sh.Nodes, s.LeaseNodes)
	switch w.Name {
	case LeaseNodeFault:
		return onLease
	case BareMajority:
		return sh.Cut > 0 && sh.Cut == len(s.Nodes)-(len(s.Nodes)/2+1)
	case RestartEmpty:
		return sh.Empty && onLease
	case ClockPastValidity:
		// A step past the validity, or a drift whose keys live TTL/rate,
		// less than the validity.
		return onLease && (sh.Offset > s.Validity || sh.Rate*float64(s.Validity) > float64(s.TTL))
	case HolderStopped:
		return sh.Holder && sh.Stop > s.Validity
	case AcquireStalled:
		return sh.Acquiring && sh.Stop > s.Validity
	case LateGrant:
		// A reply delayed both ways by half the validity each.
		return sh.Delay > s.Validity/2
	case PromotedLackingKey:
		return sh.CutReplication
	case LateRenewal:
		return (sh.Holder || onLease) && sh.Stop > s.Validity/2
	case LostAcquireReply:
		return true
	case ClientClockMoved:
		// A client's clock stepped either way, or drifted over the fault's
		// length, by more than the validity: the holder's, or another's
		// while someone holds.
		drift := time.Duration(math.Abs(sh.Rate-1) * float64(sh.Stop))
		return max(sh.Offset, -sh.Offset) > s.Validity || sh.Rate != 0 && drift > s.Validity
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
