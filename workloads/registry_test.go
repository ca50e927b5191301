package workloads

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A registry keeps registration order and sorts on request, and panics,
// naming the registering function, on a nil value or a second name.
func TestRegistry(t *testing.T) {
	r := newRegistry[error]("RegisterThing", "thing")
	b, a := errors.New("b"), errors.New("a")
	r.add("b", b, false)
	r.add("a", a, false)
	if got := r.inOrder(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("inOrder = %v", got)
	}
	if got := r.sorted(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("sorted = %v", got)
	}
	if v, ok := r.get("a"); !ok || v != a {
		t.Errorf("get(a) = %v, %v", v, ok)
	}
	if _, ok := r.get("c"); ok {
		t.Error("get(c) found an unregistered name")
	}
	for _, tc := range []struct {
		name  string
		isNil bool
		want  string
	}{{"a", false, "RegisterThing called twice for a"}, {"c", true, "RegisterThing c with a nil thing"}} {
		func() {
			defer func() {
				if p, _ := recover().(string); !strings.Contains(p, tc.want) {
					t.Errorf("add(%q, nil=%v) panicked with %q, want %q", tc.name, tc.isNil, p, tc.want)
				}
			}()
			r.add(tc.name, nil, tc.isNil)
		}()
	}
	if got := r.inOrder(); len(got) != 2 {
		t.Errorf("a refused registration was kept: %v", got)
	}
}
