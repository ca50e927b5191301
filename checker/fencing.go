package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tumbler-dev/tumbler/history"
)

// acceptedWrites returns the ok writes per key in accept order (time, then
// index): the order the resource saw them in.
func acceptedWrites(p *prepared) map[string][]*call {
	out := map[string][]*call{}
	for i := range p.calls {
		c := &p.calls[i]
		if c.f == history.Write && c.typ == history.OK {
			out[c.key] = append(out[c.key], c)
		}
	}
	for _, ws := range out {
		slices.SortStableFunc(ws, func(a, b *call) int {
			if a.ret != b.ret {
				return cmp.Compare(a.ret, b.ret)
			}
			return cmp.Compare(a.done, b.done)
		})
	}
	return out
}

// checkFencing: two grants of a key with one token are a reused token (the
// counter went back, as after a failover that lost its increment); an
// accepted write whose token does not exceed the previous accepted write's
// token, from another lease, is a fencing failure of the resource. Writes
// of one lease share its token.
func checkFencing(p *prepared, _ *Result, r *report) {
	grants := map[string]map[int64]*call{}
	var tokenless, rejected, unknown, accepted int64
	for i := range p.calls {
		c := &p.calls[i]
		switch {
		case c.f == history.Acquire && c.typ == history.OK:
			if c.token == 0 {
				tokenless++
				continue
			}
			byToken := grants[c.key]
			if byToken == nil {
				byToken = map[int64]*call{}
				grants[c.key] = byToken
			}
			first, seen := byToken[c.token]
			if !seen {
				byToken[c.token] = c
				continue
			}
			if p.cfg.Reentrant && first.proc == c.proc {
				continue
			}
			r.anomaly(Anomaly{
				Kind: TokenReuse, Key: c.key, Ops: []int64{c.opIndex(), first.opIndex()}, Clients: []int{c.client, first.client},
				From: first.ret, To: c.ret,
				Explanation: fmt.Sprintf("clients %d and %d were both granted lock %q with fencing token %d (op %d at %s, op %d at %s): the token counter went back; %s.",
					first.client, c.client, c.key, c.token, first.opIndex(), secs(first.ret), c.opIndex(), secs(c.ret),
					p.faultClause(p.faultsIn(first.ret, c.ret))),
			}, first.ret)
		case c.f == history.Write && c.typ == history.Fail:
			rejected++
		case c.f == history.Write && c.typ == history.Info:
			unknown++
		}
	}
	writes := acceptedWrites(p)
	for _, key := range p.keys {
		var prev *call
		for _, w := range writes[key] {
			accepted++
			if prev != nil && w.token <= prev.token && (w.token < prev.token || w.lease != prev.lease) {
				r.anomaly(Anomaly{
					Kind: TokenOrder, Key: key, Ops: []int64{w.opIndex(), prev.opIndex()}, Clients: []int{w.client, prev.client},
					From: prev.ret, To: w.ret,
					Explanation: fmt.Sprintf("the resource accepted client %d's write to %q with token %d at %s (op %d) after accepting client %d's write with token %d at %s (op %d); %s.",
						w.client, key, w.token, secs(w.ret), w.opIndex(), prev.client, prev.token, secs(prev.ret), prev.opIndex(),
						p.faultClause(p.faultsIn(prev.ret, w.ret))),
				}, prev.ret)
			}
			prev = w
		}
	}
	r.stat("writes_accepted", accepted)
	r.stat("writes_rejected", rejected)
	r.stat("writes_unknown", unknown)
	if tokenless > 0 {
		r.note("%d grants carried no fencing token", tokenless)
	}
	if rejected > 0 {
		r.note("the resource rejected %d writes with an old token: fencing at work", rejected)
	}
}
