package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tumbler-dev/tumbler/history"
)

// checkSemaphore checks that no more clients held a semaphore's permits
// at once than it has (Subject.Permits). Holds are the mutual-exclusion
// checker's: a permit is held from its acquire's ok until the release is
// invoked, its validity ends (a permit-expirable semaphore's lease), its
// lease is reported lost or its client crashes. A client that acts on the
// resource after its permit ended acts as a holder too: an accepted write
// of a client outside its lease, while the others held every permit, is
// one holder too many. One sweep over the holds sorted by key and start,
// and one look-up per write: O(n log n) plus what is found.
func checkSemaphore(p *prepared, _ *Result, r *report) {
	n := p.cfg.Permits
	r.stat("permits", int64(n))
	r.stat("holds", int64(len(p.holds)))
	var active []*hold
	maxHeld := 0
	for i := range p.holds {
		h := &p.holds[i]
		if len(active) > 0 && active[0].key != h.key {
			active = active[:0]
		}
		kept := active[:0]
		for _, a := range active {
			if a.end > h.start {
				kept = append(kept, a)
			}
		}
		active = kept
		if h.end <= h.start {
			continue
		}
		active = append(active, h)
		maxHeld = max(maxHeld, len(active))
		if len(active) > n {
			r.anomaly(tooManyHolders(p, active, h), active[0].start)
		}
	}
	r.stat("most_held_at_once", int64(maxHeld))

	lv := newLeaseValidity(p)
	hi := newHoldIndex(p)
	var outside int64
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.Write || c.typ != history.OK {
			continue
		}
		vu, leased := lv.at(c, c.ret)
		if leased && c.ret < vu {
			continue
		}
		outside++
		held := hi.activeAt(c.key, c.proc, c.ret)
		if len(held) < n {
			continue
		}
		r.anomaly(actedWithoutPermit(p, c, vu, leased, held), c.call)
	}
	r.stat("writes_outside_permit", outside)
}

// activeAt returns the holds of key by other processes than proc that
// were held at t.
func (hi holdIndex) activeAt(key string, proc history.Process, t int64) []*hold {
	hs := hi.byKey[key]
	j, _ := slices.BinarySearchFunc(hs, t+1, func(h hold, t int64) int { return cmp.Compare(h.start, t) })
	var out []*hold
	for i := j - 1; i >= 0 && hs[i].start > t-hi.longest[key]-1; i-- {
		if h := &hs[i]; h.proc != proc && h.start <= t && h.end > t {
			out = append(out, h)
		}
	}
	return out
}

func holderList(p *prepared, hs []*hold) (string, []int64, []int) {
	var parts []string
	var ops []int64
	var clients []int
	for _, h := range hs {
		op := p.calls[h.acq].opIndex()
		parts = append(parts, fmt.Sprintf("client %d since %s (op %d)", h.client, secs(h.start), op))
		ops = append(ops, op)
		clients = append(clients, h.client)
	}
	return strings.Join(parts, ", "), ops, clients
}

func tooManyHolders(p *prepared, active []*hold, h *hold) Anomaly {
	to := h.end
	for _, a := range active {
		to = min(to, a.end)
	}
	others := make([]*hold, 0, len(active)-1)
	for _, a := range active {
		if a != h {
			others = append(others, a)
		}
	}
	list, ops, clients := holderList(p, others)
	hOp := p.calls[h.acq].opIndex()
	return Anomaly{
		Kind: PermitsExceeded, Key: h.key,
		Ops: append([]int64{hOp}, ops...), Clients: append([]int{h.client}, clients...),
		From: h.start, To: to, At: h.start,
		Explanation: fmt.Sprintf("client %d acquired a permit of %q at %s (op %d) while %s held permits: %d holders of %d permits at once for %s; %s.",
			h.client, h.key, secs(h.start), hOp, list, len(active), p.cfg.Permits, dur(to-h.start), p.faultClause(p.faultsIn(active[0].start, to))),
	}
}

func actedWithoutPermit(p *prepared, c *call, vu int64, leased bool, held []*hold) Anomaly {
	list, ops, clients := holderList(p, held)
	from := vu
	why := fmt.Sprintf("%s after its permit ended at %s", dur(c.ret-vu), secs(vu))
	if !leased {
		from, why = c.call, "although it held no permit"
	}
	return Anomaly{
		Kind: PermitsExceeded, Key: c.key,
		Ops: append([]int64{c.opIndex()}, ops...), Clients: append([]int{c.client}, clients...),
		From: from, To: c.ret, At: c.ret,
		Explanation: fmt.Sprintf("client %d's write to %q (op %d) was accepted at %s, %s, while %s held all %d permits: %d clients acted at once; %s.",
			c.client, c.key, c.opIndex(), secs(c.ret), why, list, p.cfg.Permits, len(held)+1, p.faultClause(p.faultsIn(from, c.ret))),
	}
}
