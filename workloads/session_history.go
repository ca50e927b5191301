package workloads

import (
	"errors"
	"fmt"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// How a session writes its history: ops stamped with its process and
// clock, lock calls recorded as invoke and completion, and a lock's
// background renewals and queue events turned into ops.

// newOp stamps an op of this session now; lease fills Token and ValidUntil.
func (s *session) newOp(t history.Type, f, key string, lease lock.Lease) history.Op {
	op := history.Op{Process: s.proc, Client: s.client, Type: t, F: f, Key: key, Value: lease.Value, Token: lease.Token}
	switch f {
	case history.Acquire, history.Release, history.Extend:
		op.Mode = s.mode
	}
	if !lease.ValidUntil.IsZero() {
		op.ValidUntil = s.clock.Of(lease.ValidUntil)
	}
	op.Time = s.clock.Now()
	return op
}

// invoke records the invocation of a client lock operation.
func (s *session) invoke(f, key string, lease lock.Lease) history.Op {
	op := s.newOp(history.Invoke, f, key, lease)
	op.ValidUntil = 0
	s.ops.Add(1)
	s.out.record(op)
	return op
}

// complete records how a lock operation ended.
func (s *session) complete(inv history.Op, err error) {
	op := inv
	op.Type, op.Time = outcome(err), s.clock.Now()
	if err != nil {
		op.Error = err.Error()
		op.Held = op.F == history.Acquire && op.Type == history.Fail && errors.Is(err, lock.ErrHeld)
	}
	s.out.record(op)
}

// outcome maps a lock error to the op type: definite failures are fail,
// everything else (ErrUnknown, and any error the lock did not classify)
// is info, since the command may have run.
func outcome(err error) history.Type {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, lock.ErrNotObtained), errors.Is(err, lock.ErrNotHeld):
		return history.Fail
	default:
		return history.Info
	}
}

// observer turns a lock's background renewals into history ops.
func (s *session) observer(key string) func(lock.RenewEvent) {
	return func(ev lock.RenewEvent) {
		if ev.Lease.Key == "" {
			ev.Lease.Key = key
		}
		op := s.newOp(history.Invoke, history.Extend, ev.Lease.Key, ev.Lease)
		op.ValidUntil = 0
		if !ev.Time.IsZero() {
			op.Time = s.clock.Of(ev.Time)
		}
		if ev.Err != nil {
			op.Error = ev.Err.Error()
		}
		switch ev.Phase {
		case "invoke":
		case "ok":
			op.Type, op.ValidUntil = history.OK, s.clock.Of(ev.Lease.ValidUntil)
			s.renewed(ev.Lease)
		case "fail":
			op.Type = history.Fail
		case "info":
			op.Type = history.Info
		case "lost":
			op.Type, op.F = history.Info, history.Lost
		default:
			op.Type = history.Info
			op.Error = fmt.Sprintf("lock reported unknown renewal phase %q: %s", ev.Phase, op.Error)
		}
		s.out.record(op)
	}
}

// queueObserver turns a fair lock's queue events into enqueue and dequeue
// calls: an invoke stamped when the request went out, and its completion.
func (s *session) queueObserver(key string) func(lock.QueueEvent) {
	return func(ev lock.QueueEvent) {
		f := history.Enqueue
		if ev.Phase == "left" {
			f = history.Dequeue
		}
		if ev.Key == "" {
			ev.Key = key
		}
		inv := history.Op{Process: s.proc, Client: s.client, Type: history.Invoke, F: f, Key: ev.Key, Value: ev.Owner, Time: s.clock.Of(ev.Invoked)}
		s.out.record(inv)
		done := inv
		done.Type, done.Time = history.OK, s.clock.Of(ev.Returned)
		switch {
		case ev.Err != nil:
			done.Type, done.Error = outcome(ev.Err), ev.Err.Error()
		case f == history.Enqueue:
			done.ValidUntil = s.clock.Of(ev.Deadline)
		}
		s.out.record(done)
	}
}
