package history

import (
	"cmp"
	"slices"
	"sync"
)

// Holding is a client's current hold on a key as seen live.
type Holding struct {
	Process    Process
	Client     int
	Since      int64 // time of the acquire's ok
	ValidUntil int64 // latest validity the client was told (acquire or extend)
	Token      int64
	Index      int64 // the acquire's ok
	// Value is the lease's owner value, as the acquire's ok reported it.
	Value string
}

// TypeCounts counts the records of one function by type.
type TypeCounts struct {
	Invoke, OK, Fail, Info int64
}

// Tracker follows a run live for its status line and for a nemesis that
// targets "the client holding key k": pass its Observe method as
// RecorderOptions.Observe. It believes what clients were told (an ok
// acquire holds until its release is invoked, the lease is reported lost or
// the client crashes), which is exactly what the checkers question; it is a
// view for steering the run, not a verdict. Safe for concurrent use.
type Tracker struct {
	mu      sync.Mutex
	holders map[string]Holding
	counts  map[string]*TypeCounts
	faults  map[string]Fault
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{
		holders: map[string]Holding{},
		counts:  map[string]*TypeCounts{},
		faults:  map[string]Fault{},
	}
}

// Observe takes one recorded op.
func (t *Tracker) Observe(op Op) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.counts[op.F]
	if c == nil {
		c = &TypeCounts{}
		t.counts[op.F] = c
	}
	switch op.Type {
	case Invoke:
		c.Invoke++
	case OK:
		c.OK++
	case Fail:
		c.Fail++
	case Info:
		c.Info++
	}
	if op.IsNemesis() {
		if op.Fault != nil {
			switch op.F {
			case Start:
				t.faults[op.Fault.ID] = *op.Fault
			case Stop:
				delete(t.faults, op.Fault.ID)
			}
		}
		return
	}
	h, held := t.holders[op.Key]
	mine := held && h.Process == op.Process
	switch {
	case op.F == Acquire && op.Type == OK:
		t.holders[op.Key] = Holding{Process: op.Process, Client: op.Client, Since: op.Time,
			ValidUntil: op.ValidUntil, Token: op.Token, Index: op.Index, Value: op.Value}
	case op.F == Extend && op.Type == OK && mine:
		h.ValidUntil = max(h.ValidUntil, op.ValidUntil)
		t.holders[op.Key] = h
	case (op.F == Release && op.Type == Invoke || op.F == Lost) && mine:
		delete(t.holders, op.Key)
	case op.F == Crash:
		for k, h := range t.holders {
			if h.Process == op.Process {
				delete(t.holders, k)
			}
		}
	}
}

// Holder reports who holds key, if anyone. ValidUntil may be in the past:
// the client was not told otherwise.
func (t *Tracker) Holder(key string) (Holding, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.holders[key]
	return h, ok
}

// Counts returns the number of records per function and type so far.
func (t *Tracker) Counts() map[string]TypeCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]TypeCounts, len(t.counts))
	for f, c := range t.counts {
		out[f] = *c
	}
	return out
}

// ActiveFaults returns the faults started and not yet stopped, by ID.
func (t *Tracker) ActiveFaults() []Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Fault, 0, len(t.faults))
	for _, f := range t.faults {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Fault) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
