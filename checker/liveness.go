package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tumbler-dev/tumbler/history"
)

type span struct{ from, to int64 }

// checkLiveness compares acquire success before, during and after each
// fault, and flags a key nobody could take for more than k×TTL while
// clients kept trying (failed attempts no more than a TTL apart), nobody
// held it, nobody was granted it and no fault was active or had stopped
// less than a TTL before.
func checkLiveness(p *prepared, res *Result, r *report) {
	ttl := int64(p.cfg.TTL)
	limit := int64(p.cfg.LivenessK * float64(ttl))
	acquires := finishedAcquires(p)
	r.stat("limit_ns", limit)
	var excluded []span // faults, and a TTL after each to recover
	for _, f := range p.faults {
		d := max(f.Stop-f.Start, ttl)
		res.Availability = append(res.Availability, FaultAvailability{
			Fault:  f.ID,
			Before: acquires.returnedIn(f.Start-d, f.Start),
			During: acquires.returnedIn(f.Start, f.Stop),
			After:  acquires.returnedIn(f.Stop, f.Stop+d),
			Within: acquires.within(f.Start, f.Stop),
		})
		excluded = append(excluded, span{f.Start, f.Effect + ttl})
	}
	hi := newHoldIndex(p)
	failedBy, grantsBy := attemptsByKey(p)
	for _, key := range p.keys {
		failed, grants := failedBy[key], grantsBy[key]
		slices.SortFunc(failed, func(a, b *call) int { return cmp.Compare(a.call, b.call) })
		blocked := slices.Clone(excluded)
		for _, h := range hi.byKey[key] {
			blocked = append(blocked, span{h.start, h.end})
		}
		for _, g := range grants {
			blocked = append(blocked, span{g, g})
		}
		blocked = mergeSpans(blocked, 0)
		// Runs of failed attempts, each within a TTL of the last.
		for i := 0; i < len(failed); {
			run := span{failed[i].call, failed[i].ret}
			j := i + 1
			for j < len(failed) && failed[j].call <= run.to+ttl {
				run.to = max(run.to, failed[j].ret)
				j++
			}
			for _, s := range subtract(run, blocked) {
				if s.to-s.from > limit {
					r.anomaly(unavailable(p, hi, key, s, failed[i:j]))
				}
			}
			i = j
		}
	}
}

// acquireCalls are acquires that finished, in the order they returned.
type acquireCalls []*call

// finishedAcquires lists the acquires that finished (not cut short by a
// crash or the end of the run), in the order they returned.
func finishedAcquires(p *prepared) acquireCalls {
	var acquires acquireCalls
	for i := range p.calls {
		if c := &p.calls[i]; c.f == history.Acquire && c.done >= 0 {
			acquires = append(acquires, c)
		}
	}
	slices.SortFunc(acquires, func(a, b *call) int { return cmp.Compare(a.ret, b.ret) })
	return acquires
}

// returnedIn counts the attempts that returned in [from, to).
func (acquires acquireCalls) returnedIn(from, to int64) Attempts {
	a := Attempts{From: from, To: to}
	i, _ := slices.BinarySearchFunc(acquires, from, func(c *call, t int64) int { return cmp.Compare(c.ret, t) })
	for ; i < len(acquires) && acquires[i].ret < to; i++ {
		a.count(acquires[i])
	}
	a.rate()
	return a
}

// within counts the attempts called and returned in [from, to).
func (acquires acquireCalls) within(from, to int64) Attempts {
	a := Attempts{From: from, To: to}
	for _, c := range acquires {
		if c.call >= from && c.ret < to {
			a.count(c)
		}
	}
	a.rate()
	return a
}

// count adds attempt c by its outcome.
func (a *Attempts) count(c *call) {
	switch c.typ {
	case history.OK:
		a.OK++
	case history.Fail:
		a.Fail++
	default:
		a.Unknown++
	}
}

// rate sets SuccessRate from the counts.
func (a *Attempts) rate() {
	if n := a.OK + a.Fail + a.Unknown; n > 0 {
		a.SuccessRate = float64(a.OK) / float64(n)
	}
}

// attemptsByKey groups the finished acquires by key: the failed and
// unknown ones, and the returns of the ok ones (the grants).
func attemptsByKey(p *prepared) (failedBy map[string][]*call, grantsBy map[string][]int64) {
	failedBy, grantsBy = map[string][]*call{}, map[string][]int64{}
	for i := range p.calls {
		c := &p.calls[i]
		switch {
		case c.f != history.Acquire || c.done < 0:
			// An attempt cut short by a crash or the end of the run says
			// nothing about how long its client wanted the lock.
		case c.typ == history.OK:
			grantsBy[c.key] = append(grantsBy[c.key], c.ret)
		default:
			failedBy[c.key] = append(failedBy[c.key], c)
		}
	}
	return failedBy, grantsBy
}

// mergeSpans sorts spans and merges those closer than gap.
func mergeSpans(s []span, gap int64) []span {
	slices.SortFunc(s, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var out []span
	for _, x := range s {
		if n := len(out); n > 0 && x.from <= out[n-1].to+gap {
			out[n-1].to = max(out[n-1].to, x.to)
			continue
		}
		out = append(out, x)
	}
	return out
}

// subtract returns the parts of s outside the sorted, disjoint spans cut;
// a zero-length cut (a grant) splits s.
func subtract(s span, cut []span) []span {
	var out []span
	from := s.from
	for _, c := range cut {
		if c.to < from || c.from > s.to {
			continue
		}
		if c.from > from {
			out = append(out, span{from, c.from})
		}
		from = max(from, c.to)
	}
	if from < s.to {
		out = append(out, span{from, s.to})
	}
	return out
}

func unavailable(p *prepared, hi holdIndex, key string, s span, tries []*call) (Anomaly, int64) {
	var ops []int64
	var clients []int
	seen := map[int]bool{}
	n := 0
	overlapping := slices.ContainsFunc(tries, func(c *call) bool { return c.ret >= s.from && c.call <= s.to })
	for _, c := range tries {
		if overlapping && (c.ret < s.from || c.call > s.to) {
			continue // a span between attempts (k < 1) keeps all of its run's attempts
		}
		n++
		if !seen[c.client] {
			seen[c.client] = true
			clients = append(clients, c.client)
			ops = append(ops, c.opIndex())
		}
	}
	last := "nobody had held it before"
	ctxFrom := s.from
	hs := hi.byKey[key]
	j, _ := slices.BinarySearchFunc(hs, s.from, func(h hold, t int64) int { return cmp.Compare(h.start, t) })
	if j > 0 {
		h := &hs[j-1]
		a := p.calls[h.acq].opIndex()
		ops = append(ops, a)
		clients = append(clients, h.client)
		last = fmt.Sprintf("the last holder was client %d (op %d), until %s", h.client, a, h.ended())
		ctxFrom = h.start
	}
	ttl := float64(p.cfg.TTL.Nanoseconds())
	return Anomaly{
		Kind: Unavailable, Key: key, Ops: ops, Clients: clients, From: s.from, To: s.to,
		Explanation: fmt.Sprintf("nobody could acquire lock %q for %s (%.1f×TTL), from %s to %s, although clients %s tried %d times and nobody held it; %s; %s.",
			key, dur(s.to-s.from), float64(s.to-s.from)/ttl, secs(s.from), secs(s.to), joinInts(clients[:len(seen)]), n, last,
			p.faultClause(p.faultsIn(ctxFrom, s.to))),
	}, ctxFrom
}
