package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// Options are the settings every variant shares. Variants embed them in
// their own configuration and add variant-specific fields.
type Options struct {
	// Retry decides how Acquire waits for a held lock.
	Retry Strategy
	// DriftFactor and DriftFixed give the clock-drift allowance subtracted
	// from the TTL: drift = TTL×DriftFactor + DriftFixed. The Redlock
	// reference uses 0.01 and 2 ms; redsync omits the 2 ms.
	DriftFactor float64
	DriftFixed  time.Duration
	// NewValue makes the owner value of a new lease.
	NewValue func() string
	// WallClock is the client's clock as the broken timestamp recipes read
	// it; the nemesis skews it. Correct variants never read it.
	WallClock func() time.Time
	// NodeTimeout bounds one request to one node (Redlock fan-out). Zero
	// lets a variant pick a value small against the TTL.
	NodeTimeout time.Duration
	// Hook, when set, is called between the steps of multi-step recipes
	// (see the step names each recipe documents). An error from it aborts
	// the acquire or release as a crash would.
	Hook StepHook
	// OnRenew, when set, is told about every background renewal (watchdog,
	// timer-renew recipe) so a workload can record it in the history.
	OnRenew func(RenewEvent)
	// OnQueue, when set, is told about a fair lock's waiter at its queue
	// (QueueEvent), so a workload can record the queue order.
	OnQueue func(QueueEvent)
}

// RenewEvent reports one step of a background renewal, as the lock itself
// saw it. Phase is "invoke" before the renewal is sent, then "ok", "fail"
// (definitely not renewed) or "info" (unknown), and "lost" once the lock
// gives the lease up for good.
type RenewEvent struct {
	Phase string
	// Lease is the lease after the step: on "ok" it carries the new
	// ValidUntil; otherwise the lease being renewed.
	Lease Lease
	Err   error
	Time  time.Time
}

// StepGranted is the step every production variant and adapter reports
// once the servers have granted the lock and before the variant decides
// what to return. A client stalled here — a GC pause after the requests went
// out, before the replies were read — is exactly what a validity check
// (Redlock's elapsed-time rule) must catch, and what a client without one
// cannot.
const StepGranted = "granted"

// StepHook observes a recipe between two of its steps. Workloads use it to
// crash or stall a client at exactly the point a seed article warns about.
type StepHook func(ctx context.Context, step string) error

// DefaultOptions are the Redlock reference settings, try-once acquires.
func DefaultOptions() Options {
	return Options{
		Retry:       TryOnce(),
		DriftFactor: 0.01,
		DriftFixed:  2 * time.Millisecond,
		NewValue:    RandomValue,
		WallClock:   time.Now,
	}
}

// LockOptions lets the common options reach an embedding configuration.
func (o *Options) LockOptions() *Options { return o }

// Configurable is a variant's configuration: it embeds Options.
type Configurable interface{ LockOptions() *Options }

// Option configures a lock. The options in this package apply to every
// variant; variant packages add options that refuse other variants with an
// error instead of being silently ignored.
type Option func(Configurable) error

// Apply runs opts against c and returns the first error, wrapped in ErrConfig.
func Apply(c Configurable, opts []Option) error {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	return nil
}

// WithRetry sets the acquire strategy.
func WithRetry(s Strategy) Option {
	return func(c Configurable) error {
		if s.Attempts < 0 || s.Delay < 0 || s.Jitter < 0 {
			return fmt.Errorf("retry strategy %+v has a negative field", s)
		}
		c.LockOptions().Retry = s
		return nil
	}
}

// WithDrift sets the clock-drift allowance (factor of the TTL plus a fixed part).
func WithDrift(factor float64, fixed time.Duration) Option {
	return func(c Configurable) error {
		if factor < 0 || factor >= 1 || fixed < 0 {
			return fmt.Errorf("drift factor %v / fixed %v out of range (0 ≤ factor < 1, fixed ≥ 0)", factor, fixed)
		}
		o := c.LockOptions()
		o.DriftFactor, o.DriftFixed = factor, fixed
		return nil
	}
}

// WithValue fixes the owner value generator (tests, reentrant owner ids).
func WithValue(gen func() string) Option {
	return func(c Configurable) error {
		if gen == nil {
			return fmt.Errorf("nil value generator")
		}
		c.LockOptions().NewValue = gen
		return nil
	}
}

// WithWallClock injects the client's wall clock for the timestamp recipes.
func WithWallClock(now func() time.Time) Option {
	return func(c Configurable) error {
		if now == nil {
			return fmt.Errorf("nil wall clock")
		}
		c.LockOptions().WallClock = now
		return nil
	}
}

// WithNodeTimeout bounds each request to one node.
func WithNodeTimeout(d time.Duration) Option {
	return func(c Configurable) error {
		if d <= 0 {
			return fmt.Errorf("node timeout %v must be positive", d)
		}
		c.LockOptions().NodeTimeout = d
		return nil
	}
}

// WithHook installs a StepHook.
func WithHook(h StepHook) Option {
	return func(c Configurable) error {
		c.LockOptions().Hook = h
		return nil
	}
}

// WithRenewObserver installs an OnRenew callback. It must not block.
func WithRenewObserver(f func(RenewEvent)) Option {
	return func(c Configurable) error {
		c.LockOptions().OnRenew = f
		return nil
	}
}

// Renewed calls OnRenew if one is installed.
func (o *Options) Renewed(ev RenewEvent) {
	if o.OnRenew != nil {
		o.OnRenew(ev)
	}
}

// Step calls the hook if one is installed.
func (o *Options) Step(ctx context.Context, step string) error {
	if o.Hook == nil {
		return nil
	}
	return o.Hook(ctx, step)
}

// ValidUntil is start + ttl − drift, the last instant a holder may act.
func (o *Options) ValidUntil(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl - o.Drift(ttl))
}

// Drift is the clock-drift allowance for ttl.
func (o *Options) Drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*o.DriftFactor) + o.DriftFixed
}

// RandomValue returns 16 random bytes, hex encoded: an owner value no other
// client will pick.
func RandomValue() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux (Go ≥1.24 panics instead)
	return hex.EncodeToString(b[:])
}

// CheckKeyTTL validates the arguments every constructor takes.
func CheckKeyTTL(key string, ttl time.Duration) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrConfig)
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: TTL %v must be positive", ErrConfig, ttl)
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: TTL %v is below Redis's 1 ms resolution", ErrConfig, ttl)
	}
	return nil
}
