package runner

import (
	"errors"

	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/outcome"
)

// ErrPlan wraps every error about a plan: its file, its fields, flags
// that make one. It is bad input (outcome.ErrInput: exit code 254).
var ErrPlan error = inputKind("invalid plan")

// ErrHistory wraps every error about a history file: a line that is not
// an op, indexes that go backwards, a completion without its invoke. It is
// bad input (outcome.ErrInput: exit code 254).
var ErrHistory error = inputKind("invalid history")

// inputKind is a kind of bad input: it is outcome.ErrInput too.
type inputKind string

func (k inputKind) Error() string { return string(k) }

func (k inputKind) Is(target error) bool { return target == outcome.ErrInput }

// clientInput is err, marked as bad input (outcome.Input) when a lock
// client program refused its init (protocol.ErrInit: the plan gave it
// settings it does not take, clients/PROTOCOL.md, "Errors") or its
// command cannot start (protocol.ErrCommand). In process mode the error
// comes from a worker and keeps its kind on the way
// (workloads.RegisterErrorKind).
func clientInput(err error) error {
	if (errors.Is(err, protocol.ErrInit) || errors.Is(err, protocol.ErrCommand)) && !errors.Is(err, outcome.ErrInput) {
		return outcome.Input(err)
	}
	return err
}
