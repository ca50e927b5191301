package workloads

import (
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// Stats summarises what a workload recorded.
type Stats struct {
	// Ops counts the recorded ops by f and type.
	Ops map[string]history.TypeCounts `json:"ops"`
	// Crashes is the number of client crashes (crash ops).
	Crashes int `json:"crashes"`
	// Processes is the number of history processes the clients used.
	Processes int           `json:"processes"`
	Elapsed   time.Duration `json:"elapsed"`
}

// counter passes ops on to the harness's Recorder and counts them.
type counter struct {
	rec Recorder
	mu  sync.Mutex
	ops map[string]*history.TypeCounts
}

func newCounter(rec Recorder) *counter {
	return &counter{rec: rec, ops: map[string]*history.TypeCounts{}}
}

func (c *counter) Record(op history.Op) (history.Op, error) {
	c.count(op)
	return c.rec.Record(op)
}

func (c *counter) count(op history.Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.ops[op.F]
	if n == nil {
		n = &history.TypeCounts{}
		c.ops[op.F] = n
	}
	switch op.Type {
	case history.Invoke:
		n.Invoke++
	case history.OK:
		n.OK++
	case history.Fail:
		n.Fail++
	default:
		n.Info++
	}
}

func (c *counter) stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Ops: make(map[string]history.TypeCounts, len(c.ops))}
	for f, n := range c.ops {
		s.Ops[f] = *n
	}
	s.Crashes = int(s.Ops[history.Crash].Info)
	return s
}

// procLog records the lock operations of one process and keeps its open
// invokes, so that when the process ends every invoke still open is
// completed as info (it may or may not have happened) and nothing the
// process does afterwards reaches the history. Its invokes pair with their
// completions by the history's own rule (history.Pending).
type procLog struct {
	rec    Recorder
	clock  *history.Clock
	proc   history.Process
	client int

	mu      sync.Mutex
	ended   bool
	pending history.Pending[history.Op]
}

func newProcLog(rec Recorder, clock *history.Clock, proc history.Process, client int) *procLog {
	return &procLog{rec: rec, clock: clock, proc: proc, client: client}
}

// record records op for this process, unless the process has ended.
func (p *procLog) record(op history.Op) {
	op.Process, op.Client = p.proc, p.client
	p.mu.Lock()
	defer p.mu.Unlock() // recording under the lock orders an op before the end's info ops
	if p.ended {
		return
	}
	switch {
	case !history.IsCall(op.F):
	case op.Type == history.Invoke:
		p.pending.Invoke(op, op)
	default:
		p.pending.Complete(op)
	}
	_, _ = p.rec.Record(op)
}

// end closes the process: open invokes become info ops with reason, and a
// crash op follows if the process crashed. It reports false if the process
// had already ended.
// setClock gives a prepared client's log the run's clock, at Begin.
func (p *procLog) setClock(c *history.Clock) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clock = c
}

func (p *procLog) end(reason string, crashed bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return false
	}
	p.ended = true
	var now int64 // a worker that ends before Begin has no clock yet, and no ops
	if p.clock != nil {
		now = p.clock.Now()
	}
	for _, inv := range p.pending.All() {
		op := inv
		op.Type, op.Time, op.Error = history.Info, now, reason
		_, _ = p.rec.Record(op)
	}
	p.pending = history.Pending[history.Op]{}
	if crashed {
		_, _ = p.rec.Record(history.Op{Process: p.proc, Client: p.client, Type: history.Info, F: history.Crash, Time: now, Error: reason})
	}
	return true
}
