package workloads

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"

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

var builders = struct {
	sync.RWMutex
	m map[string]Builder
}{m: map[string]Builder{}}

// RegisterBuilder makes b available as LockSpec.Builder = name. Worker
// processes find builders by name, so register them in an init function (or
// before WorkerMain), never conditionally. Like database/sql.Register it
// panics on a nil builder or a duplicate name: both are programming errors.
func RegisterBuilder(name string, b Builder) {
	if b == nil {
		panic("workloads: RegisterBuilder " + name + " with a nil builder")
	}
	builders.Lock()
	defer builders.Unlock()
	if _, dup := builders.m[name]; dup {
		panic("workloads: RegisterBuilder called twice for " + name)
	}
	builders.m[name] = b
}

func lookupBuilder(name string) Builder {
	builders.RLock()
	defer builders.RUnlock()
	return builders.m[name]
}

func builderNames() []string {
	builders.RLock()
	defer builders.RUnlock()
	names := make([]string, 0, len(builders.m))
	for n := range builders.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

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
