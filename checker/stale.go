package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tumbler-dev/tumbler/history"
)

// leaseValidity answers "until when did the writer believe its lease
// valid at time t": the largest validity of the lease's ok acquire and of
// its ok extends that returned by t, and of what the write itself carried.
// The library's own answers (ok valid calls) move no validity: they are
// claims the writes are judged against, not leases.
type leaseValidity struct {
	p       *prepared
	extends map[int32][]*call // ok extends per lease
	claims  map[int32][]*call // ok valid calls per lease: the library said it holds
}

func newLeaseValidity(p *prepared) *leaseValidity {
	lv := &leaseValidity{p: p, extends: map[int32][]*call{}, claims: map[int32][]*call{}}
	for i := range p.calls {
		c := &p.calls[i]
		if c.typ != history.OK || c.lease < 0 {
			continue
		}
		switch c.f {
		case history.Extend:
			lv.extends[c.lease] = append(lv.extends[c.lease], c)
		case history.Valid:
			lv.claims[c.lease] = append(lv.claims[c.lease], c)
		}
	}
	return lv
}

// claim is the library's latest answer that w's lease was valid, given
// before w was invoked, or nil.
func (lv *leaseValidity) claim(w *call) *call {
	var out *call
	if w.lease < 0 {
		return nil
	}
	for _, c := range lv.claims[w.lease] {
		if c.ret <= w.call && (out == nil || c.ret > out.ret) {
			out = c
		}
	}
	return out
}

// claimClause says what the library answered before the write, if it was
// asked: "; its library had said at 2.150 s (op 41) that the lock was
// still valid (until 3.900 s)".
func (lv *leaseValidity) claimClause(w *call) string {
	c := lv.claim(w)
	if c == nil {
		return ""
	}
	until := ""
	if c.vu > 0 {
		until = " (" + history.ValidUntilText(c.vu) + ")"
	}
	return fmt.Sprintf("; its library had said at %s (op %d) that the lock was still valid%s", secs(c.ret), c.opIndex(), until)
}

// at returns the validity and whether the writer had a lease at all.
func (lv *leaseValidity) at(w *call, t int64) (int64, bool) {
	vu := w.vu
	if w.lease < 0 || lv.p.calls[w.lease].typ != history.OK {
		return vu, vu > 0
	}
	vu = max(vu, lv.p.calls[w.lease].vu)
	for _, e := range lv.extends[w.lease] {
		if e.ret <= t {
			vu = max(vu, e.vu)
		}
	}
	return vu, true
}

// holdIndex indexes the holds (sorted by key, then start) by key, with
// the longest hold of each key to bound backward scans.
type holdIndex struct {
	byKey   map[string][]hold
	longest map[string]int64
}

func newHoldIndex(p *prepared) holdIndex {
	hi := holdIndex{byKey: map[string][]hold{}, longest: map[string]int64{}}
	for i := 0; i < len(p.holds); {
		j := i
		for j < len(p.holds) && p.holds[j].key == p.holds[i].key {
			hi.longest[p.holds[i].key] = max(hi.longest[p.holds[i].key], p.holds[j].end-p.holds[j].start)
			j++
		}
		hi.byKey[p.holds[i].key] = p.holds[i:j]
		i = j
	}
	return hi
}

// other returns a hold of key by another process than proc that overlaps
// (from, to), the latest started, or nil.
func (hi holdIndex) other(key string, proc history.Process, from, to int64) *hold {
	hs := hi.byKey[key]
	j, _ := slices.BinarySearchFunc(hs, to, func(h hold, t int64) int { return cmp.Compare(h.start, t) })
	for i := j - 1; i >= 0 && hs[i].start > from-hi.longest[key]; i-- {
		if h := &hs[i]; h.proc != proc && h.end > from {
			return h
		}
	}
	return nil
}

// checkStaleWrites: a write the resource accepted after its writer's lease
// ended is stale; it is an anomaly when another client held the lock in
// between (it may have written too), a warning otherwise. In a fenced
// workload a write with a token is only a warning: the resource accepted
// it in token order, which the fencing checker verifies. Rejected writes
// are fencing doing its job: counted, not anomalies.
func checkStaleWrites(p *prepared, _ *Result, r *report) {
	lv := newLeaseValidity(p)
	hi := newHoldIndex(p)
	var inside, outside, rejected, rejectedStale, unknown int64
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.Write {
			continue
		}
		vu, leased := lv.at(c, c.ret)
		switch c.typ {
		case history.Fail:
			rejected++
			if c.ret >= vu {
				rejectedStale++
			}
			continue
		case history.Info:
			unknown++
			continue
		}
		if c.ret < vu {
			inside++
			continue
		}
		outside++
		from := vu
		if !leased {
			from = c.call
		}
		ctxFrom := from
		if c.lease >= 0 && p.calls[c.lease].typ == history.OK {
			ctxFrom = p.calls[c.lease].ret
		}
		var lease string
		if leased {
			lease = fmt.Sprintf("%s after its lease ended at %s", dur(c.ret-vu), secs(vu))
		} else {
			lease = fmt.Sprintf("although it held no lease on %q", c.key)
		}
		a := Anomaly{Key: c.key, Ops: []int64{c.opIndex()}, Clients: []int{c.client}, From: from, To: c.ret}
		what := fmt.Sprintf("client %d's write of %q to %q (op %d) was accepted at %s, %s%s", c.client, c.value, c.key, c.opIndex(), secs(c.ret), lease, lv.claimClause(c))
		h := hi.other(c.key, c.proc, from, c.ret)
		switch {
		case h == nil:
			a.Kind = WriteOutsideLease
			a.Explanation = fmt.Sprintf("%s; nobody else held the lock meanwhile; %s.", what, p.faultClause(p.faultsIn(ctxFrom, c.ret)))
			r.warning(a, ctxFrom)
			continue
		case p.cfg.Fenced && c.token != 0:
			// The resource ordered it by its token; whether that order
			// held is the fencing checker's question.
			a.Kind = WriteOutsideLease
			a.Ops = append(a.Ops, p.calls[h.acq].opIndex())
			a.Clients = append(a.Clients, h.client)
			a.Explanation = fmt.Sprintf("%s, while client %d held the lock (granted at %s); the resource accepted its token %d, so no newer token had been written; %s.",
				what, h.client, secs(h.start), c.token, p.faultClause(p.faultsIn(ctxFrom, c.ret)))
			r.warning(a, ctxFrom)
			continue
		}
		grant := p.calls[h.acq].opIndex()
		a.Kind = StaleWrite
		a.Ops = append(a.Ops, grant)
		a.Clients = append(a.Clients, h.client)
		a.Explanation = fmt.Sprintf("%s, while client %d held the lock (granted at %s, op %d, until %s); %s.",
			what, h.client, secs(h.start), grant, h.ended(), p.faultClause(p.faultsIn(ctxFrom, c.ret)))
		r.anomaly(a, ctxFrom)
	}
	r.stat("writes_in_lease", inside)
	r.stat("writes_outside_lease", outside)
	r.stat("writes_rejected", rejected)
	r.stat("writes_rejected_outside_lease", rejectedStale)
	r.stat("writes_unknown", unknown)
	if rejectedStale > 0 {
		r.note("%d writes from outside their lease were rejected by the resource (fencing)", rejectedStale)
	}
}
