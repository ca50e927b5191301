// Package variants names every lock tumbler can test — its own variants,
// the broken recipes and the peer-client adapters — and builds one from a
// plain-data Spec. It is how a plan, a CLI flag or a worker process says
// "this lock" without importing each variant.
//
// A variant declares in its registration (Info) what the harness needs to
// know of it: its kind, how it uses the servers (Servers: every node or
// one, keys in several hash slots, an odd number of masters, the settings
// that apply to it), what its grants promise (Grants: fencing tokens,
// nested holds, queue order), whether it wraps another lock or renews in
// the background. A plan's validation, the checkers a run composes and the
// steps a hunt draws ask these traits, never a variant's name; the names
// appear only in the registrations below.
package variants

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

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
)

// Info describes a variant: what it is and what it declares of itself.
// It is declared once, in the variant's registration (the built-in ones
// below, or Register), and may come from data read at run time (its
// traits have JSON names, so a manifest can carry them).
type Info struct {
	Name string `json:"name"`
	Doc  string `json:"doc,omitempty"`
	// Broken: a recipe kept on purpose to show its failure.
	Broken bool `json:"broken,omitempty"`
	// Traits are what the variant declares of itself, as a lock client
	// program's manifest declares them: its Kind (what Build makes; ""
	// is lock.KindLock), how it uses the servers (Servers; a wrapper's are
	// those of the variant it wraps, Options.Info), what its grants
	// promise (Grants; the checkers a run composes follow from them — a
	// wrapper declares its own, not those of the variant it wraps: the
	// watchdog declares none, its renewals are kept per lease, so it does
	// not nest holds) and the lock steps it reports through
	// lock.Options.Hook (Steps), where a step-pause or step-crash fault
	// can stop a client and which a hunt draws from, besides the
	// workload's own steps.
	lock.Traits
	// Wraps: the variant wraps another variant of lock.KindLock
	// (Options.Inner, DefaultInner when unset), which talks to Redis: Build
	// makes that one and wraps it. A wrapper takes the Servers and the
	// Steps of the variant it wraps.
	Wraps bool `json:"wraps,omitempty"`
	// Renews: the variant renews its holders' leases in the background
	// while they hold (reported to lock.Options.OnRenew, recorded as
	// extends).
	Renews bool `json:"renews,omitempty"`
	// Program: the variant is a lock client program (Options.Client) that
	// tumbler drives over the lock client protocol; its traits are those
	// its manifest declares (Options.Info), and the runner starts it, not
	// Build.
	Program bool `json:"program,omitempty"`
	// WholeSeconds: the variant's library takes its TTL in whole seconds
	// (go-zero's SetExpire, dapr's ExpiryInSeconds): Spec.Validate refuses
	// any other TTL.
	WholeSeconds bool `json:"whole_seconds,omitempty"`
}

// DefaultInner is the variant a wrapper wraps when Options.Inner is unset.
const DefaultInner = "single"

// The settings only some variants take (Servers.Accepts), by JSON name.
const (
	// OptWaitReplicas: WAIT for replicas after acquiring.
	OptWaitReplicas = "wait_replicas"
	// OptSetNXOnExtend: redsync's WithSetNXOnExtend.
	OptSetNXOnExtend = "setnx_on_extend"
	// OptThreadWaitTime: the fair lock's threadWaitTime.
	OptThreadWaitTime = "thread_wait_time"
	// OptTokens: each client's own owner value (redislock-token).
	OptTokens = "tokens"
)

// setting is a setting only some variants take.
type setting struct {
	name string
	set  func(Options) bool // whether a lock's Options set it
}

// specificSettings are the settings only some variants take.
var specificSettings = []setting{
	{OptWaitReplicas, func(o Options) bool { return o.WaitReplicas > 0 }},
	{OptSetNXOnExtend, func(o Options) bool { return o.SetNXOnExtend }},
	{OptThreadWaitTime, func(o Options) bool { return !o.ThreadWaitTime.IsZero() }},
	{OptTokens, func(o Options) bool { return len(o.Tokens) > 0 }},
}

// granted is the step every production variant and adapter reports.
var granted = []lock.Step{{Name: lock.StepGranted, Acquiring: true}}

// PrimitiveFunc makes a variant of a kind other than KindLock; it returns
// the sibling interface its Kind names.
type PrimitiveFunc func(s Spec, clients []redis.UniversalClient, key string, opts []lock.Option) (lock.Primitive, error)

// BuildFunc makes a variant's lock on key. clients are one per node of the
// topology (a one-node variant uses clients[0], the primary); opts are the
// spec's own options followed by the workload's (hooks, renewal observer,
// wall clock, retry), which the lock must apply.
type BuildFunc func(s Spec, clients []redis.UniversalClient, key string, opts []lock.Option) (lock.Locker, error)

// wrapFunc makes a wrapper (Info.Wraps) around the lock it wraps.
type wrapFunc func(inner lock.Locker, opts []lock.Option) (lock.Locker, error)

type entry struct {
	info  Info
	build BuildFunc
	prim  PrimitiveFunc // kinds other than KindLock
	wrap  wrapFunc      // wrappers
}

var (
	mu       sync.RWMutex
	registry = map[string]entry{}
	order    []string // names in registration order
)

// builtins are tumbler's own variants and the adapters, in the order error
// messages list them.
var builtins = []entry{
	{info: Info{Name: "single", Traits: lock.Traits{Servers: lock.Servers{Accepts: []string{OptWaitReplicas}}, Steps: granted},
		Doc: "SET NX PX, Lua compare-and-delete release (optionally WAIT for replicas)"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return single.New(c[0], key, s.TTL, o...)
		}},
	{info: Info{Name: "fenced", Traits: lock.Traits{Servers: lock.Servers{CrossSlot: true, Accepts: []string{OptWaitReplicas}}, Grants: lock.Grants{Tokens: true}, Steps: granted},
		Doc: "single plus a fencing token from INCR in the acquire script"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return fenced.New(c[0], key, s.TTL, o...)
		}},
	{info: Info{Name: "redlock", Traits: lock.Traits{Servers: lock.Servers{AllNodes: true, OddMasters: true}, Steps: granted},
		Doc: "Redlock over N independent masters, quorum N/2+1, validity check"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return redlock.New(c, key, s.TTL, o...)
		}},
	{info: Info{Name: ClientVariant, Program: true, Doc: "a real lock library in any language, driven over the lock client protocol (clients/PROTOCOL.md): a shipped client or a program of your own"}},
	{info: Info{Name: "watchdog", Wraps: true, Renews: true, Doc: "renews another variant every TTL/3 while held (Redisson watchdog)"},
		wrap: func(in lock.Locker, o []lock.Option) (lock.Locker, error) { return watchdog.New(in, o...) }},
	{info: Info{Name: "reentrant", Traits: lock.Traits{Grants: lock.Grants{Reentrant: true}}, Doc: "Redisson RLock: hash of owner → hold count, pub/sub wake-up"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return reentrant.New(c[0], key, s.TTL, o...)
		}},
	{info: Info{Name: "redsync", Traits: lock.Traits{Servers: lock.Servers{AllNodes: true, Accepts: []string{OptSetNXOnExtend}}, Steps: granted},
		Doc: "adapter: go-redsync/redsync v4 (Redlock)"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return adapters.NewRedsync(c, key, s.TTL, o...)
		}},
	{info: Info{Name: "redislock", Traits: lock.Traits{Steps: granted}, Doc: "adapter: bsm/redislock (single node, no elapsed-time check)"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return adapters.NewRedislock(c[0], key, s.TTL, o...)
		}},
	{info: Info{Name: "redislock-token", Traits: lock.Traits{Servers: lock.Servers{Accepts: []string{OptTokens}}, Steps: granted}, Doc: "adapter: bsm/redislock with a caller-chosen token (Options.Token), one per client (lock.tokens, or a random one), reused for every Obtain: an Obtain that finds its token's prefix on the key re-obtains it"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			token := s.Token
			if token == "" {
				token = lock.RandomValue() // drawn once: this client's token for every Obtain
			}
			return adapters.NewRedislock(c[0], key, s.TTL, append(o, lock.WithValue(func() string { return token }))...)
		}},
	// Reentrant: go-zero's documentation says its RedisLock is reentrant
	// (可重入); its Acquire by the holding object succeeds, but counts
	// nothing, so a plan may nest it and the checkers hold it to the
	// promise (docs/analyses/go-zero.md).
	{info: Info{Name: "go-zero", Traits: lock.Traits{Grants: lock.Grants{Reentrant: true}, Steps: granted}, WholeSeconds: true,
		Doc: "adapter: go-zero " + adapters.GoZeroVersion + " RedisLock: one object per client and key, its id fixed, go-zero's own client (3 retries, 3 s timeouts, breaker); whole-second TTL + 500 ms"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return adapters.NewGoZero(c[0], key, s.TTL, o...)
		}},
	// No Steps: rueidislock decides inside TryWithContext, between its
	// keys' replies and its return, where no hook reaches; a stall after
	// the return is a pause of a holder whose renewals go on.
	{info: Info{Name: "rueidislock", Doc: "adapter: redis/rueidis rueidislock " + adapters.RueidislockVersion + ": SET NX PXAT (client clock + validity) on KeyMajority of 2×KeyMajority−1 keys, background renewal, lease lost when its context is cancelled"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return adapters.NewRueidislock(c[0], key, s.TTL, o...)
		}},
	{info: Info{Name: "fair", Traits: lock.Traits{Servers: lock.Servers{Accepts: []string{OptThreadWaitTime}}, Grants: lock.Grants{Fair: true}, Steps: []lock.Step{{Name: fair.StepQueued, Acquiring: true}}},
		Doc: "Redisson RFairLock (Redisson's queue script before #1104): FIFO queue of waiters with per-waiter timeouts, threadWaitTime"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return fair.New(c[0], key, s.TTL, o...)
		}},
	{info: Info{Name: "multi", Traits: lock.Traits{Servers: lock.Servers{AllNodes: true}, Steps: granted}, Doc: "Redisson MultiLock: every node must grant, one after the other"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return multilock.NewMulti(c, key, s.TTL, o...)
		}},
	{info: Info{Name: "redisson-redlock", Traits: lock.Traits{Servers: lock.Servers{AllNodes: true}, Steps: granted},
		Doc: "Redisson RedissonRedLock: N/2+1 nodes one after the other, wait-time budget, no validity check"},
		build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
			return multilock.NewRedLock(c, key, s.TTL, o...)
		}},
	{info: Info{Name: "rwlock", Traits: lock.Traits{Kind: lock.KindReadWrite}, Doc: "Redisson RReadWriteLock (Redisson's scripts): one hash, mode field, per-owner counts, one pexpire"},
		prim: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
			return rwlock.New(c[0], key, s.TTL, o...)
		}},
	{info: Info{Name: "semaphore", Traits: lock.Traits{Kind: lock.KindSemaphore}, Doc: "Redisson RSemaphore: a counter of free permits, no owners, no expiry"},
		prim: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
			return semaphore.New(c[0], key, s.Permits, o...)
		}},
	{info: Info{Name: "permit-expirable-semaphore", Traits: lock.Traits{Kind: lock.KindSemaphore}, Doc: "Redisson RPermitExpirableSemaphore: permits with ids and leases of the TTL"},
		prim: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
			return semaphore.NewExpirable(c[0], key, s.Permits, s.TTL, o...)
		}},
	{info: Info{Name: "latch", Traits: lock.Traits{Kind: lock.KindLatch}, Doc: "Redisson RCountDownLatch: a count that waiters wait to reach zero"},
		prim: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Primitive, error) {
			return latch.New(c[0], key, o...)
		}},
}

func init() {
	for _, e := range append(builtins, recipeEntries()...) {
		if err := add(e); err != nil {
			panic(err) // the built-in registrations are part of the program
		}
	}
}

// recipeEntries are the broken recipes, in recipes.Names' order.
func recipeEntries() []entry {
	docs := map[string]string{
		recipes.NameSetNXExpire:     "SETNX then EXPIRE as two commands: a crash between leaves a lock that never expires",
		recipes.NameSetNXDel:        "release by plain DEL: a slow holder deletes the next holder's lock",
		recipes.NameCheckThenDel:    "GET, compare, DEL: the key can change hands between GET and DEL",
		recipes.NameGetSetTimestamp: "expiry timestamp by the client's clock, GETSET takeover: clock skew",
		recipes.NameLuaTimestamp:    "the Lua version of the timestamp recipe (as a blog post on expiry-timestamp locks gives it): still clock dependent",
		recipes.NameTimerRenew:      "renewal timer whose HEXISTS on a string key never renews, silently",
		recipes.NameGiveUpRenew:     "a watchdog that gives up at its first failed renewal without telling the holder (Redisson #775)",
	}
	afterSetNX := lock.Step{Name: recipes.StepAfterSetNX, Acquiring: true}
	beforeGetSet := lock.Step{Name: recipes.StepBeforeGetSet, Acquiring: true}
	betweenGetAndDel := lock.Step{Name: recipes.StepBetweenGetAndDel}
	steps := map[string][]lock.Step{
		recipes.NameSetNXExpire:     {afterSetNX},
		recipes.NameCheckThenDel:    {betweenGetAndDel},
		recipes.NameGetSetTimestamp: {beforeGetSet, betweenGetAndDel},
	}
	renews := map[string]bool{recipes.NameTimerRenew: true, recipes.NameGiveUpRenew: true}
	var out []entry
	for _, name := range recipes.Names {
		out = append(out, entry{
			info: Info{Name: name, Traits: lock.Traits{Steps: steps[name]}, Broken: true, Doc: docs[name], Renews: renews[name]},
			build: func(s Spec, c []redis.UniversalClient, key string, o []lock.Option) (lock.Locker, error) {
				return recipes.New(s.Variant, c[0], key, s.TTL, o...)
			}})
	}
	return out
}

// Register adds a lock under info.Name, so that plans, the CLI's --lock and
// worker processes can name it: this is how a lock client of your own is
// put under tumbler's workloads, faults and checkers. info declares its
// traits as a built-in variant's do (Servers, Grants, Renews, Steps): the
// harness asks them, not the name, so a lock whose traits are only known
// at run time (read from a manifest, say) registers them then. Call it
// before any plan names the lock, and in worker processes too (re-execs of
// your program: from an init function, or from what starts them).
func Register(info Info, build BuildFunc) error {
	if info.Name == "" || build == nil {
		return fmt.Errorf("variants.Register: a name and a build function are required")
	}
	if info.Kind.Or() != lock.KindLock {
		return fmt.Errorf("variants.Register: lock %q: a BuildFunc builds a lock.Locker, not a %s", info.Name, info.Kind)
	}
	if info.Wraps {
		return fmt.Errorf("variants.Register: lock %q: a BuildFunc builds a lock itself; it cannot declare Wraps (build the lock it wraps in the BuildFunc)", info.Name)
	}
	return add(entry{info: info, build: build})
}

// add registers e, checking what its Info declares.
func add(e entry) error {
	for _, a := range e.info.Accepts {
		if !slices.ContainsFunc(specificSettings, func(s setting) bool { return s.name == a }) {
			return fmt.Errorf("variants.Register: lock %q: Accepts %q, which is no setting only some variants take (%s)", e.info.Name, a, strings.Join(specificNames(), ", "))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[e.info.Name]; dup {
		return fmt.Errorf("variants.Register: lock %q is already registered", e.info.Name)
	}
	registry[e.info.Name] = e
	order = append(order, e.info.Name)
	return nil
}

func specificNames() []string {
	var out []string
	for _, s := range specificSettings {
		out = append(out, s.name)
	}
	return out
}

// Names lists every variant, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := slices.Clone(order)
	sort.Strings(out)
	return out
}

// With lists the variants whose Info has the trait, in registration order
// (the built-in ones first): "the variants that span all nodes".
func With(trait func(Info) bool) []string {
	mu.RLock()
	names := slices.Clone(order)
	mu.RUnlock()
	var out []string
	for _, n := range names {
		if i, err := Lookup(n); err == nil && trait(i) {
			out = append(out, n)
		}
	}
	return out
}

// BuiltHere lists the variants Build and BuildPrimitive make, in
// registration order:
// every one but a lock client program's (Info.Program), which the runner
// starts and drives over the lock client protocol.
func BuiltHere() []string {
	return With(func(i Info) bool { return !i.Program })
}

// Lookup returns the variant's Info, or an error listing the valid names.
func Lookup(name string) (Info, error) {
	mu.RLock()
	e, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return Info{}, fmt.Errorf("unknown lock %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	e.info.Kind = e.info.Kind.Or()
	return e.info, nil
}

// Info is the Info of the lock o describes, as the harness sees it: its
// variant's, except that a wrapper (Info.Wraps) uses the servers through
// the variant it wraps, so its Servers and Steps are that variant's. The
// error is Lookup's, for the variant or the inner one.
func (o Options) Info() (Info, error) {
	info, err := Lookup(o.Variant)
	if err == nil && info.Program {
		return o.programInfo(info)
	}
	if err != nil || !info.Wraps {
		return info, err
	}
	in, err := Lookup(o.inner())
	if err != nil {
		return info, fmt.Errorf("lock %s: inner: %w", o.Variant, err)
	}
	info.Servers, info.Steps = in.Servers, in.Steps
	return info, nil
}

// ClientVariant is the variant of a lock client program (Options.Client).
const ClientVariant = "client"

// programInfo is a lock client program's Info: its traits are what its
// manifest declares, as they are.
func (o Options) programInfo(info Info) (Info, error) {
	if o.Client == nil {
		return info, field.Errorf("client", "lock %s needs %v: a shipped client by name, a client directory or a command", o.Variant, field.Self)
	}
	m, err := o.Client.Manifest()
	if err != nil {
		return info, field.Within("client", err)
	}
	for _, a := range m.Accepts {
		if !slices.ContainsFunc(specificSettings, func(s setting) bool { return s.name == a }) {
			return info, field.Errorf("client", "%s: accepts: %q is no setting only some locks take (%s)", cmp.Or(m.File(), m.Name), a, strings.Join(specificNames(), ", "))
		}
	}
	info.Traits = m.Traits
	if info.Doc = m.Doc; m.Doc == "" {
		info.Doc = "the lock client program " + strings.Join(m.Command, " ")
	}
	return info, nil
}

// Kind is the kind of o's lock (lock.KindLock for an unknown one:
// Validate reports that).
func (o Options) Kind() lock.Kind {
	i, err := o.Info()
	if err != nil {
		return lock.KindLock
	}
	return i.Kind.Or()
}

// AllNodes reports whether the lock needs a client per node rather than one.
func (o Options) AllNodes() bool {
	i, _ := o.Info()
	return i.AllNodes
}

// CrossSlot reports whether the lock's scripts touch keys in different
// hash slots (Servers.CrossSlot), so that a Redis Cluster refuses them.
func (o Options) CrossSlot() bool {
	i, _ := o.Info()
	return i.CrossSlot
}

// Label names the lock in a few words: its variant, and the variant a
// wrapper wraps when the options name one ("watchdog(redlock)").
func (o Options) Label() string {
	if o.Client != nil {
		if l := o.Client.Label(); l != "" {
			return o.Variant + ":" + l
		}
	}
	if o.Inner != "" {
		return o.Variant + "(" + o.Inner + ")"
	}
	return o.Variant
}

// inner is the variant a wrapper wraps.
func (o Options) inner() string {
	if o.Inner == "" {
		return DefaultInner
	}
	return o.Inner
}

// andList joins names as a sentence does: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
