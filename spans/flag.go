package spans

import "strings"

// SpanFlag is a command-line flag's value (a pflag.Value) that sets *S to
// a span as ParseSpan reads it: "750ms", "0.5ttl". A zero span it was not
// given prints as "", so a flag whose default is left to the plan shows
// none.
type SpanFlag struct{ S *Span }

// String is the span as given, "" for a zero span built in code.
func (f SpanFlag) String() string {
	if f.S == nil || f.S.IsZero() && f.S.text == "" {
		return ""
	}
	return f.S.String()
}

// Set parses v into *S.
func (f SpanFlag) Set(v string) error {
	s, err := ParseSpan(v)
	if err != nil {
		return err
	}
	*f.S = s
	return nil
}

// Type names the value in help.
func (SpanFlag) Type() string { return "duration" }

// IsZero reports whether *S is zero.
func (f SpanFlag) IsZero() bool { return f.S.IsZero() }

// RangeFlag is a command-line flag's value (a pflag.Value) that sets *R
// to a range as ParseRange reads it: "MIN,MAX" or one span for both ends.
type RangeFlag struct{ R *Range }

// String is "MIN,MAX", "" for the zero range built in code.
func (f RangeFlag) String() string {
	if f.R == nil || *f.R == (Range{}) {
		return ""
	}
	return strings.Join([]string{f.R[0].String(), f.R[1].String()}, ",")
}

// Set parses v into *R.
func (f RangeFlag) Set(v string) error {
	r, err := ParseRange(v)
	if err != nil {
		return err
	}
	*f.R = r
	return nil
}

// Type names the value in help.
func (RangeFlag) Type() string { return "range" }
