package outcome

import (
	"errors"

	"github.com/tumbler-dev/tumbler/checker"
)

// The exit codes of tumbler, as in Jepsen, declared here and nowhere else:
// the functions below decide which one each command returns, and the
// command line exits with it.
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

// ErrInput classifies bad input — exit code ExitBadInput rather than a
// failure of the harness. The runner's ErrPlan and ErrHistory are its two
// kinds (errors.Is(err, ErrInput) holds for both); an error about neither,
// such as a directory that holds no run, wraps ErrInput itself, or is
// marked with Input.
var ErrInput = errors.New("bad input")

// Input marks err as bad input (errors.Is(err, ErrInput) holds) without
// changing its message; nil stays nil.
func Input(err error) error {
	if err == nil {
		return nil
	}
	return inputError{err}
}

type inputError struct{ error }

func (e inputError) Unwrap() error        { return e.error }
func (e inputError) Is(target error) bool { return target == ErrInput }

// ErrorCode is the exit code of an error: ExitValid for nil, ExitBadInput
// for bad input (ErrInput), ExitHarness for anything else. It is the code
// of every command that fails before it has an outcome to judge.
func ErrorCode(err error) int {
	switch {
	case err == nil:
		return ExitValid
	case errors.Is(err, ErrInput):
		return ExitBadInput
	}
	return ExitHarness
}

// RunCode is the code of one run (run, analyze, a hunt's attempt,
// results.json's exit_code; Judge sets it): its error's when it failed,
// otherwise its verdict's, except that a valid verdict on an interrupted
// run covers only part of it and is no pass.
func RunCode(v checker.Verdict, interrupted bool, err error) int {
	if err != nil {
		return ErrorCode(err)
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

// MatchCode is the code of reproduce and matrix, which judge runs against
// their rows' expectations: ExitInvalid when a run did not match (or the
// runs were interrupted: mismatch), else ExitHarness when a run failed
// (errored), else ExitValid.
func MatchCode(mismatch, errored bool) int {
	switch {
	case mismatch:
		return ExitInvalid
	case errored:
		return ExitHarness
	}
	return ExitValid
}

// HuntCode is a hunt's code (hunt.json's exit_code): ExitInvalid when an
// anomaly of a wanted kind was found, else ExitHarness when the harness
// failed attempt after attempt, else ExitUnknown when the hunt was
// interrupted or an attempt's verdict was unknown (unsure), else ExitValid.
func HuntCode(found, harnessFailed, unsure bool) int {
	switch {
	case found:
		return ExitInvalid
	case harnessFailed:
		return ExitHarness
	case unsure:
		return ExitUnknown
	}
	return ExitValid
}

// ShrinkCode is a shrink's code: ExitUnknown when it was interrupted (it
// still wrote what it found), else its error's when it failed, else
// ExitInvalid when the minimal plan fails as the found one did
// (reproduced), else ExitValid (the plan as stored did not fail often
// enough to shrink).
func ShrinkCode(reproduced, interrupted bool, err error) int {
	switch {
	case interrupted:
		return ExitUnknown
	case err != nil:
		return ErrorCode(err)
	case reproduced:
		return ExitInvalid
	}
	return ExitValid
}

// FindingCode is the code of a command that passes or finds something
// wrong — audit (a setting exposes a lock: found), conform (a client
// breaks a property every lock must have: found): its error's when it
// failed, else ExitInvalid when it found something, else ExitValid.
func FindingCode(found bool, err error) int {
	switch {
	case err != nil:
		return ErrorCode(err)
	case found:
		return ExitInvalid
	}
	return ExitValid
}
