package history

import "iter"

// This file is the one home of the rule that pairs a call's invoke with its
// completion (ARCHITECTURE.md, "The history contract"). The checkers pair a history with it, the
// workloads use it to complete the open invokes of a process that ended, and
// the report's operation table to link the two halves of a call.

// IsCall reports whether f names a call: an invoke record followed by one
// completion (ok, fail or info) of the same CallKey. Every other client
// record (crash, lost, pause, message) is a single event.
func IsCall(f string) bool {
	switch f {
	case Acquire, Release, Extend, Write, Read, Valid, Enqueue, Dequeue, Init, CountDown, Await:
		return true
	}
	return false
}

// CallKey is what a completion shares with its invoke: the process, the
// function and the key, and for an extend the owner value too (a
// watchdog's renewal may overlap its client's own calls, and a renewal of
// the previous lease one of the next; the owner value tells them apart).
type CallKey struct {
	Process Process
	F       string
	Key     string
	Owner   string // extends only
}

// CallKeyOf is op's CallKey.
func CallKeyOf(o Op) CallKey {
	k := CallKey{Process: o.Process, F: o.F, Key: o.Key}
	if o.F == Extend {
		k.Owner = o.Value
	}
	return k
}

// Pending holds the open invokes of calls, each with a value of the
// caller's (a call's index, the invoke itself), and pairs each completion
// with the oldest open invoke of its CallKey. The zero Pending is ready to
// use; it is not safe for concurrent use.
type Pending[T any] struct {
	open map[CallKey][]T
	n    int
}

// Invoke opens the call of the invoke record o with value v.
func (p *Pending[T]) Invoke(o Op, v T) {
	if p.open == nil {
		p.open = map[CallKey][]T{}
	}
	k := CallKeyOf(o)
	p.open[k] = append(p.open[k], v)
	p.n++
}

// Complete closes the call the completion record o belongs to, the oldest
// open one of its CallKey, and returns its value; false when none is open.
func (p *Pending[T]) Complete(o Op) (T, bool) {
	k := CallKeyOf(o)
	q := p.open[k]
	if len(q) == 0 {
		var zero T
		return zero, false
	}
	v := q[0]
	if len(q) == 1 {
		delete(p.open, k)
	} else {
		p.open[k] = q[1:]
	}
	p.n--
	return v, true
}

// Len is the number of open calls.
func (p *Pending[T]) Len() int { return p.n }

// All yields every open call's key and value, oldest first within a key;
// the order between keys is unspecified.
func (p *Pending[T]) All() iter.Seq2[CallKey, T] {
	return func(yield func(CallKey, T) bool) {
		for k, q := range p.open {
			for _, v := range q {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// Partners pairs the calls of ops (in index order): out[i] is the position
// in ops of the other half of ops[i]'s call — the completion of an invoke,
// the invoke of a completion — or -1 for an event, a fault record, an
// invoke that never completed and a completion without an invoke.
func Partners(ops []Op) []int {
	out := make([]int, len(ops))
	var p Pending[int]
	for i, o := range ops {
		out[i] = -1
		if o.IsNemesis() || !IsCall(o.F) {
			continue
		}
		if o.Type == Invoke {
			p.Invoke(o, i)
			continue
		}
		if j, ok := p.Complete(o); ok {
			out[i], out[j] = j, i
		}
	}
	return out
}
