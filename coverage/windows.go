package coverage

import (
	"fmt"
	"strings"

	"github.com/tumbler-dev/tumbler/history"
)

// The windows' names.
const (
	LeaseNodeFault     = "lease-node-fault"
	BareMajority       = "bare-majority"
	RestartEmpty       = "restart-empty"
	ClockPastValidity  = "clock-past-validity"
	HolderStopped      = "holder-stopped"
	AcquireStalled     = "acquire-stalled"
	LateGrant          = "late-grant"
	PromotedLackingKey = "promoted-lacking-key"
	LateRenewal        = "late-renewal"
	LostAcquireReply   = "lost-acquire-reply"
	ClientClockMoved   = "client-clock-moved"
)

// The traits of the faults that reach each window (history.Trait): a
// window's judgement reads a fault's traits, never its kind's name, so a
// new kind reaches every window whose traits it declares.
var (
	nodeTraits    = history.TraitSet{history.TouchesNode}
	cutTraits     = history.TraitSet{history.IsolatesNode}
	startTraits   = history.TraitSet{history.RestartsNode}
	clockTraits   = history.TraitSet{history.MovesNodeClock}
	stopTraits    = history.TraitSet{history.StopsClient, history.IsolatesClient}
	stallTraits   = history.TraitSet{history.StopsClient}
	lateTraits    = history.TraitSet{history.SlowsLinks, history.LosesReplies, history.FreezesNode, history.StopsClient}
	promoteTraits = history.TraitSet{history.PromotesReplica}
	renewTraits   = history.TraitSet{history.StopsClient, history.IsolatesClient, history.FreezesNode, history.SlowsLinks, history.LosesReplies}
	replyTraits   = history.TraitSet{history.LosesReplies, history.SlowsLinks}
	skewTraits    = history.TraitSet{history.MovesClientClock}
)

// Windows are the dangerous windows, in the order reports list them.
func Windows() []Window {
	return []Window{
		{Name: LeaseNodeFault, Deployment: true, Label: "fault on a node of the live lease while it is held",
			Reason: "the lease lives only on its nodes: one that stops, forgets or expires it early while the holder holds can let another client in",
			Traits: nodeTraits, applies: leases, judge: (*view).leaseNodeFaults},
		{Name: BareMajority, Deployment: true, Label: "lease resting on a bare majority",
			Reason: "with exactly a majority holding the lease, one node more that forgets it lets a second client gather a majority (Redlock)",
			Traits: cutTraits, applies: quorum, judge: (*view).bareMajorities},
		{Name: RestartEmpty, Deployment: true, Label: "node of the lease restarted empty within the TTL",
			Reason: "a node back without persistence before the lease expires grants the key again while its holder still holds",
			Traits: startTraits, applies: leases, judge: (*view).restartsEmpty},
		{Name: ClockPastValidity, Deployment: true, Label: "clock of a lease node moved by more than the validity",
			Reason: "the node expires the key by its own clock, so another client is granted while the holder still believes itself valid",
			Traits: clockTraits, applies: leases, judge: (*view).clocksPastValidity},
		{Name: HolderStopped, Label: "holder stopped or cut off past its validity",
			Reason:  "a pause or a partition that outlasts the lease: the holder wakes and acts on a lock that expired and may be granted again",
			Generic: true, Traits: stopTraits, applies: leases, judge: (*view).holdersStopped},
		{Name: AcquireStalled, Label: "client stopped inside its acquire past the validity",
			Reason:  "a lease counts from before the request: a client stalled on its way to a grant returns with one whose validity is gone, and acts on it unless it checks (Redisson's RedLock)",
			Generic: true, Traits: stallTraits, applies: leases, judge: (*view).acquiresStalled},
		{Name: LateGrant, Label: "grant heard after its validity ran out",
			Reason:  "the reply of an acquire came late — delayed, held by a frozen node, or read by a starved client — and its lease had expired before its holder heard of it: it acts on a lock another may hold, unless it checks (acquire-stalled's grants, whose client one stop held past the validity, are not counted again)",
			Generic: true, Traits: lateTraits, applies: leases, judge: (*view).lateGrants},
		{Name: PromotedLackingKey, Deployment: true, Label: "replica promoted while lacking a held key",
			Reason: "asynchronous replication: a replica that never saw a write to the lock becomes the primary without it",
			Traits: promoteTraits, applies: failover, judge: (*view).promotionsLackingKey},
		{Name: LateRenewal, Label: "renewal late by more than the TTL",
			Reason: "the lease expired before its renewal came: another client may hold it, and a renewal that recreates the key grants it twice",
			Traits: renewTraits, applies: renews, judge: (*view).lateRenewals},
		{Name: LostAcquireReply, Label: "reply of an applied acquire lost",
			Reason: "the key is set but its client does not know it holds it: the lock is stuck until it expires, or a retry is granted twice",
			Traits: replyTraits, applies: leases, judge: (*view).lostAcquireReplies},
		{Name: ClientClockMoved, Label: "client's clock moved by more than the validity while a lease was held",
			Reason: "a lock that reads the client's wall clock breaks: a holder whose clock moved while it held counts its validity wrong and believes it still holds, and a client whose clock is ahead judges the holder's lease expired and takes it (the timestamp recipes)",
			Traits: skewTraits, applies: leases, judge: (*view).clientClocksMoved},
	}
}

func leases(s Setup) string {
	if !s.Leases {
		return "the lock grants no lease (a latch)"
	}
	return ""
}

func quorum(s Setup) string {
	switch {
	case !s.Quorum:
		return "the lock does not take its lease on a majority of independent masters"
	case len(s.Nodes) < 3:
		return fmt.Sprintf("a majority of %d nodes is all of them", len(s.Nodes))
	}
	return ""
}

func failover(s Setup) string {
	if !s.Failover {
		return "the topology has no replica to promote"
	}
	return ""
}

func renews(s Setup) string {
	if r := leases(s); r != "" {
		return r
	}
	if !s.Renews {
		return "neither the lock nor the workload renews a lease"
	}
	return ""
}

// Summary is one line per window that counts: "label: reached N times"
// and, when an anomaly followed, so.
func (r *Run) Summary() []string {
	var out []string
	for _, w := range r.Windows {
		if w.Counts() {
			out = append(out, line(w.Label, w.Reached, w.AnomalyFollowed))
		}
	}
	return out
}

func line(label string, n int, followed bool) string {
	s := fmt.Sprintf("%s: reached %d %s", label, n, times(n))
	if followed {
		s += ", an anomaly followed"
	}
	return s
}

func times(n int) string {
	if n == 1 {
		return "time"
	}
	return "times"
}

func nodesList(xs []string) string { return strings.Join(xs, ", ") }

// IsGeneric reports whether the window named name is generic
// (Window.Generic); false for a name no window has.
func IsGeneric(name string) bool {
	w, ok := Lookup(name)
	return ok && w.Generic
}

// IsDeployment reports whether the window named name is the deployment's
// (Window.Deployment); false for a name no window has.
func IsDeployment(name string) bool {
	w, ok := Lookup(name)
	return ok && w.Deployment
}
