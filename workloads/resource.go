package workloads

import (
	"fmt"
	"sync"

	"github.com/tumbler-dev/tumbler/history"
)

// Recorder receives the history's operations as they happen; it must be
// safe for concurrent use and assigns Op.Index. *history.Recorder is one.
// A workload does not stop for a recording error: the recorder keeps it
// for whoever closes it (history.Recorder.Close reports the first).
type Recorder interface {
	Record(history.Op) (history.Op, error)
}

// Resource is the protected resource the harness owns: a register per key
// that clients read and write inside their critical sections. It decides
// every request itself, in one order, and records the request and its
// outcome with the time it decided, so the history shows what the resource
// really accepted, whatever the clients believed.
//
// A fenced Resource keeps, per key, the highest fencing token it accepted
// and rejects writes with a lower one (Kleppmann's fencing); an equal token
// is accepted, so that a holder may write more than once and the fencing
// checker can flag two grants that share a token. An unfenced Resource
// accepts every write, which is what lets a counter lose increments.
type Resource struct {
	clock  *history.Clock
	rec    Recorder
	fenced bool

	mu   sync.Mutex
	keys map[string]*ResourceState
}

// ResourceState is one key's state.
type ResourceState struct {
	// Value is the last accepted write's value ("0" before any write).
	Value string
	// Token is the highest token accepted (fenced resources).
	Token              int64
	Accepted, Rejected int
}

// NewResource makes an empty resource that records on rec with clock's times.
func NewResource(clock *history.Clock, rec Recorder, fenced bool) (*Resource, error) {
	if clock == nil || rec == nil {
		return nil, fmt.Errorf("resource needs a clock and a recorder (got clock %v, recorder %v)", clock != nil, rec != nil)
	}
	return &Resource{clock: clock, rec: rec, fenced: fenced, keys: map[string]*ResourceState{}}, nil
}

// Fenced reports whether writes with a lower token than the key's highest
// accepted token are rejected.
func (r *Resource) Fenced() bool { return r.fenced }

// State returns a copy of key's state.
func (r *Resource) State(key string) ResourceState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.keys[key]; s != nil {
		return *s
	}
	return ResourceState{Value: "0"}
}

// Apply carries out a client's request, given as its invoke op (F read or
// write, Time when the client sent it), records the invoke and the outcome,
// and returns the outcome: a read is ok with the current Value; a write is
// ok (accepted) or fail (rejected, the error names both tokens). A malformed
// request is refused with an error and nothing is recorded.
func (r *Resource) Apply(invoke history.Op) (history.Op, error) {
	if err := checkRequest(invoke); err != nil {
		return history.Op{}, err
	}
	return r.decide(invoke), nil
}

// decide is Apply for a request checkRequest accepted.
func (r *Resource) decide(invoke history.Op) history.Op {
	r.mu.Lock()
	defer r.mu.Unlock() // recording under the lock keeps the history in decision order
	_, _ = r.rec.Record(invoke)
	s := r.keys[invoke.Key]
	if s == nil {
		s = &ResourceState{Value: "0"}
		r.keys[invoke.Key] = s
	}
	done := invoke
	done.Type = history.OK
	switch {
	case invoke.F == history.Read:
		done.Value = s.Value
	case r.fenced && s.Accepted > 0 && invoke.Token < s.Token:
		done.Type = history.Fail
		done.Error = fmt.Sprintf("write rejected: token %d is lower than token %d already accepted", invoke.Token, s.Token)
		s.Rejected++
	default:
		s.Value = invoke.Value
		s.Token = max(s.Token, invoke.Token)
		s.Accepted++
	}
	done.Time = r.clock.Now()
	done, _ = r.rec.Record(done)
	return done
}

// checkRequest refuses anything but a read or write invoke on a key.
func checkRequest(invoke history.Op) error {
	if invoke.Type != history.Invoke || (invoke.F != history.Read && invoke.F != history.Write) || invoke.Key == "" {
		return fmt.Errorf("resource request must be a read or write invoke on a key, got %v", invoke)
	}
	return nil
}
