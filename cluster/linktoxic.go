package cluster

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// The cluster's own toxiproxy never adds or removes a toxic once a proxy
// runs: each proxy gets one linkToxic per stream when it is made, and a
// cut, a delay or a heal only changes that toxic's state. Toxiproxy
// v2.12.0 cannot be trusted to change a running chain: removing a toxic
// from a connection that is closing (a blackhole's cleanup closes it; a
// connection whose near side closed during the removal) returns before the
// connection's chain is trimmed, and the next toxic added to that stream
// while the connection is still registered indexes past the proxy's chain
// and panics the whole process (ToxicLink.AddToxic: index out of range).
// Reply losses that cut and delay the same links make that common.

// linkToxicType is linkToxic's name in toxiproxy's registry.
const linkToxicType = "tumbler_link"

func init() { toxics.Register(linkToxicType, new(linkToxic)) }

// streamFault is what one stream of a link does to its data now.
type streamFault struct {
	// cut: "" (none), Reset or Blackhole; a cut wins over a delay.
	cut CutMode
	// latency ± jitter (uniform) for every chunk, from when it was read.
	latency, jitter time.Duration
}

// streamState is one stream's fault, shared by every connection of the
// link. changed is closed and replaced at every change, so a connection
// waiting on a chunk or on input re-reads the fault at once.
type streamState struct {
	mu      sync.Mutex
	fault   streamFault
	changed chan struct{}
	// lifts counts the times a blackhole was lifted: a connection that saw
	// the blackhole is closed at its lift, as a partition's end does, even
	// when another blackhole follows before it looks.
	lifts uint64
}

func newStreamState() *streamState { return &streamState{changed: make(chan struct{})} }

// read is the fault now, the channel that closes at its next change and the
// count of lifts so far.
func (s *streamState) read() (streamFault, <-chan struct{}, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fault, s.changed, s.lifts
}

// update changes the fault by f; it reports whether anything changed
// (re-applying the same fault leaves connections as they are).
func (s *streamState) update(f func(*streamFault)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.fault
	f(&next)
	if next == s.fault {
		return false
	}
	if s.fault.cut == Blackhole && next.cut != Blackhole {
		s.lifts++
	}
	s.fault = next
	close(s.changed)
	s.changed = make(chan struct{})
	return true
}

// linkToxic is the one toxic on each stream of the cluster's proxies. Its
// state is set once, before the proxy accepts a connection.
type linkToxic struct {
	state *streamState
}

// conn is one connection's view of a stream, for the length of a Pipe.
type conn struct {
	stub     *toxics.ToxicStub
	st       *streamState
	sawLifts uint64 // lifts when this connection last saw a blackhole
	inHole   bool   // it has seen a blackhole since
}

// observe reads the fault and notes a blackhole; it reports true when a
// blackhole this connection saw has been lifted since: the caller closes.
func (c *conn) observe() (streamFault, <-chan struct{}, bool) {
	f, changed, lifts := c.st.read()
	if c.inHole && lifts != c.sawLifts {
		return f, changed, true
	}
	if f.cut == Blackhole {
		c.inHole, c.sawLifts = true, lifts
	}
	return f, changed, false
}

// Pipe moves one connection's stream through the link's fault. It returns
// when toxiproxy interrupts it (the proxy stops) or after closing the
// connection: at a reset's first bytes, at a blackhole's lift, or when the
// near side closed (a blackhole keeps the far side open until its lift).
func (t *linkToxic) Pipe(stub *toxics.ToxicStub) {
	c := &conn{stub: stub, st: t.state}
	for {
		_, changed, lifted := c.observe()
		if lifted {
			stub.Close()
			return
		}
		select {
		case <-stub.Interrupt:
			return
		case <-changed:
		case chunk := <-stub.Input:
			if !c.carry(chunk) {
				return
			}
		}
	}
}

// carry applies the fault to one chunk (nil: the near side closed); false
// means the connection is closed or the pipe was interrupted.
func (c *conn) carry(chunk *stream.StreamChunk) bool {
	var deadline time.Time
	for {
		f, changed, lifted := c.observe()
		switch {
		case lifted:
			c.stub.Close()
			return false
		case f.cut == Reset:
			c.stub.Close()
			return false
		case f.cut == Blackhole:
			if chunk != nil {
				return true // dropped
			}
			// The near side closed; the far side stays open until the lift.
			select {
			case <-c.stub.Interrupt:
				return false
			case <-changed:
				continue
			}
		case chunk == nil:
			c.stub.Close()
			return false
		}
		if f.latency > 0 && deadline.IsZero() {
			deadline = chunk.Timestamp.Add(f.latency + jitter(f.jitter))
		} else if f.latency == 0 {
			deadline = time.Time{}
		}
		wait := time.Until(deadline)
		if deadline.IsZero() || wait <= 0 {
			return c.send(chunk)
		}
		timer := time.NewTimer(wait)
		select {
		case <-c.stub.Interrupt:
			timer.Stop()
			return false
		case <-changed:
			timer.Stop()
			deadline = time.Time{} // a new delay counts from the chunk's read
		case <-timer.C:
			return c.send(chunk)
		}
	}
}

func (c *conn) send(chunk *stream.StreamChunk) bool {
	select {
	case c.stub.Output <- chunk:
		return true
	case <-c.stub.Interrupt:
		return false
	}
}

// jitter is uniform in [-j, j], as toxiproxy's latency toxic draws it.
func jitter(j time.Duration) time.Duration {
	if j <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(2*j)+1)) - j
}
