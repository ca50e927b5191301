// Package variants names every lock tumbler can test — its own variants,
// the broken recipes and the peer-client adapters — and builds one from a
// plain-data Spec. It is how a plan, a CLI flag or a worker process says
// "this lock" without importing each variant.
package variants

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/adapters"
	"github.com/tumbler-dev/tumbler/lock/fair"
	"github.com/tumbler-dev/tumbler/lock/fenced"
	"github.com/tumbler-dev/tumbler/lock/latch"
	"github.com/tumbler-dev/tumbler/lock/multilock"
	"github.com/tumbler-dev/tumbler/lock/recipes"
	"github.com/tumbler-dev/tumbler/lock/redlock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
	"github.com/tumbler-dev/tumbler/lock/rwlock"
	"github.com/tumbler-dev/tumbler/lock/semaphore"
	"github.com/tumbler-dev/tumbler/lock/single"
	"github.com/tumbler-dev/tumbler/lock/watchdog"
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
	// Inner is the variant a watchdog wraps (default "single").
	Inner string `json:"inner,omitempty"`
	// WaitReplicas > 0 makes single/fenced WAIT for that many replicas
	// within WaitTimeout after acquiring (Redisson's checkLockSyncedSlaves);
	// WaitTimeout needs WaitReplicas.
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
}

// Resolve is o with every relative span resolved against ttl: a client
// whose lease is not the plan's TTL keeps the durations the plan meant.
func (o Options) Resolve(ttl time.Duration) Options {
	for _, s := range []*spans.Span{&o.WaitTimeout, &o.NodeTimeout, &o.ThreadWaitTime} {
		*s = spans.Fixed(s.Resolve(ttl))
	}
	return o
}

// Spec is a lock described as data, as it travels to the client that
// builds it (in the harness or in a worker process): its Options and its
// TTL, against which relative spans of the Options resolve.
type Spec struct {
	Options
	TTL time.Duration `json:"ttl"`
	// DriftFixed overrides the fixed part of the clock-drift allowance
	// when set (not a plan field: plans set drift_factor only).
	DriftFixed *time.Duration `json:"drift_fixed,omitempty"`
}

// span is d under the spec's TTL.
func (s Spec) span(d spans.Span) time.Duration { return d.Resolve(s.TTL) }

// Kind is the shape of what a variant builds: a lock.Locker, or one of the
// siblings of package lock for synchronizers a Locker does not fit.
type Kind string

// The kinds.
const (
	// KindLock builds a lock.Locker (the default).
	KindLock Kind = "lock"
	// KindReadWrite builds a lock.ReadWriteLocker.
	KindReadWrite Kind = "read-write"
	// KindSemaphore builds a lock.Semaphore.
	KindSemaphore Kind = "semaphore"
	// KindLatch builds a lock.Latch.
	KindLatch Kind = "latch"
)

// Info describes a variant for listings and error messages.
type Info struct {
	Name string
	// AllNodes: the variant talks to every node of the topology (Redlock
	// style); otherwise it uses one node (the primary).
	AllNodes bool
	// Broken: a recipe kept on purpose to show its failure.
	Broken bool
	// CrossSlot: the variant's script touches keys in different hash
	// slots, which a Redis Cluster refuses (CROSSSLOT).
	CrossSlot bool
	// Kind is what Build makes ("" is KindLock).
	Kind Kind
	Doc  string
	// Steps are the lock steps the variant reports through
	// lock.Options.Hook (a watchdog: those of the variant it wraps), where
	// a step-pause or step-crash fault can stop a client. A hunt draws
	// from them as well as from the workload's own steps.
	Steps []LockStep
}

// LockStep is a step a variant reports to its lock.StepHook.
type LockStep struct {
	Name string
	// Acquiring: the step comes inside Acquire, on the client's way to a
	// grant (the servers' grant in hand, or a place in a queue); otherwise
	// it comes inside Release.
	Acquiring bool
}

// granted is the step every production variant and adapter reports.
var granted = []LockStep{{Name: lock.StepGranted, Acquiring: true}}

// PrimitiveFunc makes a variant of a kind other than KindLock; it returns
// the sibling interface its Kind names.
type PrimitiveFunc func(s Spec, clients []redis.UniversalClient, key string, opts []lock.Option) (lock.Primitive, error)

// BuildFunc makes a variant's lock on key. clients are one per node of the
// topology (a one-node variant uses clients[0], the primary); opts are the
// spec's own options followed by the workload's (hooks, renewal observer,
// wall clock, retry), which the lock must apply.
type BuildFunc func(s Spec, clients []redis.UniversalClient, key string, opts []lock.Option) (lock.Locker, error)

type entry struct {
	info  Info
	build BuildFunc
	prim  PrimitiveFunc // kinds other than KindLock
}

var (
	mu       sync.RWMutex
	registry = map[string]entry{
		"single": {Info{Steps: granted, Doc: "SET NX PX, Lua compare-and-delete release (optionally WAIT for replicas)"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return single.New(c[0], key, s.TTL, o...)
			}, nil},
		"fenced": {Info{CrossSlot: true, Steps: granted, Doc: "single plus a fencing token from INCR in the acquire script"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return fenced.New(c[0], key, s.TTL, o...)
			}, nil},
		"redlock": {Info{AllNodes: true, Steps: granted, Doc: "Redlock over N independent masters, quorum N/2+1, validity check"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return redlock.New(c, key, s.TTL, o...)
			}, nil},
		// Build wraps the inner variant itself; the watchdog has no builder.
		"watchdog": {Info{Doc: "renews another variant every TTL/3 while held (Redisson watchdog)"}, nil, nil},
		"reentrant": {Info{Doc: "Redisson RLock: hash of owner → hold count, pub/sub wake-up"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return reentrant.New(c[0], key, s.TTL, o...)
			}, nil},
		"redsync": {Info{AllNodes: true, Steps: granted, Doc: "adapter: go-redsync/redsync v4 (Redlock)"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return adapters.NewRedsync(c, key, s.TTL, o...)
			}, nil},
		"redislock": {Info{Steps: granted, Doc: "adapter: bsm/redislock (single node, no elapsed-time check)"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return adapters.NewRedislock(c[0], key, s.TTL, o...)
			}, nil},
		"fair": {Info{Steps: []LockStep{{Name: fair.StepQueued, Acquiring: true}}, Doc: "Redisson RFairLock (Redisson's queue script before #1104): FIFO queue of waiters with per-waiter timeouts, threadWaitTime"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return fair.New(c[0], key, s.TTL, o...)
			}, nil},
		"multi": {Info{AllNodes: true, Steps: granted, Doc: "Redisson MultiLock: every node must grant, one after the other"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return multilock.NewMulti(c, key, s.TTL, o...)
			}, nil},
		"redisson-redlock": {Info{AllNodes: true, Steps: granted, Doc: "Redisson RedissonRedLock: N/2+1 nodes one after the other, wait-time budget, no validity check"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return multilock.NewRedLock(c, key, s.TTL, o...)
			}, nil},
		"rwlock": {Info{Kind: KindReadWrite, Doc: "Redisson RReadWriteLock (Redisson's scripts): one hash, mode field, per-owner counts, one pexpire"}, nil,
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
				return rwlock.New(c[0], key, s.TTL, o...)
			}},
		"semaphore": {Info{Kind: KindSemaphore, Doc: "Redisson RSemaphore: a counter of free permits, no owners, no expiry"}, nil,
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
				return semaphore.New(c[0], key, s.Permits, o...)
			}},
		"permit-expirable-semaphore": {Info{Kind: KindSemaphore, Doc: "Redisson RPermitExpirableSemaphore: permits with ids and leases of the TTL"}, nil,
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
				return semaphore.NewExpirable(c[0], key, s.Permits, s.TTL, o...)
			}},
		"latch": {Info{Kind: KindLatch, Doc: "Redisson RCountDownLatch: a count that waiters wait to reach zero"}, nil,
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
				return latch.New(c[0], key, o...)
			}},
	}
)

func init() {
	docs := map[string]string{
		recipes.NameSetNXExpire:     "SETNX then EXPIRE as two commands: a crash between leaves a lock that never expires",
		recipes.NameSetNXDel:        "release by plain DEL: a slow holder deletes the next holder's lock",
		recipes.NameCheckThenDel:    "GET, compare, DEL: the key can change hands between GET and DEL",
		recipes.NameGetSetTimestamp: "expiry timestamp by the client's clock, GETSET takeover: clock skew",
		recipes.NameLuaTimestamp:    "the Lua version of the timestamp recipe (as a blog post on expiry-timestamp locks gives it): still clock dependent",
		recipes.NameTimerRenew:      "renewal timer whose HEXISTS on a string key never renews, silently",
	}
	afterSetNX := LockStep{Name: recipes.StepAfterSetNX, Acquiring: true}
	beforeGetSet := LockStep{Name: recipes.StepBeforeGetSet, Acquiring: true}
	betweenGetAndDel := LockStep{Name: recipes.StepBetweenGetAndDel}
	steps := map[string][]LockStep{
		recipes.NameSetNXExpire:     {afterSetNX},
		recipes.NameCheckThenDel:    {betweenGetAndDel},
		recipes.NameGetSetTimestamp: {beforeGetSet, betweenGetAndDel},
	}
	for _, name := range recipes.Names {
		registry[name] = entry{Info{Broken: true, Doc: docs[name], Steps: steps[name]},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return recipes.New(s.Variant, c[0], key, s.TTL, o...)
			}, nil}
	}
}

// Register adds a lock under info.Name, so that plans, the CLI's --lock and
// worker processes can name it: this is how a lock client of your own is
// put under tumbler's workloads, faults and checkers. Call it from an init
// function, so worker processes (re-execs of your program) know it too.
func Register(info Info, build BuildFunc) error {
	if info.Name == "" || build == nil {
		return fmt.Errorf("variants.Register: a name and a build function are required")
	}
	if info.Kind != "" && info.Kind != KindLock {
		return fmt.Errorf("variants.Register: lock %q: a BuildFunc builds a lock.Locker, not a %s", info.Name, info.Kind)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[info.Name]; dup {
		return fmt.Errorf("variants.Register: lock %q is already registered", info.Name)
	}
	registry[info.Name] = entry{info: info, build: build}
	return nil
}

// Names lists every variant, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the variant's Info, or an error listing the valid names.
func Lookup(name string) (Info, error) {
	mu.RLock()
	e, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return Info{}, fmt.Errorf("unknown lock %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	e.info.Name = name
	if e.info.Kind == "" {
		e.info.Kind = KindLock
	}
	return e.info, nil
}

// Kind is the kind of o's variant (KindLock for an unknown one: Validate
// reports that).
func (o Options) Kind() Kind {
	i, err := Lookup(o.Variant)
	if err != nil {
		return KindLock
	}
	return i.Kind
}

// AllNodes reports whether the lock needs a client per node rather than one.
func (o Options) AllNodes() bool { return o.talks().AllNodes }

// CrossSlot reports whether the lock's scripts touch keys in different
// hash slots (Info.CrossSlot), so that a Redis Cluster refuses them.
func (o Options) CrossSlot() bool { return o.talks().CrossSlot }

// talks is the Info of the variant that talks to Redis: a watchdog's
// inner one.
func (o Options) talks() Info {
	name := o.Variant
	if name == "watchdog" {
		name = o.inner()
	}
	i, _ := Lookup(name)
	return i
}

func (o Options) inner() string {
	if o.Inner == "" {
		return "single"
	}
	return o.Inner
}

// Validate checks s without building anything. Each problem names its
// field by its JSON path within the options ("drift_factor"), as the
// plan's "lock" section does (package internal/field).
func (s Spec) Validate() error {
	if _, err := Lookup(s.Variant); err != nil {
		return field.Errorf("variant", "%w", err)
	}
	if s.TTL <= 0 {
		return field.Errorf("ttl", "%v %v must be positive", field.Self, s.TTL)
	}
	if err := s.validateInner(); err != nil {
		return err
	}
	base := s.Variant
	if base == "watchdog" {
		base = s.inner()
	}
	switch {
	case s.WaitReplicas < 0:
		return field.Errorf("wait_replicas", "%v %d is negative", field.Self, s.WaitReplicas)
	case s.WaitReplicas > 0 && base != "single" && base != "fenced":
		return field.Errorf("wait_replicas", "%v applies only to single and fenced, not %s", field.Self, s.Variant)
	case !s.WaitTimeout.IsZero() && s.WaitReplicas == 0:
		return field.Errorf("wait_timeout", "%v needs %v", s.WaitTimeout, field.Ref("wait_replicas"))
	case s.span(s.WaitTimeout) < 0:
		return field.Errorf("wait_timeout", "%v is negative", s.WaitTimeout)
	case s.SetNXOnExtend && base != "redsync":
		return field.Errorf("setnx_on_extend", "%v applies only to redsync, not %s", field.Self, s.Variant)
	case s.span(s.NodeTimeout) < 0:
		return field.Errorf("node_timeout", "%v is negative", s.NodeTimeout)
	case s.DriftFactor != nil && !(*s.DriftFactor >= 0 && *s.DriftFactor < 1):
		return field.Errorf("drift_factor", "%g must be in [0, 1)", *s.DriftFactor)
	}
	if kind := s.Kind(); kind == KindSemaphore && s.Permits < 1 {
		return field.Errorf("permits", "%v %d, want at least 1", field.Self, s.Permits)
	} else if kind != KindSemaphore && s.Permits != 0 {
		return field.Errorf("permits", "%v applies only to semaphores, not %s", field.Self, s.Variant)
	}
	if !s.ThreadWaitTime.IsZero() && base != "fair" {
		return field.Errorf("thread_wait_time", "%v applies only to fair, not %s", field.Self, s.Variant)
	}
	if s.span(s.ThreadWaitTime) < 0 {
		return field.Errorf("thread_wait_time", "%v is negative", s.ThreadWaitTime)
	}
	return nil
}

// validateInner checks the variant a watchdog wraps.
func (s Spec) validateInner() error {
	if s.Variant != "watchdog" {
		if s.Inner != "" {
			return field.Errorf("inner", "%v applies only to watchdog, not %s", field.Self, s.Variant)
		}
		return nil
	}
	if s.inner() == "watchdog" {
		return field.Errorf("inner", "%v cannot be watchdog", field.Self)
	}
	i, err := Lookup(s.inner())
	if err != nil {
		return field.Errorf("inner", "%w", err)
	}
	if i.Kind != KindLock {
		return field.Errorf("inner", "%v %s is a %s, not a lock the watchdog can renew", field.Self, s.inner(), i.Kind)
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
	if k := s.Kind(); k != KindLock {
		return nil, fmt.Errorf("%w: lock %s is a %s, not a lock.Locker: use BuildPrimitive", lock.ErrConfig, s.Variant, k)
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: lock %s: no Redis clients", lock.ErrConfig, s.Variant)
	}
	common, specific := s.options()
	own := append(common, specific...)
	if s.Variant == "watchdog" {
		inner := s
		inner.Variant, inner.Inner = s.inner(), ""
		// The inner lock does the acquiring, so it gets the workload's
		// options (retry, hooks, wall clock); the watchdog gets only the
		// common ones: variant-specific options refuse other variants.
		in, err := build(inner, clients, key, append(own, opts...))
		if err != nil {
			return nil, err
		}
		return watchdog.New(in, append(common, opts...)...)
	}
	return build(s, clients, key, append(own, opts...))
}

// BuildPrimitive makes what s describes on key, of any kind: a
// lock.Locker (as Build does), a lock.ReadWriteLocker, a lock.Semaphore or
// a lock.Latch, as Lookup(s.Variant).Kind says.
func BuildPrimitive(s Spec, clients []redis.UniversalClient, key string, opts ...lock.Option) (lock.Primitive, error) {
	if s.Kind() == KindLock {
		return Build(s, clients, key, opts...)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", lock.ErrConfig, err)
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: lock %s: no Redis clients", lock.ErrConfig, s.Variant)
	}
	common, specific := s.options()
	mu.RLock()
	e := registry[s.Variant]
	mu.RUnlock()
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
	mu.RLock()
	e, ok := registry[s.Variant]
	mu.RUnlock()
	if !ok || e.build == nil {
		return nil, fmt.Errorf("%w: lock %q cannot be built here", lock.ErrConfig, s.Variant)
	}
	return e.build(s, clients, key, opts)
}

// ACL is the least a Redis ACL user needs to run every built-in lock,
// read-write lock, semaphore and latch on the keys starting with keyPrefix
// (tumbler's workloads use "tumbler:"), in ACL SETUSER / "user" directive
// form, without the user's name, on/off and password. For "tumbler:":
//
//	resetkeys ~tumbler:* ~{tumbler:* ~redisson_lock__channel:{tumbler:*
//	~redisson_lock_queue:{tumbler:* ~redisson_lock_timeout:{tumbler:*
//	~redisson_rwlock:{tumbler:* ~redisson_sc:{tumbler:*
//	~redisson_countdownlatch__channel__{tumbler:*
//	resetchannels &redisson_lock__channel:{tumbler:* &redisson_rwlock:{tumbler:*
//	&redisson_sc:{tumbler:* &redisson_countdownlatch__channel__{tumbler:*
//	-@all +ping +set +get +getrange +del +setnx +getset +pexpire +pttl +incr
//	+exists +type +hexists +hincrby +publish +subscribe +eval +evalsha +wait
//	+hget +hset +hdel +hlen +lindex +lpop +rpush +lrem +zadd +zrem +zscore
//	+zrange +zrangebyscore +incrby +decrby +decr
//
// The key patterns are the keys the locks use (the fair lock's queue and
// timeout set, a permit-expirable semaphore's "{key}:timeout" set) and the
// channels they pass as keys to their scripts; the channels are their
// wake-up channels, each named by its package (Redisson's names). The
// commands are those the locks send and those their Lua scripts call (a
// script's commands are checked against the caller's rights), plus PING,
// with which a run checks each client's login before it starts. Every other
// rule is needed by some lock: TestACLIsLeast drops each in turn and
// watches a lock fail. The README documents this ACL.
func ACL(keyPrefix string) []string {
	pattern := func(name string) string { return strings.TrimSuffix(name, "}") + "*" }
	channels := []string{
		pattern(reentrant.Channel(keyPrefix)), // also the fair lock's, per waiter
		pattern(rwlock.Channel(keyPrefix)),
		pattern(semaphore.Channel(keyPrefix)),
		pattern(latch.Channel(keyPrefix)),
	}
	keys := []string{keyPrefix + "*", "{" + keyPrefix + "*", pattern(fair.Queue(keyPrefix)), pattern(fair.Timeouts(keyPrefix))}
	out := []string{"resetkeys"}
	for _, k := range append(keys, channels...) { // releases pass their channel as a key
		out = append(out, "~"+k)
	}
	out = append(out, "resetchannels")
	for _, c := range channels {
		out = append(out, "&"+c)
	}
	out = append(out, "-@all")
	for _, c := range ACLCommands {
		out = append(out, "+"+c)
	}
	return out
}

// ACLCommands are the commands ACL allows.
var ACLCommands = []string{
	"ping", "set", "get", "getrange", "del", "setnx", "getset", "pexpire", "pttl", "incr", "exists", "type",
	"hexists", "hincrby", "publish", "subscribe", "eval", "evalsha", "wait",
	"hget", "hset", "hdel", "hlen", "lindex", "lpop", "rpush", "lrem", "zadd", "zrem", "zscore",
	"zrange", "zrangebyscore", "incrby", "decrby", "decr",
}
