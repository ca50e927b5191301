package workloads

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

// Prepare starts the clients as Start does, but holds each before its
// first operation: a client first builds its locks — in process mode its
// worker starts, and a lock client program starts and answers its init —
// then waits for Begin. Jepsen opens its clients before the generator
// starts for the same reason: a run's schedule counts from time zero, and
// a client still starting its interpreter at a fault's time would miss it.
//
// h's Clock and Resource are not needed yet (Begin gives them); a client
// that cannot get ready ends the workload, and Ready says why.
func Prepare(ctx context.Context, cfg Config, h Harness) (*Workload, error) {
	return start(ctx, cfg, h, true)
}

// holding is the part of a Workload that Prepare's clients wait on.
type holding struct {
	on    bool          // from Prepare: clients wait for Begin
	began chan struct{} // closed by Begin

	mu       sync.Mutex
	notReady int           // first sessions not ready yet
	ready    chan struct{} // closed when notReady reaches 0
	limit    *time.Timer   // the time limit, from Begin
}

func newHolding(on bool, clients int) *holding {
	h := &holding{on: on, began: make(chan struct{}), notReady: clients, ready: make(chan struct{})}
	if !on || clients == 0 {
		close(h.began)
		close(h.ready)
		h.notReady = 0
	}
	return h
}

// readied marks one client's first session ready (once per client).
func (h *holding) readied(c *Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.ready {
		return
	}
	c.ready = true
	if h.notReady--; h.notReady == 0 {
		close(h.ready)
	}
}

// Ready waits until every client's first session is ready to run (its
// locks built, its worker and lock client program started), the workload
// ended (a client could not get ready: its error), or ctx ended.
func (w *Workload) Ready(ctx context.Context) error {
	select {
	case <-w.hold.ready:
		return nil
	case <-w.done:
		if w.err != nil {
			return w.err
		}
		return errors.New("the workload ended before its clients were ready")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Begin starts a prepared workload's clients at time zero of clock: the
// time limit counts from now. resource is the Harness's Resource.
func (w *Workload) Begin(clock *history.Clock, resource *Resource) error {
	if !w.hold.on {
		return errors.New("workloads: Begin is for a workload from Prepare")
	}
	select {
	case <-w.hold.began:
		return errors.New("workloads: Begin called twice")
	default:
	}
	h := w.h
	h.Clock, h.Resource = clock, resource
	if err := h.check(w.cfg); err != nil {
		return err
	}
	w.h = h
	w.started = time.Now()
	w.deadline = clock.Now() + int64(w.cfg.TimeLimit)
	w.hold.mu.Lock()
	w.hold.limit = time.AfterFunc(w.cfg.TimeLimit+w.cfg.grace(), w.cancel)
	w.hold.mu.Unlock()
	close(w.hold.began) // publishes h, started and deadline to the clients
	return nil
}

// stopLimit stops Begin's timer once the workload is over.
func (h *holding) stopLimit() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.limit != nil {
		h.limit.Stop()
	}
}

func (h *holding) isReady(c *Client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return c.ready
}

// waitBegin holds a client's first session, ready, until Begin; false when
// the workload stopped first.
func (c *Client) waitBegin() bool {
	c.w.hold.readied(c)
	select {
	case <-c.w.hold.began:
		return true
	case <-c.w.ctx.Done():
		return false
	}
}

// errNeverReady is a first session that ended before its client was
// ready in a prepared workload.
func (c *Client) errNeverReady(crashed bool) error {
	if crashed {
		return fmt.Errorf("client %d: its worker crashed before the client was ready", c.id)
	}
	return fmt.Errorf("client %d: its first session ended before the client was ready", c.id)
}
