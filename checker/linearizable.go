package checker

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tumbler-dev/tumbler/history"
)

// The lease-mutex model, partitioned by key.
//
// Time is part of each operation's input: ret, the latest instant it can
// have taken effect (its return, or +∞ for an unknown outcome). An acquire
// may take the lock from another lease only if that lease's validity ended
// by ret (conservative, since the acquire may have taken
// effect as late as its return). The state remembers, as floor, the
// validity of every lease taken over that way: anything linearized later
// happened after it, so a later acquire that returned before the floor
// cannot come after. An acquire with unknown outcome that takes effect
// promises nothing (its client got no lease), so its validity is the
// floor. Placing an unknown operation at the end of the history (its
// return is +∞) is how "it did not take effect" is expressed, which keeps
// the model deterministic. A release by a non-holder is a no-op: a release
// can only free its own lease.

const (
	linAcquire uint8 = iota
	linRelease
	linExtend
)

type linInput struct {
	kind uint8
	info bool  // unknown outcome
	id   int32 // lease identity: the acquire's call, or the process when reentrant
	vu   int64 // validity granted (ok acquire or extend)
	ret  int64 // latest time it can have taken effect
	key  int32
	call int32 // calls index
}

type linState struct {
	holder int32 // -1: free
	depth  int32
	vu     int64
	floor  int64
}

var linFree = linState{holder: -1}

func linStep(s linState, in *linInput) (bool, linState) {
	switch in.kind {
	case linAcquire:
		if in.ret < s.floor {
			return false, s
		}
		switch {
		case s.holder < 0:
			vu := in.vu
			if in.info {
				vu = s.floor
			}
			return true, linState{in.id, 1, vu, s.floor}
		case s.holder == in.id: // a reentrant acquire nests
			if !in.info {
				s.vu = max(s.vu, in.vu)
			}
			s.depth++
			return true, s
		case s.vu <= in.ret:
			floor := max(s.floor, s.vu)
			vu := in.vu
			if in.info {
				vu = floor
			}
			return true, linState{in.id, 1, vu, floor}
		case in.info:
			return true, s // it cannot have taken effect here
		}
		return false, s
	case linRelease:
		if s.holder != in.id {
			return true, s
		}
		if s.depth > 1 {
			s.depth--
			return true, s
		}
		return true, linState{holder: -1, floor: s.floor}
	case linExtend:
		if s.holder != in.id {
			return false, s
		}
		s.vu = in.vu
		return true, s
	}
	return false, s
}

// linOps turns the lock calls into porcupine operations, leaving out those
// that cannot change the verdict: failed calls (no effect), extends with
// unknown outcome (no promise made), and in the non-reentrant model
// unknown acquires whose lease is never extended and unknown releases that
// no later acquire needs (prune; see the arguments in the comments below,
// and TestLinearizabilityPruningKeepsVerdicts). Fewer pending unknowns keep
// porcupine's search near linear. The operations come in one slice per
// key, in the order of the calls.
func linOps(p *prepared, prune bool) (keys [][]linOp, dropped int) {
	keyIdx := make(map[string]int32, len(p.keys))
	for i, k := range p.keys {
		keyIdx[k] = int32(i)
	}
	reentrant := p.cfg.Reentrant
	// Per lease (calls index): is it ever extended (ok), and the largest
	// validity promised.
	extended := make([]bool, len(p.calls))
	maxVU := make([]int64, len(p.calls))
	okRets := make([][]int64, len(p.keys)) // ok acquire returns per key
	for i := range p.calls {
		c := &p.calls[i]
		if c.typ != history.OK {
			continue
		}
		switch c.f {
		case history.Acquire:
			maxVU[i] = max(maxVU[i], c.vu)
			okRets[keyIdx[c.key]] = append(okRets[keyIdx[c.key]], c.ret)
		case history.Extend:
			if c.lease >= 0 {
				extended[c.lease] = true
				maxVU[c.lease] = max(maxVU[c.lease], c.vu)
			}
		}
	}
	for _, r := range okRets {
		slices.Sort(r)
	}
	keptAcquire := func(lease int32) bool {
		if lease < 0 {
			return false
		}
		a := &p.calls[lease]
		return a.typ == history.OK || (a.typ == history.Info && (extended[lease] || !prune))
	}
	infinity := p.end + 1
	// op is call i's operation, if kept.
	op := func(i int) (linOp, bool) {
		c := &p.calls[i]
		in := &linInput{key: keyIdx[c.key], call: int32(i), ret: c.ret, vu: c.vu, info: c.typ == history.Info}
		if in.info {
			in.ret = math.MaxInt64
		}
		keep := c.typ != history.Fail
		switch c.f {
		case history.Acquire:
			in.kind, in.id = linAcquire, int32(i)
			// An unknown acquire matters only if its lease is extended:
			// taking effect, it blocks others no more than the lease it
			// replaces, and a release of it undoes it.
			keep = keep && (reentrant || !prune || !in.info || extended[int32(i)])
		case history.Release:
			in.kind, in.id = linRelease, c.lease
			if !reentrant {
				keep = keep && keptAcquire(c.lease)
				// An unknown release matters only if some acquire returned
				// no earlier than its invoke and before its lease's validity
				// ended: any other acquire takes over the lease anyway.
				if keep && in.info && prune {
					r := okRets[in.key]
					j, _ := slices.BinarySearch(r, c.call)
					keep = j < len(r) && r[j] < maxVU[c.lease]
				}
			}
		case history.Extend:
			in.kind, in.id = linExtend, c.lease
			keep = keep && !in.info
			if c.lease < 0 {
				in.id = -2 - int32(i) // a lease nobody granted: never the holder
			}
		default:
			return linOp{}, false
		}
		if reentrant {
			in.id = int32(c.proc)
		}
		if !keep {
			dropped++
			return linOp{}, false
		}
		ret := c.ret
		if in.info {
			ret = infinity
		}
		return linOp{in: *in, call: c.call, ret: ret, client: int32(c.proc)}, true
	}
	// Count, then fill slices of the right size: no slice grows, and no
	// flat copy of them all exists next to them.
	count := make([]int, len(p.keys))
	for i := range p.calls {
		if o, ok := op(i); ok {
			count[o.in.key]++
		}
	}
	keys = make([][]linOp, len(p.keys))
	for k, n := range count {
		keys[k] = make([]linOp, 0, n)
	}
	dropped = 0
	for i := range p.calls {
		if o, ok := op(i); ok {
			keys[o.in.key] = append(keys[o.in.key], o)
		}
	}
	return slices.DeleteFunc(keys, func(ops []linOp) bool { return len(ops) == 0 }), dropped
}

// linOp is a lock call as porcupine sees it, kept compact: a million of
// them are checked a few hundred at a time (porcupineOps).
type linOp struct {
	in        linInput // its Input
	call, ret int64    // ret is the history's end + 1 for an unknown outcome
	client    int32
}

// porcupineOps makes porcupine operations of ops (Input points into ops;
// the model reads only the input, whose info is the outcome).
func porcupineOps(ops []linOp) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i := range ops {
		o := &ops[i]
		out[i] = porcupine.Operation{ClientId: int(o.client), Input: &o.in, Call: o.call, Return: o.ret}
	}
	return out
}

// linOpsOf is porcupineOps undone.
func linOpsOf(ops []porcupine.Operation) []linOp {
	out := make([]linOp, len(ops))
	for i, o := range ops {
		out[i] = linOp{in: *o.Input.(*linInput), call: o.Call, ret: o.Return, client: int32(o.ClientId)}
	}
	return out
}

// linPartition groups operations by key, each group in a slice of its own.
func linPartition(ops []linOp) [][]linOp {
	var count []int
	for i := range ops {
		k := int(ops[i].in.key)
		for len(count) <= k {
			count = append(count, 0)
		}
		count[k]++
	}
	parts := make([][]linOp, len(count))
	for k, n := range count {
		parts[k] = make([]linOp, 0, n)
	}
	for _, op := range ops {
		parts[op.in.key] = append(parts[op.in.key], op)
	}
	return slices.DeleteFunc(parts, func(p []linOp) bool { return len(p) == 0 })
}

// byKey is linPartition for porcupine (a key's whole history at once).
func byKey(ops []porcupine.Operation) [][]porcupine.Operation {
	var parts [][]porcupine.Operation
	for _, op := range ops {
		k := int(op.Input.(*linInput).key)
		for len(parts) <= k {
			parts = append(parts, nil)
		}
		parts[k] = append(parts[k], op)
	}
	return slices.DeleteFunc(parts, func(p []porcupine.Operation) bool { return len(p) == 0 })
}

func linModel(p *prepared) porcupine.Model {
	return porcupine.Model{
		Partition: byKey,
		Init:      func() any { return linFree },
		Step: func(state, input, _ any) (bool, any) {
			return linStep(state.(linState), input.(*linInput))
		},
		Hash: func(state any) uint64 {
			s := state.(linState)
			h := uint64(uint32(s.holder))<<32 | uint64(uint32(s.depth))
			h ^= uint64(s.vu) * 0x9e3779b97f4a7c15
			h ^= uint64(s.floor) * 0xc2b2ae3d27d4eb4f
			return h
		},
		DescribeOperation: func(input, output any) string {
			in := input.(*linInput)
			c := &p.calls[in.call]
			s := c.f
			if in.info {
				s += " → unknown"
			} else {
				s += " → ok"
			}
			if in.kind != linRelease && !in.info {
				s += ", " + history.ValidUntilText(in.vu)
			}
			return fmt.Sprintf("%s [op %d]", s, c.opIndex())
		},
		DescribeState: func(state any) string { return describeLinState(p, state.(linState)) },
	}
}

func describeLinState(p *prepared, s linState) string {
	if s.holder < 0 {
		return "free"
	}
	var who string
	if p.cfg.Reentrant {
		who = fmt.Sprintf("process %d", s.holder)
		if s.depth > 1 {
			who += fmt.Sprintf(" (%d holds)", s.depth)
		}
	} else {
		a := &p.calls[s.holder]
		who = fmt.Sprintf("client %d (acquire op %d)", a.client, a.opIndex())
	}
	return fmt.Sprintf("held by %s, %s", who, history.ValidUntilText(s.vu))
}

// VisualMaxOps bounds WriteLinearizationHTML: porcupine's page for more
// lock operations than this is too slow to produce and to open (the
// verdict does not depend on it), so Check keeps what it needs to draw only
// up to this many.
const VisualMaxOps = 20000

// linVisual keeps what porcupine needs to draw the check.
type linVisual struct {
	model       porcupine.Model
	ops         []porcupine.Operation
	annotations []porcupine.Annotation
	timeout     time.Duration
}

// WriteLinearizationHTML writes porcupine's interactive view of the lock
// operations (one lane per process, the faults as annotations on a
// "nemesis" lane, crashes and lost leases on their process's lane) as a
// self-contained HTML page, one partition per piece checked. It runs
// porcupine again, in the mode that keeps the partial orders the page
// shows, within Config.LinearizabilityTimeout. A check of more than
// VisualMaxOps lock operations has no page.
func (r *Result) WriteLinearizationHTML(w io.Writer) error {
	if r.lin == nil {
		if c, ok := r.Checker(Linearizability); ok && !c.Skipped && c.Stats["operations"] > VisualMaxOps {
			return fmt.Errorf("checker: %d lock operations: too many for porcupine's page (limit %d, VisualMaxOps)", c.Stats["operations"], VisualMaxOps)
		}
		return errNoVisual
	}
	_, info := porcupine.CheckOperationsVerbose(r.lin.model, r.lin.ops, r.lin.timeout)
	info.AddAnnotations(r.lin.annotations)
	return porcupine.Visualize(r.lin.model, info, w)
}

// WriteLinearizationHTMLFile writes WriteLinearizationHTML's page to path.
func (r *Result) WriteLinearizationHTMLFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	if err := r.WriteLinearizationHTML(f); err != nil {
		f.Close()
		return fmt.Errorf("checker: visualization: %w", err)
	}
	return f.Close()
}

// stateBytes is what porcupine keeps for each state it explores in a piece
// of n operations: a bitset of the operations linearized so far, the model
// state, and the cache entry and map slot holding them.
func stateBytes(n int) int64 { return int64(n+63)/64*8 + 160 }

// pieceMemory is the least porcupine needs for a piece of n operations: its
// entries and list nodes, and one state per operation (about n²/8 bytes
// for large n). A search that backtracks keeps more states.
func pieceMemory(n int) int64 { return int64(n) * (stateBytes(n) + 352) }

// pieceOutcome is what checkPieces found about one piece.
type pieceOutcome uint8

const (
	pieceOK pieceOutcome = iota
	pieceIllegal
	pieceTimedOut
	pieceTooBig     // its least need is over Config.LinearizabilityMemory: not run
	pieceOverBudget // its search kept more states than its share of memory allowed
)

// checkPieces decides every piece: linearizable when the model accepts its
// operations in the order they returned, otherwise by porcupine, in time
// order, as many at once as there are CPUs, each within timeout and within
// a share of memory (an equal share per CPU, more for a piece whose least
// need is larger, and never more than memory in all): a search that would
// keep more states than fit in its share is stopped, and a piece whose
// least need is over memory is not searched.
func checkPieces(model porcupine.Model, pieces []linPiece, timeout time.Duration, memory int64) []pieceOutcome {
	out := make([]pieceOutcome, len(pieces))
	workers := runtime.GOMAXPROCS(0)
	share := memory / int64(workers)
	// First the order in which the operations returned: most pieces of a
	// correct lock's history are linearizable in it, and need no search.
	var todo []int
	var tmu sync.Mutex
	var cursor atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var order []int
			for {
				i := int(cursor.Add(1)) - 1
				if i >= len(pieces) {
					return
				}
				if order = linearizableAsReturned(pieces[i].ops, order); order == nil {
					tmu.Lock()
					todo = append(todo, i)
					tmu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(todo)
	var (
		mu   sync.Mutex
		room = sync.NewCond(&mu)
		used int64
		next int
	)
	// take hands out the next piece to search and reserves its memory.
	take := func() (i int, reserve int64, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		for next < len(todo) && pieceMemory(len(pieces[todo[next]].ops)) > memory {
			out[todo[next]] = pieceTooBig
			next++
		}
		if next == len(todo) {
			return 0, 0, false
		}
		i = todo[next]
		next++
		reserve = max(share, pieceMemory(len(pieces[i].ops)))
		for used > 0 && used+reserve > memory {
			room.Wait()
		}
		used += reserve
		return i, reserve, true
	}
	for range workers {
		wg.Go(func() {
			for {
				i, reserve, ok := take()
				if !ok {
					return
				}
				n := len(pieces[i].ops)
				budget := (reserve - int64(n)*352) / stateBytes(n)
				var states int64
				var stopped atomic.Bool
				m := model
				m.Step = func(state, input, output any) (bool, any) {
					if states >= budget {
						stopped.Store(true)
						return false, state // fail every step: porcupine unwinds and gives up
					}
					ok, next := model.Step(state, input, output)
					if ok {
						states++
					}
					return ok, next
				}
				switch porcupine.CheckOperationsTimeout(m, porcupineOps(pieces[i].ops), timeout) {
				case porcupine.Illegal:
					out[i] = pieceIllegal
					if stopped.Load() {
						out[i] = pieceOverBudget
					}
				case porcupine.Unknown:
					out[i] = pieceTimedOut
				}
				mu.Lock()
				used -= reserve
				room.Broadcast()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// linearizableAsReturned says whether the model accepts ops in the order
// they returned (unknown outcomes last, in call order): an order that
// respects real time, so when the model accepts it the piece is
// linearizable, as porcupine would find. It returns the order (to reuse its
// memory) or nil when the model refuses it; porcupine then searches.
func linearizableAsReturned(ops []linOp, order []int) []int {
	order = order[:0]
	for i := range ops {
		order = append(order, i)
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(ops[a].ret, ops[b].ret); c != 0 {
			return c
		}
		return cmp.Compare(ops[a].call, ops[b].call)
	})
	s := linFree
	for _, i := range order {
		ok, next := linStep(s, &ops[i].in)
		if !ok {
			return nil
		}
		s = next
	}
	if order == nil {
		order = []int{}
	}
	return order
}

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

// checkLinearizable cuts each key's operations into pieces (pieces.go),
// runs porcupine on the pieces in parallel within the memory bound, so
// that a piece that times out or does not fit is told apart from one that
// is not linearizable, and explains each illegal piece from a second,
// verbose run on that piece alone.
func checkLinearizable(p *prepared, res *Result, r *report) {
	keys, dropped := linOps(p, true)
	var ops []porcupine.Operation // for the page, when small enough to draw
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	if n <= VisualMaxOps {
		ops = porcupineOps(slices.Concat(keys...))
	}
	partitions := len(keys)
	pieces := linPieces(keys, p.cfg.Reentrant)
	largest := 0
	for _, pc := range pieces {
		largest = max(largest, len(pc.ops))
	}
	r.stat("operations", int64(n))
	r.stat("left_out", int64(dropped))
	r.stat("partitions", int64(partitions))
	r.stat("pieces", int64(len(pieces)))
	r.stat("largest_piece", int64(largest))
	model := linModel(p)
	timeout, memory := p.cfg.LinearizabilityTimeout, p.cfg.LinearizabilityMemory
	if ops != nil {
		visual := model
		visual.Partition = func(ops []porcupine.Operation) [][]porcupine.Operation {
			var out [][]porcupine.Operation
			for _, pc := range linPieces(linPartition(linOpsOf(ops)), p.cfg.Reentrant) {
				out = append(out, porcupineOps(pc.ops))
			}
			return out
		}
		res.lin = &linVisual{visual, ops, linAnnotations(p), timeout}
	}
	outcomes := checkPieces(model, pieces, timeout, memory)
	var timedOut, tooBig, overBudget []int
	for i, o := range outcomes {
		switch o {
		case pieceTimedOut:
			timedOut = append(timedOut, i)
		case pieceTooBig:
			tooBig = append(tooBig, i)
		case pieceOverBudget:
			overBudget = append(overBudget, i)
		case pieceIllegal:
			if r.full() {
				r.Anomalies++ // counted, not explained
				continue
			}
			part := porcupineOps(pieces[i].ops)
			_, info := porcupine.CheckOperationsVerbose(model, part, timeout)
			r.anomaly(notLinearizable(p, part, info.PartialLinearizations()[0]))
		}
	}
	var msgs []string
	if len(tooBig) > 0 {
		need := pieceMemory(len(pieces[tooBig[0]].ops))
		msgs = append(msgs, fmt.Sprintf("porcupine would need about %s for %s (limit %s, Config.LinearizabilityMemory); mutual exclusion still checks every hold",
			bytesIEC(need), listPieces(p, pieces, tooBig), bytesIEC(memory)))
	}
	if len(overBudget) > 0 {
		msgs = append(msgs, fmt.Sprintf("porcupine's search outgrew its share of %s (Config.LinearizabilityMemory) on %s",
			bytesIEC(memory), listPieces(p, pieces, overBudget)))
	}
	if len(timedOut) > 0 {
		msgs = append(msgs, fmt.Sprintf("porcupine did not finish within %v (Config.LinearizabilityTimeout, per piece) on %s",
			timeout, listPieces(p, pieces, timedOut)))
	}
	if len(msgs) > 0 {
		msg := "could not decide " + strconv.Itoa(len(tooBig)+len(overBudget)+len(timedOut)) + " of " + strconv.Itoa(len(pieces)) + " pieces: " + strings.Join(msgs, "; ")
		if r.Anomalies == 0 {
			r.undecided(msg)
		} else {
			r.note("%s", msg)
		}
	}
}

// bytesIEC renders a size for people: "3.6 GiB", "512.0 MiB".
func bytesIEC(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
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

func linAnnotations(p *prepared) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range p.faults {
		desc := f.Desc
		if desc == "" {
			desc = f.Kind
		}
		out = append(out, porcupine.Annotation{
			Tag: "nemesis", Start: f.Start, End: f.Effect,
			Description: f.ID + " " + f.Kind, Details: desc,
			BackgroundColor: "#f6c6c6",
		})
	}
	for _, e := range p.events {
		desc := "crash"
		if e.f == history.Lost {
			desc = "lease lost " + e.key
		}
		out = append(out, porcupine.Annotation{
			ClientId: int(e.proc), Start: e.time,
			Description: desc, Details: fmt.Sprintf("op %d", e.index),
			BackgroundColor: "#fbe3a6",
		})
	}
	return out
}
