package nemesis

import (
	"reflect"
	"testing"
)

// TestPreferWeighsScenes: with Prefer, the generator chooses among
// candidate scenes by weight: the same seed and weights give the same
// plan, and weights that favour a kind make it far more frequent than it
// is without them.
func TestPreferWeighsScenes(t *testing.T) {
	o := genOptions(t, "independent:5", "tumbler:0", 2)
	mix := []Kind{Partition, Restart, Clock, Pause}
	count := func(o GenOptions) (restarts, all int) {
		for seed := int64(1); seed <= 30; seed++ {
			p, err := Generate(seed, mix, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range p.Steps {
				all++
				if st.Fault == Restart {
					restarts++
				}
			}
		}
		return restarts, all
	}
	plainR, plainAll := count(o)
	o.Prefer = func(scene []Step) float64 {
		for _, st := range scene {
			if st.Fault == Restart && st.Node == NodeLease {
				return 1
			}
		}
		return 0.05
	}
	prefR, prefAll := count(o)
	plain, pref := float64(plainR)/float64(plainAll), float64(prefR)/float64(prefAll)
	if pref < 2*plain {
		t.Fatalf("restarts: %.2f of the steps without weights, %.2f with weights favouring them", plain, pref)
	}
	a, err := Generate(7, mix, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(7, mix, o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed and weights drew two plans")
	}
}
