package history

import (
	"time"

	"golang.org/x/sys/unix"
)

// Monotonic returns the raw CLOCK_MONOTONIC reading in nanoseconds. It is
// system-wide, so worker processes and the harness agree on it.
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // cannot fail on Linux
	}
	return ts.Nano()
}

// Clock maps instants to the history's time base: nanoseconds since the run
// started, on CLOCK_MONOTONIC. A Clock is immutable and safe to share.
type Clock struct {
	start int64     // raw CLOCK_MONOTONIC at run start
	raw0  int64     // raw CLOCK_MONOTONIC when this Clock was made …
	t0    time.Time // … and Go's time at the same instant (with monotonic reading)
}

// NewClock starts a run's clock now.
func NewClock() *Clock { return ClockFrom(Monotonic()) }

// ClockFrom makes a clock for a run that started at the raw CLOCK_MONOTONIC
// reading start (a worker process is told it by the harness).
func ClockFrom(start int64) *Clock {
	t0 := time.Now()
	return &Clock{start: start, raw0: Monotonic(), t0: t0}
}

// Start is the raw CLOCK_MONOTONIC reading at which the run started.
func (c *Clock) Start() int64 { return c.start }

// Now is the current time in ns since the run started.
func (c *Clock) Now() int64 { return Monotonic() - c.start }

// Of converts a Go time taken in this process (with its monotonic reading,
// as time.Now returns) to ns since the run started. The zero time maps to 0.
func (c *Clock) Of(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return c.raw0 + int64(t.Sub(c.t0)) - c.start
}

// Time converts ns since the run started back to a Go time in this process.
func (c *Clock) Time(ns int64) time.Time {
	return c.t0.Add(time.Duration(ns + c.start - c.raw0))
}

// Seconds renders ns since run start as seconds for humans ("4.21 s").
func Seconds(ns int64) float64 { return float64(ns) / 1e9 }
