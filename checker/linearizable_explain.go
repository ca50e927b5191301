package checker

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/tumbler-dev/tumbler/history"
)

// How a piece is named for a person, and why an illegal one is illegal.

// describePiece names a piece for a person: its key, its place among the
// key's pieces, the history records and times it spans and its size.
func describePiece(p *prepared, pieces []linPiece, i int) string {
	pc := pieces[i]
	nth, of := 0, 0
	for j := range pieces {
		if pieces[j].key == pc.key {
			of++
			if j <= i {
				nth++
			}
		}
	}
	first, last := int64(math.MaxInt64), int64(-1)
	from, to := int64(math.MaxInt64), int64(0)
	for _, op := range pc.ops {
		c := &p.calls[op.in.call]
		first, last = min(first, c.inv), max(last, c.opIndex())
		from, to = min(from, c.call), max(to, c.ret)
	}
	return fmt.Sprintf("key %q piece %d of %d (ops %d–%d, %s to %s, %d operations)",
		p.keys[pc.key], nth, of, first, last, secs(from), secs(to), len(pc.ops))
}

// listPieces names up to three pieces: "key "k" piece 2 of 9 (…); … and 4 more".
func listPieces(p *prepared, pieces []linPiece, idx []int) string {
	var parts []string
	for n, i := range idx {
		if n == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(idx)-3))
			break
		}
		parts = append(parts, describePiece(p, pieces, i))
	}
	return strings.Join(parts, "; ")
}

// notLinearizable explains an illegal piece from porcupine's longest
// consistent orders (partials): the definite operation that returned
// first among those the longest order leaves out, and the state that
// order leaves the lock in. Porcupine hands its orders over as a set in
// no fixed order, so among orders of equal length the one with the best
// culprit is taken, then the first by operation ids: the same history is
// always explained the same way.
func notLinearizable(p *prepared, part []porcupine.Operation, partials [][]int) (Anomaly, int64) {
	longest, culprit := []int(nil), culpritOutside(part, nil)
	for _, l := range partials {
		if c := culpritOutside(part, l); betterOrder(part, l, c, longest, culprit) {
			longest, culprit = l, c
		}
	}
	s := linFree
	for _, id := range longest {
		_, s = linStep(s, part[id].Input.(*linInput))
	}
	if culprit < 0 { // the verbose rerun timed out on a complete order: blame the last return
		culprit = len(part) - 1
	}
	ci := part[culprit].Input.(*linInput)
	c := &p.calls[ci.call]
	a := Anomaly{
		Kind: NotLinearizable, Key: c.key, Ops: []int64{c.opIndex()}, Clients: []int{c.client},
		From: c.call, To: c.ret,
	}
	// The faults named are those active while either operation was in
	// flight: a fault can break the pair after the culprit returned and
	// before the holder's grant did (a node of the culprit's lease
	// restarted empty while the holder was still acquiring).
	ctxFrom, ctxTo := c.call, a.To
	if s.holder >= 0 && !p.cfg.Reentrant {
		h := &p.calls[s.holder]
		a.Ops = append(a.Ops, h.opIndex())
		a.Clients = append(a.Clients, h.client)
		ctxFrom = min(ctxFrom, h.call)
		if h.typ == history.OK {
			ctxTo = max(ctxTo, h.ret)
		}
	}
	faults := p.faultsIn(ctxFrom, ctxTo)
	a.Faults = faults
	a.Explanation = fmt.Sprintf("no order of lock %q's operations fits a lease mutex: client %d's %s (op %d, %s to %s) cannot follow the longest consistent order found (%d of %d operations), which leaves the lock %s; %s.",
		c.key, c.client, c.f, c.opIndex(), secs(c.call), secs(c.ret), len(longest), len(part), describeLinState(p, s), p.faultClause(faults))
	return a, ctxFrom
}

// betterOrder says whether order l, leaving culprit c out, explains an
// illegal piece better than order best leaving cb out: longer, then with
// the better culprit, then first by operation ids.
func betterOrder(part []porcupine.Operation, l []int, c int, best []int, cb int) bool {
	if len(l) != len(best) {
		return len(l) > len(best)
	}
	if c != cb && c >= 0 && cb >= 0 { // both -1 when both orders are complete
		if betterCulprit(part[c], part[cb]) != betterCulprit(part[cb], part[c]) {
			return betterCulprit(part[c], part[cb])
		}
		return c < cb
	}
	return slices.Compare(l, best) < 0
}

// culpritOutside is the best culprit (betterCulprit) among the operations
// of part that order leaves out, -1 if it leaves none out.
func culpritOutside(part []porcupine.Operation, order []int) int {
	in := make([]bool, len(part))
	for _, id := range order {
		in[id] = true
	}
	culprit := -1
	for id, op := range part {
		if !in[id] && (culprit < 0 || betterCulprit(op, part[culprit])) {
			culprit = id
		}
	}
	return culprit
}

// betterCulprit prefers definite operations, then the earliest return.
func betterCulprit(a, b porcupine.Operation) bool {
	ai, bi := a.Input.(*linInput).info, b.Input.(*linInput).info
	if ai != bi {
		return !ai
	}
	return a.Return < b.Return
}
