// Package field names where a bad value of a plan is: an error about a
// field carries the field's JSON path ("lock.drift_factor"), so a person
// knows what to fix. Each section of a plan validates its own fields with
// paths relative to itself (variants.Spec says "drift_factor"), the plan
// puts the section's name in front (Within: "lock.drift_factor"), and the
// command line, which knows which flag sets which path, names the flag
// instead (Rename: "--drift-factor"). One mechanism serves both: there is
// no second validator for flags.
package field

import (
	"fmt"
	"strings"
)

// Error is a bad value of the field at Path. Its message reads
// "path: message", or, when the message names its own field (Self),
// the message alone: "clients = 0, want 1 to 10000 clients".
type Error struct {
	// Path is the field's JSON path relative to the section that made
	// the error: "drift_factor", "latch.count", "client_start[2]".
	Path   string
	format string
	args   []any
}

// Ref, among an error's arguments, names another field, by its path
// relative to the same section as the error's own: Within and Rename
// rewrite it as they rewrite the error's path ("needs wait_replicas"
// becomes "needs lock.wait_replicas", then "needs --wait-replicas").
type Ref string

type self struct{}

// Self, among an error's arguments, is the error's own field, for a
// message that names it in its own words.
var Self = self{}

// Errorf is a bad value of the field at path. format is fmt's; an
// argument may be Self or a Ref, and %w wraps an error as fmt.Errorf does.
func Errorf(path, format string, args ...any) *Error {
	return &Error{Path: path, format: format, args: args}
}

// Error renders the error with JSON paths.
func (e *Error) Error() string { return e.render(func(p string) string { return p }) }

// Unwrap returns the errors among the arguments.
func (e *Error) Unwrap() []error {
	var out []error
	for _, a := range e.args {
		if err, ok := a.(error); ok {
			out = append(out, err)
		}
	}
	return out
}

func (e *Error) render(name func(string) string) string {
	args := make([]any, len(e.args))
	named := false
	for i, a := range e.args {
		switch a := a.(type) {
		case self:
			args[i], named = name(e.Path), true
		case Ref:
			args[i] = name(string(a))
		default:
			args[i] = a
		}
	}
	msg := fmt.Sprintf(strings.ReplaceAll(e.format, "%w", "%v"), args...)
	if named || e.Path == "" {
		return msg
	}
	return name(e.Path) + ": " + msg
}

// within is e with prefix in front of its path and of its Refs.
func (e *Error) within(prefix string) *Error {
	out := &Error{Path: join(prefix, e.Path), format: e.format, args: make([]any, len(e.args))}
	for i, a := range e.args {
		if r, ok := a.(Ref); ok {
			a = Ref(join(prefix, string(r)))
		}
		out.args[i] = a
	}
	return out
}

func join(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

// list is several errors, one a line, each of which Within reaches.
type list []error

func (l list) Error() string {
	s := make([]string, len(l))
	for i, err := range l {
		s[i] = err.Error()
	}
	return strings.Join(s, "\n")
}

func (l list) Unwrap() []error { return l }

// Join is errors.Join for the errors of a section: nil when every err is
// nil, and Within reaches each one.
func Join(errs ...error) error {
	var l list
	for _, err := range errs {
		if err != nil {
			l = append(l, err)
		}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// Within is err as the errors of the section at prefix: an Error's path
// (and its Refs) get prefix in front, each error of a Join too, and any
// other error becomes an error of the section itself ("prefix: err").
func Within(prefix string, err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *Error:
		return e.within(prefix)
	case list:
		out := make(list, len(e))
		for i, x := range e {
			out[i] = Within(prefix, x)
		}
		return out
	}
	return Errorf(prefix, "%w", err)
}

// Rename is err with the fields it names renamed where name knows them
// (name returns false to keep a path): the command line names a flag,
// "--drift-factor", where a plan file names "lock.drift_factor". Errors
// wrapping err still match it (errors.Is, errors.As).
func Rename(err error, name func(path string) (string, bool)) error {
	if err == nil {
		return nil
	}
	rename := func(p string) string {
		if n, ok := name(p); ok {
			return n
		}
		return p
	}
	msg := err.Error()
	for _, fe := range outermost(err) {
		msg = strings.ReplaceAll(msg, fe.Error(), fe.render(rename))
	}
	return &renamed{msg: msg, err: err}
}

// outermost are the Errors in err's tree that no other Error wraps.
func outermost(err error) []*Error {
	if fe, ok := err.(*Error); ok {
		return []*Error{fe}
	}
	var out []*Error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			out = append(out, outermost(next)...)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, outermost(e)...)
		}
	}
	return out
}

type renamed struct {
	msg string
	err error
}

func (r *renamed) Error() string { return r.msg }
func (r *renamed) Unwrap() error { return r.err }
