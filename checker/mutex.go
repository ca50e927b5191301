package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tumbler-dev/tumbler/history"
)

// hold is a mutual-exclusion window: from an acquire's ok to end, the
// earlier of the validity and what ended the client's belief (held).
type hold struct {
	key        string
	proc       history.Process
	client     int
	acq        int32 // calls index of the acquire that started it
	start, end int64
	vu         int64 // validity when it ended
	endBy      string
	endOp      int64 // history index of the record that ended it, -1 for validity
	depth      int
	mode       string // a read-write lock's mode
	// held is when the client stopped believing it held the lock, heldBy
	// why ("end": it still did when the history ended).
	held   int64
	heldBy string
}

// Hold is a time a client believed it held a lock, as the mutual-exclusion
// checker computes it (package doc, "What each checker believes").
type Hold struct {
	Key     string
	Client  int
	Process history.Process
	// Owner and Token are the acquire's owner value and fencing token.
	Owner string
	Token int64
	// AcquireOp is the history index of the ok acquire that started it.
	AcquireOp int64
	Start     int64
	// End closes the window the checker counts for mutual exclusion: the
	// earlier of HeldUntil and ValidUntil, and ValidUntil for a hold still
	// open when the history ends. EndBy says what ended it ("release",
	// "lost", "crash", "re-acquire" or "validity"), EndOp is the index of
	// that record (-1 for validity).
	End   int64
	EndBy string
	EndOp int64
	// HeldUntil is when the client stopped believing it held the lock —
	// past End when its validity ran out first —, HeldUntilBy why: as
	// EndBy, or "end" when it still held it as the history ended (HeldUntil
	// is then the history's last time).
	HeldUntil   int64
	HeldUntilBy string
	// ValidUntil is the lease's validity when the hold ended (ok extends
	// push it).
	ValidUntil int64
	// Depth is the nesting of a reentrant lock when the hold ended (1 for
	// a plain lock).
	Depth int
	// Mode is "read" or "write" for a read-write lock's hold, else "".
	Mode string
}

// Holds returns the holds the mutual-exclusion checker computes from ops,
// sorted by key, then start, so that a picture of the history shows what
// the verdict is about. Only cfg.Reentrant matters; ops must keep the
// contract Check enforces, and the error is the one Check would return. It
// keeps only the calls it still needs as it goes, so its memory is about
// that of the holds it returns.
func Holds(ops []history.Op, cfg Config) ([]Hold, error) {
	calls := &callMap{calls: map[int32]*call{}}
	type done struct {
		h   hold
		out Hold
	}
	var holds []done
	b := &holdBuilder{reentrant: cfg.Reentrant, calls: calls, open: map[procKey]*hold{}}
	b.closed = func(h *hold) {
		c := calls.at(h.acq)
		holds = append(holds, done{*h, Hold{
			Key: h.key, Client: h.client, Process: h.proc,
			Owner: c.value, Token: c.token, AcquireOp: c.opIndex(),
			Start: h.start, End: h.end, EndBy: h.endBy, EndOp: h.endOp,
			HeldUntil: h.held, HeldUntilBy: h.heldBy,
			ValidUntil: h.vu, Depth: h.depth, Mode: h.mode,
		}})
		delete(calls.calls, h.acq)
	}
	end, err := scan(ops, calls,
		func(i int, ci int32) {
			o := &ops[i]
			b.record(o, ci)
			// A completed call is needed no more, but an ok acquire is
			// while its hold lasts.
			if c := calls.at(ci); c != nil && o.Type != history.Invoke {
				if h := b.open[procKey{c.proc, c.key}]; h == nil || h.acq != ci {
					delete(calls.calls, ci)
				}
			}
		},
		func(o *history.Op) {
			if o.F == history.Crash || o.F == history.Lost {
				b.event(o)
			}
		})
	if err != nil {
		return nil, err
	}
	for _, fw := range FaultWindows(ops) {
		if err := faultError(fw); err != nil {
			return nil, err
		}
	}
	b.finish(end)
	slices.SortFunc(holds, func(a, b done) int { return compareHolds(&a.h, &b.h) })
	out := make([]Hold, len(holds))
	for i := range holds {
		out[i] = holds[i].out
	}
	return out, nil
}

// ended says how a hold ended, for explanations.
func (h *hold) ended() string {
	switch h.endBy {
	case "release":
		return "its release at " + secs(h.end)
	case "lost":
		return "its lease was reported lost at " + secs(h.end)
	case "crash":
		return "it crashed at " + secs(h.end)
	case "re-acquire":
		return "it acquired the lock again at " + secs(h.end)
	}
	return "its validity ended at " + secs(h.end)
}

// computeHolds derives the mutual-exclusion windows of the history
// (holdBuilder). The result is sorted by key, then start.
func computeHolds(p *prepared) []hold {
	var holds []hold
	b := &holdBuilder{
		reentrant: p.cfg.Reentrant, calls: &callSlice{p.calls}, open: map[procKey]*hold{},
		closed: func(h *hold) { holds = append(holds, *h) },
	}
	for i := range p.ops {
		o := &p.ops[i]
		switch ci := p.byOp[i]; {
		case ci >= 0:
			b.record(o, ci)
		case !o.IsNemesis() && (o.F == history.Crash || o.F == history.Lost):
			b.event(o)
		}
	}
	b.finish(p.end)
	slices.SortFunc(holds, func(a, b hold) int { return compareHolds(&a, &b) })
	return holds
}

// compareHolds orders holds by key, then start, then acquire.
func compareHolds(a, b *hold) int {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	if a.start != b.start {
		return cmp.Compare(a.start, b.start)
	}
	return cmp.Compare(int64(a.acq), int64(b.acq))
}

// checkMutex finds the holds of different processes that overlap (overlap).
// Sorting dominates: O(n log n) plus the overlaps found.
func checkMutex(p *prepared, _ *Result, r *report) {
	var okAcq, unknown, failed int64
	for i := range p.calls {
		c := &p.calls[i]
		if c.f != history.Acquire {
			continue
		}
		switch c.typ {
		case history.OK:
			okAcq++
		case history.Info:
			unknown++
		case history.Fail:
			failed++
		}
	}
	r.stat("holds", int64(len(p.holds)))
	r.stat("acquires_ok", okAcq)
	r.stat("acquires_failed", failed)
	r.stat("acquires_unknown", unknown)
	if unknown > 0 {
		r.note("%d acquires had an unknown outcome and were not counted as holds (only definite grants are)", unknown)
	}
	var active []*hold
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
		for _, a := range active {
			if _, to, ok := overlap(a, h); ok {
				r.anomaly(doubleGrant(p, a, h, to), a.start)
			}
		}
		if h.end > h.start {
			active = append(active, h)
		}
	}
}

func doubleGrant(p *prepared, a, b *hold, to int64) Anomaly {
	aOp := p.calls[a.acq].opIndex()
	bOp := p.calls[b.acq].opIndex()
	ops := []int64{bOp, aOp}
	if a.endOp >= 0 {
		ops = append(ops, a.endOp)
	}
	faults := p.faultsIn(a.start, to)
	return Anomaly{
		Kind: DoubleGrant, Key: b.key, Ops: ops, Clients: []int{b.client, a.client},
		From: b.start, To: to,
		Explanation: fmt.Sprintf("client %d acquired lock %q at %s (op %d) while client %d held it since %s (op %d) until %s: they overlapped for %s; %s.",
			b.client, b.key, secs(b.start), bOp, a.client, secs(a.start), aOp, a.ended(), dur(to-b.start), p.faultClause(faults)),
	}
}
