package runner

import (
	"errors"

	"github.com/tumbler-dev/tumbler/checker"
)

// The exit codes of tumbler, as in Jepsen, declared here and nowhere else:
// the run engine decides a run's code (Outcome.ExitCode, results.json's
// exit_code) and the command line exits with it.
const (
	ExitValid   = 0 // the history is valid
	ExitInvalid = 1 // the history is invalid
	// ExitUnknown: the checkers could not decide, the history was not
	// checked, or a valid verdict covers only part of the run (interrupted).
	ExitUnknown = 2
	// ExitAbort: a second Ctrl-C quit at once, without a report (the
	// command line's own; 128 + SIGINT).
	ExitAbort = 130
	// ExitBadInput: bad input (ErrInput): arguments, a plan, a history.
	ExitBadInput = 254
	// ExitHarness: the harness failed (a missing redis-server, say).
	ExitHarness = 255
)

// ExitCodeOf is the exit code of an error of this package: 0 for nil,
// ExitBadInput for bad input (ErrInput), ExitHarness for anything else.
func ExitCodeOf(err error) int {
	switch {
	case err == nil:
		return ExitValid
	case errors.Is(err, ErrInput):
		return ExitBadInput
	}
	return ExitHarness
}

// exitCode is a run's exit code: its error's when it failed, otherwise its
// verdict's, except that a valid verdict on an interrupted run covers only
// part of it and is no pass.
func exitCode(v checker.Verdict, interrupted bool, err error) int {
	if err != nil {
		return ExitCodeOf(err)
	}
	switch {
	case v == checker.Valid && interrupted:
		return ExitUnknown
	case v == checker.Valid:
		return ExitValid
	case v == checker.Invalid:
		return ExitInvalid
	case v == checker.Unknown:
		return ExitUnknown
	}
	return ExitHarness
}

// ErrInput classifies bad input — exit code ExitBadInput rather than a
// failure of the harness. Its two kinds are ErrPlan and ErrHistory
// (errors.Is(err, ErrInput) holds for both); an error about neither, such as
// a directory that holds no run, wraps ErrInput itself.
var ErrInput = errors.New("bad input")

// ErrPlan wraps every error about a plan: its file, its fields, flags
// that make one.
var ErrPlan error = inputKind("invalid plan")

// ErrHistory wraps every error about a history file: a line that is not
// an op, indexes that go backwards, a completion without its invoke.
var ErrHistory error = inputKind("invalid history")

// inputKind is a kind of bad input: it is ErrInput too.
type inputKind string

func (k inputKind) Error() string { return string(k) }

func (k inputKind) Is(target error) bool { return target == ErrInput }
