package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tumbler-dev/tumbler/history"
)

// queueMargin is the slack between two clocks' readings of the same
// instant: a waiter's queue entry is certainly kept only if it polled again
// this much before the entry's timeout.
const queueMargin = int64(5e6)

// epoch is a stretch of one waiter's polls during which its queue entry
// was certainly never purged: it entered the queue with the first poll,
// and every later poll returned before the previous one's entry timeout.
type epoch struct {
	key    string
	proc   history.Process
	client int
	first  *call // the poll that queued it
	last   *call // the latest poll
	broke  bool  // it ended because a poll came after the entry's timeout
}

// checkFairness checks a fair lock's grants against its queue: a grant to
// B is unfair when another waiter A was queued before B entered the queue
// and was still queued at B's grant, its entry never timed out in between.
// The history says it: A's poll that queued it (an ok enqueue) returned
// before B's acquire began, and A's entry stayed alive — each of its polls
// returned before the timeout the previous one set (valid_until), the last
// one after B's acquire returned. A waiter whose poll came after its
// entry's timeout may have been purged, as Redisson documents
// (threadWaitTime), and may be passed over from then on: that is counted,
// not flagged. Near-linear: polls and grants are swept in time order,
// with at most a few live entries per key.
func checkFairness(p *prepared, _ *Result, r *report) {
	attempts, epochs, polls, timedOut, dequeues := queueEpochs(p)
	r.stat("enqueues", polls)
	r.stat("queue_entries", int64(len(epochs)))
	r.stat("queue_entries_timed_out", timedOut)
	r.stat("dequeues", dequeues)
	if timedOut > 0 {
		r.note("%d queue entries timed out before their waiter polled again (threadWaitTime): those waiters may lose their place, as Redisson documents", timedOut)
	}
	// Grants by key, in the order their acquires began.
	var grants []*call
	for _, a := range attempts {
		if a.acq.typ == history.OK {
			grants = append(grants, a.acq)
		}
	}
	slices.SortFunc(grants, func(a, b *call) int { return byKeyTime(a.key, b.key, a.call, b.call) })
	r.stat("grants", int64(len(grants)))
	e := 0
	var live []*epoch
	for _, g := range grants {
		if len(live) > 0 && live[0].key != g.key {
			live = live[:0]
		}
		for e < len(epochs) && (epochs[e].key < g.key || epochs[e].key == g.key && epochs[e].first.ret < g.call) {
			if epochs[e].key == g.key {
				live = append(live, &epochs[e])
			}
			e++
		}
		kept := live[:0]
		for _, ep := range live {
			if ep.last.ret > g.call {
				kept = append(kept, ep)
			}
		}
		live = kept
		for _, ep := range live {
			if ep.proc == g.proc || ep.last.ret <= g.ret {
				continue
			}
			r.anomaly(unfairGrant(p, g, ep), ep.first.ret)
		}
	}
}

func byKeyTime(k1, k2 string, t1, t2 int64) int {
	if c := cmp.Compare(k1, k2); c != 0 {
		return c
	}
	return cmp.Compare(t1, t2)
}

// attempt is one acquire of a fair lock and the polls it made.
type attempt struct {
	acq   *call
	polls []*call
}

// queueEpochs groups each acquire's polls into epochs, sorted by key and
// the time each entered the queue; it counts the polls, the entries that
// timed out and the dequeues.
func queueEpochs(p *prepared) (attempts []*attempt, epochs []epoch, polls, timedOut, dequeues int64) {
	latest := map[procKey]*attempt{}
	for i := range p.calls {
		c := &p.calls[i]
		pk := procKey{c.proc, c.key}
		switch c.f {
		case history.Acquire:
			a := &attempt{acq: c}
			latest[pk] = a
			attempts = append(attempts, a)
		case history.Enqueue:
			polls++
			if a := latest[pk]; a != nil && c.call >= a.acq.call {
				a.polls = append(a.polls, c)
			}
		case history.Dequeue:
			dequeues++
		}
	}
	for _, a := range attempts {
		var cur *epoch
		for _, poll := range a.polls {
			if poll.typ != history.OK || poll.vu == 0 {
				cur = nil // an unknown poll leaves the entry's fate open
				continue
			}
			if cur != nil && poll.ret+queueMargin >= cur.last.vu {
				cur.broke = true
				timedOut++
				cur = nil
			}
			if cur == nil {
				epochs = append(epochs, epoch{key: poll.key, proc: poll.proc, client: poll.client, first: poll, last: poll})
				cur = &epochs[len(epochs)-1]
				continue
			}
			cur.last = poll
		}
		// An entry whose timeout passed before its acquire ended (a grant
		// on a fresh entry, or giving up) timed out too.
		if cur != nil && a.acq.done >= 0 && a.acq.ret >= cur.last.vu+queueMargin {
			cur.broke = true
			timedOut++
		}
	}
	slices.SortFunc(epochs, func(a, b epoch) int { return byKeyTime(a.key, b.key, a.first.ret, b.first.ret) })
	return attempts, epochs, polls, timedOut, dequeues
}

// Wait is a time a client waited: a fair lock's queue entry (Kind
// "queue") or a latch waiter (Kind "await"), for pictures of the history.
type Wait struct {
	Kind   string
	Key    string
	Client int
	// From and To bound the wait: for a queue entry from the poll that
	// queued the waiter to its latest poll, or to its grant when the
	// acquire that queued it was granted; for an await its call.
	From, To int64
	// Order is a queue entry's place among the key's entries, in the order
	// they entered (1 first).
	Order int
	// TimedOut: the entry timed out before its waiter polled again.
	TimedOut bool
	// Outcome is the acquire's or the await's: ok (granted, passed), fail
	// or info.
	Outcome history.Type
	Op      int64 // the call that began it
}

// Waits returns the queue entries and latch waits of ops (cfg as Check
// takes it), sorted by key, then start; the error is Check's.
func Waits(ops []history.Op, cfg Config) ([]Wait, error) {
	p, err := prepare(ops, cfg)
	if err != nil {
		return nil, err
	}
	var out []Wait
	attempts, epochs, _, _, _ := queueEpochs(p)
	grantOf := map[*call]*call{}
	for _, a := range attempts {
		for _, poll := range a.polls {
			grantOf[poll] = a.acq
		}
	}
	order := map[string]int{}
	for _, e := range epochs {
		order[e.key]++
		w := Wait{Kind: "queue", Key: e.key, Client: e.client, From: e.first.ret, To: e.last.ret, Order: order[e.key],
			TimedOut: e.broke, Outcome: history.Info, Op: e.first.opIndex()}
		if acq := grantOf[e.last]; acq != nil && !e.broke {
			w.Outcome = acq.typ
			if acq.typ == history.OK {
				w.To = acq.ret
			}
		}
		out = append(out, w)
	}
	for i := range p.calls {
		if c := &p.calls[i]; c.f == history.Await {
			out = append(out, Wait{Kind: "await", Key: c.key, Client: c.client, From: c.call, To: c.ret, Outcome: c.typ, Op: c.inv})
		}
	}
	slices.SortStableFunc(out, func(a, b Wait) int { return byKeyTime(a.Key, b.Key, a.From, b.From) })
	return out, nil
}

func unfairGrant(p *prepared, g *call, ep *epoch) Anomaly {
	gOp, qOp, lastOp := g.opIndex(), ep.first.opIndex(), ep.last.opIndex()
	return Anomaly{
		Kind: UnfairGrant, Key: g.key, Ops: []int64{gOp, qOp, lastOp}, Clients: []int{g.client, ep.client},
		From: ep.first.ret, To: g.ret, At: g.ret,
		Explanation: fmt.Sprintf("client %d was granted the fair lock %q at %s (op %d), its acquire begun at %s, although client %d had queued for it before, at %s (op %d), and was still queued: its entry never timed out, and it polled again at %s (op %d) with its entry valid until %s; %s.",
			g.client, g.key, secs(g.ret), gOp, secs(g.call), ep.client, secs(ep.first.ret), qOp, secs(ep.last.ret), lastOp, secs(ep.last.vu),
			p.faultClause(p.faultsIn(ep.first.ret, g.ret))),
	}
}
