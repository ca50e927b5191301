package workloads

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/spans"
)

// Kind names a workload.
type Kind string

// The workload kinds (ARCHITECTURE.md, "Packages and what each owns").
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
	// Latch: rounds of a count-down latch (a lock.KindLatch lock):
	// client 0 sets the round's latch, the counters count it down, the
	// others wait on it.
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
	Count    int        `json:"count"`
	Counters int        `json:"counters"`
	Round    spans.Span `json:"round"`
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

// String is the mode's name.
func (m Mode) String() string { return string(m) }

// Set parses a command-line flag's value into m (m is a pflag.Value):
// process, or in-process ("inprocess" too).
func (m *Mode) Set(s string) error {
	switch Mode(s) {
	case Processes, InProcess:
		*m = Mode(s)
	case "inprocess":
		*m = InProcess
	default:
		return fmt.Errorf("unknown client mode %q (valid: process, inprocess)", s)
	}
	return nil
}

// Type names a mode flag's value in help.
func (*Mode) Type() string { return "string" }

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

// Options are what the clients do, declared once: a plan's "workload"
// section is Options (runner.Plan.Workload), so their JSON names are the
// plan's, and a Config carries them to the workload with what the harness
// adds. Durations are spans.Span and ranges spans.Range: absolute
// ("750ms") or multiples of the lock's TTL ("0.5ttl"), resolved against
// Config.TTL.
type Options struct {
	Kind    Kind `json:"kind"`
	Mode    Mode `json:"mode,omitempty"` // default DefaultMode
	Clients int  `json:"clients"`
	// Keys contended for (a plan's default is 1); key i is KeyPrefix + i.
	// Each cycle picks one at random.
	Keys int `json:"keys,omitempty"`
	// Hold is how long a client keeps the lock (for Counter: between its
	// read and its write).
	Hold spans.Range `json:"hold"`
	// Think is the pause between two cycles of a client.
	Think spans.Range `json:"think,omitzero"`
	// Retry is how an acquire retries: RetryTry (one attempt per cycle) or
	// RetryWait (retry every RetryDelay plus up to RetryJitter until
	// AcquireTimeout; by default 5 ms plus up to 20 ms). Empty keeps the
	// variant's own strategy (a plan's default is RetryWait).
	Retry       string     `json:"retry,omitempty"`
	RetryDelay  spans.Span `json:"retry_delay,omitzero"`
	RetryJitter spans.Span `json:"retry_jitter,omitzero"`
	// AcquireTimeout bounds one Acquire call (default 1 s).
	AcquireTimeout spans.Span `json:"acquire_timeout,omitzero"`
	// OpTimeout bounds a release and a resource request (default 1 s).
	OpTimeout spans.Span `json:"op_timeout,omitzero"`
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
	ExtendEvery spans.Span `json:"extend_every,omitzero"`
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
	// other locks; unset is 0 here (a plan's default is 0.75).
	ReadFraction *float64 `json:"read_fraction,omitempty"`
	// ClientReadFraction, when set, is each client's own ReadFraction, by
	// client number (1: a client that only reads; 0: one that only writes).
	ClientReadFraction []float64 `json:"client_read_fraction,omitempty"`
	// ClientStart, when set, is each client's start, by client number: how
	// long after the run's start it begins its first cycle (a client that
	// crashes and comes back does not wait again). Staggered starts fix
	// who arrives first where a row's failure needs an order, as Jepsen's
	// stagger does; without them the clients start together.
	ClientStart []spans.Span `json:"client_start,omitempty"`
	// Latch is the latch workload's shape (Kind Latch only).
	Latch *LatchSpec `json:"latch,omitempty"`
	// InitEachCycle: a client sets a semaphore up (trySetPermits) before
	// every acquire, as Redisson's examples do — it is a no-op while the
	// semaphore exists — instead of once when it first uses it.
	InitEachCycle bool `json:"init_each_cycle,omitempty"`
	// Crash makes clients crash at a lock step with a probability.
	Crash *CrashSpec `json:"crash,omitempty"`
	// RestartDelay is how long a crashed client stays down.
	RestartDelay spans.Span `json:"restart_delay,omitzero"`
	// ClockOffset is every client's initial wall-clock offset (read only by
	// the timestamp recipes through lock.Options.WallClock).
	ClockOffset spans.Span `json:"clock_offset,omitzero"`
	// Rate limits each client to this many operations per second (0: no limit).
	Rate float64 `json:"rate,omitempty"`
	// MaxOps bounds the operations (acquire, release, read, write invokes)
	// each client issues; a client checks it before each cycle, so it may
	// exceed it by one cycle. 0: no count limit.
	MaxOps int `json:"max_ops,omitempty"`
}

// The retry strategies (Options.Retry).
const (
	RetryTry  = "try"
	RetryWait = "wait"
)

// Config describes a workload run: the Options, and what the harness adds
// (the lock's TTL, the keys' prefix, how clients build their locks, the
// time limit, the seed). It is plain data (JSON) so that it can travel to
// worker processes.
type Config struct {
	Options
	// TTL is the lock's TTL, against which the Options' relative spans
	// resolve (0 when they are all absolute).
	TTL       time.Duration `json:"ttl,omitempty"`
	KeyPrefix string        `json:"key_prefix,omitempty"` // default "tumbler:"
	Lock      LockSpec      `json:"lock"`
	// TimeLimit: no cycle starts after it; required.
	TimeLimit time.Duration `json:"time_limit"`
	// Seed makes the draws of hold and think times, keys and crashes
	// repeatable (per client process); timing still depends on the machine.
	Seed uint64 `json:"seed,omitempty"`
}

// MaxClients is the most clients a workload runs.
const MaxClients = 10000

const maxNest = 100

// DefaultKeyPrefix starts every lock key of a workload that names none.
const DefaultKeyPrefix = "tumbler:"

// DefaultAcquireTimeout and DefaultOpTimeout are Options.AcquireTimeout and
// Options.OpTimeout when a Config leaves them out.
const (
	DefaultAcquireTimeout = time.Second
	DefaultOpTimeout      = time.Second
)

// withDefaults returns c with the documented defaults filled in.
func (c Config) withDefaults() Config {
	c.Mode = c.Mode.OrDefault()
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.AcquireTimeout.IsZero() {
		c.AcquireTimeout = spans.Fixed(DefaultAcquireTimeout)
	}
	if c.OpTimeout.IsZero() {
		c.OpTimeout = spans.Fixed(DefaultOpTimeout)
	}
	if c.Nest == 0 {
		c.Nest = 1
	}
	return c
}

// Key is the name of key i.
func (c Config) Key(i int) string { return fmt.Sprintf("%s%d", c.withDefaults().KeyPrefix, i) }

// AllKeys are every key the workload's clients may lock: Keys of them, or
// for the latch workload one per round of the time limit.
func (c Config) AllKeys() []string {
	n := c.Keys
	if c.Kind == Latch && c.Latch != nil {
		if round := c.span(c.Latch.Round); round > 0 {
			n = int(c.TimeLimit/round) + 1
		}
	}
	out := make([]string, max(n, 1))
	for i := range out {
		out[i] = c.Key(i)
	}
	return out
}

// readFraction is client i's share of read cycles.
func (c Config) readFraction(i int) float64 {
	if i < len(c.ClientReadFraction) {
		return c.ClientReadFraction[i]
	}
	if c.ReadFraction != nil {
		return *c.ReadFraction
	}
	return 0
}

// startOf is how long after the run's start client i begins.
func (c Config) startOf(i int) time.Duration {
	if i < len(c.ClientStart) {
		return c.span(c.ClientStart[i])
	}
	return 0
}

// span is d under the config's TTL.
func (c Config) span(d spans.Span) time.Duration { return d.Resolve(c.TTL) }

// hold and think are the ranges under the config's TTL.
func (c Config) hold() spans.Range  { return c.Hold.Resolve(c.TTL) }
func (c Config) think() spans.Range { return c.Think.Resolve(c.TTL) }

// relativeSpans are the Options' spans that are multiples of the TTL, by
// name.
func (c Config) relativeSpans() map[string]fmt.Stringer {
	out := map[string]fmt.Stringer{}
	for name, r := range map[string]spans.Range{"hold": c.Hold, "think": c.Think} {
		if r.Relative() {
			out[name+" range"] = r
		}
	}
	all := map[string]spans.Span{}
	for _, f := range spans.Fields(&c.Options) {
		all[f.Name] = *f.Span
	}
	if c.Latch != nil {
		all["latch.round"] = c.Latch.Round
	}
	for i, d := range c.ClientStart {
		all[fmt.Sprintf("client_start[%d]", i)] = d
	}
	for name, s := range all {
		if s.Relative() {
			out[name] = s
		}
	}
	return out
}

// retry is the acquire strategy Retry names, and whether it names one
// (empty: the variant's own).
func (c Config) retry() (lock.Strategy, bool) {
	switch c.Retry {
	case RetryTry:
		return lock.TryOnce(), true
	case RetryWait:
		// Redlock's advice: retry after a random delay, or clients that
		// split the free nodes between them retry in lockstep and split
		// them again (seen: a second majority delayed by 1.3 s).
		delay, jitter := c.span(c.RetryDelay), c.span(c.RetryJitter)
		if delay == 0 && jitter == 0 {
			delay, jitter = 5*time.Millisecond, 20*time.Millisecond
		}
		return lock.Wait(delay, jitter), true
	}
	return lock.Strategy{}, false
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
	_, holdMax := c.hold().Durations()
	g := n*c.span(c.AcquireTimeout) + holdMax + (n+2)*c.span(c.OpTimeout) + time.Second
	if c.Latch != nil {
		g += c.span(c.Latch.Round) // the last round may start just before the limit
	}
	return g
}
