package checker

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/tumbler-dev/tumbler/history"
)

// The lease-mutex model, partitioned by key.
//
// Time is part of each operation's input: ret, the latest instant it can
// have taken effect (its return, or +∞ for an unknown outcome). An acquire
// may take the lock from another lease only if that lease's validity ended
// by ret (DESIGN.md §8.2: conservative, since the acquire may have taken
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
// porcupine's search near linear.
func linOps(p *prepared, prune bool) (ops []porcupine.Operation, dropped int) {
	keyIdx := make(map[string]int32, len(p.keys))
	for i, k := range p.keys {
		keyIdx[k] = int32(i)
	}
	reentrant := p.cfg.Reentrant
	// Per lease: is it ever extended (ok), and the largest validity promised.
	extended := map[int32]bool{}
	maxVU := map[int32]int64{}
	okRets := make([][]int64, len(p.keys)) // ok acquire returns per key
	for i := range p.calls {
		c := &p.calls[i]
		if c.typ != history.OK {
			continue
		}
		switch c.f {
		case history.Acquire:
			maxVU[int32(i)] = max(maxVU[int32(i)], c.vu)
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
	for i := range p.calls {
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
			continue
		}
		if reentrant {
			in.id = int32(c.proc)
		}
		if !keep {
			dropped++
			continue
		}
		ret := c.ret
		if in.info {
			ret = infinity
		}
		ops = append(ops, porcupine.Operation{ClientId: int(c.proc), Input: in, Call: c.call, Output: c.typ, Return: ret})
	}
	return ops, dropped
}

func linPartition(ops []porcupine.Operation) [][]porcupine.Operation {
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
		Partition: linPartition,
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
				s += ", valid until " + secs(in.vu)
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
	return fmt.Sprintf("held by %s, valid until %s", who, secs(s.vu))
}

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
// self-contained HTML page. It runs porcupine again, in the mode that keeps
// the partial orders the page shows, within Config.LinearizabilityTimeout.
func (r *Result) WriteLinearizationHTML(w io.Writer) error {
	if r.lin == nil {
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

// checkLinearizable runs porcupine on each key in parallel, so that a key
// that times out is told apart from one that is not linearizable, and
// explains each illegal key from a second, verbose run on that key alone.
func checkLinearizable(p *prepared, res *Result, r *report) {
	ops, dropped := linOps(p, true)
	parts := linPartition(ops)
	var need float64
	for _, part := range parts {
		n := float64(len(part))
		need += n * n / 8
	}
	r.stat("operations", int64(len(ops)))
	r.stat("left_out", int64(dropped))
	r.stat("partitions", int64(len(parts)))
	if need > float64(p.cfg.LinearizabilityMemory) {
		r.undecided(fmt.Sprintf("porcupine would need about %.1f GiB for %d operations (limit %.1f GiB, Config.LinearizabilityMemory); mutual exclusion still checks every hold",
			need/(1<<30), len(ops), float64(p.cfg.LinearizabilityMemory)/(1<<30)))
		return
	}
	model := linModel(p)
	timeout := p.cfg.LinearizabilityTimeout
	res.lin = &linVisual{model, ops, linAnnotations(p), timeout}
	results := make([]porcupine.CheckResult, len(parts))
	var wg sync.WaitGroup
	for i, part := range parts {
		wg.Go(func() { results[i] = porcupine.CheckOperationsTimeout(model, part, timeout) })
	}
	wg.Wait()
	var timedOut []string
	for i, part := range parts {
		switch results[i] {
		case porcupine.Unknown:
			timedOut = append(timedOut, p.keys[part[0].Input.(*linInput).key])
		case porcupine.Illegal:
			_, info := porcupine.CheckOperationsVerbose(model, part, timeout)
			var longest []int
			for _, l := range info.PartialLinearizations()[0] {
				if len(l) > len(longest) {
					longest = l
				}
			}
			r.anomaly(notLinearizable(p, part, longest))
		}
	}
	if len(timedOut) > 0 {
		msg := fmt.Sprintf("porcupine did not finish within %v (Config.LinearizabilityTimeout) on keys %q", timeout, timedOut)
		if r.Anomalies == 0 {
			r.undecided(msg)
		} else {
			r.note("%s", msg)
		}
	}
}

// notLinearizable explains an illegal partition: the definite operation
// that returned first among those the longest consistent prefix leaves
// out, and the state that prefix leaves the lock in.
func notLinearizable(p *prepared, part []porcupine.Operation, longest []int) (Anomaly, int64) {
	in := make([]bool, len(part))
	s := linFree
	for _, id := range longest {
		in[id] = true
		_, s = linStep(s, part[id].Input.(*linInput))
	}
	culprit := -1
	for id, op := range part {
		if in[id] {
			continue
		}
		if culprit < 0 || betterCulprit(op, part[culprit]) {
			culprit = id
		}
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
	ctxFrom := c.call
	if s.holder >= 0 && !p.cfg.Reentrant {
		h := &p.calls[s.holder]
		a.Ops = append(a.Ops, h.opIndex())
		a.Clients = append(a.Clients, h.client)
		ctxFrom = h.call
	}
	faults := p.faultsIn(ctxFrom, a.To)
	a.Explanation = fmt.Sprintf("no order of lock %q's operations fits a lease mutex: client %d's %s (op %d, %s to %s) cannot follow the longest consistent order found (%d of %d operations), which leaves the lock %s; %s.",
		c.key, c.client, c.f, c.opIndex(), secs(c.call), secs(c.ret), len(longest), len(part), describeLinState(p, s), p.faultClause(faults))
	return a, ctxFrom
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
