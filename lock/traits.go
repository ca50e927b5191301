package lock

import (
	"fmt"
	"strings"
)

// Kind is the shape of what a lock is: a Locker, or one of its siblings
// (kinds.go). It is declared here once: a variant's registration, a lock
// client program's manifest, the lock client protocol's init and the
// checkers' subject all name a lock's kind with it.
type Kind string

// The kinds. A new one is added to Kinds, with its interface in Of; the
// tests of this package, of lock/protocol, lock/variants and checker fail
// until every one of them knows it.
const (
	// KindLock is a Locker (the default).
	KindLock Kind = "lock"
	// KindReadWrite is a ReadWriteLocker.
	KindReadWrite Kind = "read-write"
	// KindSemaphore is a Semaphore.
	KindSemaphore Kind = "semaphore"
	// KindLatch is a Latch.
	KindLatch Kind = "latch"
)

// Kinds lists every kind.
var Kinds = []Kind{KindLock, KindReadWrite, KindSemaphore, KindLatch}

// Check says what is wrong with k: "" is KindLock, any other value must be
// one of Kinds.
func (k Kind) Check() error {
	if k == "" {
		return nil
	}
	for _, known := range Kinds {
		if k == known {
			return nil
		}
	}
	names := make([]string, len(Kinds))
	for i, known := range Kinds {
		names[i] = string(known)
	}
	return fmt.Errorf("kind %q unknown (valid: %s)", string(k), strings.Join(names, ", "))
}

// Or is k, or KindLock when k is "".
func (k Kind) Or() Kind {
	if k == "" {
		return KindLock
	}
	return k
}

// Of reports whether p is of kind k: it implements the kind's interface.
func (k Kind) Of(p Primitive) bool {
	switch k.Or() {
	case KindLock:
		_, ok := p.(Locker)
		return ok
	case KindReadWrite:
		_, ok := p.(ReadWriteLocker)
		return ok
	case KindSemaphore:
		_, ok := p.(Semaphore)
		return ok
	case KindLatch:
		_, ok := p.(Latch)
		return ok
	}
	return false
}

// Traits are what a lock declares of itself and the harness asks of it,
// never its name: its kind, how it uses the servers, what its grants
// promise and the steps it reports. They are declared once, here, and
// embedded where a lock is described: a variant's registration
// (variants.Info) and a lock client program's manifest (client.json), whose
// JSON names these are.
type Traits struct {
	// Kind is what the lock is ("" is KindLock).
	Kind Kind `json:"kind,omitempty"`
	// Servers is how it uses the servers.
	Servers
	// Grants is what its grants promise.
	Grants
	// Steps are the lock steps it reports to its StepHook (a lock client
	// program: as step messages), where a step-pause or step-crash fault
	// can stop a client; a hunt draws from them.
	Steps []Step `json:"steps,omitempty"`
}

// Servers is how a lock uses the servers.
type Servers struct {
	// AllNodes: the lock talks to every node of the topology (Redlock
	// style); otherwise it uses one node (the primary, found by Sentinel or
	// in a cluster).
	AllNodes bool `json:"all_nodes,omitempty"`
	// CrossSlot: the lock's script touches keys in different hash slots,
	// which a Redis Cluster refuses (CROSSSLOT).
	CrossSlot bool `json:"cross_slot,omitempty"`
	// OddMasters: the lock needs an odd number of masters (Redlock's
	// majority quorum: an even count tolerates no more failed nodes than
	// one node fewer would, and a contest can split evenly).
	OddMasters bool `json:"odd_masters,omitempty"`
	// Accepts lists the settings only some locks take that apply to this
	// one, by their JSON names (variants' Opt constants); a plan that sets
	// one it does not accept is refused. A semaphore's permits go with its
	// kind.
	Accepts []string `json:"accepts,omitempty"`
}

// Grants is what a lock's grants promise.
type Grants struct {
	// Tokens: every grant carries a fencing token (Lease.Token) greater
	// than that of every earlier grant of the key, which a fenced resource
	// orders writes by (under a fenced-write workload the fencing checker
	// judges them). A manifest calls it "fencing".
	Tokens bool `json:"fencing,omitempty"`
	// Reentrant: an acquire by the holder's own owner nests (a hold
	// count), and the hold ends when as many releases were made: a plan
	// may nest its holds (workload nest) and the checkers count them.
	Reentrant bool `json:"reentrant,omitempty"`
	// Fair: the lock grants in the order its waiters queued, and reports
	// each waiter's queue entry and exit (Options.OnQueue), which the
	// fairness checker judges.
	Fair bool `json:"fair,omitempty"`
}

// Step is a step a lock reports to its StepHook.
type Step struct {
	Name string `json:"name"`
	// Acquiring: the step comes inside Acquire, on the client's way to a
	// grant (the servers' grant in hand, or a place in a queue); otherwise
	// it comes inside Release.
	Acquiring bool `json:"acquiring,omitempty"`
}

// StepNames are the names of steps, in order.
func StepNames(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Name
	}
	return out
}
