package workloads

import (
	"sync/atomic"
	"time"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// WallClock is a client's wall clock: the host's clock plus an offset and
// a drift (a clock running at a rate, clockshim.Drift) the nemesis changes
// while the run goes on. Only the timestamp recipes read it
// (lock.Options.WallClock), and a lock client program's clock follows it;
// the history never does.
type WallClock struct {
	offset atomic.Int64
	drift  atomic.Pointer[clockshim.Drift]
}

// Now is the host's time shifted by the current offset and drift.
func (c *WallClock) Now() time.Time {
	now := time.Now()
	if d := c.drift.Load(); d != nil {
		return now.Add(c.Offset() + d.At(clockshim.Mono()))
	}
	return now.Add(c.Offset())
}

// Offset is the current offset.
func (c *WallClock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// SetOffset sets the offset (positive: the client's clock runs ahead).
func (c *WallClock) SetOffset(d time.Duration) { c.offset.Store(int64(d)) }

// Drift is the current drift (the zero Drift: none).
func (c *WallClock) Drift() clockshim.Drift {
	if d := c.drift.Load(); d != nil {
		return *d
	}
	return clockshim.Drift{}
}

// SetDrift makes the clock drift by d besides its offset (the zero Drift
// stops it).
func (c *WallClock) SetDrift(d clockshim.Drift) {
	if d.IsZero() {
		c.drift.Store(nil)
		return
	}
	c.drift.Store(&d)
}
