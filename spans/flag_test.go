package spans

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseRange(t *testing.T) {
	for in, want := range map[string][2]time.Duration{
		"0.1ttl,0.4ttl": {100 * time.Millisecond, 400 * time.Millisecond},
		"50ms":          {50 * time.Millisecond, 50 * time.Millisecond},
		" 0 , 1s ":      {0, time.Second},
	} {
		r, err := ParseRange(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if lo, hi := r.Resolve(time.Second).Durations(); lo != want[0] || hi != want[1] {
			t.Errorf("%q: [%v, %v], want %v", in, lo, hi, want)
		}
	}
	for _, bad := range []string{"", "1s,x", "soon", "1s,2s,3s"} {
		if _, err := ParseRange(bad); err == nil || !strings.Contains(err.Error(), "MIN,MAX") {
			t.Errorf("ParseRange(%q) = %v, want an error saying the form", bad, err)
		}
	}
}

func TestRangeValidate(t *testing.T) {
	if err := (Range{TTLs(0.2), TTLs(0.4)}).Validate(time.Second); err != nil {
		t.Errorf("a valid range: %v", err)
	}
	for _, r := range []Range{{TTLs(0.4), TTLs(0.2)}, Between(-time.Second, 0)} {
		if err := r.Validate(time.Second); err == nil || !strings.Contains(err.Error(), "is invalid") {
			t.Errorf("%v: %v, want it refused", r, err)
		}
	}
}

// The flag values set the span or range they point to, show a default
// only when it is not the zero one, and refuse what does not parse.
func TestFlagValues(t *testing.T) {
	var ttl, unset Span
	hold := Range{TTLs(0.1), TTLs(0.4)}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.Var(SpanFlag{&ttl}, "ttl", "lock TTL")
	fs.Var(SpanFlag{&unset}, "unset", "left out")
	fs.Var(RangeFlag{&hold}, "hold", "hold")
	if d := fs.Lookup("ttl").DefValue; d != "" {
		t.Errorf("a zero span's default shows as %q", d)
	}
	if d := fs.Lookup("hold").DefValue; d != "0.1ttl,0.4ttl" {
		t.Errorf("hold's default shows as %q", d)
	}
	if err := fs.Parse([]string{"--ttl", "0.5ttl", "--hold", "50ms"}); err != nil {
		t.Fatal(err)
	}
	if ttl.String() != "0.5ttl" || hold[0].String() != "50ms" || hold[1].String() != "50ms" {
		t.Errorf("parsed ttl %v, hold %v", ttl, hold)
	}
	if !(SpanFlag{&unset}).IsZero() || (SpanFlag{&ttl}).IsZero() {
		t.Error("IsZero")
	}
	if err := fs.Parse([]string{"--ttl", "soon"}); err == nil || !strings.Contains(err.Error(), "--ttl") {
		t.Errorf("--ttl soon: %v", err)
	}
	if err := fs.Parse([]string{"--hold", "1s,x"}); err == nil || !strings.Contains(err.Error(), "--hold") {
		t.Errorf("--hold 1s,x: %v", err)
	}
}
