package lock_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// floor is the physical floor of a lock over N nodes, the reference
// BenchmarkLocks holds Redlock against: one raw TCP connection per node,
// each command written with one Write per connection, a reader goroutine
// per connection that decodes just enough RESP to tell OK from not and
// counts, and a caller woken once, by the reader whose reply made the
// quorum. Acquire is SET key value NX PX ttl, release is single's
// compare-and-delete by EVALSHA — the commands Redlock sends — with no
// timeouts, no error classification, no per-node results, no cleanup of a
// failed acquire: what any client library must do at least, and nothing
// more.
//
// Replies are matched to operations by counting: every operation writes
// exactly one command on every connection and a connection answers in
// order, so a connection's k-th reply belongs to operation k. Replies of an
// operation that already returned at quorum (the stragglers) are dropped
// when they come.
type floor struct {
	conns  []net.Conn
	quorum int
	// state is the current operation's number (high bits) and its counts
	// of successes and refusals (8 bits each), updated by the readers.
	state atomic.Uint64
	// wake is sent to once per operation, by the reader that decides it.
	wake chan struct{}
	// broken holds a reader's error: its connection is gone.
	broken atomic.Pointer[error]
	op     uint64 // operations issued so far
	buf    []byte
	sha    string
}

// newFloor dials one connection per address and loads the release script
// on each node; everything closes on cleanup.
func newFloor(tb testing.TB, addrs []string) *floor {
	tb.Helper()
	f := &floor{quorum: len(addrs)/2 + 1, wake: make(chan struct{}, 1)}
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

// read counts each reply on nc towards its operation, numbered as nc's
// replies are, and wakes the caller when the reply decides it.
func (f *floor) read(nc net.Conn) {
	r := bufio.NewReader(nc)
	refusals := uint64(len(f.conns) - f.quorum + 1) // that many make the quorum impossible
	for op := uint64(1); ; op++ {
		ok, err := readReply(r)
		if err != nil {
			f.fail(err)
			return
		}
		add := uint64(1 << 8) // a refusal
		if ok {
			add = 1
		}
		for {
			st := f.state.Load()
			if st>>16 != op {
				break // a straggler
			}
			next := st + add
			if f.state.CompareAndSwap(st, next) {
				if ok && next&0xff == uint64(f.quorum) || !ok && next>>8&0xff == refusals {
					f.wake <- struct{}{}
				}
				break
			}
		}
	}
}

// fail records a reader's error and wakes the caller.
func (f *floor) fail(err error) {
	f.broken.Store(&err)
	select {
	case f.wake <- struct{}{}:
	default:
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
	line = line[:len(line)-2]
	if line[0] == '$' { // a bulk string: SET's null "held", or its payload to skip
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return false, fmt.Errorf("floor: bulk length %q", line)
		}
		if n >= 0 {
			_, err = r.Discard(n + 2)
		}
		return false, err
	}
	return bytes.Equal(line, []byte("+OK")) || bytes.Equal(line, []byte(":1")), nil
}

// do writes the command cmd builds on every connection and waits for the
// quorum-th success; an error when the other nodes' refusals made it
// impossible.
func (f *floor) do(cmd func(b []byte) []byte) error {
	f.op++
	f.state.Store(f.op << 16)
	f.buf = cmd(f.buf[:0])
	for _, nc := range f.conns {
		if _, err := nc.Write(f.buf); err != nil {
			return err
		}
	}
	<-f.wake
	if err := f.broken.Load(); err != nil {
		return *err
	}
	if st := f.state.Load(); st&0xff < uint64(f.quorum) {
		return fmt.Errorf("floor: %d of %d nodes refused", st>>8&0xff, len(f.conns))
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
