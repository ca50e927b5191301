package workloads

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/spans"
)

// Validate checks the options as a workload runs them, against the lock's
// TTL (which relative spans resolve against) and the time limit: the
// fields a Config defaults (mode, acquire and op timeouts, nest) are
// checked with their defaults. Each problem names its field by its JSON
// path within the options ("clients", "latch.count"), as the plan's
// "workload" section does (package internal/field).
func (o Options) Validate(ttl, timeLimit time.Duration) error {
	c := Config{Options: o, TTL: ttl, TimeLimit: timeLimit}.withDefaults()
	return c.validateOptions()
}

// Validate reports every problem with c (after defaults), naming each.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(path, format string, a ...any) { errs = append(errs, field.Errorf(path, format, a...)) }
	if c.Lock.Builder == "" {
		bad("lock.builder", "%v is missing: name a builder registered with workloads.RegisterBuilder", field.Self)
	} else if lookupBuilder(c.Lock.Builder) == nil {
		bad("lock.builder", "%v %q is not registered (registered: %v)", field.Self, c.Lock.Builder, builderNames())
	}
	if n := len(c.Lock.PerClient); n != 0 && n != c.Clients {
		bad("lock.per_client", "%v has %d specs for %d clients", field.Self, n, c.Clients)
	}
	if c.TimeLimit <= 0 {
		bad("time_limit", "%v (every workload is bounded in time) = %v, want > 0", field.Self, c.TimeLimit)
	}
	if c.TTL < 0 {
		bad("ttl", "%v = %v, want ≥ 0", field.Self, c.TTL)
	}
	if err := field.Join(append([]error{c.validateOptions()}, errs...)...); err != nil {
		return fmt.Errorf("workload config: %w", err)
	}
	return nil
}

// validateOptions checks c's Options (defaults filled in).
func (c Config) validateOptions() error {
	return field.Join(c.validateKind(), c.validateClients(), c.validateLatch(), c.validateTiming(), c.validateCrash())
}

func (c Config) validateKind() error {
	switch c.Kind {
	case Mutex, FencedWrite, Counter, Latch:
	case "":
		return field.Errorf("kind", "%v is missing (want one of %v)", field.Self, kinds)
	default:
		return field.Errorf("kind", "unknown workload kind %q (want one of %v)", c.Kind, kinds)
	}
	switch c.Mode {
	case InProcess, Processes:
	default:
		return field.Errorf("mode", "unknown client mode %q (want %q or %q)", c.Mode, InProcess, Processes)
	}
	switch c.Retry {
	case "", RetryTry, RetryWait:
	default:
		return field.Errorf("retry", "%v %q unknown (valid: %s, %s)", field.Self, c.Retry, RetryTry, RetryWait)
	}
	return nil
}

// validateClients checks the clients, the keys and what is given per client.
func (c Config) validateClients() error {
	var errs []error
	bad := func(path, format string, a ...any) { errs = append(errs, field.Errorf(path, format, a...)) }
	if c.Clients < 1 || c.Clients > MaxClients {
		bad("clients", "%v = %d, want 1 to %d clients", field.Self, c.Clients, MaxClients)
	}
	if c.Keys < 1 {
		bad("keys", "%v = %d, want at least 1", field.Self, c.Keys)
	}
	if f := c.ReadFraction; f != nil && (*f < 0 || *f > 1) {
		bad("read_fraction", "%v = %v, want in [0, 1]", field.Self, *f)
	}
	if n := len(c.ClientReadFraction); n > 0 && n != c.Clients {
		bad("client_read_fraction", "%v has %d fractions for %d clients", field.Self, n, c.Clients)
	}
	for i, f := range c.ClientReadFraction {
		if f < 0 || f > 1 {
			bad(fmt.Sprintf("client_read_fraction[%d]", i), "%v = %v, want in [0, 1]", field.Self, f)
		}
	}
	if n := len(c.ClientStart); n > 0 && n != c.Clients {
		bad("client_start", "%v has %d starts for %d clients", field.Self, n, c.Clients)
	}
	for i, d := range c.ClientStart {
		if at := c.span(d); at < 0 || c.TimeLimit > 0 && at >= c.TimeLimit {
			bad(fmt.Sprintf("client_start[%d]", i), "%v = %v, want ≥ 0 and before the time limit %v", field.Self, at, c.TimeLimit)
		}
	}
	if c.Nest < 1 || c.Nest > maxNest {
		bad("nest", "%v = %d, want 1..%d nested acquires", field.Self, c.Nest, maxNest)
	}
	if c.Rate < 0 {
		bad("rate", "%v = %v ops/s, want ≥ 0", field.Self, c.Rate)
	}
	if c.MaxOps < 0 {
		bad("max_ops", "%v = %d, want ≥ 0", field.Self, c.MaxOps)
	}
	return field.Join(errs...)
}

func (c Config) validateLatch() error {
	l := c.Latch
	switch {
	case c.Kind == Latch && l == nil:
		return field.Errorf("latch", "the latch workload needs %v: {count, counters, round}", field.Self)
	case c.Kind != Latch && l != nil:
		return field.Errorf("latch", "%v applies only to the latch workload, not %q", field.Self, c.Kind)
	case l == nil:
		return nil
	}
	var errs []error
	if l.Count < 1 {
		errs = append(errs, field.Errorf("latch.count", "%v = %d, want ≥ 1", field.Self, l.Count))
	}
	if l.Counters < 1 || l.Counters >= c.Clients {
		errs = append(errs, field.Errorf("latch.counters", "%v = %d, want 1..%d (at least one client must wait)", field.Self, l.Counters, c.Clients-1))
	}
	if round := c.span(l.Round); round <= 0 {
		errs = append(errs, field.Errorf("latch.round", "%v = %v, want > 0", field.Self, round))
	} else if _, hi := c.hold().Durations(); hi > round*6/10 {
		errs = append(errs, field.Errorf("hold", "%v max %v is over 0.6 of %v %v: count-downs must end well inside their round",
			field.Self, hi, field.Ref("latch.round"), round))
	}
	return field.Join(errs...)
}

// validateTiming checks the spans and ranges.
func (c Config) validateTiming() error {
	var errs []error
	bad := func(path, format string, a ...any) { errs = append(errs, field.Errorf(path, format, a...)) }
	for name, d := range map[string]spans.Span{"retry_delay": c.RetryDelay, "retry_jitter": c.RetryJitter, "restart_delay": c.RestartDelay} {
		if c.span(d) < 0 {
			bad(name, "%v = %v, want ≥ 0", field.Self, c.span(d))
		}
	}
	for name, d := range map[string]spans.Span{"acquire_timeout": c.AcquireTimeout, "op_timeout": c.OpTimeout} {
		if c.span(d) <= 0 {
			bad(name, "%v = %v, want > 0", field.Self, c.span(d))
		}
	}
	if d := c.span(c.ExtendEvery); d < 0 {
		bad("extend_every", "%v = %v, want ≥ 0 (0: the client does not extend)", field.Self, d)
	}
	if c.TTL <= 0 {
		rel := c.relativeSpans()
		for _, name := range slices.Sorted(maps.Keys(rel)) {
			bad(name, "%v %s is relative to the lock's TTL, but the config has no ttl", field.Self, rel[name])
		}
	}
	for name, r := range map[string]spans.Range{"hold": c.Hold, "think": c.Think} {
		if err := r.Validate(c.TTL); err != nil {
			bad(name, "%v %w", field.Self, err)
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return field.Join(errs...)
}

func (c Config) validateCrash() error {
	if c.Crash == nil {
		return nil
	}
	var errs []error
	if c.Crash.Step == "" {
		errs = append(errs, field.Errorf("crash.step", "%v is empty", field.Self))
	}
	if !(c.Crash.Probability > 0 && c.Crash.Probability <= 1) {
		errs = append(errs, field.Errorf("crash.probability", "%v = %v, want in (0, 1]", field.Self, c.Crash.Probability))
	}
	if c.Crash.Limit < 0 {
		errs = append(errs, field.Errorf("crash.limit", "%v = %d, want ≥ 0", field.Self, c.Crash.Limit))
	}
	return field.Join(errs...)
}
