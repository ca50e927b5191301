package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/tumbler-dev/tumbler/history"
)

// latchCalls are one latch key's calls, each kind in invoke order.
type latchCalls struct {
	inits, downs, awaits []*call
}

func latchesOf(p *prepared) (map[string]*latchCalls, []string) {
	by := map[string]*latchCalls{}
	var keys []string
	for i := range p.calls {
		c := &p.calls[i]
		l := by[c.key]
		if l == nil && (c.f == history.Init || c.f == history.CountDown || c.f == history.Await) {
			l = &latchCalls{}
			by[c.key] = l
			keys = append(keys, c.key)
		}
		switch c.f {
		case history.Init:
			l.inits = append(l.inits, c)
		case history.CountDown:
			l.downs = append(l.downs, c)
		case history.Await:
			l.awaits = append(l.awaits, c)
		}
	}
	slices.Sort(keys)
	return by, keys
}

// setBefore is the latest init of l that certainly set the count before t
// (an ok init that returned before t), and its count.
func (l *latchCalls) setBefore(t int64) (*call, int64) {
	var set *call
	for _, in := range l.inits {
		if in.typ == history.OK && in.ret < t && (set == nil || in.ret > set.ret) {
			set = in
		}
	}
	if set == nil {
		return nil, 0
	}
	n, err := strconv.ParseInt(set.value, 10, 64)
	if err != nil || n < 1 {
		return nil, 0
	}
	return set, n
}

// checkLatch: no waiter passes before the count reached zero. A waiter
// that began waiting after the latch was certainly set (an ok init with
// count n had returned) and passed at t needs n count-downs that may have
// counted: each not failed, invoked before t, and returned after the init
// was invoked (one that returned earlier ran before the count was set and
// was wiped by it). Fewer is an early pass. Per key, sorted count-downs
// and a binary search per waiter: O(n log n).
func checkLatch(p *prepared, _ *Result, r *report) {
	by, keys := latchesOf(p)
	var passed, judged int64
	for _, key := range keys {
		l := by[key]
		for _, w := range l.awaits {
			if w.typ != history.OK {
				continue
			}
			passed++
			set, n := l.setBefore(w.call)
			if set == nil {
				continue // the latch was never certainly closed for this waiter
			}
			judged++
			var could []*call
			for _, d := range l.downs {
				if d.typ != history.Fail && d.call < w.ret && d.ret > set.call {
					could = append(could, d)
				}
			}
			if int64(len(could)) >= n {
				continue
			}
			ops := []int64{w.opIndex(), set.opIndex()}
			clients := []int{w.client, set.client}
			for _, d := range could {
				ops = append(ops, d.opIndex())
				clients = append(clients, d.client)
			}
			r.anomaly(Anomaly{
				Kind: LatchEarly, Key: key, Ops: ops, Clients: clients,
				From: set.ret, To: w.ret, At: w.ret,
				Explanation: fmt.Sprintf("client %d passed latch %q at %s (op %d), though the count was set to %d at %s (op %d) and only %d count-downs could have counted by then; %s.",
					w.client, key, secs(w.ret), w.opIndex(), n, secs(set.ret), set.opIndex(), len(could), p.faultClause(p.faultsIn(set.call, w.ret))),
			}, set.call)
		}
	}
	r.stat("latches", int64(len(keys)))
	r.stat("awaits_passed", passed)
	r.stat("awaits_judged", judged)
}

// checkLatchLiveness: every waiter passes after the count reached zero.
// Once n ok count-downs invoked after an ok init of count n returned, the
// count certainly reached zero by the n-th one's return Z (if none was
// lost); a waiter that began before Z + TTL and gave up waiting more than
// a TTL after Z never passed although it should have.
func checkLatchLiveness(p *prepared, _ *Result, r *report) {
	by, keys := latchesOf(p)
	grace := int64(p.cfg.TTL)
	var zeroed, stuck int64
	for _, key := range keys {
		l := by[key]
		for _, set := range l.inits {
			if set.typ != history.OK {
				continue
			}
			n, err := strconv.ParseInt(set.value, 10, 64)
			if err != nil || n < 1 {
				continue
			}
			var after []*call
			for _, d := range l.downs {
				if d.typ == history.OK && d.call > set.ret {
					after = append(after, d)
				}
			}
			if int64(len(after)) < n {
				continue
			}
			slices.SortFunc(after, func(a, b *call) int { return cmp.Compare(a.ret, b.ret) })
			zero := after[n-1]
			zeroed++
			for _, w := range l.awaits {
				if w.typ != history.Fail || w.call < set.ret || w.call > zero.ret+grace || w.ret <= zero.ret+grace {
					continue
				}
				stuck++
				r.anomaly(Anomaly{
					Kind: LatchStuck, Key: key, Ops: []int64{w.opIndex(), zero.opIndex(), set.opIndex()}, Clients: []int{w.client, zero.client, set.client},
					From: zero.ret, To: w.ret, At: w.ret,
					Explanation: fmt.Sprintf("client %d gave up waiting on latch %q at %s (op %d), %s after its count reached zero: it was set to %d at %s (op %d), and by %s (op %d) as many count-downs had been acknowledged; %s.",
						w.client, key, secs(w.ret), w.opIndex(), dur(w.ret-zero.ret), n, secs(set.ret), set.opIndex(), secs(zero.ret), zero.opIndex(),
						p.faultClause(p.faultsIn(set.call, w.ret))),
				}, set.call)
			}
		}
	}
	r.stat("latches_zeroed", zeroed)
	r.stat("waiters_stuck", stuck)
}
