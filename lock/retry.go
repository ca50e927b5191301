package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tumbler-dev/tumbler/internal/wait"
)

// Strategy decides how Acquire behaves when the lock is held by someone else.
type Strategy struct {
	// Attempts is the most acquire attempts; 0 means until ctx is done.
	Attempts int `json:"attempts"`
	// Delay between attempts, plus a uniform random share of Jitter so that
	// contending clients do not retry in lockstep (Redlock's advice).
	Delay  time.Duration `json:"delay"`
	Jitter time.Duration `json:"jitter"`
}

// TryOnce makes one attempt.
func TryOnce() Strategy { return Strategy{Attempts: 1} }

// Wait retries every delay plus up to jitter until ctx is done.
func Wait(delay, jitter time.Duration) Strategy {
	return Strategy{Delay: delay, Jitter: jitter}
}

// Retry runs attempt following s. It retries only on ErrNotObtained: after
// ErrUnknown the caller may hold the lock, so retrying would hide that.
// When ctx ends between attempts the last ErrNotObtained is returned,
// wrapped with the context's error.
func Retry(ctx context.Context, s Strategy, attempt func(context.Context) (Lease, error)) (Lease, error) {
	for n := 1; ; n++ {
		l, err := attempt(ctx)
		if err == nil || !errors.Is(err, ErrNotObtained) {
			return l, err
		}
		if s.Attempts > 0 && n >= s.Attempts {
			return Lease{}, err
		}
		d := s.Delay
		if s.Jitter > 0 {
			d += rand.N(s.Jitter)
		}
		if werr := wait.For(ctx, d); werr != nil {
			return Lease{}, fmt.Errorf("%w (gave up after %d attempts: %w)", err, n, werr)
		}
	}
}
