package spans

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSpan(t *testing.T) {
	ttl := 800 * time.Millisecond
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"750ms", 750 * time.Millisecond},
		{"1.5s", 1500 * time.Millisecond},
		{"-2s", -2 * time.Second},
		{"0", 0},
		{"2ttl", 1600 * time.Millisecond},
		{"0.5ttl", 400 * time.Millisecond},
		{"-1ttl", -800 * time.Millisecond},
		{" 0.1 ttl", 80 * time.Millisecond},
	} {
		s, err := ParseSpan(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := s.Resolve(ttl); got != tc.want {
			t.Errorf("%q resolves to %v, want %v", tc.in, got, tc.want)
		}
		if s.Negative() != (tc.want < 0) {
			t.Errorf("%q: negative %v", tc.in, s.Negative())
		}
		b, _ := json.Marshal(s)
		if string(b) != `"`+tc.in+`"` {
			t.Errorf("%q marshals as %s: not as read", tc.in, b)
		}
	}
	for _, bad := range []string{"", "2", "ttl", "xttl", "NaNttl", "1e9ttl", "5 seconds"} {
		if _, err := ParseSpan(bad); err == nil {
			t.Errorf("ParseSpan(%q) accepted", bad)
		}
	}
	var s Span
	if err := json.Unmarshal([]byte(`1000`), &s); err == nil || !strings.Contains(err.Error(), "strings like") {
		t.Errorf("a bare number: %v", err)
	}
	if TTLs(0.5).String() != "0.5ttl" || Fixed(1500*time.Millisecond).String() != "1.5s" {
		t.Errorf("canonical forms: %s, %s", TTLs(0.5), Fixed(1500*time.Millisecond))
	}
	if !(Span{}).IsZero() || TTLs(1).IsZero() || !TTLs(0).IsZero() {
		t.Error("IsZero")
	}
}

func TestRange(t *testing.T) {
	var r Range
	if err := json.Unmarshal([]byte(`["0.5ttl", "300ms"]`), &r); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(r); string(b) != `["0.5ttl","300ms"]` {
		t.Errorf("a range marshals as %s: not as read", b)
	}
	if !r.Relative() || r.Min().String() != "0.5ttl" || r.Max().String() != "300ms" {
		t.Errorf("range %s: ends or Relative wrong", r)
	}
	res := r.Resolve(time.Second)
	if res.Relative() {
		t.Errorf("resolved range %s is relative", res)
	}
	if lo, hi := res.Durations(); lo != 500*time.Millisecond || hi != 300*time.Millisecond {
		t.Errorf("resolved to %v, %v", lo, hi)
	}
	var back Range
	b, _ := json.Marshal(Between(time.Millisecond, 1500*time.Millisecond+7))
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if lo, hi := back.Durations(); lo != time.Millisecond || hi != 1500*time.Millisecond+7 {
		t.Errorf("an absolute range written as %s reads back as %v, %v", b, lo, hi)
	}
	if err := json.Unmarshal([]byte(`{"min": 1, "max": 2}`), &r); err == nil {
		t.Error("a range as an object was accepted")
	}
}

func TestSpanScale(t *testing.T) {
	for _, c := range []struct {
		in   string
		f    float64
		want string
	}{
		{"2ttl", 0.5, "1ttl"},
		{"0.33ttl", 0.5, "0.17ttl"},
		{"-1.5ttl", 0.5, "-0.75ttl"},
		{"3s", 0.5, "1.5s"},
		{"750ms", 0.5, "375ms"},
		{"1ms", 0.5, "1ms"},
	} {
		s, err := ParseSpan(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Scale(c.f).String(); got != c.want {
			t.Errorf("%s × %v = %s, want %s", c.in, c.f, got, c.want)
		}
	}
}
