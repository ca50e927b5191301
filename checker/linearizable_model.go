package checker

import (
	"fmt"

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

// linModel is the model as porcupine runs it, its operations and states
// described in the history's terms.
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

// describeLinState says who holds the lock in s, and until when.
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
