package checker

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// The pairing and hold rules of the history contract (package doc), applied
// record by record in index order: prepare feeds a whole history through
// them, a MutexMonitor a history while it is being recorded.

// callStore keeps a stream's calls by index.
type callStore interface {
	add(c call) int32
	at(i int32) *call // nil once forgotten (MutexMonitor)
}

// callSlice keeps every call (prepare).
type callSlice struct{ calls []call }

func (s *callSlice) add(c call) int32 {
	s.calls = append(s.calls, c)
	return int32(len(s.calls) - 1)
}

func (s *callSlice) at(i int32) *call { return &s.calls[i] }

// pairer pairs each completion with its invoke (history.Pending: the
// oldest pending invoke of its history.CallKey) and names the lease each call
// acts under: an acquire is its own; a release or extend whose value is
// the owner value of one of the process's ok acquires of the key acts
// under that one; otherwise (and for writes and reads) under the process's
// latest acquire of the key invoked before it.
type pairer struct {
	calls         callStore
	pending       history.Pending[int32]
	latestAcquire map[procKey]int32
	byOwner       map[ownerKey]int32 // ok acquires by owner value
}

func newPairer(calls callStore) *pairer {
	return &pairer{calls: calls, latestAcquire: map[procKey]int32{}, byOwner: map[ownerKey]int32{}}
}

// add takes the next call record (history.IsCall(o.F)) and returns its call.
func (pr *pairer) add(o *history.Op) (int32, error) {
	if o.Key == "" {
		return -1, &HistoryError{o.Index, o.Summary() + " has no key"}
	}
	if o.Type == history.Invoke {
		c := call{
			f: o.F, key: o.Key, proc: o.Process, client: o.Client, typ: history.Info,
			inv: o.Index, done: -1, call: o.Time, ret: -1,
			value: o.Value, token: o.Token, vu: o.ValidUntil, lease: -1, mode: o.Mode,
		}
		if leaseOp(o.F) { // queue, latch and init calls act under no lease
			if l, ok := pr.byOwner[ownerKey{o.Process, o.Key, o.Value}]; ok && o.Value != "" && o.F != history.Write && o.F != history.Read {
				c.lease = l // a release or extend names its lease by owner value
			} else if l, ok := pr.latestAcquire[procKey{o.Process, o.Key}]; ok {
				c.lease = l
			}
		}
		ci := pr.calls.add(c)
		if o.F == history.Acquire {
			pr.latestAcquire[procKey{o.Process, o.Key}] = ci
		}
		pr.pending.Invoke(*o, ci)
		return ci, nil
	}
	ci, ok := pr.pending.Complete(*o)
	if !ok {
		return -1, &HistoryError{o.Index, fmt.Sprintf("%s%s has no pending invoke%s", o.Summary(), ownerNote(history.CallKeyOf(*o).Owner), pr.otherPending(o))}
	}
	c := pr.calls.at(ci)
	if o.Time < c.call {
		return -1, &HistoryError{o.Index, fmt.Sprintf("%s completed at %d ns, before its invoke (op %d) at %d ns", o.Summary(), o.Time, c.inv, c.call)}
	}
	c.typ, c.done, c.ret = o.Type, o.Index, o.Time
	if o.Value != "" {
		c.value = o.Value
	}
	if o.Token != 0 {
		c.token = o.Token
	}
	if o.ValidUntil != 0 {
		c.vu = o.ValidUntil
	}
	c.err, c.held = o.Error, o.Held
	if c.f == history.Acquire && c.typ == history.OK {
		if c.vu == 0 {
			return -1, &HistoryError{o.Index, o.Summary() + " has no valid_until"}
		}
		if c.value != "" {
			pr.byOwner[ownerKey{c.proc, c.key, c.value}] = ci
		}
	}
	return ci, nil
}

// otherPending names the process's earliest pending call — one on o's
// key first — for the error of a completion o that has no invoke of its
// own: "; process 3's pending call on key "k" is a release (op 7), not an
// extend".
func (pr *pairer) otherPending(o *history.Op) string {
	var best *call
	for k, ci := range pr.pending.All() {
		if k.Process != o.Process {
			continue
		}
		c := pr.calls.at(ci)
		if c == nil {
			continue
		}
		same, bestSame := k.Key == o.Key, best != nil && best.key == o.Key
		if best == nil || same && !bestSame || same == bestSame && c.inv < best.inv {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return fmt.Sprintf("; process %s's pending call on key %q is %s (op %d), not %s", procName(o.Process), best.key, article(best.f), best.inv, article(o.F))
}

// holdBuilder derives the mutual-exclusion windows (hold) from the records
// in index order: a client holds from its acquire's ok until the earliest
// of its release's invoke, its lease's validity (pushed by ok extends of
// that lease), a lost event for it, its crash and its next ok acquire of
// the key (reentrant: an acquire by the holder nests, and the hold ends at
// as many release invokes).
type holdBuilder struct {
	reentrant bool
	calls     callStore
	open      map[procKey]*hold
	closed    func(h *hold) // each hold as it ends
}

func (b *holdBuilder) close(pk procKey, h *hold, t int64, by string, idx int64) {
	h.held, h.heldBy = t, by
	// A hold still open at the end lasts as long as its validity, even
	// past the history's last record.
	if h.vu <= t || by == "end" {
		h.end, h.endBy, h.endOp = h.vu, "validity", -1
	} else {
		h.end, h.endBy, h.endOp = t, by, idx
	}
	delete(b.open, pk)
	b.closed(h)
}

// event takes a crash or lost record.
func (b *holdBuilder) event(o *history.Op) {
	for pk, h := range b.open {
		if pk.proc != o.Process {
			continue
		}
		var owner string
		if c := b.calls.at(h.acq); c != nil {
			owner = c.value
		}
		// A late loss report of an earlier lease names its owner value.
		lostThis := (o.Key == "" || o.Key == pk.key) && (o.Value == "" || owner == "" || o.Value == owner)
		if o.F == history.Crash || lostThis {
			b.close(pk, h, o.Time, o.F, o.Index)
		}
	}
}

// record takes a call record o of call ci.
func (b *holdBuilder) record(o *history.Op, ci int32) {
	c := b.calls.at(ci)
	pk := procKey{c.proc, c.key}
	h := b.open[pk]
	invoke := o.Type == history.Invoke
	switch {
	case c.f == history.Acquire && !invoke && c.typ == history.OK:
		if h != nil && b.reentrant {
			h.depth++
			h.vu = max(h.vu, c.vu)
			return
		}
		if h != nil {
			b.close(pk, h, o.Time, "re-acquire", o.Index)
		}
		b.open[pk] = &hold{key: c.key, proc: c.proc, client: c.client, acq: ci, start: o.Time, vu: c.vu, depth: 1, mode: c.mode}
	case c.f == history.Extend && !invoke && c.typ == history.OK && h != nil && (b.reentrant || c.lease == h.acq):
		h.vu = max(h.vu, c.vu)
	case c.f == history.Release && invoke && h != nil:
		if b.reentrant && h.depth > 1 {
			h.depth--
			return
		}
		b.close(pk, h, o.Time, "release", o.Index)
	}
}

// finish ends the holds still open when the history ends at end.
func (b *holdBuilder) finish(end int64) {
	for pk, h := range b.open {
		b.close(pk, h, end, "end", -1)
	}
}

// overlap says whether two holds of one key overlap: held by different
// processes, from the later start to the earlier end, a span that is not
// empty. Such a pair is a double grant.
func overlap(a, b *hold) (from, to int64, ok bool) {
	from, to = max(a.start, b.start), min(a.end, b.end)
	return from, to, a.proc != b.proc && to > from
}

// callMap keeps the calls a MutexMonitor may still need.
type callMap struct {
	next  int32
	calls map[int32]*call
}

func (m *callMap) add(c call) int32 {
	i := m.next
	m.next++
	m.calls[i] = &c
	return i
}

func (m *callMap) at(i int32) *call { return m.calls[i] }

// MutexMonitor counts double grants while a history is being recorded, for
// a live status line, by the rules of Check's mutual-exclusion checker
// applied record by record. It keeps only what can still matter: the calls
// still pending, the holds still open and the holds that ended recently
// enough to overlap one still to end, so its memory does not grow with the
// history. A pair of holds is counted once both have ended; Check's verdict
// on the whole history is the one that counts. Safe for concurrent use.
type MutexMonitor struct {
	mu      sync.Mutex
	calls   *callMap
	pr      *pairer
	hb      *holdBuilder
	recent  map[string][]hold // ended holds by key, in start order
	longest map[string]int64  // longest hold per key
	// released are the ok acquires whose holds ended, oldest first: their
	// owner values stay known (a late renewal of an ended lease must not
	// count as a renewal of the next) until they are older than skew.
	released []releasedAcquire
	latest   int64 // latest time seen
	skew     int64 // how far before latest a record may still arrive
	ended    int
	count    int
	err      error
}

type releasedAcquire struct {
	owner ownerKey
	acq   int32
	at    int64
}

// NewMutexMonitor returns a monitor for a run with cfg's TTL and
// reentrancy.
func NewMutexMonitor(cfg Config) *MutexMonitor {
	calls := &callMap{calls: map[int32]*call{}}
	m := &MutexMonitor{
		calls: calls, pr: newPairer(calls),
		recent: map[string][]hold{}, longest: map[string]int64{},
		skew: max(int64(10*time.Second), 2*int64(cfg.TTL)),
	}
	m.hb = &holdBuilder{reentrant: cfg.Reentrant, calls: calls, open: map[procKey]*hold{}, closed: m.ended1}
	return m
}

// Observe takes the next record (in index order, as a Recorder's Observe
// option delivers them).
func (m *MutexMonitor) Observe(op history.Op) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil || op.IsNemesis() {
		return
	}
	m.latest = max(m.latest, op.Time)
	if op.F == history.Crash || op.F == history.Lost {
		m.hb.event(&op)
		return
	}
	if !history.IsCall(op.F) {
		return
	}
	ci, err := m.pr.add(&op)
	if err != nil {
		m.err = err // the history breaks the contract: Check will say how
		return
	}
	m.hb.record(&op, ci)
	// A completed call is needed no more, but an ok acquire is while its
	// hold lasts (its owner value names it).
	if c := m.calls.at(ci); op.Type != history.Invoke && !(c.f == history.Acquire && c.typ == history.OK && m.holding(ci)) {
		delete(m.calls.calls, ci)
	}
}

// holding: acquire ci started a hold that has not ended.
func (m *MutexMonitor) holding(ci int32) bool {
	c := m.calls.at(ci)
	h := m.hb.open[procKey{c.proc, c.key}]
	return h != nil && h.acq == ci
}

// ended1 counts the double grants of a hold that ended with the ended holds
// it overlaps, and forgets what can no longer matter.
func (m *MutexMonitor) ended1(h *hold) {
	rs := m.recent[h.key]
	for i := len(rs) - 1; i >= 0 && rs[i].start+m.longest[h.key] > h.start; i-- {
		if _, _, ok := overlap(&rs[i], h); ok {
			m.count++
		}
	}
	if h.end > h.start {
		m.longest[h.key] = max(m.longest[h.key], h.end-h.start)
		i := len(rs)
		for i > 0 && rs[i-1].start > h.start {
			i--
		}
		m.recent[h.key] = slices.Insert(rs, i, *h)
	}
	if c := m.calls.at(h.acq); c != nil {
		delete(m.calls.calls, h.acq)
		m.released = append(m.released, releasedAcquire{ownerKey{c.proc, c.key, c.value}, h.acq, m.latest})
	}
	if m.ended++; m.ended%1024 == 0 {
		m.forget()
	}
}

// forget drops the ended holds no hold still to end can overlap (those that
// ended before every open hold started, with skew to spare for records
// that arrive late), and the owner values of acquires released long ago.
func (m *MutexMonitor) forget() {
	horizon := m.latest - m.skew
	for _, h := range m.hb.open {
		horizon = min(horizon, h.start-m.skew)
	}
	for key, rs := range m.recent {
		kept := rs[:0]
		for _, h := range rs {
			if h.end > horizon {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			delete(m.recent, key)
			delete(m.longest, key)
			continue
		}
		m.recent[key] = slices.Clip(kept)
	}
	n := 0
	for n < len(m.released) && m.released[n].at < m.latest-m.skew {
		r := m.released[n]
		if m.pr.byOwner[r.owner] == r.acq {
			delete(m.pr.byOwner, r.owner)
		}
		n++
	}
	m.released = slices.Delete(m.released, 0, n)
}

// Anomalies is the number of double grants found so far.
func (m *MutexMonitor) Anomalies() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}
