package runner

import (
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
