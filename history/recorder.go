package history

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// ErrClosed is returned by Record and Flush after Close.
var ErrClosed = errors.New("history: recorder closed")

// DefaultFlushInterval bounds how much of a run a crash of the harness can
// lose from history.jsonl.
const DefaultFlushInterval = 100 * time.Millisecond

// flushSize makes a burst of operations flush early instead of growing the
// buffer for a whole interval.
const flushSize = 1 << 20

// keepChunk is how many kept ops share one allocation.
const keepChunk = 8192

// RecorderOptions configure a Recorder. The zero value streams to the file
// only.
type RecorderOptions struct {
	// KeepOps keeps every recorded op in memory for Ops: for tests and
	// short recordings (the runner reads history.jsonl back instead, so a
	// long run does not hold its history twice).
	KeepOps bool
	// Observe, when set, sees every op right after it got its index, in
	// index order, on the goroutine that recorded it and while the
	// recorder's lock is held: it must be quick and must not call Record.
	// A Tracker's Observe method fits.
	Observe func(Op)
	// FlushInterval is the longest an op waits in memory before it is
	// written out; 0 means DefaultFlushInterval.
	FlushInterval time.Duration
}

// Recorder assigns indexes to operations in arrival order and streams them
// as JSON lines. It is safe for concurrent use. Writes to the underlying
// writer happen on a background goroutine at least every FlushInterval, on
// Flush and on Close, never on the goroutine that records.
type Recorder struct {
	mu      sync.Mutex // guards the fields below up to wmu
	next    int64
	buf     []byte
	ops     [][]Op // chunks of keepChunk ops
	err     error  // first write error, reported by Record from then on
	closed  bool
	keep    bool
	observe func(Op)

	wmu   sync.Mutex // serialises writes to w; guards spare
	w     io.Writer
	file  *os.File // non-nil when the recorder owns the file
	spare []byte

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewRecorder streams the history to w. The caller keeps ownership of w;
// Close flushes but does not close it.
func NewRecorder(w io.Writer, opts RecorderOptions) *Recorder {
	if w == nil {
		w = io.Discard
	}
	every := opts.FlushInterval
	if every <= 0 {
		every = DefaultFlushInterval
	}
	r := &Recorder{
		w:       w,
		keep:    opts.KeepOps,
		observe: opts.Observe,
		buf:     make([]byte, 0, 64<<10),
		spare:   make([]byte, 0, 64<<10),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go r.loop(every)
	return r
}

// CreateFile creates (or truncates) the history file at path and records to
// it. Close syncs and closes the file.
func CreateFile(path string, opts RecorderOptions) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: create %s: %w", path, err)
	}
	r := NewRecorder(f, opts)
	r.file = f
	return r, nil
}

// Record gives op the next index, keeps and observes it, queues its line
// for the file and returns it. The op is recorded even when the error is a
// failed write of earlier lines (the file is then incomplete and the run
// should fail); after Close nothing is recorded and the error is ErrClosed.
func (r *Recorder) Record(op Op) (Op, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return op, ErrClosed
	}
	op.Index = r.next
	r.next++
	r.buf = appendOp(r.buf, &op)
	if r.keep {
		// Fixed chunks: growing one slice would copy it under the lock,
		// stalling every client for tens of milliseconds in a long run.
		if n := len(r.ops); n == 0 || len(r.ops[n-1]) == keepChunk {
			r.ops = append(r.ops, make([]Op, 0, keepChunk))
		}
		last := &r.ops[len(r.ops)-1]
		*last = append(*last, op)
	}
	if r.observe != nil {
		r.observe(op)
	}
	full := len(r.buf) >= flushSize
	err := r.err
	r.mu.Unlock()
	if full {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	return op, err
}

// Len is the number of ops recorded so far.
func (r *Recorder) Len() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// Ops returns a copy of the ops recorded so far when KeepOps is set (nil
// otherwise), in index order.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.keep {
		return nil
	}
	out := make([]Op, 0, r.next)
	for _, c := range r.ops {
		out = append(out, c...)
	}
	return out
}

// Flush writes every op recorded so far to the writer.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return r.flush()
}

// Close flushes what is left, stops the background writer and, for a file
// made by CreateFile, syncs and closes it. It returns the first write error
// of the whole recording, if any. Close is idempotent.
func (r *Recorder) Close() error {
	r.mu.Lock()
	if r.closed {
		err := r.err
		r.mu.Unlock()
		return err
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	err := r.flush()
	if r.file != nil {
		if serr := r.file.Sync(); err == nil && serr != nil {
			err = fmt.Errorf("history: sync %s: %w", r.file.Name(), serr)
		}
		if cerr := r.file.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("history: close %s: %w", r.file.Name(), cerr)
		}
		r.file = nil
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	err = r.err
	r.mu.Unlock()
	return err
}

func (r *Recorder) loop(every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.kick:
		}
		r.flush() // a failure is kept in r.err and reported by Record
	}
}

// flush swaps the buffers under the record lock and writes outside it, so
// recording goroutines never wait for the disk.
func (r *Recorder) flush() error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.mu.Lock()
	b := r.buf
	r.buf = r.spare[:0]
	failed := r.err
	r.mu.Unlock()
	r.spare = b[:0]
	if failed != nil {
		return failed // the file already misses lines; appending more would hide where
	}
	if len(b) == 0 {
		return nil
	}
	if _, err := r.w.Write(b); err != nil {
		err = fmt.Errorf("history: write: %w", err)
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
		return err
	}
	return nil
}
