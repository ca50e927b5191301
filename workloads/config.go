package workloads

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/spans"
)

// Kind names a workload.
type Kind string

// The workload kinds (ARCHITECTURE.md §1).
const (
	// Mutex: acquire, hold for a random time, release.
	Mutex Kind = "mutex"
	// FencedWrite: acquire, hold, then write "client:token:sequence" with
	// the lease's token to the protected Resource, which rejects lower
	// tokens; release. The write comes after the hold so that a client
	// paused or slowed while holding writes with a stale lease.
	FencedWrite Kind = "fenced-write"
	// Counter: inside the critical section, read the Resource's value, hold,
	// write value+1; lost increments show a double grant as users feel it.
	Counter Kind = "counter"
	// Latch: rounds of a count-down latch (Config.Latch): client 0 sets the
	// round's latch, the counters count it down, the others wait on it.
	Latch Kind = "latch"
)

// kinds are the workload kinds, in the order messages list them.
var kinds = []Kind{Mutex, FencedWrite, Counter, Latch}

// LatchSpec is the latch workload. The run is cut into rounds of Round,
// the first a quarter of a round after the start (so that every client is
// up), each with a latch of its own (key i for round i). At a round's start
// client 0 sets the latch to Count (trySetCount); a tenth of a round later
// clients 0..Counters−1 each count it down once, after a Hold draw, and
// every other client waits on it (await) until nine tenths of the round.
type LatchSpec struct {
	Count    int           `json:"count"`
	Counters int           `json:"counters"`
	Round    time.Duration `json:"round"`
}

// Mode says where clients run.
type Mode string

const (
	// InProcess runs every client as goroutines of the harness.
	InProcess Mode = "in-process"
	// Processes runs every client as its own OS process (a re-exec of the
	// current executable), so a client pause is a real SIGSTOP of its
	// workload, watchdog and sockets.
	Processes Mode = "process"
)

// DefaultMode is where clients run when nothing names a mode: for a
// Config, a plan's workload.mode, the command line's --client-mode and the
// nemesis's checks of what a fault needs (nemesis.Setup.ClientMode) alike.
const DefaultMode = Processes

// OrDefault is m, or DefaultMode when m is empty.
func (m Mode) OrDefault() Mode {
	if m == "" {
		return DefaultMode
	}
	return m
}

// Steps of the workload itself at which Crash can hit, in addition to the
// steps the lock recipes report through lock.StepHook.
const (
	// StepAfterAcquire: the acquire returned a lease; the client dies
	// holding it, so the key stays locked until its TTL runs out.
	StepAfterAcquire = "workload:after-acquire"
	// StepBeforeRelease: the critical section is done, the release not sent.
	StepBeforeRelease = "workload:before-release"
	// StepBeforeWrite: the client has checked that it may act (validity,
	// loss signal) and is about to write to the resource. A pause here is
	// Kleppmann's point: checking the lease first does not help.
	StepBeforeWrite = "workload:before-write"
	// StepBeforeCountDown: a latch counter is about to count down.
	StepBeforeCountDown = "workload:before-count-down"
)

// LockSpec says how each client builds its locks: Builder names a function
// registered with RegisterBuilder, and Spec (or PerClient[i] for client i)
// is the opaque JSON it understands (variant, node addresses, TTL, …). The
// same blob travels to a worker process, so it must be all the builder needs.
type LockSpec struct {
	Builder   string            `json:"builder"`
	Spec      json.RawMessage   `json:"spec,omitempty"`
	PerClient []json.RawMessage `json:"per_client,omitempty"`
}

// CrashSpec makes clients crash at a named step: a lock recipe's step (see
// each recipe's documentation) or StepAfterAcquire / StepBeforeRelease. In
// process mode the worker process exits hard; in in-process mode the client
// abandons everything without releasing. Either way a crash op is recorded
// and the client continues as a new process after Config.RestartDelay.
type CrashSpec struct {
	Step string `json:"step"`
	// Probability that reaching Step crashes the client, in (0, 1].
	Probability float64 `json:"probability"`
	// Limit is the most crashes per client; 0 means no limit.
	Limit int `json:"limit,omitempty"`
}

// Config describes a workload run. It is plain data (JSON) so that it can
// travel to worker processes and be stored in a plan; durations are
// time.Duration, nanoseconds in JSON.
type Config struct {
	Kind    Kind `json:"kind"`
	Mode    Mode `json:"mode,omitempty"` // default DefaultMode
	Clients int  `json:"clients"`
	// Keys contended for; key i is KeyPrefix + i. Each cycle picks one at random.
	Keys      int      `json:"keys"`
	KeyPrefix string   `json:"key_prefix,omitempty"` // default "tumbler:"
	Lock      LockSpec `json:"lock"`

	// Retry, when set, overrides the variant's acquire strategy: TryOnce
	// or Wait(delay, jitter).
	Retry *lock.Strategy `json:"retry,omitempty"`
	// AcquireTimeout bounds one Acquire call (default 1 s).
	AcquireTimeout time.Duration `json:"acquire_timeout,omitempty"`
	// OpTimeout bounds a release and a resource request (default 1 s).
	OpTimeout time.Duration `json:"op_timeout,omitempty"`
	// Hold is how long a client keeps the lock (for Counter: between its
	// read and its write).
	Hold spans.Range `json:"hold"`
	// Think is the pause between two cycles of a client.
	Think spans.Range `json:"think"`

	// CheckValidity: before acting on the resource, a client that sees its
	// lease's ValidUntil passed gives the critical section up.
	CheckValidity bool `json:"check_validity,omitempty"`
	// ObeyLost: a client stops its critical section when the lock signals
	// the lease is gone (Lease.Lost, the watchdog's loss signal).
	ObeyLost bool `json:"obey_lost,omitempty"`
	// ExtendEvery, when positive, makes the client itself extend its lease
	// (lock.Locker.Extend) every ExtendEvery while it holds the lock, as a
	// redsync user calls Mutex.Extend. Each extend is recorded (extend
	// invoke, then ok with the new ValidUntil, fail or info). An extend that
	// does not succeed ends the critical section: the client cannot confirm
	// it still holds the lock, so it does not act on the resource and goes
	// on to release. Meant for locks without a watchdog: a watchdog's own
	// renewals of the same lease would share the client's extend records.
	// Client extends do not count towards MaxOps or Rate.
	ExtendEvery time.Duration `json:"extend_every,omitempty"`
	// Nest is how many times a cycle acquires its key before the critical
	// section: nested holds of a reentrant lock, each acquire recorded, then
	// as many releases after it, innermost first (default 1). The workload
	// cannot tell whether the lock is reentrant; the runner should only
	// nest reentrant variants. With any other lock the nested acquire fails
	// (ErrNotObtained, once the retry strategy gives up or AcquireTimeout
	// ends it), and the client skips the critical section and releases what
	// it did obtain.
	Nest int `json:"nest,omitempty"`
	// ReadFraction is the share of cycles a client takes a read-write
	// lock's read lock, in [0, 1]; the others take its write lock. A read
	// cycle only holds: readers must not change the resource. Ignored by
	// other locks.
	ReadFraction float64 `json:"read_fraction,omitempty"`
	// ClientReadFraction, when set, is each client's own ReadFraction, by
	// client number (a client that only reads, one that only writes).
	ClientReadFraction []float64 `json:"client_read_fraction,omitempty"`
	// Latch is the latch workload's shape (Kind Latch only).
	Latch *LatchSpec `json:"latch,omitempty"`
	// InitEachCycle: a client sets a semaphore up (trySetPermits) before
	// every acquire, as Redisson's examples do — it is a no-op while the
	// semaphore exists — instead of once when it first uses it.
	InitEachCycle bool       `json:"init_each_cycle,omitempty"`
	Crash         *CrashSpec `json:"crash,omitempty"`
	// RestartDelay is how long a crashed client stays down.
	RestartDelay time.Duration `json:"restart_delay,omitempty"`
	// ClockOffset is every client's initial wall-clock offset (read only by
	// the timestamp recipes through lock.Options.WallClock).
	ClockOffset time.Duration `json:"clock_offset,omitempty"`

	// Rate limits each client to this many operations per second (0: no limit).
	Rate float64 `json:"rate,omitempty"`
	// TimeLimit: no cycle starts after it; required.
	TimeLimit time.Duration `json:"time_limit"`
	// MaxOps bounds the operations (acquire, release, read, write invokes)
	// each client issues; a client checks it before each cycle, so it may
	// exceed it by one cycle. 0: no count limit.
	MaxOps int `json:"max_ops,omitempty"`
	// Seed makes the draws of hold and think times, keys and crashes
	// repeatable (per client process); timing still depends on the machine.
	Seed uint64 `json:"seed,omitempty"`
}

// MaxClients is the most clients a workload runs.
const MaxClients = 10000

const maxNest = 100

// DefaultKeyPrefix starts every lock key of a workload that names none.
const DefaultKeyPrefix = "tumbler:"

// withDefaults returns c with the documented defaults filled in.
func (c Config) withDefaults() Config {
	c.Mode = c.Mode.OrDefault()
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.AcquireTimeout == 0 {
		c.AcquireTimeout = time.Second
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = time.Second
	}
	if c.Nest == 0 {
		c.Nest = 1
	}
	return c
}

// Validate reports the first problem with c (after defaults), naming it.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch c.Kind {
	case Mutex, FencedWrite, Counter, Latch:
	case "":
		bad("workload kind is missing (want one of %v)", kinds)
	default:
		bad("unknown workload kind %q (want one of %v)", c.Kind, kinds)
	}
	if c.ReadFraction < 0 || c.ReadFraction > 1 {
		bad("read_fraction = %v, want in [0, 1]", c.ReadFraction)
	}
	if n := len(c.ClientReadFraction); n > 0 && n != c.Clients {
		bad("client_read_fraction has %d fractions for %d clients", n, c.Clients)
	}
	for i, f := range c.ClientReadFraction {
		if f < 0 || f > 1 {
			bad("client_read_fraction[%d] = %v, want in [0, 1]", i, f)
		}
	}
	switch l := c.Latch; {
	case c.Kind == Latch && l == nil:
		bad("the latch workload needs latch: {count, counters, round}")
	case c.Kind != Latch && l != nil:
		bad("latch applies only to the latch workload, not %q", c.Kind)
	case l != nil:
		if l.Count < 1 {
			bad("latch.count = %d, want ≥ 1", l.Count)
		}
		if l.Counters < 1 || l.Counters >= c.Clients {
			bad("latch.counters = %d, want 1..%d (at least one client must wait)", l.Counters, c.Clients-1)
		}
		if l.Round <= 0 {
			bad("latch.round = %v, want > 0", l.Round)
		} else if _, hi := c.Hold.Durations(); hi > l.Round*6/10 {
			bad("hold max %v is over 0.6 of latch.round %v: count-downs must end well inside their round", hi, l.Round)
		}
	}
	switch c.Mode {
	case InProcess, Processes:
	default:
		bad("unknown client mode %q (want %q or %q)", c.Mode, InProcess, Processes)
	}
	if c.Clients < 1 || c.Clients > MaxClients {
		bad("clients = %d, want 1..%d", c.Clients, MaxClients)
	}
	if c.Keys < 1 {
		bad("keys = %d, want at least 1", c.Keys)
	}
	if c.Lock.Builder == "" {
		bad("lock.builder is missing: name a builder registered with workloads.RegisterBuilder")
	} else if lookupBuilder(c.Lock.Builder) == nil {
		bad("lock.builder %q is not registered (registered: %v)", c.Lock.Builder, builderNames())
	}
	if n := len(c.Lock.PerClient); n != 0 && n != c.Clients {
		bad("lock.per_client has %d specs for %d clients", n, c.Clients)
	}
	if c.Retry != nil {
		s := *c.Retry
		if s.Attempts < 0 || s.Delay < 0 || s.Jitter < 0 {
			bad("retry %+v has a negative field", s)
		} else if s.Attempts == 0 && s.Delay == 0 && s.Jitter == 0 {
			bad("retry waits with no delay between attempts: a busy loop against Redis")
		}
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			bad("%s = %v, want > 0", name, d)
		}
	}
	positive("acquire_timeout", c.AcquireTimeout)
	positive("op_timeout", c.OpTimeout)
	positive("time_limit (every workload is bounded in time)", c.TimeLimit)
	for _, r := range []struct {
		name string
		r    spans.Range
	}{{"hold", c.Hold}, {"think", c.Think}} {
		lo, hi := r.r.Durations()
		switch {
		case r.r.Relative():
			bad("%s range %s is relative to a TTL: resolve it first (spans.Range.Resolve)", r.name, r.r)
		case lo < 0 || hi < lo:
			bad("%s range [%v, %v] is invalid (want 0 ≤ min ≤ max)", r.name, lo, hi)
		}
	}
	if c.Crash != nil {
		if c.Crash.Step == "" {
			bad("crash.step is empty")
		}
		if !(c.Crash.Probability > 0 && c.Crash.Probability <= 1) {
			bad("crash.probability = %v, want in (0, 1]", c.Crash.Probability)
		}
		if c.Crash.Limit < 0 {
			bad("crash.limit = %d, want ≥ 0", c.Crash.Limit)
		}
	}
	if c.ExtendEvery < 0 {
		bad("extend_every = %v, want ≥ 0 (0: the client does not extend)", c.ExtendEvery)
	}
	if c.Nest < 1 || c.Nest > maxNest {
		bad("nest = %d, want 1..%d nested acquires", c.Nest, maxNest)
	}
	if c.RestartDelay < 0 {
		bad("restart_delay = %v, want ≥ 0", c.RestartDelay)
	}
	if c.Rate < 0 {
		bad("rate = %v ops/s, want ≥ 0", c.Rate)
	}
	if c.MaxOps < 0 {
		bad("max_ops = %d, want ≥ 0", c.MaxOps)
	}
	if len(errs) > 0 {
		return fmt.Errorf("workload config: %w", errors.Join(errs...))
	}
	return nil
}

// Key is the name of key i.
func (c Config) Key(i int) string { return fmt.Sprintf("%s%d", c.withDefaults().KeyPrefix, i) }

// readFraction is client i's share of read cycles.
func (c Config) readFraction(i int) float64 {
	if i < len(c.ClientReadFraction) {
		return c.ClientReadFraction[i]
	}
	return c.ReadFraction
}

// spec returns client i's lock spec.
func (c Config) spec(i int) json.RawMessage {
	if len(c.Lock.PerClient) > 0 {
		return c.Lock.PerClient[i]
	}
	return c.Lock.Spec
}

// grace bounds how long a cycle started before the time limit may run on.
func (c Config) grace() time.Duration {
	n := time.Duration(c.Nest)
	_, holdMax := c.Hold.Durations()
	g := n*c.AcquireTimeout + holdMax + (n+2)*c.OpTimeout + time.Second
	if c.Latch != nil {
		g += c.Latch.Round // the last round may start just before the limit
	}
	return g
}
