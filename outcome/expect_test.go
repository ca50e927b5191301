package outcome

import (
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
)

func TestExpectationValidate(t *testing.T) {
	for _, good := range []Expectation{{Verdict: checker.Valid}, {Verdict: checker.Invalid}, {Verdict: checker.Invalid, Kind: checker.DoubleGrant}, {Verdict: checker.Unknown}} {
		if err := good.Validate(); err != nil {
			t.Errorf("%+v: %v", good, err)
		}
	}
	for _, bad := range []Expectation{{Verdict: "maybe"}, {Verdict: checker.Valid, Kind: checker.DoubleGrant}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validates", bad)
		}
	}
}
