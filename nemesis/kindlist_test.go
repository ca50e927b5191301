package nemesis

import (
	"slices"
	"strings"
	"testing"
)

// A kinds flag takes kinds comma separated and repeated, and names the
// kinds when one is unknown.
func TestKindList(t *testing.T) {
	var l KindList
	for _, v := range []string{"kill, partition", "partition"} {
		if err := l.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(l, KindList{Kill, Partition, Partition}) || l.String() != "kill,partition,partition" {
		t.Errorf("%v", l)
	}
	if err := l.Set("meteor"); err == nil || !strings.Contains(err.Error(), `"meteor"`) || !strings.Contains(err.Error(), "client-pause") {
		t.Errorf("meteor: %v", err)
	}
	if k, err := ParseKind("clock"); err != nil || k != Clock {
		t.Errorf("ParseKind: %q %v", k, err)
	}
}
