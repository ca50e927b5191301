package clockshim

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/sys/unix"
)

// Drift makes a clock run at a rate rather than jump: from Anchor (a
// CLOCK_MONOTONIC reading, Mono) on, the clock gains Slope nanoseconds per
// nanosecond on top of Base, so at monotonic time m it is displaced by
// Base + Slope × (m − Anchor). A clock running at rate r from m0 on is
// Drift{Slope: r − 1, Anchor: m0} (Rate); the zero Drift is none.
type Drift struct {
	Base   time.Duration `json:"base,omitzero"`
	Slope  float64       `json:"slope,omitzero"`
	Anchor int64         `json:"anchor,omitzero"`
}

// Rate is a clock running at rate (1: the host's pace; 1.5 gains half a
// second every second, 0.5 loses it) from the monotonic time since on.
func Rate(rate float64, since int64) Drift { return Drift{Slope: rate - 1, Anchor: since} }

// At is the drift's displacement at monotonic time mono.
func (d Drift) At(mono int64) time.Duration {
	if d.Slope == 0 {
		return d.Base
	}
	return d.Base + time.Duration(math.Round(d.Slope*float64(mono-d.Anchor)))
}

// Plus is the sum of d and e, anchored at mono: a clock under both runs at
// the sum of their slopes and is displaced by the sum of their
// displacements.
func (d Drift) Plus(e Drift, mono int64) Drift {
	return Drift{Base: d.At(mono) + e.At(mono), Slope: d.Slope + e.Slope, Anchor: mono}
}

// IsZero reports whether the drift displaces nothing, ever.
func (d Drift) IsZero() bool { return d.Base == 0 && d.Slope == 0 }

// String is the drift as a person reads it: "rate 1.5 since 12.3s (+0s)".
func (d Drift) String() string {
	return fmt.Sprintf("rate %g since %v (%+v)", 1+d.Slope, time.Duration(d.Anchor), d.Base)
}

// Mono is the host's CLOCK_MONOTONIC now, in nanoseconds: the clock the
// shim reads a drift's anchor against (and the history's, history.Clock).
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("clockshim: CLOCK_MONOTONIC: " + err.Error()) // Linux always has it
	}
	return ts.Nano()
}
