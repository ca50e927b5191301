package checker

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/tumbler-dev/tumbler/history"
)

// Linearizability: the lock calls as the lease-mutex model's operations
// (linearizable_model.go), cut into pieces (pieces.go), each piece decided
// (linearizable_search.go) and every illegal one explained
// (linearizable_explain.go); the check's page is linearizable_page.go.

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

// linOps turns the lock calls into porcupine operations, leaving out those
// that cannot change the verdict: failed calls (no effect), extends with
// unknown outcome (no promise made), and in the non-reentrant model
// unknown acquires whose lease is never extended and unknown releases that
// no later acquire needs (prune; see the arguments in linOpMaker.op, and
// TestLinearizabilityPruningKeepsVerdicts). Fewer pending unknowns keep
// porcupine's search near linear. The operations come in one slice per
// key, in the order of the calls.
func linOps(p *prepared, prune bool) (keys [][]linOp, dropped int) {
	m := newLinOpMaker(p, prune)
	// Count, then fill slices of the right size: no slice grows, and no
	// flat copy of them all exists next to them.
	count := make([]int, len(p.keys))
	for i := range p.calls {
		o, kept, leftOut := m.op(i)
		if kept {
			count[o.in.key]++
		}
		if leftOut {
			dropped++
		}
	}
	keys = make([][]linOp, len(p.keys))
	for k, n := range count {
		keys[k] = make([]linOp, 0, n)
	}
	for i := range p.calls {
		if o, kept, _ := m.op(i); kept {
			keys[o.in.key] = append(keys[o.in.key], o)
		}
	}
	return slices.DeleteFunc(keys, func(ops []linOp) bool { return len(ops) == 0 }), dropped
}

// linLeases is what pruning needs to know of the ok calls: per lease
// (calls index) whether it is ever extended and the largest validity
// promised, and per key the returns of its ok acquires, sorted.
type linLeases struct {
	extended []bool
	maxVU    []int64
	okRets   [][]int64
}

func linLeasesOf(p *prepared, keyIdx map[string]int32) linLeases {
	l := linLeases{
		extended: make([]bool, len(p.calls)),
		maxVU:    make([]int64, len(p.calls)),
		okRets:   make([][]int64, len(p.keys)),
	}
	for i := range p.calls {
		c := &p.calls[i]
		if c.typ != history.OK {
			continue
		}
		switch c.f {
		case history.Acquire:
			l.maxVU[i] = max(l.maxVU[i], c.vu)
			l.okRets[keyIdx[c.key]] = append(l.okRets[keyIdx[c.key]], c.ret)
		case history.Extend:
			if c.lease >= 0 {
				l.extended[c.lease] = true
				l.maxVU[c.lease] = max(l.maxVU[c.lease], c.vu)
			}
		}
	}
	for _, r := range l.okRets {
		slices.Sort(r)
	}
	return l
}

// linOpMaker makes each lock call's operation and says whether linOps
// keeps it.
type linOpMaker struct {
	p                *prepared
	keyIdx           map[string]int32
	leases           linLeases
	prune, reentrant bool
	infinity         int64 // an unknown outcome's return: the history's end + 1
}

func newLinOpMaker(p *prepared, prune bool) *linOpMaker {
	keyIdx := make(map[string]int32, len(p.keys))
	for i, k := range p.keys {
		keyIdx[k] = int32(i)
	}
	return &linOpMaker{
		p: p, keyIdx: keyIdx, leases: linLeasesOf(p, keyIdx),
		prune: prune, reentrant: p.cfg.Reentrant, infinity: p.end + 1,
	}
}

// keptAcquire says whether the acquire of lease is kept.
func (m *linOpMaker) keptAcquire(lease int32) bool {
	if lease < 0 {
		return false
	}
	a := &m.p.calls[lease]
	return a.typ == history.OK || (a.typ == history.Info && (m.leases.extended[lease] || !m.prune))
}

// op is call i's operation; kept says whether linOps keeps it, leftOut
// whether it is a lock call left out.
func (m *linOpMaker) op(i int) (o linOp, kept, leftOut bool) {
	c := &m.p.calls[i]
	in := &linInput{key: m.keyIdx[c.key], call: int32(i), ret: c.ret, vu: c.vu, info: c.typ == history.Info}
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
		keep = keep && (m.reentrant || !m.prune || !in.info || m.leases.extended[int32(i)])
	case history.Release:
		in.kind, in.id = linRelease, c.lease
		if !m.reentrant {
			keep = keep && m.keptAcquire(c.lease)
			// An unknown release matters only if some acquire returned
			// no earlier than its invoke and before its lease's validity
			// ended: any other acquire takes over the lease anyway.
			if keep && in.info && m.prune {
				r := m.leases.okRets[in.key]
				j, _ := slices.BinarySearch(r, c.call)
				keep = j < len(r) && r[j] < m.leases.maxVU[c.lease]
			}
		}
	case history.Extend:
		in.kind, in.id = linExtend, c.lease
		keep = keep && !in.info
		if c.lease < 0 {
			in.id = -2 - int32(i) // a lease nobody granted: never the holder
		}
	default:
		return linOp{}, false, false
	}
	if m.reentrant {
		in.id = int32(c.proc)
	}
	if !keep {
		return linOp{}, false, true
	}
	ret := c.ret
	if in.info {
		ret = m.infinity
	}
	return linOp{in: *in, call: c.call, ret: ret, client: int32(c.proc)}, true, false
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
