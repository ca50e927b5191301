package redlock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// The pipelined transport. A Redlock fan-out through go-redis costs a
// goroutine hand-off per node, a pool checkout with a health-check syscall,
// and a blocking read per command; the caller cannot send to the next node
// before the previous one answered. Here each node of a *redis.Client has
// one connection, shared by every Lock on that client: the caller writes
// its command on each node's connection itself, one write each, and a
// reader goroutine per connection hands each reply to the fan-out that
// waits for it.
//
// Replies come back in the order the commands were written (Redis answers
// a connection's commands in order), so a node's commands are applied in
// the order this process sent them. That is what lets a fan-out answer at
// quorum: a command still in flight when the caller moved on reaches the
// server before any later command on the same connection — a straggling
// SET is followed by the release's compare-and-delete, not overtaken by it.
//
// The connection is dialled with the client's own dialer, address,
// username, password, database, client name and timeouts (redis.Options),
// so it goes where the client's connections go (through a proxy, to a
// Sentinel's primary). Clients whose connections need more than that
// (OnConnect, credentials providers, a Limiter, TLS) are served through
// go-redis instead (see directClient), as are clients of other types.
//
// A connection is dropped, and every command on it that was sent gets an
// unknown outcome, when a read or write fails, when the oldest command has
// waited longer than the client's ReadTimeout for its reply (a stalled or
// blackholed node), or when the stream cannot be decoded. Commands queued
// while a connection is being dialled are written once it is up; if the dial
// fails they were never sent, a definite failure. An idle connection (no
// command for idleFor) is closed, and its reader goroutine ends.

// opKind is one of the three commands a Redlock sends to a node.
type opKind uint8

const (
	opSet     opKind = iota // SET key value NX PX ttl
	opRelease               // single.ReleaseLua
	opExtend                // single.ExtendLua
	opLoad                  // SCRIPT LOAD of key (the source): the transport's own
)

// request is one command of a fan-out, the same for every node.
type request struct {
	op         opKind
	key, value string
	ttl        time.Duration
}

// definite is the error a failure of op wraps when the command surely did
// not run.
func (op opKind) definite() error {
	if op == opSet {
		return lock.ErrNotObtained
	}
	return lock.ErrNotHeld
}

var (
	releaseSHA = sha1Hex(single.ReleaseLua)
	extendSHA  = sha1Hex(single.ExtendLua)
)

func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

// encode appends req as SET or EVALSHA; eval sends the script's source
// instead (after NOSCRIPT).
func (req *request) encode(b []byte, eval bool) []byte {
	ms := req.ttl.Milliseconds()
	switch req.op {
	case opSet:
		b = appendArrayHeader(b, 6)
		b = appendBulk(b, "SET")
		b = appendBulk(b, req.key)
		b = appendBulk(b, req.value)
		b = appendBulk(b, "NX")
		b = appendBulk(b, "PX")
		return appendBulkInt(b, ms)
	case opRelease:
		b = appendArrayHeader(b, 5)
		b = appendScript(b, eval, single.ReleaseLua, releaseSHA)
		b = appendBulk(b, "1")
		b = appendBulk(b, req.key)
		return appendBulk(b, req.value)
	case opLoad:
		return appendCommand(b, "SCRIPT", "LOAD", req.key)
	default:
		b = appendArrayHeader(b, 6)
		b = appendScript(b, eval, single.ExtendLua, extendSHA)
		b = appendBulk(b, "1")
		b = appendBulk(b, req.key)
		b = appendBulk(b, req.value)
		return appendBulkInt(b, ms)
	}
}

func appendScript(b []byte, eval bool, src, sha string) []byte {
	if eval {
		return appendBulk(appendBulk(b, "EVAL"), src)
	}
	return appendBulk(appendBulk(b, "EVALSHA"), sha)
}

// result maps a reply to the error the fan-out records: for a SET, nil
// (granted), redis.Nil (held) or the server's error; for a script,
// single.ScriptResult's. ok is false for a reply no such command gets: the
// stream is out of step.
func (req *request) result(rep reply) (err error, ok bool) {
	if req.op == opLoad { // its SHA, or an error the script's EVAL will meet
		return nil, rep.kind == '$' || rep.kind == '-'
	}
	if rep.kind == '-' {
		err := serverError(rep.str)
		if req.op == opSet {
			return err, true
		}
		return single.ScriptResult(0, err, req.key), true
	}
	switch {
	case req.op == opSet && rep.kind == '+':
		return nil, true
	case req.op == opSet && rep.kind == '$' && rep.null:
		return redis.Nil, true
	case req.op != opSet && rep.kind == ':':
		return single.ScriptResult(rep.num, nil, req.key), true
	}
	return nil, false
}

func noScript(rep reply) bool {
	return rep.kind == '-' && len(rep.str) >= 8 && string(rep.str[:8]) == "NOSCRIPT"
}

// entry is one command written (or waiting for the dial) on a connection.
type entry struct {
	req   request
	r     *round    // nil for the transport's own commands (opLoad)
	i     int       // the node's index in the round
	sent  time.Time // when it was queued or written
	evald bool      // re-sent as EVAL after a NOSCRIPT
}

// fifo is a ring of entries in send order.
type fifo struct {
	buf     []entry
	head, n int
}

func (f *fifo) push(e entry) {
	if f.n == len(f.buf) {
		grown := make([]entry, max(8, 2*len(f.buf)))
		for i := range f.n {
			grown[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = grown, 0
	}
	f.buf[(f.head+f.n)%len(f.buf)] = e
	f.n++
}

func (f *fifo) front() *entry { return &f.buf[f.head] }

func (f *fifo) pop() entry {
	e := f.buf[f.head]
	f.buf[f.head] = entry{}
	f.head = (f.head + 1) % len(f.buf)
	f.n--
	return e
}

func (f *fifo) drain() []entry {
	out := make([]entry, 0, f.n)
	for f.n > 0 {
		out = append(out, f.pop())
	}
	return out
}

type connState uint8

const (
	stateDown    connState = iota // no connection: the next send dials
	stateDialing                  // a dial is under way; sends queue
	stateUp                       // sends write at once
	stateRetired                  // idle-closed and out of the registry
)

// node is the pipelined connection to one client's server.
type node struct {
	client *redis.Client
	opt    *redis.Options

	mu      sync.Mutex
	state   connState
	nc      net.Conn
	gen     uint64 // the connection's generation, unique in the process
	q       fifo
	out     []byte    // encoded commands not yet written
	lastUse time.Time // the last send
	rdl     time.Time // the read deadline set on nc; zero for none
	wdl     time.Time // the write deadline set on nc
}

// idle is how long a connection, or a goroutine parked for the go-redis
// transport, stays without work before it ends (atomic: tests shorten it).
var idleNanos atomic.Int64

func init() { idleNanos.Store(int64(5 * time.Second)) }

func idleFor() time.Duration { return time.Duration(idleNanos.Load()) }

// gens numbers connections, so that two requests compare equal only if
// they went out on the same one.
var gens atomic.Uint64

// nodes holds one node per client; a node idle-closed leaves it.
var nodes sync.Map // *redis.Client → *node

// directClient returns c as a *redis.Client if the pipelined transport can
// reproduce its connections, nil to go through go-redis.
func directClient(c redis.UniversalClient) *redis.Client {
	rc, ok := c.(*redis.Client)
	if !ok {
		return nil
	}
	o := rc.Options()
	// TLS too: the reader resumes after read deadlines (idle checks, the
	// oldest command's timeout), which a tls.Conn does not promise.
	if o.OnConnect != nil || o.CredentialsProvider != nil || o.CredentialsProviderContext != nil ||
		o.StreamingCredentialsProvider != nil || o.Limiter != nil || o.TLSConfig != nil || o.Dialer == nil {
		return nil
	}
	return rc
}

// send writes req for node i of round r on c's connection (or queues it
// behind the dial) and returns the connection's generation.
func send(c *redis.Client, req request, r *round, i int) uint64 {
	for {
		v, ok := nodes.Load(c)
		if !ok {
			v, _ = nodes.LoadOrStore(c, &node{client: c, opt: c.Options()})
		}
		if gen, ok := v.(*node).send(req, r, i); ok {
			return gen
		}
	}
}

// send is false when n was retired meanwhile: the caller takes the
// client's current node.
func (n *node) send(req request, r *round, i int) (uint64, bool) {
	n.mu.Lock()
	now := time.Now()
	switch n.state {
	case stateRetired:
		n.mu.Unlock()
		return 0, false
	case stateDown:
		n.gen = gens.Add(1)
		n.state = stateDialing
		go n.dial(n.gen)
	}
	n.lastUse = now
	n.q.push(entry{req: req, r: r, i: i, sent: now})
	gen := n.gen
	var failed []entry
	var cause error
	if n.state == stateUp { // otherwise the dial writes it
		n.out = req.encode(n.out, false)
		failed, cause = n.flush(now, n.q.n == 1)
	}
	n.mu.Unlock()
	n.failAll(failed, cause, true)
	return gen, true
}

// flush writes the encoded commands. fresh says the queue was empty before
// them: the read deadline then starts from now. It is called with n.mu held;
// on a write error the connection is dropped and the entries to fail are
// returned.
func (n *node) flush(now time.Time, fresh bool) ([]entry, error) {
	if rt := n.opt.ReadTimeout; fresh && rt > 0 {
		n.setReadDeadline(now.Add(rt))
	}
	if wt := n.opt.WriteTimeout; wt > 0 && n.wdl.Sub(now) < wt/2 {
		n.wdl = now.Add(wt)
		_ = n.nc.SetWriteDeadline(n.wdl)
	}
	_, err := n.nc.Write(n.out)
	n.out = n.out[:0]
	if err != nil {
		return n.drop(), fmt.Errorf("write: %w", err)
	}
	return nil, nil
}

func (n *node) setReadDeadline(t time.Time) {
	if !t.Equal(n.rdl) {
		n.rdl = t
		_ = n.nc.SetReadDeadline(t)
	}
}

// drop closes the connection, with n.mu held, and returns its entries.
func (n *node) drop() []entry {
	if n.nc != nil {
		_ = n.nc.Close()
	}
	n.nc, n.state, n.rdl, n.wdl = nil, stateDown, time.Time{}, time.Time{}
	n.out = n.out[:0]
	return n.q.drain()
}

// failAll hands every entry its failure: unknown if it may have been
// written, not sent if the connection never came up.
func (n *node) failAll(es []entry, cause error, written bool) {
	for _, e := range es {
		if e.r == nil {
			continue
		}
		var err error
		if !written {
			err = fmt.Errorf("%w: not sent to %s: %w", e.req.op.definite(), n.opt.Addr, cause)
		} else {
			err = fmt.Errorf("%w: %s: connection lost with the command in flight: %w", lock.ErrUnknown, n.opt.Addr, cause)
		}
		e.r.deliver(e.i, err)
	}
}

// dial connects generation gen, writes what was queued meanwhile, and
// becomes the connection's reader.
func (n *node) dial(gen uint64) {
	rd := newRespReader()
	nc, err := n.connect(rd)
	n.mu.Lock()
	if err != nil {
		es := n.drop()
		n.mu.Unlock()
		n.failAll(es, err, false)
		return
	}
	n.nc, n.state = nc, stateUp
	now := time.Now()
	// The scripts are loaded ahead of what was queued, in the same write:
	// a restarted server has none, and this spares the connection's first
	// EVALSHA a NOSCRIPT without costing a round trip. A failed load
	// surfaces on that EVALSHA's EVAL.
	queued := n.q.drain()
	for _, src := range []string{single.ReleaseLua, single.ExtendLua} {
		load := entry{req: request{op: opLoad, key: src}, sent: now}
		n.q.push(load)
		n.out = load.req.encode(n.out, false)
	}
	for _, e := range queued {
		e.sent = now
		n.out = e.req.encode(n.out, false)
		n.q.push(e)
	}
	failed, cause := n.flush(now, true)
	n.mu.Unlock()
	if failed != nil {
		n.failAll(failed, cause, true)
		return
	}
	n.read(nc, gen, rd)
}

// connect dials the client's server, and authenticates, selects the
// database and names the connection when the client's options say so, as
// go-redis would on a new connection; those replies are checked before any
// command goes out.
func (n *node) connect(rd *respReader) (net.Conn, error) {
	o := n.opt
	ctx, cancel := context.WithTimeout(context.Background(), o.DialTimeout)
	defer cancel()
	nc, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return nil, err
	}
	var b []byte
	var checked int // replies that must be +OK
	switch {
	case o.Password != "" && o.Username != "":
		b = appendCommand(b, "AUTH", o.Username, o.Password)
		checked++
	case o.Password != "":
		b = appendCommand(b, "AUTH", o.Password)
		checked++
	}
	if o.DB != 0 {
		b = appendCommand(b, "SELECT", fmt.Sprint(o.DB))
		checked++
	}
	if o.ClientName != "" {
		b = appendCommand(b, "CLIENT", "SETNAME", o.ClientName)
		checked++
	}
	if checked == 0 {
		return nc, nil // nothing to wait for before the first command
	}
	limit := o.ReadTimeout
	if limit <= 0 {
		limit = o.DialTimeout
	}
	_ = nc.SetDeadline(time.Now().Add(limit))
	if _, err = nc.Write(b); err == nil {
		for range checked {
			var rep reply
			if rep, err = rd.next(nc); err != nil {
				break
			}
			if rep.kind == '-' {
				err = fmt.Errorf("connection setup: %w", serverError(rep.str))
				break
			}
			if rep.kind != '+' {
				err = fmt.Errorf("%w: connection setup got %q", errProtocol, rep.kind)
				break
			}
		}
	}
	if err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return nc, nil
}

// read hands replies to their entries until the connection ends.
func (n *node) read(nc net.Conn, gen uint64, rd *respReader) {
	for {
		rep, err := rd.next(nc)
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			if n.deadline(gen) {
				continue
			}
			return
		}
		n.mu.Lock()
		if n.gen != gen || n.state != stateUp {
			n.mu.Unlock() // dropped meanwhile: its entries have their answer
			return
		}
		if err == nil && n.q.n == 0 {
			err = fmt.Errorf("%w: a reply with no command waiting for it", errProtocol)
		}
		var e entry
		var res error
		if err == nil {
			var ok bool
			e = *n.q.front()
			if res, ok = e.req.result(rep); !ok {
				err = fmt.Errorf("%w: reply %q to command %d", errProtocol, rep.kind, e.req.op)
			}
		}
		if err != nil {
			es := n.drop()
			n.mu.Unlock()
			n.failAll(es, err, true)
			return
		}
		n.q.pop()
		if (e.req.op == opRelease || e.req.op == opExtend) && noScript(rep) && !e.evald {
			// The server lost its scripts (SCRIPT FLUSH): send the source
			// once. It goes behind what is queued, as a retry through
			// go-redis would go behind other clients' commands.
			e.evald, e.sent = true, time.Now()
			n.out = e.req.encode(n.out, true)
			n.q.push(e)
			failed, cause := n.flush(e.sent, n.q.n == 1)
			n.mu.Unlock()
			if failed != nil {
				n.failAll(failed, cause, true)
				return
			}
			continue
		}
		if n.q.n == 0 && n.rdl.IsZero() {
			n.setReadDeadline(n.lastUse.Add(idleFor()))
		}
		n.mu.Unlock()
		if e.r != nil {
			e.r.deliver(e.i, res)
		}
	}
}

// deadline handles an expired read deadline on generation gen: drop the
// connection if its oldest command is overdue, close it if idle, otherwise
// set the next deadline. It returns whether the reader goes on.
func (n *node) deadline(gen uint64) bool {
	n.mu.Lock()
	if n.gen != gen || n.state != stateUp {
		n.mu.Unlock()
		return false
	}
	now := time.Now()
	rt := n.opt.ReadTimeout
	switch {
	case n.q.n > 0 && rt > 0 && now.Sub(n.q.front().sent) >= rt:
		cause := fmt.Errorf("no reply within the read timeout %v", rt)
		es := n.drop()
		n.mu.Unlock()
		n.failAll(es, cause, true)
		return false
	case n.q.n > 0 && rt > 0:
		n.setReadDeadline(n.q.front().sent.Add(rt))
	case n.q.n > 0:
		n.rdl = time.Time{}
		_ = n.nc.SetReadDeadline(time.Time{})
	case now.Sub(n.lastUse) >= idleFor():
		nodes.CompareAndDelete(n.client, n)
		n.drop()
		n.state = stateRetired
		n.mu.Unlock()
		return false
	default:
		n.setReadDeadline(n.lastUse.Add(idleFor()))
	}
	n.mu.Unlock()
	return true
}
