package history

import (
	"fmt"
	"time"
)

// NoExpiryAfter is the one threshold of a lease that never expires: a
// ValidUntil (ns since the run's start) this far past the start is no
// validity end a run can reach but lock.NoExpiry's, set 100 years after the
// grant — the ValidUntil of a lease whose library exposes no validity (its
// caller holds the lock until it releases it: a lock client program that
// sends no valid_until_ns) or that never expires (a plain RSemaphore
// permit). No run lasts a year.
const NoExpiryAfter = int64(365 * 24 * time.Hour)

// NoExpiry reports whether vu, a ValidUntil, is no expiry.
func NoExpiry(vu int64) bool { return vu >= NoExpiryAfter }

// NoExpiryText is how reports name a validity that is no expiry.
const NoExpiryText = "no expiry (the library exposes none)"

// ValidUntilText says a lease's validity end, as reports and the checkers'
// explanations put it: "valid until 4.210 s", or NoExpiryText.
func ValidUntilText(vu int64) string {
	if NoExpiry(vu) {
		return NoExpiryText
	}
	return fmt.Sprintf("valid until %.3f s", Seconds(vu))
}
