package workloads

import (
	"sync/atomic"
	"time"
)

// WallClock is a client's wall clock: the host's clock plus an offset the
// nemesis changes while the run goes on. Only the timestamp recipes read it
// (lock.Options.WallClock); the history never does.
type WallClock struct{ offset atomic.Int64 }

// Now is the host's time shifted by the current offset.
func (c *WallClock) Now() time.Time { return time.Now().Add(c.Offset()) }

// Offset is the current offset.
func (c *WallClock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// SetOffset sets the offset (positive: the client's clock runs ahead).
func (c *WallClock) SetOffset(d time.Duration) { c.offset.Store(int64(d)) }
