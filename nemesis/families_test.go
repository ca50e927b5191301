package nemesis

import (
	"slices"
	"testing"
)

// TestEveryKindHasAFamily: a campaign hunts every fault kind in some
// family; a family's name is unique and its kinds registered.
func TestEveryKindHasAFamily(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range Families() {
		if seen[f.Name] || f.Doc == "" || len(f.Kinds) == 0 {
			t.Errorf("family %q: repeated, undocumented or empty", f.Name)
		}
		seen[f.Name] = true
		for _, k := range f.Kinds {
			if !slices.Contains(Kinds, k) {
				t.Errorf("family %s: kind %s is not registered", f.Name, k)
			}
		}
	}
	for _, k := range Kinds {
		if !slices.ContainsFunc(Families(), func(f Family) bool { return slices.Contains(f.Kinds, k) }) {
			t.Errorf("kind %s belongs to no family: no campaign hunts with it", k)
		}
	}
}
