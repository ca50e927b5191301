// Package history is the record of a run: every operation a client invoked
// and how it completed, and every fault the nemesis applied and healed, on
// one monotonic time base (nanoseconds since the run started). It is
// streamed to history.jsonl as the run goes, so a run killed midway still
// leaves a checkable file.
package history

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Type is how an operation record relates to the call it describes.
type Type string

// The four operation types of a Jepsen history.
const (
	Invoke Type = "invoke" // the call started
	OK     Type = "ok"     // it definitely happened
	Fail   Type = "fail"   // it definitely did not happen
	Info   Type = "info"   // unknown: it may or may not have happened
)

// Function names (Op.F) used by workloads and the nemesis.
const (
	Acquire = "acquire"
	Release = "release"
	Extend  = "extend"  // a renewal, by the client or its watchdog
	Write   = "write"   // a write to the protected resource
	Read    = "read"    // a read of the protected resource (counter)
	Crash   = "crash"   // the client process died or abandoned its step
	Start   = "start"   // nemesis: a fault begins
	Stop    = "stop"    // nemesis: a fault is healed
	Lost    = "lost"    // the lock told its holder the lease is gone (watchdog)
	Pause   = "pause"   // the client was stopped (informational, from the client's view)
	Message = "message" // free-form note (harness lifecycle)
	// Valid: the holder asked its lock's library, before acting, whether
	// its lease is still valid (lock.Validator; a workload that checks
	// validity). ok: the library said it is, with the end it gave in
	// ValidUntil (none when it gave none); fail: it said it is not; info:
	// no answer. The answer is the library's claim: it moves no lease's
	// validity (only an ok extend does).
	Valid = "valid"

	// Redisson's other synchronizers (package lock's siblings of Locker).
	// A semaphore's permits are acquire and release ops, a read-write
	// lock's holds too, with Op.Mode; these are the calls they add.

	// Enqueue: a fair-lock waiter's attempt that left it queued. Its ok
	// carries the queue entry's timeout in ValidUntil: unless the waiter
	// polls again before then, the next attempt of anyone purges it.
	Enqueue = "enqueue"
	// Dequeue: a fair-lock waiter that gave up removed itself from the
	// queue (ok: removed; info: unknown).
	Dequeue = "dequeue"
	// Init: a semaphore set up with Value permits, or a latch set to the
	// count Value (Redisson's trySetPermits, trySetCount); ok when it set
	// them, fail when the key existed already.
	Init = "init"
	// CountDown: a latch's count decremented.
	CountDown = "count-down"
	// Await: a latch waiter; ok when it passed (the count was zero), fail
	// when it gave up waiting.
	Await = "await"
)

// Modes of a read-write lock's ops (Op.Mode).
const (
	ModeRead  = "read"
	ModeWrite = "write"
)

// Process identifies the logical thread of control of an operation. Clients
// are numbered from 0; the nemesis is NemesisProcess and is written to JSON
// as "nemesis".
type Process int

// NemesisProcess is the process of fault events.
const NemesisProcess Process = -1

// MarshalJSON writes the nemesis as "nemesis" and clients as numbers.
func (p Process) MarshalJSON() ([]byte, error) {
	if p == NemesisProcess {
		return []byte(`"nemesis"`), nil
	}
	return strconv.AppendInt(nil, int64(p), 10), nil
}

// UnmarshalJSON accepts a number or "nemesis".
func (p *Process) UnmarshalJSON(b []byte) error {
	if string(b) == `"nemesis"` {
		*p = NemesisProcess
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("process must be a non-negative integer or \"nemesis\", got %s", b)
	}
	*p = Process(n)
	return nil
}

// Op is one line of the history.
type Op struct {
	// Index is the position in the history, assigned by the recorder.
	Index int64 `json:"index"`
	// Process and Client: the client number, or NemesisProcess for faults.
	// Process changes after a crash (Jepsen style); Client does not, so a
	// client pause or a clock fault can be tied to the client it hit.
	Process Process `json:"process"`
	Client  int     `json:"client"`
	Type    Type    `json:"type"`
	F       string  `json:"f"`
	Key     string  `json:"key,omitempty"`
	// Value: the owner value for lock operations (a semaphore's permit
	// id), the written or read value for resource operations, the count of
	// an init, a description for nemesis operations.
	Value string `json:"value,omitempty"`
	// Mode is "read" or "write" on the acquire, release and extend of a
	// read-write lock; empty for every other op.
	Mode string `json:"mode,omitempty"`
	// Token is the fencing token of the lease involved, when there is one.
	Token int64 `json:"token,omitempty"`
	// ValidUntil is the lease's validity end (ns since run start) on an ok
	// acquire or extend, the writer's validity on a write, and the queue
	// entry's timeout on an ok enqueue. A lease that never expires (one
	// whose library exposes no validity) carries one NoExpiry recognizes.
	ValidUntil int64 `json:"valid_until,omitempty"`
	// Time is when this record's event happened, ns since the run started,
	// on the harness host's monotonic clock.
	Time  int64  `json:"time"`
	Error string `json:"error,omitempty"`
	// Held is on a failed acquire the lock refused because another owner
	// held the key (lock.ErrHeld: its SET NX answered "not set"), a claim
	// the refusals checker holds it to.
	Held bool `json:"held,omitempty"`
	// Fault describes a nemesis operation (nil for client operations).
	Fault *Fault `json:"fault,omitempty"`
}

// Fault describes the fault of a nemesis start/stop record.
type Fault struct {
	// ID pairs a start with its stop (e.g. "f3").
	ID string `json:"id"`
	// Kind is the fault's name (partition, latency, kill, …).
	Kind string `json:"kind"`
	// Targets are the nodes, links or clients it hit.
	Targets []string `json:"targets,omitempty"`
	// Desc is one human sentence ("cut n1,n2 from every client (blackhole)").
	Desc string `json:"desc"`
	// Traits are what the fault does, as its kind declares it (Trait): the
	// windows, the checkers and guidance read a fault's meaning from them.
	// A history written before they were recorded has none (runner fills
	// them in from the fault's kind as it reads one).
	Traits TraitSet `json:"traits,omitempty"`

	// What the nemesis saw as it applied the fault (on the start record;
	// package coverage judges the dangerous windows from them).

	// Lease are the nodes a selector found holding the lease it aimed at
	// ("node": "lease": every node holding it, read as the step applied;
	// "node": "primary": the primary, on which a lease rests).
	Lease []string `json:"lease,omitempty"`
	// Empty: the fault's nodes come back without the data they held (a
	// kill or restart with persistence none, or of a node that ran
	// without persistence).
	Empty bool `json:"empty,omitempty"`
	// Offset is the clock offset the fault set, in ns (a clock or
	// client-clock fault; a strobe's largest).
	Offset int64 `json:"offset_ns,omitempty"`
	// Rate is the pace the fault ran a clock at against the host's (a
	// drift or client-drift fault: 1.5 gains half a second a second).
	Rate float64 `json:"rate,omitempty"`
	// CutReplication: the fault cut replication (a failover that cuts it
	// first, a partition of replication links).
	CutReplication bool `json:"cut_replication,omitempty"`
}

// IsNemesis reports whether op is a fault event.
func (o Op) IsNemesis() bool { return o.Process == NemesisProcess }

// String renders an op compactly for logs and error messages.
func (o Op) String() string {
	b, _ := json.Marshal(o)
	return string(b)
}

// Summary names the op for a person, as error messages about it do: `ok
// release of process 0 on key "tumbler:0"`, "nemesis start of fault f1".
func (o Op) Summary() string {
	if o.IsNemesis() {
		s := fmt.Sprintf("nemesis %s", o.F)
		if o.Type != Info && o.Type != "" {
			s = fmt.Sprintf("%s nemesis %s", o.Type, o.F)
		}
		if o.Fault != nil && o.Fault.ID != "" {
			s += " of fault " + o.Fault.ID
		}
		return s
	}
	s := fmt.Sprintf("%s %s of process %d", o.Type, o.F, int(o.Process))
	if o.Key != "" {
		s += fmt.Sprintf(" on key %q", o.Key)
	}
	return s
}
