// Package wait sleeps in a way a context can cut short.
package wait

import (
	"context"
	"time"
)

// For sleeps d, or until ctx ends, and returns ctx.Err() in that case. A d of
// zero or less returns at once (with ctx.Err()).
func For(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
