package nemesis

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryKindHasAFamily: a campaign hunts every fault kind in some
// family; a family's name is unique, its doc one line, and its kinds the
// registered ones with its traits.
func TestEveryKindHasAFamily(t *testing.T) {
	in := map[Kind]bool{}
	names := map[string]bool{}
	for _, f := range Families() {
		if names[f.Name] || f.Name == "" {
			t.Errorf("family %q: empty or twice", f.Name)
		}
		names[f.Name] = true
		if f.Doc == "" || strings.Contains(f.Doc, "\n") || len(f.Traits) == 0 || len(f.Kinds) == 0 {
			t.Errorf("family %s: want a one-line doc, traits and kinds: %+v", f.Name, f)
		}
		for _, k := range Kinds {
			want := k.Traits().Has(f.Traits...) && !k.Traits().Has(f.Unless...)
			if slices.Contains(f.Kinds, k) != want {
				t.Errorf("family %s: has %s %v, want %v by its traits", f.Name, k, !want, want)
			}
		}
		for _, k := range f.Kinds {
			in[k] = true
		}
	}
	for _, k := range Kinds {
		if !in[k] {
			t.Errorf("kind %s belongs to no family: no campaign hunts with it", k)
		}
	}
	for name, want := range map[string][]Kind{
		"persistence": {Kill, Restart},
		"clients":     {ClientPause, ClientStarve},
		"steps":       {StepPause, StepCrash},
		"network":     {Partition, Latency, ClientPartition},
	} {
		if f, ok := FamilyNamed(name); !ok || !slices.Equal(f.Kinds, want) {
			t.Errorf("%s: %+v %v, want %v", name, f, ok, want)
		}
	}
	if _, ok := FamilyNamed("weather"); ok {
		t.Error("a family nobody declared")
	}
}
