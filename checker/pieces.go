package checker

import (
	"cmp"
	"math"
	"slices"
)

// Pieces: each key's history is cut where the lease-mutex model's state is
// known, and each piece is checked alone (checkPieces: in the order its
// operations returned when the model accepts that, else by porcupine).
// Porcupine keeps a bitset of its whole input per explored state (about
// n²/8 bytes for n operations), so a key's whole history stops fitting in
// memory near half a million operations, while its pieces stay small at
// any length.
//
// # Where a key's history can be cut
//
// Take one key's operations as linOps keeps them, each with its call time
// c and return time r (r = +∞ for an unknown outcome: it may take effect
// any time after its call, or never). For a cut at time T:
//
//	A = the operations that returned before T (r < T),
//	P = the unknown ones called before T (c < T, r = +∞),
//	C = the definite ones spanning T (c < T ≤ r),
//	B = the ones called at or after T (c ≥ T).
//
// Leases acquired in A ∪ P are "old". The cut gives porcupine two pieces,
// A ∪ P and C ∪ B, each starting from the free state; it is made only where
// the following hold.
//
// Without reentrancy (a lease is one acquire):
//
//  1. C holds only ok acquires whose validity ends at or after T. A release
//     or extend in A ∪ P acts on an old lease (or on none), and an extend in
//     B does not act on an old lease.
//  2. Every ok acquire y in A either has an ok release in A called after y
//     returned, or its validity — pushed by its ok extends — ends by T.
//  3. If P holds an acquire: C is empty and every old lease's validity
//     (for an unknown acquire, what its ok extends promised) ends by T.
//
// With reentrancy (a lease is a process, and an acquire by the holder
// nests): C and P are empty, and each process's acquires and releases in
// A follow one another in time (each called after the previous returned),
// never release more than they acquired so far, and balance by T.
//
// # Why the verdict is the unsplit one
//
// Write s ≈ s' when the two states agree except that (a) a floor or a
// validity at or before T may differ, and (b) "free" and "held by an old
// lease whose validity ended by T" count as the same. For every operation
// that returns at or after T and is not an extend of an old lease, ≈ is a
// bisimulation: an acquire's checks (r ≥ floor, holder's validity ≤ r)
// cannot tell values at or before T apart, a release of an old lease turns
// either side of (b) into free, and an extend of a new lease needs the same
// holder on both sides. (Reentrant: the state after A is exactly free, see
// below, so only (a) is needed.)
//
// The state after any legal order of all of A and some of P is ≈ free:
// the last acquire linearized is the holder unless a release of it follows
// (nothing else changes the holder); by 2 it is released after it in real
// time, or its validity ended by T, in which case it holds an old, expired
// lease; with an acquire of P around, 3 makes every validity end by T. A
// floor is only raised to the validity of a lease taken over, which an
// acquire of A (r < T) can do only for a validity before T, and an acquire
// of P only under 3. Reentrant: the process that acquired last holds with a
// depth no larger than its open acquires (the balance before it became the
// holder is not negative), its remaining releases follow it, so the lock
// ends free.
//
// Split valid ⇒ unsplit valid: a legal order of A ∪ P followed by one of
// C ∪ B respects real time (everything in C ∪ B returns at or after T,
// after every call in A ∪ P), and the second part stays legal from the
// first part's state, which is ≈ free.
//
// Unsplit valid ⇒ split valid: take a legal order of the whole history.
// An ok acquire z of C placed before some operation of A makes a lease with
// validity ≥ T the holder; no acquire of A can take it over (r < T), no
// extend of A applies to it (1) and releases of A ∪ P are then no-ops, so
// moving the acquires of C behind the rest of A ∪ P keeps the order legal:
// the releases now act first and may free the lock z took over, which only
// lowers floors, and lower floors (and validities of unknown acquires) never
// make an operation illegal (the model is monotone in them). This needs no
// acquire of P in between, hence 3. Now A ∪ P (partly) comes first; its
// state is ≈ free, so the rest is legal from free. What is left of P there
// goes to the end of the first piece (an unknown operation is legal
// anywhere). Removing it from the second: an unknown acquire x, with no
// extend of x after it (1), leaves the lock to x with validity and floor
// max(floor, holder's validity); without x every later acquire faces the
// same bound or a lower one, and a release of x becomes a no-op, so the
// order without x is legal; after that, releases of old leases are no-ops
// from free. Cutting the second piece again repeats the argument, each
// piece starting from free.
//
// TestLinearizabilitySplitKeepsVerdicts compares split and unsplit
// verdicts on generated histories, the corpus and simulated runs;
// TestCutRulesAreNeeded shows, for each rule it can, a history whose
// verdict a cut without it would change.

// linPiece is one stretch of one key's history, checked alone.
type linPiece struct {
	key int32
	ops []linOp // in call order
}

// linPieces cuts every key's operations (one slice per key, which it
// reorders).
func linPieces(keys [][]linOp, reentrant bool) []linPiece {
	var out []linPiece
	for _, ops := range keys {
		for _, piece := range splitKey(ops, reentrant) {
			out = append(out, linPiece{key: piece[0].in.key, ops: piece})
		}
	}
	return out
}

// splitKey cuts one key's operations at the cuts described above and
// returns the pieces in time order: consecutive parts of ops, which it
// reorders.
func splitKey(ops []linOp, reentrant bool) [][]linOp {
	if len(ops) < 2 {
		return [][]linOp{ops}
	}
	slices.SortStableFunc(ops, func(a, b linOp) int { return cmp.Compare(a.call, b.call) })
	k := keyOps(ops)
	b := cutBlocks{ops: k, diff: make([]int32, len(ops)+1)}
	var maxVU []int64 // per acquire: validity pushed by its ok extends (non-reentrant)
	if reentrant {
		// C and P empty: nothing may span a cut.
		for i := range k {
			b.block(k[i].call, k.ret(i), true)
		}
	} else {
		f := leaseFactsOf(k)
		b.blockLeaseRules(f)
		maxVU = f.maxVU
	}
	pieceOf, pieces := sweepPieces(k, b.blocked(), maxVU, reentrant)
	return layOutPieces(ops, pieceOf, pieces)
}

// keyOps is one key's operations in call order.
type keyOps []linOp

func (ops keyOps) in(i int) *linInput { return &ops[i].in }

// ret is ops[i]'s return, +∞ for an unknown outcome.
func (ops keyOps) ret(i int) int64 {
	if ops[i].in.info {
		return math.MaxInt64
	}
	return ops[i].ret
}

// firstAfter is the first position whose call is after t.
func (ops keyOps) firstAfter(t int64) int {
	i, _ := slices.BinarySearchFunc(ops, t, func(o linOp, t int64) int {
		if o.call <= t {
			return -1
		}
		return 1
	})
	return i
}

// cutBlocks counts the rules that forbid a cut just before each position
// (at T = ops[i].call), as differences: blocked sums them up.
type cutBlocks struct {
	ops  keyOps
	diff []int32 // len(ops)+1
}

// block forbids cuts at every T with from < T ≤ to (to inclusive) or
// from < T < to (closed false).
func (b *cutBlocks) block(from, to int64, closed bool) {
	if to <= from {
		return
	}
	lo := b.ops.firstAfter(from)
	hi := len(b.ops)
	if to < math.MaxInt64 {
		if closed {
			hi = b.ops.firstAfter(to)
		} else {
			hi = b.ops.firstAfter(to - 1)
		}
	}
	if lo < hi {
		b.diff[lo]++
		b.diff[hi]--
	}
}

// blocked is, per position, how many rules forbid a cut just before it.
func (b *cutBlocks) blocked() []int32 {
	blocked := make([]int32, len(b.ops))
	var run int32
	for i := range blocked {
		run += b.diff[i]
		blocked[i] = run
	}
	return blocked
}

// leaseFacts is what the non-reentrant rules need of each lease.
type leaseFacts struct {
	acq    map[int32]int // lease → position of its acquire
	maxVU  []int64       // per acquire: validity pushed by its ok extends
	relRet []int64       // per ok acquire: earliest return of an ok release called after it returned
}

func leaseFactsOf(ops keyOps) leaseFacts {
	n := len(ops)
	f := leaseFacts{acq: map[int32]int{}, maxVU: make([]int64, n), relRet: make([]int64, n)}
	for i := range ops {
		if ops.in(i).kind == linAcquire {
			f.acq[ops.in(i).id] = i
		}
	}
	for i := range ops {
		f.relRet[i] = math.MaxInt64
		if x := ops.in(i); x.kind == linAcquire && !x.info {
			f.maxVU[i] = x.vu
		}
	}
	for i := range ops {
		x := ops.in(i)
		l, ok := f.acq[x.id]
		if x.kind == linAcquire || !ok {
			continue
		}
		switch {
		case x.kind == linExtend && !x.info:
			f.maxVU[l] = max(f.maxVU[l], x.vu)
		case x.kind == linRelease && !x.info && !ops.in(l).info && ops[i].call > ops[l].ret:
			f.relRet[l] = min(f.relRet[l], ops[i].ret)
		}
	}
	return f
}

// blockLeaseRules forbids the cuts rules 1 and 2 rule out (rule 3 is
// checked as the sweep goes).
func (b *cutBlocks) blockLeaseRules(f leaseFacts) {
	ops := b.ops
	for i := range ops {
		x := ops.in(i)
		switch {
		case x.kind == linAcquire && x.info:
			// P: rule 3, checked as the sweep goes.
		case x.kind == linAcquire:
			// In C only while its validity lasts (rule 1).
			b.block(max(ops[i].call, x.vu), ops[i].ret, true)
			// Rule 2: after it returned, until released or expired.
			until := f.maxVU[i]
			if f.relRet[i] < math.MaxInt64 {
				until = min(until, f.relRet[i]+1)
			}
			b.block(ops[i].ret, until, false)
		default: // release or extend
			if !x.info {
				b.block(ops[i].call, ops[i].ret, true) // never in C
			}
			l, ok := f.acq[x.id]
			if !ok {
				continue // a lease nobody holds: a release is a no-op, an extend never legal
			}
			if ops[l].call >= ops[i].call { // acts on a lease acquired after it was called
				b.block(ops[i].call, math.MaxInt64, true)
				continue
			}
			if !ops.in(l).info { // its lease must be old, not in C (rule 1)
				b.block(ops[i].call, ops[l].ret, true)
			}
			if x.kind == linExtend && !x.info { // not an extend of an old lease in B (rule 1)
				since := ops[l].ret
				if ops.in(l).info {
					since = ops[l].call
				}
				b.block(since, ops[i].call, true)
			}
		}
	}
}

// pieceSweep is what the rules need of the current piece as the sweep
// goes.
type pieceSweep struct {
	ops       keyOps
	maxVU     []int64
	reentrant bool
	members   []int // positions in the current piece so far, in call order
	// non-reentrant
	infoAcq  bool  // P holds an acquire
	maxRetOK int64 // latest return of an ok acquire (C is not empty while ≥ T)
	maxVUAll int64 // latest validity of any lease
	// reentrant
	balance    map[int32]int
	lastRet    map[int32]int64
	unbalanced int
	broken     bool // a process released more than it held, or overlapped itself
}

// add puts ops[i] in the current piece.
func (s *pieceSweep) add(i int) {
	s.members = append(s.members, i)
	x := s.ops.in(i)
	if s.reentrant {
		s.addReentrant(i, x)
		return
	}
	if x.kind != linAcquire {
		return
	}
	if x.info {
		s.infoAcq = true
	} else {
		s.maxRetOK = max(s.maxRetOK, s.ops[i].ret)
	}
	s.maxVUAll = max(s.maxVUAll, s.maxVU[i])
}

// addReentrant keeps each process's balance and order in time.
func (s *pieceSweep) addReentrant(i int, x *linInput) {
	if x.kind == linExtend {
		return
	}
	if last, seen := s.lastRet[x.id]; seen && s.ops[i].call <= last {
		s.broken = true
	}
	s.lastRet[x.id] = max(s.lastRet[x.id], s.ops.ret(i))
	b := s.balance[x.id]
	if b != 0 {
		s.unbalanced--
	}
	if x.kind == linAcquire {
		b++
	} else {
		b--
	}
	if b < 0 {
		s.broken = true
	}
	if b != 0 {
		s.unbalanced++
	}
	s.balance[x.id] = b
}

// cutAt says whether the current piece allows a cut at t (rule 3, or the
// reentrant balance).
func (s *pieceSweep) cutAt(t int64) bool {
	if s.reentrant {
		return !s.broken && s.unbalanced == 0
	}
	return !s.infoAcq || (s.maxRetOK < t && s.maxVUAll <= t)
}

// restart begins a new piece holding carried.
func (s *pieceSweep) restart(carried []int) {
	s.members = s.members[:0]
	s.infoAcq, s.maxRetOK, s.maxVUAll = false, 0, 0
	clear(s.balance)
	clear(s.lastRet)
	s.unbalanced, s.broken = 0, false
	for _, m := range carried {
		s.add(m)
	}
}

// sweepPieces numbers each operation's piece, cutting wherever no rule
// forbids it.
func sweepPieces(ops keyOps, blocked []int32, maxVU []int64, reentrant bool) (pieceOf []int32, pieces int32) {
	pieceOf = make([]int32, len(ops))
	s := &pieceSweep{ops: ops, maxVU: maxVU, reentrant: reentrant, balance: map[int32]int{}, lastRet: map[int32]int64{}}
	var carried []int
	for i := range ops {
		if i > 0 && ops[i-1].call < ops[i].call && blocked[i] == 0 && s.cutAt(ops[i].call) {
			t := ops[i].call
			carried = carried[:0] // C: ok acquires still returning
			for _, m := range s.members {
				if ops.ret(m) >= t && ops.ret(m) < math.MaxInt64 {
					carried = append(carried, m)
				}
			}
			// The blocks above leave only ok acquires valid at t in C;
			// checked again, as a cut elsewhere would be unsound.
			if len(carried) < len(s.members) && !slices.ContainsFunc(carried, func(m int) bool { return ops.in(m).kind != linAcquire || ops.in(m).vu < t }) {
				for _, m := range s.members {
					if r := ops.ret(m); r < t || r == math.MaxInt64 {
						pieceOf[m] = pieces
					}
				}
				pieces++
				s.restart(carried)
			}
		}
		s.add(i)
	}
	for _, m := range s.members {
		pieceOf[m] = pieces
	}
	return pieceOf, pieces + 1
}

// layOutPieces lays the pieces out one after the other in ops, each in
// call order (a stable counting sort by piece, permuting in place), and
// returns them.
func layOutPieces(ops []linOp, pieceOf []int32, pieces int32) [][]linOp {
	start := make([]int, pieces+1)
	for _, pc := range pieceOf {
		start[pc+1]++
	}
	for j := range pieces {
		start[j+1] += start[j]
	}
	next := slices.Clone(start[:pieces])
	to := pieceOf // reused: the position each operation goes to
	for i, pc := range pieceOf {
		to[i] = int32(next[pc])
		next[pc]++
	}
	for i := range ops {
		for int(to[i]) != i {
			j := to[i]
			ops[i], ops[j] = ops[j], ops[i]
			to[i], to[j] = to[j], to[i]
		}
	}
	out := make([][]linOp, pieces)
	for j := range out {
		out[j] = ops[start[j]:start[j+1]:start[j+1]]
	}
	return out
}
