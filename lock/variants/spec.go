package variants

import (
	"fmt"
	"slices"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/adapters"
	"github.com/tumbler-dev/tumbler/lock/fair"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/single"
	"github.com/tumbler-dev/tumbler/spans"
)

// Options are a lock's settings, declared once: a plan's "lock" section
// embeds them (runner.LockPlan), so their JSON names are the plan's, and a
// Spec carries them to the client that builds the lock. Durations are
// spans.Span: absolute ("50ms") or a multiple of the TTL ("0.05ttl"),
// resolved against the Spec's TTL when the lock is built (or against
// another TTL first, with Resolve).
type Options struct {
	// Variant is one of Names().
	Variant string `json:"variant"`
	// Inner is the variant a wrapper (a watchdog) wraps (default
	// DefaultInner, "single").
	Inner string `json:"inner,omitempty"`
	// WaitReplicas > 0 makes the lock WAIT for that many replicas within
	// WaitTimeout after acquiring (Redisson's checkLockSyncedSlaves; the
	// variants that accept OptWaitReplicas: single, fenced).
	WaitReplicas int        `json:"wait_replicas,omitempty"`
	WaitTimeout  spans.Span `json:"wait_timeout,omitzero"`
	// NodeTimeout bounds one request to one node (redlock, redsync).
	NodeTimeout spans.Span `json:"node_timeout,omitzero"`
	// DriftFactor overrides the clock-drift allowance's factor when set,
	// in [0, 1) (lock.WithDrift; default lock.DefaultOptions().DriftFactor).
	DriftFactor *float64 `json:"drift_factor,omitempty"`
	// SetNXOnExtend turns on redsync's WithSetNXOnExtend (redsync #147).
	SetNXOnExtend bool `json:"setnx_on_extend,omitempty"`
	// Permits a semaphore is set up with (semaphore kinds only, ≥ 1; a
	// plan's default is 2).
	Permits int `json:"permits,omitempty"`
	// ThreadWaitTime is the fair lock's threadWaitTime (0: Redisson's 5 s).
	ThreadWaitTime spans.Span `json:"thread_wait_time,omitzero"`
	// Client is the lock client program of variant "client": a real lock
	// library, in any language, driven over the lock client protocol
	// (clients/PROTOCOL.md).
	Client *protocol.Program `json:"client,omitempty"`
	// Tokens are the owner values the clients choose, by client number,
	// for a lock whose caller chooses its own (redislock-token, as
	// bsm/redislock's Options.Token): client i passes Tokens[i] to every
	// acquire. Unset, each client draws a random one. A client's Spec
	// carries its own as Token.
	Tokens []string `json:"tokens,omitempty"`
	// RedisRetries is how many times the lock's Redis clients send a
	// command again after a network error or a timeout: go-redis's
	// MaxRetries, whose default users keep is 3 (and so redsync's and
	// redislock's clients). 0, tumbler's default, never does: a lost
	// reply is an unknown outcome. With retries a SET NX whose reply was
	// lost is sent again and answered "not set" by its own first attempt
	// (Redisson #7367). For the locks built here, not a lock client
	// program (whose library retries as its options say), at most
	// MaxRedisRetries.
	RedisRetries int `json:"redis_retries,omitempty"`
}

// MaxRedisRetries bounds Options.RedisRetries.
const MaxRedisRetries = 10

// Resolve is o with every relative span resolved against ttl: a client
// whose lease is not the plan's TTL keeps the durations the plan meant.
func (o Options) Resolve(ttl time.Duration) Options {
	for _, f := range spans.Fields(&o) {
		*f.Span = spans.Fixed(f.Span.Resolve(ttl))
	}
	return o
}

// Spec is a lock described as data, as it travels to the client that
// builds it (in the harness or in a worker process): its Options and its
// TTL, against which relative spans of the Options resolve.
type Spec struct {
	Options
	TTL time.Duration `json:"ttl"`
	// Token is this client's own owner value (Options.Tokens[i]; not a
	// plan field: the run sets it per client), "" for a random one.
	Token string `json:"token,omitempty"`
	// DriftFixed overrides the fixed part of the clock-drift allowance
	// when set (not a plan field: plans set drift_factor only).
	DriftFixed *time.Duration `json:"drift_fixed,omitempty"`
}

// span is d under the spec's TTL.
func (s Spec) span(d spans.Span) time.Duration { return d.Resolve(s.TTL) }

// Validate checks s without building anything. What applies to the lock
// is what its variant declares (Info): a wrapper's inner variant, the
// settings only some variants take, permits for a semaphore. Each problem
// names its field by its JSON path within the options ("drift_factor"),
// as the plan's "lock" section does (package internal/field).
func (s Spec) Validate() error {
	info, err := Lookup(s.Variant)
	if err != nil {
		return field.Errorf("variant", "%w", err)
	}
	if s.TTL <= 0 {
		return field.Errorf("ttl", "%v %v must be positive", field.Self, s.TTL)
	}
	if info.WholeSeconds && s.TTL%time.Second != 0 {
		return field.Errorf("ttl", "%v %v: lock %s takes its TTL in whole seconds", field.Self, s.TTL, s.Variant)
	}
	if err := s.validateInner(info); err != nil {
		return err
	}
	if s.Client != nil && !info.Program {
		return field.Errorf("client", "%v applies only to %s, not %s", field.Self, ClientVariant, s.Variant)
	}
	if info, err = s.Info(); err != nil { // a wrapper's inner variant, a program's manifest
		return err
	}
	for _, o := range specificSettings {
		if o.set(s.Options) && !slices.Contains(info.Accepts, o.name) {
			takers := With(func(i Info) bool { return slices.Contains(i.Accepts, o.name) })
			return field.Errorf(o.name, "%v applies only to %s, not %s", field.Self, andList(takers), s.Label())
		}
	}
	switch {
	case s.WaitReplicas < 0:
		return field.Errorf("wait_replicas", "%v %d is negative", field.Self, s.WaitReplicas)
	case !s.WaitTimeout.IsZero() && s.WaitReplicas == 0:
		return field.Errorf("wait_timeout", "%v needs %v", s.WaitTimeout, field.Ref("wait_replicas"))
	case s.span(s.WaitTimeout) < 0:
		return field.Errorf("wait_timeout", "%v is negative", s.WaitTimeout)
	case s.span(s.NodeTimeout) < 0:
		return field.Errorf("node_timeout", "%v is negative", s.NodeTimeout)
	case s.DriftFactor != nil && !(*s.DriftFactor >= 0 && *s.DriftFactor < 1):
		return field.Errorf("drift_factor", "%g must be in [0, 1)", *s.DriftFactor)
	case s.span(s.ThreadWaitTime) < 0:
		return field.Errorf("thread_wait_time", "%v is negative", s.ThreadWaitTime)
	case s.RedisRetries < 0 || s.RedisRetries > MaxRedisRetries:
		return field.Errorf("redis_retries", "%v %d must be in [0, %d]", field.Self, s.RedisRetries, MaxRedisRetries)
	case s.RedisRetries > 0 && info.Program:
		return field.Errorf("redis_retries", "%v applies to the locks built here, not %s: a lock client program's library retries as its options say", field.Self, s.Label())
	}
	if kind := s.Kind(); kind == lock.KindSemaphore && s.Permits < 1 {
		return field.Errorf("permits", "%v %d, want at least 1", field.Self, s.Permits)
	} else if kind != lock.KindSemaphore && s.Permits != 0 {
		return field.Errorf("permits", "%v applies only to semaphores, not %s", field.Self, s.Variant)
	}
	return nil
}

// validateInner checks the variant a wrapper wraps: one of lock.KindLock that
// is no wrapper itself; a variant that wraps nothing takes no inner.
func (s Spec) validateInner(info Info) error {
	if !info.Wraps {
		if s.Inner != "" {
			return field.Errorf("inner", "%v applies only to %s, not %s", field.Self, andList(With(func(i Info) bool { return i.Wraps })), s.Variant)
		}
		return nil
	}
	in, err := Lookup(s.inner())
	switch {
	case err != nil:
		return field.Errorf("inner", "%w", err)
	case in.Wraps:
		return field.Errorf("inner", "%v cannot be %s: it wraps a lock itself", field.Self, in.Name)
	case in.Kind.Or() != lock.KindLock:
		return field.Errorf("inner", "%v %s is a %s, not a lock the %s can wrap", field.Self, in.Name, in.Kind, s.Variant)
	}
	return nil
}

// Build makes the lock s describes on key. clients are one per node of the
// topology (the first is the primary / the single node); variants that use
// one node take clients[0]. opts are applied after the spec's own options,
// so a workload's hooks and observers win.
func Build(s Spec, clients []redis.UniversalClient, key string, opts ...lock.Option) (lock.Locker, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", lock.ErrConfig, err)
	}
	if k := s.Kind(); k != lock.KindLock {
		return nil, fmt.Errorf("%w: lock %s is a %s, not a lock.Locker: use BuildPrimitive", lock.ErrConfig, s.Variant, k)
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: lock %s: no Redis clients", lock.ErrConfig, s.Variant)
	}
	common, specific := s.options()
	own := append(common, specific...)
	e := lookupEntry(s.Variant)
	if e.wrap == nil {
		return build(s, clients, key, append(own, opts...))
	}
	inner := s
	inner.Variant, inner.Inner = s.inner(), ""
	// The inner lock does the acquiring, so it gets the workload's options
	// (retry, hooks, wall clock); the wrapper gets only the common ones:
	// variant-specific options refuse other variants.
	in, err := build(inner, clients, key, append(own, opts...))
	if err != nil {
		return nil, err
	}
	return e.wrap(in, append(common, opts...))
}

// BuildPrimitive makes what s describes on key, of any kind: a
// lock.Locker (as Build does), a lock.ReadWriteLocker, a lock.Semaphore or
// a lock.Latch, as Lookup(s.Variant).Kind says.
func BuildPrimitive(s Spec, clients []redis.UniversalClient, key string, opts ...lock.Option) (lock.Primitive, error) {
	if s.Kind() == lock.KindLock {
		return Build(s, clients, key, opts...)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", lock.ErrConfig, err)
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: lock %s: no Redis clients", lock.ErrConfig, s.Variant)
	}
	common, specific := s.options()
	e := lookupEntry(s.Variant)
	if e.prim == nil {
		return nil, fmt.Errorf("%w: lock %q cannot be built here", lock.ErrConfig, s.Variant)
	}
	return e.prim(s, clients, key, append(append(common, specific...), opts...))
}

// options returns the spec's options common to every variant and those
// specific to its variant.
func (s Spec) options() (common, specific []lock.Option) {
	var o []lock.Option
	if s.DriftFactor != nil || s.DriftFixed != nil {
		d := lock.DefaultOptions()
		f, x := d.DriftFactor, d.DriftFixed
		if s.DriftFactor != nil {
			f = *s.DriftFactor
		}
		if s.DriftFixed != nil {
			x = *s.DriftFixed
		}
		o = append(o, lock.WithDrift(f, x))
	}
	if d := s.span(s.NodeTimeout); d > 0 {
		o = append(o, lock.WithNodeTimeout(d))
	}
	var v []lock.Option
	if s.WaitReplicas > 0 {
		v = append(v, single.WithWait(s.WaitReplicas, s.span(s.WaitTimeout)))
	}
	if s.SetNXOnExtend {
		v = append(v, adapters.RedsyncOptions(redsync.WithSetNXOnExtend()))
	}
	if d := s.span(s.ThreadWaitTime); d > 0 {
		v = append(v, fair.WithThreadWaitTime(d))
	}
	return o, v
}

func build(s Spec, clients []redis.UniversalClient, key string, opts []lock.Option) (lock.Locker, error) {
	e := lookupEntry(s.Variant)
	if e.build == nil {
		return nil, fmt.Errorf("%w: lock %q cannot be built here", lock.ErrConfig, s.Variant)
	}
	return e.build(s, clients, key, opts)
}

// lookupEntry is the registration of name (the zero entry if none).
func lookupEntry(name string) entry {
	mu.RLock()
	defer mu.RUnlock()
	return registry[name]
}
