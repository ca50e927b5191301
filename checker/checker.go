package checker

import (
	"errors"
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// Verdict is the outcome of a check.
type Verdict string

// The three verdicts, as in Jepsen.
const (
	Valid   Verdict = "valid"
	Invalid Verdict = "invalid"
	Unknown Verdict = "unknown" // could not decide (e.g. a time limit)
)

// merge: invalid beats unknown beats valid.
func merge(a, b Verdict) Verdict {
	switch {
	case a == Invalid || b == Invalid:
		return Invalid
	case a == Unknown || b == Unknown:
		return Unknown
	}
	return Valid
}

// Kind classifies an anomaly (or a warning).
type Kind string

// Anomaly kinds. Each makes the history invalid.
const (
	// DoubleGrant: two clients held the same lock at once (mutual exclusion).
	DoubleGrant Kind = "double-grant"
	// NotLinearizable: no order of the lock's operations fits a lease mutex.
	NotLinearizable Kind = "not-linearizable"
	// TokenReuse: two grants of one lock carried the same fencing token.
	TokenReuse Kind = "token-reuse"
	// TokenOrder: the resource accepted a write whose token did not exceed
	// the token of the previous accepted write of another lease.
	TokenOrder Kind = "token-order"
	// StaleWrite: a write accepted after its writer's lease ended while
	// another client held the lock (granted after the writer's validity
	// ended or still holding then, and before the write was accepted). In a
	// fenced workload a write carrying a token is left to the fencing
	// checker (the resource ordered it by token) and only noted.
	StaleWrite Kind = "stale-write"
	// LostUpdate: an accepted counter write did not advance the counter
	// (it overwrote increments), or the final value falls short of the
	// acknowledged increments.
	LostUpdate Kind = "lost-update"
	// Unavailable: nobody could take a lock for more than k×TTL while
	// clients kept trying, nobody held it and no fault was active (a lock
	// that never expires).
	Unavailable Kind = "unavailable"
	// WriterOverlap: a read-write lock's write hold overlapped another
	// client's hold, read or write (readers-writers).
	WriterOverlap Kind = "writer-overlap"
	// UnfairGrant: a fair lock was granted to a waiter while another,
	// queued before it and still waiting with a live queue entry, was
	// passed over (fairness).
	UnfairGrant Kind = "unfair-grant"
	// PermitsExceeded: more clients held a semaphore's permits at once than
	// it has, or a client acted on the resource after its permit ended
	// while all permits were held by others (semaphore).
	PermitsExceeded Kind = "permits-exceeded"
	// LatchEarly: a latch waiter passed before the count could have
	// reached zero (latch).
	LatchEarly Kind = "latch-early"
	// LatchStuck: the count reached zero, yet a waiter gave up waiting long
	// after (latch-liveness).
	LatchStuck Kind = "latch-stuck"
	// RefusedWhileFree: the lock refused an acquire as held by another
	// owner while no lease could hold the key: a command ran that its
	// client was told had not (refusals).
	RefusedWhileFree Kind = "refused-while-free"
)

// AnomalyKinds lists every anomaly kind, in the order above.
var AnomalyKinds = []Kind{
	DoubleGrant, NotLinearizable, TokenReuse, TokenOrder, StaleWrite, LostUpdate, Unavailable,
	WriterOverlap, UnfairGrant, PermitsExceeded, LatchEarly, LatchStuck, RefusedWhileFree,
}

// Warning kinds: noted, not anomalies.
const (
	// WriteOutsideLease: a write accepted after its writer's lease ended,
	// with no other client holding the lock meanwhile, or accepted in
	// token order by a fenced resource.
	WriteOutsideLease Kind = "write-outside-lease"
	// CounterJump: an accepted counter write skipped values (an increment
	// with an unknown outcome probably took effect).
	CounterJump Kind = "counter-jump"
)

// Config tells the checkers about the run.
type Config struct {
	// TTL of the lock. Required: liveness measures in TTLs.
	TTL time.Duration
	// LivenessK: a lock nobody could take for more than K×TTL is an
	// anomaly. 0 means 3.
	LivenessK float64
	// LinearizabilityTimeout bounds porcupine's search of each piece of a
	// key's history (pieces.go; pieces are searched in parallel, each
	// within it); a piece it runs out on makes the linearizability verdict
	// unknown, naming the piece. 0 means 30 s.
	LinearizabilityTimeout time.Duration
	// LinearizabilityMemory bounds the memory porcupine may use for the
	// pieces it searches at once (it keeps a bitset of the piece per state
	// it explores, ~n²/8 bytes for n operations, more when it backtracks):
	// a piece that needs more is not searched, or is stopped, and makes the
	// verdict unknown, naming the piece. 0 means 1 GiB.
	LinearizabilityMemory int64
	// Subject is what the history is of: what the checkers must know to
	// read it, and from which each checker says whether it applies.
	Subject
	// MaxAnomalies caps the anomalies and warnings kept per checker (all
	// are counted). 0 means 100.
	MaxAnomalies int
	// Skip names checkers not to run (e.g. Linearizability on a huge
	// history).
	Skip []string
}

// The bounds a Config (or a plan's check section) leaves out.
const (
	DefaultLivenessK              = 3
	DefaultLinearizabilityTimeout = 30 * time.Second
	DefaultLinearizabilityMemory  = 1 << 30
)

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.TTL <= 0:
		return c, fmt.Errorf("checker: Config.TTL must be positive, got %v", c.TTL)
	case c.LivenessK < 0:
		return c, fmt.Errorf("checker: Config.LivenessK must not be negative, got %v", c.LivenessK)
	case c.LinearizabilityTimeout < 0:
		return c, fmt.Errorf("checker: Config.LinearizabilityTimeout must not be negative, got %v", c.LinearizabilityTimeout)
	case c.LinearizabilityMemory < 0:
		return c, fmt.Errorf("checker: Config.LinearizabilityMemory must not be negative, got %d", c.LinearizabilityMemory)
	case c.MaxAnomalies < 0:
		return c, fmt.Errorf("checker: Config.MaxAnomalies must not be negative, got %d", c.MaxAnomalies)
	}
	if err := c.Subject.validate(); err != nil {
		return c, err
	}
	c.Shape = c.Shape.Or()
	for _, s := range c.Skip {
		if !IsName(s) {
			return c, fmt.Errorf("checker: Config.Skip: unknown checker %q (known: %v)", s, Names())
		}
	}
	if c.LivenessK == 0 {
		c.LivenessK = DefaultLivenessK
	}
	if c.LinearizabilityTimeout == 0 {
		c.LinearizabilityTimeout = DefaultLinearizabilityTimeout
	}
	if c.LinearizabilityMemory == 0 {
		c.LinearizabilityMemory = DefaultLinearizabilityMemory
	}
	if c.MaxAnomalies == 0 {
		c.MaxAnomalies = 100
	}
	return c, nil
}

// Anomaly is one thing that went wrong (or, in Result.Warnings, one thing
// worth a look).
type Anomaly struct {
	Kind    Kind   `json:"kind"`
	Checker string `json:"checker"`
	Key     string `json:"key,omitempty"`
	// Ops are the history indexes involved, the main one first.
	Ops []int64 `json:"ops"`
	// Clients involved, in the order of Ops.
	Clients []int `json:"clients,omitempty"`
	// From and To (ns since run start) delimit what went wrong: the
	// overlap of a double grant, a stale write's time outside its lease,
	// the span a lock was unavailable…
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// At is when the anomaly happened — became observable: the start of a
	// double grant's overlap or of an unavailable span, the second grant of
	// a reused token, the acceptance of a stale or out-of-order write, the
	// return of an operation no order fits. Time to first anomaly is
	// measured to it.
	At int64 `json:"at"`
	// Faults are the IDs of the faults active while the story of the
	// anomaly unfolded (see Result.Faults).
	Faults []string `json:"faults,omitempty"`
	// Explanation is one sentence for a person.
	Explanation string `json:"explanation"`
}

// CheckerResult is one checker's verdict.
type CheckerResult struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	// Skipped: not applicable to this run or in Config.Skip; Verdict is
	// then valid and Reason says why.
	Skipped bool `json:"skipped,omitempty"`
	// Reason explains an unknown verdict or a skip.
	Reason string `json:"reason,omitempty"`
	// Anomalies and Warnings count everything found (the Result keeps at
	// most Config.MaxAnomalies of each per checker).
	Anomalies int `json:"anomalies"`
	Warnings  int `json:"warnings,omitempty"`
	// Stats are counts worth reporting (holds, unknown acquires, rejected
	// writes…).
	Stats map[string]int64 `json:"stats,omitempty"`
	// Notes are sentences for the report.
	Notes    []string      `json:"notes,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// FaultWindow is a fault as the nemesis recorded it.
type FaultWindow struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	Targets []string `json:"targets,omitempty"`
	Desc    string   `json:"desc"`
	Start   int64    `json:"start"`
	// Stop is the latest stop record, or the end of the history when the
	// fault was never stopped (Healed false).
	Stop   int64 `json:"stop"`
	Healed bool  `json:"healed"`
	// Effect is until when the fault's effects lasted: Stop, or later when
	// a client pause it caused outlasted it (a step-pause fires while it is
	// armed, and the client stays stopped past the disarming). Anomalies
	// are tied to the faults whose [Start, Effect] they meet.
	Effect  int64 `json:"effect_end"`
	StartOp int64 `json:"start_op"`
	StopOp  int64 `json:"stop_op"` // -1 when never stopped
	// Skipped: the nemesis recorded the fault as never taking effect (its
	// target or triggering event did not come).
	Skipped bool `json:"skipped,omitempty"`
	// Traits are what the fault does (history.Fault.Traits).
	Traits history.TraitSet `json:"traits,omitempty"`
	// Fired counts the pauses and crashes of its target clients that began
	// while it was active: for a fault that arms a lock step, how often the
	// step was reached (0 means the armed client never got there).
	Fired int `json:"fired,omitempty"`
}

// Idle says why the fault did nothing, or "" when it took effect: the
// nemesis skipped it, or it armed a lock step no client reached while armed.
// A verdict under an idle fault says nothing about that fault.
func (f FaultWindow) Idle() string {
	switch {
	case f.Skipped:
		return "skipped: it never took effect"
	case f.Traits.Has(history.ArmsStep) && f.Fired == 0:
		return "no client reached the armed step"
	}
	return ""
}

// Attempts counts acquire outcomes in a time window.
type Attempts struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
	OK   int   `json:"ok"`
	Fail int   `json:"fail"`
	// Unknown: info outcomes.
	Unknown int `json:"unknown"`
	// SuccessRate is OK over all attempts, 0 without attempts.
	SuccessRate float64 `json:"success_rate"`
}

// FaultAvailability compares acquire success before, during and after a
// fault; Before and After are as long as the fault (at least one TTL).
type FaultAvailability struct {
	Fault  string   `json:"fault"`
	Before Attempts `json:"before"`
	During Attempts `json:"during"`
	After  Attempts `json:"after"`
	// Within counts the acquires both begun and ended while the fault was
	// active: what the fault alone decided (During also counts acquires
	// that were granted before it began and returned after).
	Within Attempts `json:"within"`
}

// CounterSummary is one counter key at the end of the run.
type CounterSummary struct {
	Key string `json:"key"`
	// Final is the value of the last accepted write or ok read.
	Final int64 `json:"final"`
	// Acknowledged counts accepted (ok) increments, Unknown the writes with
	// unknown outcome.
	Acknowledged int64 `json:"acknowledged"`
	Unknown      int64 `json:"unknown"`
	// Lost is how many acknowledged increments the final value misses.
	Lost int64 `json:"lost"`
}

// Result is the combined verdict with everything the report shows.
type Result struct {
	Verdict      Verdict             `json:"verdict"`
	Checkers     []CheckerResult     `json:"checkers"`
	Anomalies    []Anomaly           `json:"anomalies"`
	Warnings     []Anomaly           `json:"warnings,omitempty"`
	Faults       []FaultWindow       `json:"faults,omitempty"`
	Availability []FaultAvailability `json:"availability,omitempty"`
	Counters     []CounterSummary    `json:"counters,omitempty"`
	// Ops is the number of history records checked; End the last time.
	Ops int   `json:"ops"`
	End int64 `json:"end"`

	lin *linVisual // porcupine's data for the HTML visualization
}

// Checker returns the result of the named checker.
func (r *Result) Checker(name string) (CheckerResult, bool) {
	for _, c := range r.Checkers {
		if c.Name == name {
			return c, true
		}
	}
	return CheckerResult{}, false
}

// HistoryError is a history that breaks the checkers' contract, at the op
// with history index Index: a completion without its invoke or of another
// function, a completion before its invoke, indexes out of order, a fault
// stopped before it started.
type HistoryError struct {
	Index int64
	// Reason names the op and what is wrong with it.
	Reason string
}

func (e *HistoryError) Error() string { return fmt.Sprintf("checker: op %d: %s", e.Index, e.Reason) }

// report collects one checker's findings.
type report struct {
	CheckerResult
	p         *prepared
	max       int
	anomalies []Anomaly
	warnings  []Anomaly
}

// anomaly records a, filling in the checker and the faults active in
// [ctxFrom, a.To].
func (r *report) anomaly(a Anomaly, ctxFrom int64) {
	r.Anomalies++
	if len(r.anomalies) < r.max {
		r.anomalies = append(r.anomalies, r.complete(a, ctxFrom))
	}
}

func (r *report) warning(a Anomaly, ctxFrom int64) {
	r.Warnings++
	if len(r.warnings) < r.max {
		r.warnings = append(r.warnings, r.complete(a, ctxFrom))
	}
}

// complete fills in the checker, unless set the faults active in
// [ctxFrom, a.To] and, unless set, when the anomaly happened: a double
// grant and an unavailable span happen where they begin, everything else
// when its last operation returned.
func (r *report) complete(a Anomaly, ctxFrom int64) Anomaly {
	a.Checker = r.Name
	if a.Faults == nil {
		a.Faults = r.p.faultsIn(min(ctxFrom, a.From), a.To)
	}
	if a.At == 0 {
		a.At = a.To
		if a.Kind == DoubleGrant || a.Kind == Unavailable {
			a.At = a.From
		}
	}
	return a
}

// full: the anomalies kept have reached Config.MaxAnomalies, so further
// ones are only counted.
func (r *report) full() bool { return len(r.anomalies) >= r.max }

func (r *report) stat(name string, v int64) {
	if r.Stats == nil {
		r.Stats = map[string]int64{}
	}
	r.Stats[name] = v
}

func (r *report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// undecided makes the checker's verdict unknown.
func (r *report) undecided(reason string) {
	r.Verdict = Unknown
	r.Reason = reason
}

var errNoVisual = errors.New("checker: linearizability was not checked, nothing to visualize")
