package spans

import (
	"slices"
	"testing"
	"time"
)

type inner struct {
	Lag Span `json:"lag,omitzero"`
}

type walked struct {
	At    Span `json:"at"`
	Count int  `json:"count"`
	inner
	Named   inner   `json:"named"`
	Ptr     *Span   `json:"ptr,omitempty"`
	List    []Span  `json:"list,omitempty"`
	Hold    Range   `json:"hold"`
	Skipped Span    `json:"-"`
	Bare    Span    // no tag: its Go name, as encoding/json writes it
	private Span    // unexported: not part of the value's JSON
	Offset  Span    `json:"offset,omitzero"`
	Ratio   float64 `json:"ratio"`
}

// Fields walks the spans of a value in field order with their JSON names,
// embedded structs flattened, nothing else; setting a field through it
// sets the value's.
func TestFields(t *testing.T) {
	v := walked{At: Fixed(time.Second), Offset: TTLs(-2), Named: inner{Lag: TTLs(1)}, private: Fixed(time.Second)}
	v.Lag = TTLs(0.1)
	var names []string
	for _, f := range Fields(&v) {
		names = append(names, f.Name)
	}
	if want := []string{"at", "lag", "Bare", "offset"}; !slices.Equal(names, want) {
		t.Fatalf("fields %v, want %v", names, want)
	}
	for _, f := range Fields(&v) {
		*f.Span = f.Span.Scale(0.5)
	}
	if v.At.String() != "500ms" || v.Lag.String() != "0.05ttl" || v.Offset.String() != "-1ttl" || !v.Bare.IsZero() {
		t.Errorf("after halving through Fields: at %s lag %s offset %s bare %s", v.At, v.Lag, v.Offset, v.Bare)
	}
	if v.private.String() != "1s" || v.Named.Lag.String() != "1ttl" {
		t.Error("a field outside the walk changed")
	}
	defer func() {
		if recover() == nil {
			t.Error("Fields of a struct value (not a pointer) did not panic")
		}
	}()
	Fields(v)
}
