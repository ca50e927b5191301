package nemesis

import (
	"reflect"
	"slices"
	"testing"

	"github.com/tumbler-dev/tumbler/internal/racebuild"
)

// Step.Spans walks every span field of Step, by its JSON name, in field
// order: a span field added to Step is walked without being listed.
func TestStepSpans(t *testing.T) {
	var names []string
	t0 := reflect.TypeFor[Step]()
	for i, index := range stepFieldIndex {
		if t0.FieldByIndex(index).Type == reflect.TypeFor[Span]() {
			names = append(names, stepFields[i])
		}
	}
	var st Step
	var walked []string
	for _, f := range st.Spans() {
		walked = append(walked, f.Name)
	}
	if !slices.Equal(walked, names) || len(walked) < 10 {
		t.Fatalf("Spans walks %v; Step's span fields are %v", walked, names)
	}
	for _, f := range st.Spans() {
		*f.Span = TTLs(1)
	}
	if st.Strobe.String() != "1ttl" || st.Timeout.String() != "1ttl" || st.Jitter.String() != "1ttl" {
		t.Errorf("setting through Spans did not set the step: %+v", st)
	}
}

// Halving a step's strobe, jitter or trigger timeout — which a shrink now
// does — keeps generated plans valid (a few hundred of each, over every
// topology and mix): the halves stay positive, a strobe shorter than its
// fault, a jitter within its latency.
func TestHalvedSpansStayValid(t *testing.T) {
	t.Parallel()
	halved := map[string]int{}
	for _, tc := range genCases(t) {
		for seed := range racebuild.Sample(tc.seeds, 4) { // a quarter under -race
			p, err := Generate(seed, tc.mix, tc.o)
			if err != nil {
				t.Fatalf("%s seed %d: %v", tc.name, seed, err)
			}
			for i := range p.Steps {
				for k, f := range p.Steps[i].Spans() {
					if !slices.Contains([]string{"strobe", "jitter", "timeout"}, f.Name) || f.Span.IsZero() || halved[f.Name] >= 300 {
						continue
					}
					half := f.Span.Scale(0.5)
					if half.IsZero() {
						continue
					}
					q := p
					q.Steps = slices.Clone(p.Steps)
					*q.Steps[i].Spans()[k].Span = half
					if err := q.Validate(tc.o.Setup); err != nil {
						t.Fatalf("%s seed %d: step %d's %s %s halved to %s: %v", tc.name, seed, i+1, f.Name, f.Span, half, err)
					}
					halved[f.Name]++
				}
			}
		}
	}
	for _, name := range []string{"strobe", "jitter", "timeout"} {
		if halved[name] == 0 {
			t.Errorf("no generated step had a %s to halve", name)
		}
	}
	t.Logf("halved: %v", halved)
}
