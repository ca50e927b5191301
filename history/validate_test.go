package history

import (
	"strings"
	"testing"
)

// TestValidateHeld: only a failed acquire may say it was refused as held.
func TestValidateHeld(t *testing.T) {
	base := Op{Process: 1, Client: 1, F: Acquire, Key: "k", Time: 5, Held: true}
	for _, tc := range []struct {
		typ  Type
		f    string
		want string
	}{
		{Fail, Acquire, ""},
		{OK, Acquire, `"held" on a ok acquire`},
		{Info, Acquire, `"held" on a info acquire`},
		{Fail, Release, `"held" on a fail release`},
	} {
		op := base
		op.Type, op.F = tc.typ, tc.f
		err := op.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s: %v", tc.typ, tc.f, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %s: got %v, want %q", tc.typ, tc.f, err, tc.want)
		}
	}
}
