package workloads

import (
	"fmt"
	"sync"

	"github.com/tumbler-dev/tumbler/history"
)

// GateResource closes (true) or opens (false) the path between the client
// and the protected Resource, in either client mode. While it is closed the
// harness holds the client's requests: the Resource neither decides nor
// records them. When it opens they are delivered in the order the client
// sent them, as TCP retransmits what a short partition held up, and only
// then decided and recorded (the invoke keeps the time the client sent it;
// the outcome has the time of the decision). A client that stops waiting
// (OpTimeout) does not take back what it sent, and neither does one that
// crashes: its requests are still delivered. Requests still held when the
// client stops for good are dropped, never decided. The gate outlives the
// client's restarts. A Mutex workload has no Resource: its gate holds
// nothing. Opening never fails; closing the gate of a client that has
// stopped for good is an error, as there is nothing left to cut off.
func (c *Client) GateResource(closed bool) error {
	if closed {
		select {
		case <-c.done:
			return fmt.Errorf("client %d: close its resource gate: the client has stopped for good", c.id)
		default:
		}
	}
	c.link.setClosed(closed)
	return nil
}

// resourceLink carries one client's requests to the Resource, one at a
// time and in order, holding them while its gate is closed.
type resourceLink struct {
	w    *Workload
	wake chan struct{} // capacity 1: something to deliver, or the gate moved

	mu     sync.Mutex
	closed bool
	queue  []linkRequest
}

type linkRequest struct {
	invoke history.Op
	reply  func(history.Op)
}

func newResourceLink(w *Workload) *resourceLink {
	return &resourceLink{w: w, wake: make(chan struct{}, 1)}
}

// send queues a request checked by Workload.checkRequest; reply gets the
// Resource's outcome, from the link's goroutine, and must not block long.
func (l *resourceLink) send(invoke history.Op, reply func(history.Op)) {
	l.mu.Lock()
	l.queue = append(l.queue, linkRequest{invoke, reply})
	l.mu.Unlock()
	l.poke()
}

func (l *resourceLink) setClosed(closed bool) {
	l.mu.Lock()
	l.closed = closed
	l.mu.Unlock()
	l.poke()
}

func (l *resourceLink) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run delivers requests until stop is closed (the client stopped for
// good: nothing more will be sent), then delivers what the gate lets
// through and drops the rest.
func (l *resourceLink) run(stop <-chan struct{}) {
	for {
		l.deliver()
		select {
		case <-l.wake:
		case <-stop:
			l.deliver()
			return
		}
	}
}

func (l *resourceLink) deliver() {
	for {
		l.mu.Lock()
		if l.closed || len(l.queue) == 0 {
			l.mu.Unlock()
			return
		}
		r := l.queue[0]
		l.queue[0] = linkRequest{}
		l.queue = l.queue[1:]
		l.mu.Unlock()
		r.reply(l.w.decide(r.invoke))
	}
}
