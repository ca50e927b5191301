package history

import (
	"slices"
	"strings"
	"testing"
)

// TestTraitsDocumented: every trait has a line, and the constants are the
// list (a trait added without its line is no trait a history may carry).
func TestTraitsDocumented(t *testing.T) {
	all := Traits()
	for _, tr := range []Trait{TouchesNode, StopsNode, RestartsNode, FreezesNode, IsolatesNode, IsolatesClient,
		SlowsLinks, LosesReplies, StopsClient, CrashesClient, ArmsStep, MovesNodeClock, MovesClientClock,
		LosesKey, RefusesWrites, FillsMemory, PromotesReplica} {
		if !slices.Contains(all, tr) || tr.Doc() == "" || strings.Contains(tr.Doc(), "\n") {
			t.Errorf("%s: listed %v, doc %q", tr, slices.Contains(all, tr), tr.Doc())
		}
	}
	if len(all) != 17 {
		t.Errorf("%d traits listed, 17 declared", len(all))
	}
	if Trait("meteor").Valid() {
		t.Error("an unknown trait is valid")
	}
}

func TestTraitSet(t *testing.T) {
	s := TraitSet{StopsClient}
	w := s.With(ArmsStep, StopsClient)
	if !slices.Equal(w, TraitSet{StopsClient, ArmsStep}) || len(s) != 1 {
		t.Errorf("With: %v (from %v)", w, s)
	}
	if !w.Has(LosesKey, ArmsStep) || w.Has(LosesKey) || w.Has() {
		t.Errorf("Has on %v", w)
	}
	if got := w.Or(); got != "stops-client or arms-step" {
		t.Errorf("Or: %q", got)
	}
}

// TestFaultTraitsRead: a fault's traits read back as written; a history
// written before traits were recorded marks a fault that arms a lock step
// with "arms", which reads as ArmsStep; an unknown trait, or one given
// twice, is refused with its name.
func TestFaultTraitsRead(t *testing.T) {
	read := func(line string) ([]Op, error) { return Decode(strings.NewReader(line + "\n")) }
	ops, err := read(`{"index":1,"process":"nemesis","client":0,"type":"info","f":"start","time":5,"fault":{"id":"f1","kind":"step-pause","targets":["client:0"],"desc":"arm","arms":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	if f := ops[0].Fault; !slices.Equal(f.Traits, TraitSet{ArmsStep}) || f.Kind != "step-pause" || f.Desc != "arm" {
		t.Errorf("an old armed fault reads as %+v", f)
	}
	ops, err = read(`{"index":1,"process":"nemesis","client":0,"type":"info","f":"start","time":5,"fault":{"id":"f1","kind":"drift","desc":"d","traits":["touches-node","moves-node-clock"],"rate":1.5}}`)
	if err != nil {
		t.Fatal(err)
	}
	if f := ops[0].Fault; !slices.Equal(f.Traits, TraitSet{TouchesNode, MovesNodeClock}) || f.Rate != 1.5 {
		t.Errorf("a fault with traits reads as %+v", f)
	}
	for line, want := range map[string]string{
		`{"index":1,"process":"nemesis","client":0,"type":"info","f":"start","time":5,"fault":{"id":"f1","kind":"kill","desc":"k","traits":["meteor"]}}`:                `fault trait "meteor" unknown`,
		`{"index":1,"process":"nemesis","client":0,"type":"info","f":"start","time":5,"fault":{"id":"f1","kind":"kill","desc":"k","traits":["loses-key","loses-key"]}}`: `"loses-key" given twice`,
		`{"index":1,"process":"nemesis","client":0,"type":"info","f":"start","time":5,"fault":{"id":"f1","kind":"kill","desc":"k","colour":"red"}}`:                     `unknown field "colour"`,
	} {
		if _, err := read(line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
}
