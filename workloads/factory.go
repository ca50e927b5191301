package workloads

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tumbler-dev/tumbler/lock"
)

// Factory makes one client's lock on key: a lock.Locker, or a sibling of
// package lock (lock.ReadWriteLocker, lock.Semaphore, lock.Latch), which
// the workload drives as its kind says. The workload passes extra options
// (its renewal and queue observers, step hook, wall clock and retry
// strategy), which the factory must apply after its own.
type Factory func(key string, opts ...lock.Option) (lock.Primitive, error)

// Builder turns one client's lock spec (LockSpec.Spec or PerClient[i]) into
// its Factory. close, which may be nil, releases what the factory holds
// (connections); the workload calls it when the client's process ends, so a
// crashed client's sockets close as a real crash would close them.
type Builder func(spec json.RawMessage) (f Factory, close func() error, err error)

var builders = newRegistry[Builder]("RegisterBuilder", "builder")

// RegisterBuilder makes b available as LockSpec.Builder = name. Worker
// processes find builders by name, so register them in an init function (or
// before WorkerMain), never conditionally. Like database/sql.Register it
// panics on a nil builder or a duplicate name: both are programming errors.
func RegisterBuilder(name string, b Builder) { builders.add(name, b, b == nil) }

func lookupBuilder(name string) Builder { b, _ := builders.get(name); return b }

func builderNames() []string { return builders.sorted() }

// build runs the named builder.
func build(name string, spec json.RawMessage) (Factory, func() error, error) {
	b := lookupBuilder(name)
	if b == nil {
		return nil, nil, fmt.Errorf("lock builder %q is not registered", name)
	}
	f, closeFn, err := b(spec)
	if err == nil && f == nil {
		err = fmt.Errorf("lock builder %q returned no factory", name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lock builder %q: %w", name, err)
	}
	if closeFn == nil {
		closeFn = func() error { return nil }
	}
	return f, closeFn, nil
}

// Error kinds cross the worker boundary by name. In process mode a
// client's locks are built (and its lock client program started) in its
// worker process, and what reaches the harness of an error there is a
// message: the kinds registered here that the error is (errors.Is) travel
// with it, and the harness's error is each of them again, so that, say, a
// lock client program's refusal of its init (protocol.ErrInit) stays what
// it was in the worker. Register kinds in an init function, as builders:
// the worker is the same program and finds them by the same names.
var errorKinds = newRegistry[error]("RegisterErrorKind", "kind")

// RegisterErrorKind makes errors that are kind (errors.Is) keep it when
// they cross from a worker process to the harness. Like RegisterBuilder it
// panics on a nil kind or a duplicate name.
func RegisterErrorKind(name string, kind error) { errorKinds.add(name, kind, kind == nil) }

// kindsOf names the registered kinds err is.
func kindsOf(err error) []string {
	var out []string
	for _, name := range errorKinds.inOrder() {
		if k, _ := errorKinds.get(name); errors.Is(err, k) {
			out = append(out, name)
		}
	}
	return out
}

// kindedError is an error a worker reported: its message, and the
// registered kinds it was (errors.Is holds for each).
type kindedError struct {
	msg   string
	kinds []error
}

func (e *kindedError) Error() string   { return e.msg }
func (e *kindedError) Unwrap() []error { return e.kinds }

// workerError is the error a worker reported as msg, of the kinds named
// (those unknown here are dropped: the worker is this very program).
func workerError(msg string, kinds []string) error {
	e := &kindedError{msg: msg}
	for _, name := range kinds {
		if k, ok := errorKinds.get(name); ok {
			e.kinds = append(e.kinds, k)
		}
	}
	return e
}
