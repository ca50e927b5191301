package runner

import (
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/nemesis"
)

// ReadHistory reads a run's history file as history.ReadFile does (the
// same ops and errors, a truncated last line included) and gives each
// fault record the traits its kind declares that it lacks
// (nemesis.Kind.Traits). A history written before faults recorded their
// traits carries none — or only the lock step a fault armed — and the
// windows, the checkers and guidance know a fault only by its traits: this
// is the one place an old fault's meaning is looked up by its kind's name,
// so such a history is judged as it was when it was written. For a history
// written since, whose faults carry their kinds' traits, it changes
// nothing; a fault of a kind this tumbler does not know keeps what it
// carries.
func ReadHistory(path string) ([]history.Op, error) {
	ops, err := history.ReadFile(path)
	withKindTraits(ops)
	return ops, err
}

// withKindTraits adds to each fault of ops its kind's traits.
func withKindTraits(ops []history.Op) {
	known := map[string]history.TraitSet{}
	for i := range ops {
		f := ops[i].Fault
		if f == nil {
			continue
		}
		ts, ok := known[f.Kind]
		if !ok {
			ts = nemesis.Kind(f.Kind).Traits()
			known[f.Kind] = ts
		}
		f.Traits = f.Traits.With(ts...)
	}
}
