// Package spans holds the durations of a plan (ARCHITECTURE.md, "Time and leases"): a Span
// is absolute ("750ms") or a multiple of the lock's TTL ("0.5ttl") and is
// written back as it was read; a Range is a closed interval of spans
// ("hold": ["0.5ttl", "0.8ttl"]) a value is drawn from uniformly. The plan,
// the nemesis schedule, the lock options (lock/variants) and the workload
// options all use these types; SpanFlag and RangeFlag bind a command-line
// flag to one (ParseRange reads a range as a flag writes it, "MIN,MAX").
// Fields is the one walk over the spans of a value (a fault step, a lock's
// options), each with its JSON name, so that no list of a type's spans is
// kept by hand.
package spans

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Span is a duration in a plan: either absolute ("750ms", "1.5s", "-2s") or
// relative to the plan's lock TTL ("0.5ttl", "2ttl", "-1ttl"). It is written
// back to JSON exactly as it was read, so a generated plan that says "0.5ttl"
// still says so after an edit and a save, and Resolve turns it into the
// same duration on every replay. The zero Span is "0".
type Span struct {
	text string // as read, "" when built in code
	d    time.Duration
	ttls float64
	rel  bool
}

// Fixed is the absolute span d.
func Fixed(d time.Duration) Span { return Span{d: d} }

// TTLs is the span x×TTL.
func TTLs(x float64) Span { return Span{ttls: x, rel: true} }

// ParseSpan reads "750ms", "1.5s", "-2s" (Go duration syntax) or "0.5ttl".
func ParseSpan(s string) (Span, error) {
	t := strings.TrimSpace(s)
	if num, ok := strings.CutSuffix(t, "ttl"); ok {
		x, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > 1e6 {
			return Span{}, fmt.Errorf("span %q: want a number before \"ttl\", like \"0.5ttl\"", s)
		}
		return Span{text: s, ttls: x, rel: true}, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return Span{}, fmt.Errorf("span %q: want a duration like \"750ms\", \"1.5s\" or a multiple of the lock TTL like \"2ttl\"", s)
	}
	return Span{text: s, d: d}, nil
}

// Relative reports whether the span is a multiple of the TTL.
func (s Span) Relative() bool { return s.rel }

// Negative reports whether the span is below zero ("-2s", "-1ttl").
func (s Span) Negative() bool { return s.rel && s.ttls < 0 || !s.rel && s.d < 0 }

// IsZero reports whether the span is zero (absent from a plan).
func (s Span) IsZero() bool { return !s.rel && s.d == 0 || s.rel && s.ttls == 0 }

// Resolve is the duration the span stands for under the lock TTL ttl.
func (s Span) Resolve(ttl time.Duration) time.Duration {
	if !s.rel {
		return s.d
	}
	return time.Duration(math.Round(s.ttls * float64(ttl)))
}

// String is the span as read, or a canonical form for spans built in code.
func (s Span) String() string {
	switch {
	case s.text != "":
		return s.text
	case s.rel:
		return strconv.FormatFloat(s.ttls, 'g', -1, 64) + "ttl"
	default:
		return s.d.String()
	}
}

// MarshalJSON writes the span as a string.
func (s Span) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a string ParseSpan accepts. Bare numbers are refused:
// nanoseconds or seconds would be a guess.
func (s *Span) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("durations in a plan are strings like \"750ms\", \"1.5s\" or \"2ttl\", got %s", b)
	}
	v, err := ParseSpan(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Range is a closed interval [min, max] of spans, written in JSON as a
// two-element array; a value is drawn uniformly from it. The zero Range is
// [0, 0].
type Range [2]Span

// Between is the absolute range [min, max].
func Between(min, max time.Duration) Range { return Range{Fixed(min), Fixed(max)} }

// Min and Max are the ends of the range.
func (r Range) Min() Span { return r[0] }
func (r Range) Max() Span { return r[1] }

// Relative reports whether either end is a multiple of the TTL.
func (r Range) Relative() bool { return r[0].Relative() || r[1].Relative() }

// Resolve is the range under the lock TTL ttl, each end resolved as a
// Span is; the result's ends are absolute.
func (r Range) Resolve(ttl time.Duration) Range {
	return Between(r[0].Resolve(ttl), r[1].Resolve(ttl))
}

// Durations are the ends of an absolute range (relative ends resolve
// against a TTL of 0: resolve the range first).
func (r Range) Durations() (min, max time.Duration) { return r[0].Resolve(0), r[1].Resolve(0) }

// String is "[min, max]".
func (r Range) String() string { return "[" + r[0].String() + ", " + r[1].String() + "]" }

// Scale is the span times f, in the same form (a multiple of the TTL stays
// one), rounded to a hundredth of a TTL or to a millisecond; a shrinker
// uses it to shorten durations and lower magnitudes.
func (s Span) Scale(f float64) Span {
	if s.rel {
		return TTLs(math.Round(s.ttls*f*100) / 100)
	}
	return Fixed(time.Duration(math.Round(float64(s.d)*f/float64(time.Millisecond))) * time.Millisecond)
}

// ParseRange reads a range as the command line writes it: "MIN,MAX", or
// one span for both ends ("250ms", "0.5ttl").
func ParseRange(s string) (Range, error) {
	lo, hi, two := strings.Cut(s, ",")
	if !two {
		hi = lo
	}
	var r Range
	for i, part := range []string{lo, hi} {
		sp, err := ParseSpan(strings.TrimSpace(part))
		if err != nil {
			return Range{}, fmt.Errorf("%q: want MIN,MAX or one span, each like 250ms or 0.5ttl: %w", s, err)
		}
		r[i] = sp
	}
	return r, nil
}

// Validate reports a range whose ends, resolved against ttl, are not
// 0 ≤ min ≤ max.
func (r Range) Validate(ttl time.Duration) error {
	if lo, hi := r.Resolve(ttl).Durations(); lo < 0 || hi < lo {
		return fmt.Errorf("range [%v, %v] is invalid (want 0 ≤ min ≤ max)", lo, hi)
	}
	return nil
}
