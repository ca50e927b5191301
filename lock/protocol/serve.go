package protocol

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// Opened is what a Go client makes of its init.
type Opened struct {
	// Library names what it drives, for the init's reply.
	Library string
	// Primitive makes the lock on key; Serve passes the step hook and the
	// retry strategy as options, which it must apply.
	Primitive func(key string, opts ...lock.Option) (lock.Primitive, error)
	// Close releases what it holds (connections); may be nil.
	Close func() error
}

// Opener makes a Go client's locks from its init; an error refuses the
// init (the reply is fail, with the error).
type Opener func(Init) (Opened, error)

// safety bounds a call Serve makes without a budget of its own; the
// harness gives up on a reply long before.
const safety = 30 * time.Second

// Serve is the client's side of the protocol for locks written in Go: it
// reads requests from in, runs them on the primitives open makes, and
// writes replies to out, until in ends. It is how tumbler's own locks
// speak the protocol (`tumbler client serve`), which tests the protocol
// against the same locks run in-process.
func Serve(in io.Reader, out io.Writer, open Opener) error {
	s := &server{r: newLineReader(in, nil), w: bufio.NewWriter(out), prims: map[string][2]lock.Primitive{}, leases: map[string]lock.Lease{}}
	line, err := s.r.next(time.Time{})
	if err != nil {
		return fmt.Errorf("protocol: no init: %w", err)
	}
	var init Init
	if err := json.Unmarshal(line, &init); err != nil || init.Type != TypeInit {
		return fmt.Errorf("protocol: the first line is not an init: %q", clip(line))
	}
	if err := init.Validate(); err != nil {
		return s.reply(Reply{InReplyTo: &init.ID, Type: TypeFail, Error: err.Error()})
	}
	opened, err := open(init)
	if err != nil {
		return s.reply(Reply{InReplyTo: &init.ID, Type: TypeFail, Error: err.Error()})
	}
	if opened.Close != nil {
		defer opened.Close()
	}
	s.open, s.init = opened, init
	if err := s.reply(Reply{InReplyTo: &init.ID, Type: TypeOK, Library: opened.Library}); err != nil {
		return err
	}
	for {
		line, err := s.r.next(time.Time{})
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("protocol: %w", err)
		}
		var req Request
		if err := json.Unmarshal(line, &req); err != nil {
			return fmt.Errorf("protocol: not a request: %q: %w", clip(line), err)
		}
		if err := s.reply(s.handle(req)); err != nil {
			return err
		}
	}
}

type server struct {
	r    *lineReader
	w    *bufio.Writer
	wmu  sync.Mutex
	open Opened
	init Init
	// prims are each key's primitive: [0] tries once, [1] waits.
	prims  map[string][2]lock.Primitive
	leases map[string]lock.Lease // by owner value, as granted
	steps  uint64
}

func (s *server) reply(r Reply) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.w.Flush()
}

// hook reports a step and waits for the harness to let the client go on.
func (s *server) hook(key string) lock.StepHook {
	return func(_ context.Context, step string) error {
		if s.init.Steps != nil && !slices.Contains(*s.init.Steps, step) {
			return nil
		}
		s.steps++
		id := s.steps
		if err := s.reply(Reply{Type: TypeStep, ID: id, Step: step, Key: key}); err != nil {
			return err
		}
		line, err := s.r.next(time.Time{})
		if err != nil {
			return fmt.Errorf("protocol: waiting for continue: %w", err)
		}
		var c Request
		if err := json.Unmarshal(line, &c); err != nil || c.Type != TypeContinue || c.InReplyTo != id {
			return fmt.Errorf("protocol: want continue of step %d, got %q", id, clip(line))
		}
		return nil
	}
}

// prim is key's primitive, waiting or trying once.
func (s *server) prim(key string, wait bool) (lock.Primitive, error) {
	ps, ok := s.prims[key]
	if !ok {
		for i, r := range []lock.Strategy{lock.TryOnce(), lock.Wait(5*time.Millisecond, 20*time.Millisecond)} {
			p, err := s.open.Primitive(key, lock.WithHook(s.hook(key)), lock.WithRetry(r))
			if err != nil {
				return nil, err
			}
			ps[i] = p
		}
		s.prims[key] = ps
	}
	if wait {
		return ps[1], nil
	}
	return ps[0], nil
}

func (s *server) handle(req Request) Reply {
	id := req.ID
	wait := req.WaitMS != nil && *req.WaitMS > 0
	budget := safety
	if wait {
		budget = time.Duration(*req.WaitMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	p, err := s.prim(req.Key, wait)
	if err != nil {
		return Reply{InReplyTo: &id, Type: TypeFail, Error: err.Error()}
	}
	rep, err := s.run(ctx, p, req)
	rep.InReplyTo = &id
	if err != nil {
		rep.Type, rep.Error = TypeInfo, err.Error()
		if errors.Is(err, lock.ErrNotObtained) || errors.Is(err, lock.ErrNotHeld) {
			rep.Type = TypeFail
		}
		rep.Held = req.Type == TypeAcquire && errors.Is(err, lock.ErrHeld)
		rep.Lease, rep.Set, rep.Count = nil, nil, nil
		return rep
	}
	rep.Type = TypeOK
	return rep
}

// run does req on p.
func (s *server) run(ctx context.Context, p lock.Primitive, req Request) (Reply, error) {
	switch req.Type {
	case TypeAcquire, TypeAcquireRead, TypeAcquireWrite, TypeAcquirePermits:
		l, err := s.locker(p, req.Type, "")
		if err != nil {
			return Reply{}, err
		}
		lease, err := l.Acquire(ctx)
		return s.granted(lease, modeOf(req.Type), err)
	case TypeRelease, TypeExtend:
		held := s.held(req)
		l, err := s.locker(p, "", held.mode)
		if err != nil {
			return Reply{}, err
		}
		if req.Type == TypeRelease {
			delete(s.leases, held.lease.Value)
			return Reply{}, l.Release(ctx, held.lease)
		}
		lease, err := l.Extend(ctx, held.lease)
		return s.granted(lease, held.mode, err)
	case TypeValid:
		return s.valid(ctx, p, req)
	case TypeSetPermits:
		sem, ok := p.(lock.Semaphore)
		if !ok {
			return Reply{}, fmt.Errorf("%w: %s is not a semaphore", lock.ErrConfig, req.Key)
		}
		set, err := sem.TrySetPermits(ctx)
		return Reply{Set: &set}, err
	}
	return s.latch(ctx, p, req)
}

// valid answers a valid request: the lock's own answer when it is a
// lock.Validator, else the validity of the lease as this process granted
// it, on this process's monotonic clock.
func (s *server) valid(ctx context.Context, p lock.Primitive, req Request) (Reply, error) {
	held := s.held(req)
	l, err := s.locker(p, "", held.mode)
	if err != nil {
		return Reply{}, err
	}
	var v lock.Validity
	if lv, ok := l.(lock.Validator); ok {
		if v, err = lv.Valid(ctx, held.lease); err != nil {
			return Reply{}, err
		}
	} else if held.lease.ValidUntil.IsZero() {
		return Reply{}, fmt.Errorf("%w: a lease this process did not grant: no validity to answer from", lock.ErrNotHeld)
	} else if now := time.Now(); held.lease.Valid(now) {
		v.Valid = true
		if held.lease.ValidUntil.Before(lock.NoExpiry(held.lease.Start)) {
			v.Until = held.lease.ValidUntil
		}
	}
	rep := Reply{Valid: &v.Valid}
	if v.Valid && !v.Until.IsZero() {
		ms := max(0, time.Until(v.Until).Milliseconds())
		rep.RemainingMS = &ms
	}
	return rep, nil
}

func (s *server) latch(ctx context.Context, p lock.Primitive, req Request) (Reply, error) {
	l, ok := p.(lock.Latch)
	if !ok {
		return Reply{}, fmt.Errorf("%w: request %q unknown for a %s", lock.ErrConfig, req.Type, s.init.Kind)
	}
	switch req.Type {
	case TypeSetCount:
		if req.Count == nil {
			return Reply{}, fmt.Errorf("%w: set_count without count", lock.ErrConfig)
		}
		set, err := l.TrySetCount(ctx, *req.Count)
		return Reply{Set: &set}, err
	case TypeCountDown:
		return Reply{}, l.CountDown(ctx)
	case TypeAwait:
		return Reply{}, l.Await(ctx)
	case TypeCount:
		n, err := l.Count(ctx)
		return Reply{Count: &n}, err
	}
	return Reply{}, fmt.Errorf("%w: request %q unknown", lock.ErrConfig, req.Type)
}

func modeOf(acquire string) string {
	switch acquire {
	case TypeAcquireRead:
		return history.ModeRead
	case TypeAcquireWrite:
		return history.ModeWrite
	}
	return ""
}

// locker is the Locker an acquire type or a lease's mode names on p.
func (s *server) locker(p lock.Primitive, acquire, mode string) (lock.Locker, error) {
	if mode == "" {
		mode = modeOf(acquire)
	}
	switch l := p.(type) {
	case lock.Locker:
		return l, nil
	case lock.ReadWriteLocker:
		if mode == history.ModeRead {
			return l.ReadLock(), nil
		}
		if mode == history.ModeWrite {
			return l.WriteLock(), nil
		}
		return nil, fmt.Errorf("%w: a read-write lock takes acquire_read or acquire_write", lock.ErrConfig)
	case lock.Semaphore:
		return semLocker{l}, nil
	}
	return nil, fmt.Errorf("%w: %T cannot be acquired", lock.ErrConfig, p)
}

// semLocker drives a semaphore's permits as a Locker.
type semLocker struct{ lock.Semaphore }

func (s semLocker) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if e, ok := s.Semaphore.(interface {
		Extend(context.Context, lock.Lease) (lock.Lease, error)
	}); ok {
		return e.Extend(ctx, l)
	}
	return lock.Lease{}, fmt.Errorf("%w: a plain semaphore's permits have no lease to extend", lock.ErrNotHeld)
}

type heldLease struct {
	lease lock.Lease
	mode  string
}

// held is the lease a release or extend names: as it was granted, when
// this process granted it.
func (s *server) held(req Request) heldLease {
	if req.Lease == nil {
		return heldLease{lease: lock.Lease{Key: req.Key}}
	}
	if l, ok := s.leases[req.Lease.Token]; ok {
		return heldLease{lease: l, mode: req.Lease.Mode}
	}
	return heldLease{lease: lock.Lease{Key: req.Key, Value: req.Lease.Token, Token: req.Lease.Fence}, mode: req.Lease.Mode}
}

// granted is the reply of a grant: the lease as a library exposes it.
func (s *server) granted(l lock.Lease, mode string, err error) (Reply, error) {
	if err != nil {
		return Reply{}, err
	}
	s.leases[l.Value] = l
	w := &Lease{Token: l.Value, Fence: l.Token, Mode: mode}
	if !l.ValidUntil.IsZero() {
		w.ValidUntilNS = history.Monotonic() + int64(time.Until(l.ValidUntil))
	}
	return Reply{Lease: w}, nil
}
