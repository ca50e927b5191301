package outcome

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
)

// TestErrorCode: bad input, wrapped or marked, is 254, anything else 255;
// marking keeps the message.
func TestErrorCode(t *testing.T) {
	access := errors.New("WRONGPASS invalid username-password pair")
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, ExitValid},
		{fmt.Errorf("%w: not a run directory", ErrInput), ExitBadInput},
		{Input(access), ExitBadInput},
		{fmt.Errorf("audit: %w", Input(access)), ExitBadInput},
		{errors.New("redis-server: not found"), ExitHarness},
	} {
		if got := ErrorCode(tc.err); got != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.code)
		}
	}
	if m := Input(access); m.Error() != access.Error() || !errors.Is(m, access) {
		t.Errorf("Input changed the error: %q", m)
	}
	if Input(nil) != nil {
		t.Error("Input(nil) is an error")
	}
}

// TestCommandCodes: which code each command returns, from what it knows.
func TestCommandCodes(t *testing.T) {
	harness := errors.New("redis-server exited")
	bad := fmt.Errorf("%w: --seeds", ErrInput)
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"run valid", RunCode(checker.Valid, false, nil), ExitValid},
		{"run valid, interrupted", RunCode(checker.Valid, true, nil), ExitUnknown},
		{"run invalid, interrupted", RunCode(checker.Invalid, true, nil), ExitInvalid},
		{"run unknown", RunCode(checker.Unknown, false, nil), ExitUnknown},
		{"run failed", RunCode(checker.Invalid, false, harness), ExitHarness},
		{"run of bad input", RunCode(checker.Unknown, false, bad), ExitBadInput},
		{"run, no verdict", RunCode("", false, nil), ExitHarness},
		{"reproduce: a mismatch", MatchCode(true, true), ExitInvalid},
		{"reproduce: a run failed", MatchCode(false, true), ExitHarness},
		{"reproduce: all matched", MatchCode(false, false), ExitValid},
		{"hunt found", HuntCode(true, true, true), ExitInvalid},
		{"hunt: harness failed", HuntCode(false, true, true), ExitHarness},
		{"hunt: unsure", HuntCode(false, false, true), ExitUnknown},
		{"hunt: nothing", HuntCode(false, false, false), ExitValid},
		{"shrink interrupted", ShrinkCode(true, true, harness), ExitUnknown},
		{"shrink failed", ShrinkCode(false, false, harness), ExitHarness},
		{"shrink of bad input", ShrinkCode(false, false, bad), ExitBadInput},
		{"shrink reproduced", ShrinkCode(true, false, nil), ExitInvalid},
		{"shrink: stored plan did not fail", ShrinkCode(false, false, nil), ExitValid},
		{"audit risky", FindingCode(true, nil), ExitInvalid},
		{"audit refused access", FindingCode(false, Input(errors.New("NOAUTH"))), ExitBadInput},
		{"audit failed", FindingCode(true, harness), ExitHarness},
		{"conform passed", FindingCode(false, nil), ExitValid},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}
