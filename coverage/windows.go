package coverage

import (
	"fmt"
	"strings"
)

// The windows' names.
const (
	LeaseNodeFault     = "lease-node-fault"
	BareMajority       = "bare-majority"
	RestartEmpty       = "restart-empty"
	ClockPastValidity  = "clock-past-validity"
	HolderStopped      = "holder-stopped"
	AcquireStalled     = "acquire-stalled"
	PromotedLackingKey = "promoted-lacking-key"
	LateRenewal        = "late-renewal"
	LostAcquireReply   = "lost-acquire-reply"
)

// Fault kinds (nemesis.Kind's names: a test keeps them in step).
var (
	nodeKinds   = []string{"kill", "restart", "pause", "clock", "drift", "partition", "latency", "memory", "refuse-writes", "reply-loss"}
	stopKinds   = []string{"client-pause", "client-starve", "step-pause", "client-partition", "partition"}
	stallKinds  = []string{"client-pause", "client-starve", "step-pause"}
	renewKinds  = []string{"client-pause", "client-starve", "step-pause", "client-partition", "partition", "latency", "pause", "reply-loss"}
	replyKinds  = []string{"reply-loss", "latency"}
	startKinds  = []string{"kill", "restart"}
	clockKinds  = []string{"clock"}
	cutKinds    = []string{"partition"}
	promoteKind = []string{"failover"}
)

// Windows are the dangerous windows, in the order reports list them.
func Windows() []Window {
	return []Window{
		{Name: LeaseNodeFault, Label: "fault on a node of the live lease while it is held",
			Reason: "the lease lives only on its nodes: one that stops, forgets or expires it early while the holder holds can let another client in",
			Kinds:  nodeKinds, applies: leases, judge: (*view).leaseNodeFaults},
		{Name: BareMajority, Label: "lease resting on a bare majority",
			Reason: "with exactly a majority holding the lease, one node more that forgets it lets a second client gather a majority (Redlock)",
			Kinds:  cutKinds, applies: quorum, judge: (*view).bareMajorities},
		{Name: RestartEmpty, Label: "node of the lease restarted empty within the TTL",
			Reason: "a node back without persistence before the lease expires grants the key again while its holder still holds",
			Kinds:  startKinds, applies: leases, judge: (*view).restartsEmpty},
		{Name: ClockPastValidity, Label: "clock of a lease node moved by more than the validity",
			Reason: "the node expires the key by its own clock, so another client is granted while the holder still believes itself valid",
			Kinds:  clockKinds, applies: leases, judge: (*view).clocksPastValidity},
		{Name: HolderStopped, Label: "holder stopped or cut off past its validity",
			Reason:  "a pause or a partition that outlasts the lease: the holder wakes and acts on a lock that expired and may be granted again",
			Generic: true, Kinds: stopKinds, applies: leases, judge: (*view).holdersStopped},
		{Name: AcquireStalled, Label: "client stopped inside its acquire past the validity",
			Reason:  "a lease counts from before the request: a client stalled on its way to a grant returns with one whose validity is gone, and acts on it unless it checks (Redisson's RedLock)",
			Generic: true, Kinds: stallKinds, applies: leases, judge: (*view).acquiresStalled},
		{Name: PromotedLackingKey, Label: "replica promoted while lacking a held key",
			Reason: "asynchronous replication: a replica that never saw a write to the lock becomes the primary without it",
			Kinds:  promoteKind, applies: failover, judge: (*view).promotionsLackingKey},
		{Name: LateRenewal, Label: "renewal late by more than the TTL",
			Reason: "the lease expired before its renewal came: another client may hold it, and a renewal that recreates the key grants it twice",
			Kinds:  renewKinds, applies: renews, judge: (*view).lateRenewals},
		{Name: LostAcquireReply, Label: "reply of an applied acquire lost",
			Reason: "the key is set but its client does not know it holds it: the lock is stuck until it expires, or a retry is granted twice",
			Kinds:  replyKinds, applies: leases, judge: (*view).lostAcquireReplies},
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
