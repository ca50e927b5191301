package nemesis

import (
	"time"

	"github.com/tumbler-dev/tumbler/spans"
)

// Span is a duration in a plan, absolute or relative to the lock TTL; its
// home is package spans (ARCHITECTURE.md, "Time and leases"). The names below keep the
// nemesis's plans and generator short.
type Span = spans.Span

// Fixed is the absolute span d (spans.Fixed).
func Fixed(d time.Duration) Span { return spans.Fixed(d) }

// TTLs is the span x×TTL (spans.TTLs).
func TTLs(x float64) Span { return spans.TTLs(x) }

// ParseSpan reads a span (spans.ParseSpan).
func ParseSpan(s string) (Span, error) { return spans.ParseSpan(s) }
