package checker

import (
	"fmt"

	"github.com/tumbler-dev/tumbler/history"
)

// checkReadersWriters finds a read-write lock's write holds that overlap
// another process's hold of the same key, read or write: readers may
// share, a writer excludes everyone. The holds are the mutual-exclusion
// checker's (an ok acquire until the release's invoke, the validity, a
// loss signal or a crash), each with the mode its acquire carried; a hold
// without a mode counts as a write. One sweep over the holds sorted by
// key and start: O(n log n) plus the overlaps found.
func checkReadersWriters(p *prepared, _ *Result, r *report) {
	var reads, writes int64
	var active []*hold
	for i := range p.holds {
		h := &p.holds[i]
		if h.mode == history.ModeRead {
			reads++
		} else {
			writes++
		}
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
			if a.proc == h.proc || (a.mode == history.ModeRead && h.mode == history.ModeRead) {
				continue
			}
			to := min(a.end, h.end)
			if to <= h.start {
				continue
			}
			r.anomaly(writerOverlap(p, a, h, to), a.start)
		}
		if h.end > h.start {
			active = append(active, h)
		}
	}
	r.stat("read_holds", reads)
	r.stat("write_holds", writes)
}

func modeName(m string) string {
	if m == history.ModeRead {
		return "read"
	}
	return "write"
}

func writerOverlap(p *prepared, a, b *hold, to int64) Anomaly {
	aOp := p.calls[a.acq].opIndex()
	bOp := p.calls[b.acq].opIndex()
	ops := []int64{bOp, aOp}
	if a.endOp >= 0 {
		ops = append(ops, a.endOp)
	}
	return Anomaly{
		Kind: WriterOverlap, Key: b.key, Ops: ops, Clients: []int{b.client, a.client},
		From: b.start, To: to, At: b.start,
		Explanation: fmt.Sprintf("client %d acquired the %s lock of %q at %s (op %d) while client %d held its %s lock since %s (op %d) until %s: they overlapped for %s, and a writer must be alone; %s.",
			b.client, modeName(b.mode), b.key, secs(b.start), bOp, a.client, modeName(a.mode), secs(a.start), aOp, a.ended(), dur(to-b.start),
			p.faultClause(p.faultsIn(a.start, to))),
	}
}
