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

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/adapters"
	"github.com/tumbler-dev/tumbler/lock/fenced"
	"github.com/tumbler-dev/tumbler/lock/recipes"
	"github.com/tumbler-dev/tumbler/lock/redlock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
	"github.com/tumbler-dev/tumbler/lock/single"
	"github.com/tumbler-dev/tumbler/lock/watchdog"
)

// Spec is a lock described as data. Durations are Go durations
// (nanoseconds in JSON): Spec travels between processes; people write plans.
type Spec struct {
	// Variant is one of Names().
	Variant string        `json:"variant"`
	TTL     time.Duration `json:"ttl"`
	// Inner is the variant a watchdog wraps (default "single").
	Inner string `json:"inner,omitempty"`
	// WaitReplicas > 0 makes single/fenced WAIT for that many replicas
	// within WaitTimeout after acquiring (Redisson's checkLockSyncedSlaves).
	WaitReplicas int           `json:"wait_replicas,omitempty"`
	WaitTimeout  time.Duration `json:"wait_timeout,omitempty"`
	// NodeTimeout bounds one request to one node (redlock, redsync).
	NodeTimeout time.Duration `json:"node_timeout,omitempty"`
	// DriftFactor/DriftFixed override the clock-drift allowance when set.
	DriftFactor *float64       `json:"drift_factor,omitempty"`
	DriftFixed  *time.Duration `json:"drift_fixed,omitempty"`
	// SetNXOnExtend turns on redsync's WithSetNXOnExtend (redsync #147).
	SetNXOnExtend bool `json:"setnx_on_extend,omitempty"`
}

// Info describes a variant for listings and error messages.
type Info struct {
	Name string
	// AllNodes: the variant talks to every node of the topology (Redlock
	// style); otherwise it uses one node (the primary).
	AllNodes bool
	// Broken: a recipe kept on purpose to show its failure.
	Broken bool
	Doc    string
}

// BuildFunc makes a variant's lock on key. clients are one per node of the
// topology (a one-node variant uses clients[0], the primary); opts are the
// spec's own options followed by the workload's (hooks, renewal observer,
// wall clock, retry), which the lock must apply.
type BuildFunc func(s Spec, clients []redis.UniversalClient, key string, opts []lock.Option) (lock.Locker, error)

type entry struct {
	info  Info
	build BuildFunc
}

var (
	mu       sync.RWMutex
	registry = map[string]entry{
		"single": {Info{Doc: "SET NX PX, Lua compare-and-delete release (optionally WAIT for replicas)"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return single.New(c[0], key, s.TTL, o...)
			}},
		"fenced": {Info{Doc: "single plus a fencing token from INCR in the acquire script"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return fenced.New(c[0], key, s.TTL, o...)
			}},
		"redlock": {Info{AllNodes: true, Doc: "Redlock over N independent masters, quorum N/2+1, validity check"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return redlock.New(c, key, s.TTL, o...)
			}},
		// Build wraps the inner variant itself; the watchdog has no builder.
		"watchdog": {Info{Doc: "renews another variant every TTL/3 while held (Redisson watchdog)"}, nil},
		"reentrant": {Info{Doc: "Redisson RLock: hash of owner → hold count, pub/sub wake-up"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return reentrant.New(c[0], key, s.TTL, o...)
			}},
		"redsync": {Info{AllNodes: true, Doc: "adapter: go-redsync/redsync v4 (Redlock)"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return adapters.NewRedsync(c, key, s.TTL, o...)
			}},
		"redislock": {Info{Doc: "adapter: bsm/redislock (single node, no elapsed-time check)"},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return adapters.NewRedislock(c[0], key, s.TTL, o...)
			}},
	}
)

func init() {
	docs := map[string]string{
		recipes.NameSetNXExpire:     "SETNX then EXPIRE as two commands: a crash between leaves a lock that never expires",
		recipes.NameSetNXDel:        "release by plain DEL: a slow holder deletes the next holder's lock",
		recipes.NameCheckThenDel:    "GET, compare, DEL: the key can change hands between GET and DEL",
		recipes.NameGetSetTimestamp: "expiry timestamp by the client's clock, GETSET takeover: clock skew",
		recipes.NameLuaTimestamp:    "the Lua version of the timestamp recipe (seed 004): still clock dependent",
		recipes.NameTimerRenew:      "renewal timer whose HEXISTS on a string key never renews, silently",
	}
	for _, name := range recipes.Names {
		registry[name] = entry{Info{Broken: true, Doc: docs[name]},
			func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return recipes.New(s.Variant, c[0], key, s.TTL, o...)
			}}
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
	return e.info, nil
}

// AllNodes reports whether s needs a client per node rather than one.
func (s Spec) AllNodes() bool {
	name := s.Variant
	if name == "watchdog" {
		name = s.inner()
	}
	i, _ := Lookup(name)
	return i.AllNodes
}

func (s Spec) inner() string {
	if s.Inner == "" {
		return "single"
	}
	return s.Inner
}

// Validate checks s without building anything.
func (s Spec) Validate() error {
	if _, err := Lookup(s.Variant); err != nil {
		return err
	}
	if s.TTL <= 0 {
		return fmt.Errorf("lock %s: ttl %v must be positive", s.Variant, s.TTL)
	}
	if s.Variant == "watchdog" {
		if s.inner() == "watchdog" {
			return fmt.Errorf("lock watchdog: inner cannot be watchdog")
		}
		if _, err := Lookup(s.inner()); err != nil {
			return fmt.Errorf("lock watchdog: inner: %w", err)
		}
	} else if s.Inner != "" {
		return fmt.Errorf("lock %s: inner applies only to watchdog", s.Variant)
	}
	base := s.Variant
	if base == "watchdog" {
		base = s.inner()
	}
	if s.WaitReplicas < 0 {
		return fmt.Errorf("lock %s: wait_replicas %d is negative", s.Variant, s.WaitReplicas)
	}
	if s.WaitReplicas > 0 && base != "single" && base != "fenced" {
		return fmt.Errorf("lock %s: wait_replicas applies only to single and fenced", s.Variant)
	}
	if s.SetNXOnExtend && base != "redsync" {
		return fmt.Errorf("lock %s: setnx_on_extend applies only to redsync", s.Variant)
	}
	if s.NodeTimeout < 0 {
		return fmt.Errorf("lock %s: node_timeout %v is negative", s.Variant, s.NodeTimeout)
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
	if s.NodeTimeout > 0 {
		o = append(o, lock.WithNodeTimeout(s.NodeTimeout))
	}
	var v []lock.Option
	if s.WaitReplicas > 0 {
		v = append(v, single.WithWait(s.WaitReplicas, s.WaitTimeout))
	}
	if s.SetNXOnExtend {
		v = append(v, adapters.RedsyncOptions(redsync.WithSetNXOnExtend()))
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
