package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tumbler-dev/tumbler/history"
)

// unsettling are the traits of the faults after whose start the refusals
// checker judges no refusal: those that move or pace a node's clock (and
// so a key's expiry against the harness's clock), and those that can bring
// a deleted key back — a failover, a restart from a log older than a
// release's DEL, or a node stopped or cut off, which Sentinel may answer
// with a failover.
var unsettling = []history.Trait{history.MovesNodeClock, history.PromotesReplica, history.StopsNode, history.IsolatesNode}

// refusalSlack is what a key may outlive its last SET or PEXPIRE's reply
// by, beyond the TTL, on the harness's clock: the server counts the TTL
// from the command's arrival (before the reply) in whole milliseconds.
func refusalSlack(ttl int64) int64 { return ttl/100 + 5e6 }

// checkRefusals: an acquire the lock refused because another owner held
// the key (history.Op.Held: SET NX answered "not set") must meet, within
// its call, a lease that could have held the key: an acquire that did not
// fail (ok, unknown, or cut short) invoked before the refusal returned,
// whose key could live until after the refusal was invoked — until its
// release returned with a definite answer (ok: deleted; fail: the key no
// longer held the lease's value), or else a TTL after its acquire's or
// last extend's reply (never, for a lease without expiry, nor for an
// unknown acquire of a lock whose grants do not all expire). A refusal no such lease explains is a lock that
// said "held" when, as far as every client was told, nobody held it: a
// command that ran while its client was told it did not (a SET NX resent
// after its lost reply is refused by its own key). Failed acquires not
// marked held (no quorum, a refused write, validity run out) promise
// nothing about other owners and are not judged, nor are refusals after
// a fault that unsettles the keys (unsettling).
func checkRefusals(p *prepared, _ *Result, r *report) {
	ttl := int64(p.cfg.TTL)
	unsettled := int64(-1)
	for _, f := range p.faults {
		if f.Traits.Has(unsettling...) && !f.Skipped && (unsettled < 0 || f.Start < unsettled) {
			unsettled = f.Start
		}
	}
	lives := keyLives(p, ttl+refusalSlack(ttl))
	var judged, unjudged int64
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.Acquire || c.typ != history.Fail || !c.held {
			continue
		}
		if unsettled >= 0 && c.ret >= unsettled {
			unjudged++
			continue
		}
		judged++
		if explainedBy(lives[c.key], c) {
			continue
		}
		// The key that refused it was set within a TTL before the
		// refusal: the faults of that span are its story.
		from := max(0, c.call-ttl-refusalSlack(ttl))
		last := lastLifeBefore(lives[c.key], c.call)
		why := "no lease of the key had been granted or attempted before"
		if last != nil {
			why = fmt.Sprintf("the last lease that could hold it (op %d, client %d) %s at %s", last.by.opIndex(), last.by.client, last.how, secs(last.end))
		}
		r.anomaly(Anomaly{
			Kind: RefusedWhileFree, Key: c.key, Ops: []int64{c.opIndex()}, Clients: []int{c.client},
			From: c.call, To: c.ret, At: c.ret,
			Explanation: fmt.Sprintf("client %d's acquire of %q (op %d, %s–%s) was refused as held by another owner, yet no lease could hold the key then: %s; a command ran that its client was told had not (%s).",
				c.client, c.key, c.opIndex(), secs(c.call), secs(c.ret), why, p.faultClause(p.faultsIn(from, c.ret))),
		}, from)
	}
	r.stat("refusals_judged", judged)
	if unjudged > 0 {
		r.stat("refusals_not_judged", unjudged)
	}
}

// keyLife is when a lease could have held its key: from its acquire's
// invoke to end.
type keyLife struct {
	by         *call
	start, end int64
	how        string
}

// keyLives lists per key the lives of every acquire that did not fail,
// by start.
func keyLives(p *prepared, life int64) map[string][]keyLife {
	released := map[int32]int64{} // acquire → its definite release's return
	renewed := map[int32]int64{}  // acquire → its last extend's return
	for i := range p.calls {
		c := &p.calls[i]
		if c.lease < 0 {
			continue
		}
		switch {
		case c.f == history.Release && c.typ != history.Info:
			released[c.lease] = c.ret
		case c.f == history.Extend && c.typ != history.Fail:
			renewed[c.lease] = max(renewed[c.lease], c.ret)
		}
	}
	// An unknown acquire's key expires only if the lock's grants do: some
	// ok acquire has a validity and none has no expiry (a library that
	// exposes none, or a key set without a TTL, as redis-py's timeout=None).
	var finite, endless bool
	for i := range p.calls {
		if c := &p.calls[i]; c.f == history.Acquire && c.typ == history.OK {
			finite = finite || !history.NoExpiry(c.vu)
			endless = endless || history.NoExpiry(c.vu)
		}
	}
	expires := finite && !endless
	out := map[string][]keyLife{}
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.Acquire || c.typ == history.Fail {
			continue
		}
		l := keyLife{by: c, start: c.call}
		switch rel, ok := released[int32(i)]; {
		case ok:
			l.end, l.how = rel, "was released (or found gone by its release)"
		case c.typ == history.OK && history.NoExpiry(c.vu), c.typ != history.OK && !expires:
			l.end, l.how = p.end+1, "never expires"
		default:
			l.end, l.how = max(c.ret, renewed[int32(i)])+life, "could have expired"
		}
		out[c.key] = append(out[c.key], l)
	}
	for _, ls := range out {
		slices.SortFunc(ls, func(a, b keyLife) int { return cmp.Compare(a.start, b.start) })
	}
	return out
}

// explainedBy: some life of the key (not c's own) meets c's call.
func explainedBy(lives []keyLife, c *call) bool {
	for _, l := range lives {
		if l.start > c.ret {
			break
		}
		if l.by != c && l.end >= c.call {
			return true
		}
	}
	return false
}

// lastLifeBefore is the life that ended last before t, if any.
func lastLifeBefore(lives []keyLife, t int64) *keyLife {
	var last *keyLife
	for i := range lives {
		if l := &lives[i]; l.start <= t && (last == nil || l.end > last.end) {
			last = l
		}
	}
	return last
}
