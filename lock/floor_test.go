package lock_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// floor is the physical floor of a lock over N nodes, the reference
// BenchmarkLocks holds Redlock against: one raw TCP connection per node,
// each command written with one Write per connection, a reader goroutine
// per connection that decodes just enough RESP to tell OK from not, and a
// caller that returns at the quorum-th success. Acquire is SET key value
// NX PX ttl, release is single's compare-and-delete by EVALSHA — the
// commands Redlock sends — with no timeouts, no error classification, no
// per-node bookkeeping beyond a count, no cleanup of a failed acquire:
// what any client library must do at least, and nothing more.
//
// Replies are matched to operations by counting: every operation writes
// exactly one command on every connection and a connection answers in
// order, so a connection's k-th reply belongs to operation k. Replies of an
// operation that already returned at quorum (the stragglers) are skipped
// when they come.
type floor struct {
	conns   []net.Conn
	quorum  int
	replies chan floorReply
	op      uint64 // operations issued so far
	buf     []byte
	sha     string
}

// floorReply is one node's reply to operation op.
type floorReply struct {
	op uint64
	ok bool
	// err is a read error: the connection is gone.
	err error
}

// newFloor dials one connection per address and loads the release script
// on each node; everything closes on cleanup.
func newFloor(tb testing.TB, addrs []string) *floor {
	tb.Helper()
	f := &floor{quorum: len(addrs)/2 + 1, replies: make(chan floorReply, 4*len(addrs))}
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
		sha, err := c.ScriptLoad(context.Background(), single.ReleaseLua).Result()
		_ = c.Close()
		if err != nil {
			tb.Fatalf("floor: SCRIPT LOAD on %s: %v", addr, err)
		}
		f.sha = sha
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			tb.Fatalf("floor: dial %s: %v", addr, err)
		}
		tb.Cleanup(func() { _ = nc.Close() })
		f.conns = append(f.conns, nc)
		go f.read(nc)
	}
	return f
}

// read hands each reply on nc to the caller, numbered as nc's replies are.
func (f *floor) read(nc net.Conn) {
	r := bufio.NewReader(nc)
	for op := uint64(1); ; op++ {
		ok, err := readReply(r)
		f.replies <- floorReply{op: op, ok: ok, err: err}
		if err != nil {
			return
		}
	}
}

// readReply reads one RESP2 reply: ok for +OK or :1 (a SET granted, a
// compare-and-delete that deleted), not ok for anything else.
func readReply(r *bufio.Reader) (ok bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return false, err
	}
	if len(line) < 3 {
		return false, fmt.Errorf("floor: short reply %q", line)
	}
	s := string(line[:len(line)-2])
	if s[0] == '$' { // a bulk string: SET's null "held", or its payload to skip
		n, err := strconv.Atoi(s[1:])
		if err != nil {
			return false, fmt.Errorf("floor: bulk length %q", s)
		}
		if n >= 0 {
			_, err = r.Discard(n + 2)
		}
		return false, err
	}
	return s == "+OK" || s == ":1", nil
}

// do writes the command cmd builds on every connection and waits for the
// quorum-th success; an error when the other nodes' refusals made it
// impossible.
func (f *floor) do(cmd func(b []byte) []byte) error {
	f.op++
	f.buf = cmd(f.buf[:0])
	for _, nc := range f.conns {
		if _, err := nc.Write(f.buf); err != nil {
			return err
		}
	}
	granted, answered := 0, 0
	for granted < f.quorum {
		r := <-f.replies
		if r.err != nil {
			return r.err
		}
		if r.op != f.op {
			continue // a straggler of an earlier operation
		}
		answered++
		if r.ok {
			granted++
		} else if answered-granted > len(f.conns)-f.quorum {
			return fmt.Errorf("floor: %d of %d nodes refused", answered-granted, len(f.conns))
		}
	}
	return nil
}

// cycle acquires key for ttl and releases it, each at quorum.
func (f *floor) cycle(key string, ttl time.Duration) error {
	value := lock.RandomValue()
	ms := strconv.FormatInt(ttl.Milliseconds(), 10)
	if err := f.do(func(b []byte) []byte { return respCommand(b, "SET", key, value, "NX", "PX", ms) }); err != nil {
		return fmt.Errorf("floor acquire: %w", err)
	}
	if err := f.do(func(b []byte) []byte { return respCommand(b, "EVALSHA", f.sha, "1", key, value) }); err != nil {
		return fmt.Errorf("floor release: %w", err)
	}
	return nil
}

// respCommand appends args as a RESP array of bulk strings.
func respCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
