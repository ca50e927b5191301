package workloads

import (
	"slices"
	"sync"
)

// registry is a set of named values registered at init time, as lock
// builders and error kinds are: looked up by name in the harness and in
// every worker process (the same program), never registered twice.
type registry[T any] struct {
	fn, what string // the registering function and what it registers, for its panics
	mu       sync.RWMutex
	names    []string // in registration order
	m        map[string]T
}

func newRegistry[T any](fn, what string) *registry[T] {
	return &registry[T]{fn: fn, what: what, m: map[string]T{}}
}

// add registers v as name. Like database/sql.Register it panics on a nil
// value or a duplicate name: both are programming errors.
func (r *registry[T]) add(name string, v T, isNil bool) {
	if isNil {
		panic("workloads: " + r.fn + " " + name + " with a nil " + r.what)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic("workloads: " + r.fn + " called twice for " + name)
	}
	r.names = append(r.names, name)
	r.m[name] = v
}

func (r *registry[T]) get(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// inOrder is the names in the order they were registered.
func (r *registry[T]) inOrder() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.names)
}

// sorted is the names in alphabetical order.
func (r *registry[T]) sorted() []string {
	names := r.inOrder()
	slices.Sort(names)
	return names
}
