package history

import (
	"slices"
	"testing"
)

func TestPartners(t *testing.T) {
	op := func(p Process, typ Type, f, key, value string) Op {
		return Op{Process: p, Type: typ, F: f, Key: key, Value: value}
	}
	ops := []Op{
		op(0, Invoke, Acquire, "k", "a"),           // 0
		op(0, OK, Acquire, "k", "a"),               // 1
		op(0, Invoke, Extend, "k", "a"),            // 2: a watchdog renews lease a …
		op(0, Invoke, Write, "k", "1"),             // 3: … while its client writes
		op(0, Invoke, Extend, "k", "b"),            // 4: a renewal of another lease overlaps
		op(0, OK, Extend, "k", "b"),                // 5 pairs with 4 (owner b), not 2
		op(0, OK, Write, "k", "1"),                 // 6
		op(0, Info, Extend, "k", "a"),              // 7 pairs with 2
		op(1, Invoke, Acquire, "k", "x"),           // 8
		op(1, Invoke, Acquire, "k", "y"),           // 9
		op(1, Fail, Acquire, "k", ""),              // 10: the oldest open acquire, 8
		op(1, OK, Acquire, "k", "y"),               // 11: then 9
		op(NemesisProcess, Info, Start, "", "cut"), // 12: faults pair by ID, not here
		op(1, Info, Crash, "", ""),                 // 13: an event
		op(2, OK, Release, "k", "z"),               // 14: no invoke
		op(2, Invoke, Release, "k", "z"),           // 15: never completes
		op(3, Invoke, Read, "k", ""),               // 16: another process, same key …
		op(2, OK, Read, "k", ""),                   // 17: … is not this completion's
	}
	want := []int{1, 0, 7, 6, 5, 4, 3, 2, 10, 11, 8, 9, -1, -1, -1, -1, -1, -1}
	if got := Partners(ops); !slices.Equal(got, want) {
		t.Errorf("Partners = %v\n      want %v", got, want)
	}
}

func TestPending(t *testing.T) {
	var p Pending[string]
	inv := Op{Process: 3, Type: Invoke, F: Extend, Key: "k", Value: "o1"}
	p.Invoke(inv, "first")
	p.Invoke(inv, "second")
	p.Invoke(Op{Process: 3, Type: Invoke, F: Extend, Key: "k", Value: "o2"}, "other owner")
	if p.Len() != 3 {
		t.Fatalf("Len = %d, want 3", p.Len())
	}
	n := 0
	for k, v := range p.All() {
		n++
		if k.Process != 3 || k.F != Extend || k.Key != "k" || (k.Owner == "o1") != (v != "other owner") {
			t.Errorf("All yields %+v %q", k, v)
		}
	}
	if n != 3 {
		t.Errorf("All yields %d calls, want 3", n)
	}
	done := inv
	done.Type = OK
	for _, want := range []string{"first", "second"} {
		if v, ok := p.Complete(done); !ok || v != want {
			t.Errorf("Complete = %q, %v; want %q", v, ok, want)
		}
	}
	if v, ok := p.Complete(done); ok {
		t.Errorf("Complete with nothing open = %q, true", v)
	}
	if p.Len() != 1 {
		t.Errorf("Len = %d, want 1", p.Len())
	}
	if !IsCall(Await) || !IsCall(Valid) || IsCall(Crash) || IsCall(Start) {
		t.Error("IsCall disagrees with the history contract")
	}
}
