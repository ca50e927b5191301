package history_test

import (
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// TestNoExpiry: lock.NoExpiry's ValidUntil, on a run's clock, is no expiry
// wherever in a long run the lease was granted, and a validity a run can
// reach is not.
func TestNoExpiry(t *testing.T) {
	c := history.NewClock()
	for _, granted := range []time.Duration{0, time.Second, 24 * time.Hour} {
		start := c.Time(int64(granted))
		vu := c.Of(lock.NoExpiry(start))
		if !history.NoExpiry(vu) {
			t.Errorf("lock.NoExpiry of a lease granted %v into the run: ValidUntil %d is not no expiry", granted, vu)
		}
		if got := history.ValidUntilText(vu); got != history.NoExpiryText {
			t.Errorf("ValidUntilText(lock.NoExpiry) = %q, want %q", got, history.NoExpiryText)
		}
	}
	for _, vu := range []time.Duration{0, 4210 * time.Millisecond, 30 * 24 * time.Hour} {
		if history.NoExpiry(int64(vu)) {
			t.Errorf("NoExpiry(%v) = true: a validity a run can reach", vu)
		}
	}
	if got := history.ValidUntilText(int64(4210 * time.Millisecond)); got != "valid until 4.210 s" {
		t.Errorf("ValidUntilText(4.21 s) = %q", got)
	}
}
