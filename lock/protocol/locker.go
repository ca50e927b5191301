package protocol

import (
	"context"
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// Primitive is the client's lock on key, of the kind its init names: a
// lock.Locker, lock.ReadWriteLocker, lock.Semaphore or lock.Latch. Of the
// options it honours the retry strategy (how long the library may wait,
// wait_ms), the step hook (the client's steps) and the wall clock (which
// the program's clock shim follows); the library does everything else.
func (p *Process) Primitive(key string, opts ...lock.Option) (lock.Primitive, error) {
	if err := lock.CheckKeyTTL(key, p.ttl()); err != nil {
		return nil, err
	}
	o := &options{Options: lock.DefaultOptions()}
	if err := lock.Apply(o, opts); err != nil {
		return nil, err
	}
	p.setWall(o.WallClock)
	l := &locker{p: p, key: key, o: o.Options, acquire: TypeAcquire}
	switch p.cfg.Init.Kind {
	case lock.KindReadWrite:
		return readWrite{l}, nil
	case lock.KindSemaphore:
		l.acquire = TypeAcquirePermits
		return semaphore{l}, nil
	case lock.KindLatch:
		return latch{l}, nil
	}
	if p.cfg.AnswersValid {
		return validator{l}, nil
	}
	return l, nil
}

type options struct{ lock.Options }

func (p *Process) ttl() time.Duration { return time.Duration(p.cfg.Init.TTLMS) * time.Millisecond }

// locker is a Locker over the protocol (also one mode of a read-write
// lock, and a semaphore's permits).
type locker struct {
	p       *Process
	key     string
	o       lock.Options
	acquire string
}

func (l *locker) Key() string { return l.key }

// waitMS is how long the library may wait for the lock: none for a single
// attempt, else what is left of ctx.
func (l *locker) waitMS(ctx context.Context) *int64 {
	var ms int64
	if d, ok := ctx.Deadline(); ok && l.o.Retry.Attempts != 1 {
		ms = max(0, time.Until(d).Milliseconds())
	}
	return &ms
}

func (l *locker) call(ctx context.Context, req Request) (Reply, error) {
	req.Key = l.key
	return l.p.do(ctx, req, l.o.Hook)
}

// outcome maps a reply that is not ok to the lock's errors: fail is a
// definite failure (notOK), info an unknown outcome.
func (l *locker) outcome(rep Reply, notOK error) error {
	msg := rep.Error
	if msg == "" {
		msg = "(no error given)"
	}
	if rep.Type == TypeFail {
		return fmt.Errorf("%w: %s: %s", notOK, l.p.cfg.Name, msg)
	}
	return fmt.Errorf("%w: %s: %s", lock.ErrUnknown, l.p.cfg.Name, msg)
}

func (l *locker) Acquire(ctx context.Context) (lock.Lease, error) {
	start := time.Now()
	rep, err := l.call(ctx, Request{Type: l.acquire, WaitMS: l.waitMS(ctx)})
	if err != nil {
		return lock.Lease{}, err
	}
	if rep.Type != TypeOK {
		notOK := lock.ErrNotObtained
		if rep.Held {
			notOK = lock.ErrHeld
		}
		return lock.Lease{}, l.outcome(rep, notOK)
	}
	return l.p.lease(l.key, start, *rep.Lease), nil
}

func (l *locker) Release(ctx context.Context, held lock.Lease) error {
	w := l.p.wire(held)
	rep, err := l.call(ctx, Request{Type: TypeRelease, Lease: &w})
	if err != nil {
		return err
	}
	l.p.forget(held)
	if rep.Type != TypeOK {
		return l.outcome(rep, lock.ErrNotHeld)
	}
	return nil
}

func (l *locker) Extend(ctx context.Context, held lock.Lease) (lock.Lease, error) {
	start := time.Now()
	w := l.p.wire(held)
	rep, err := l.call(ctx, Request{Type: TypeExtend, Lease: &w, TTLMS: l.p.cfg.Init.TTLMS})
	if err != nil {
		return lock.Lease{}, err
	}
	if rep.Type != TypeOK {
		return lock.Lease{}, l.outcome(rep, lock.ErrNotHeld)
	}
	l.p.forget(held)
	return l.p.lease(l.key, start, *rep.Lease), nil
}

// validator is a Locker over a program that answers the valid request.
type validator struct{ *locker }

// Valid asks the library whether held is still valid: an ok reply is its
// answer, a fail a lease it does not say is valid, an info no answer. The
// remaining lifetime it gave counts from the question: the library read
// its clock somewhere between the question and the answer, and only the
// question's time never makes the lease outlast what it said (counted
// from the answer, a reply delayed by load stretched it by the delay).
func (v validator) Valid(ctx context.Context, held lock.Lease) (lock.Validity, error) {
	w := v.p.wire(held)
	asked := time.Now()
	rep, err := v.call(ctx, Request{Type: TypeValid, Lease: &w})
	if err != nil {
		return lock.Validity{}, err
	}
	switch rep.Type {
	case TypeFail:
		return lock.Validity{}, nil
	case TypeInfo:
		return lock.Validity{}, v.outcome(rep, lock.ErrUnknown)
	}
	out := lock.Validity{Valid: *rep.Valid}
	if rep.RemainingMS != nil && out.Valid {
		out.Until = asked.Add(time.Duration(*rep.RemainingMS) * time.Millisecond)
	}
	return out, nil
}

// lease is what the library told its caller, as a lock.Lease: the owner
// value is the library's token (or one made up here, unique in the run),
// the fencing token its fence, and the validity what it exposed — or, if
// it exposed none, no expiry: its caller holds until it releases.
func (p *Process) lease(key string, start time.Time, w Lease) lock.Lease {
	p.mu.Lock()
	defer p.mu.Unlock()
	value := w.Token
	if value == "" {
		p.seq++
		value = fmt.Sprintf("c%d-%d", p.cfg.Init.Client, p.seq)
	}
	p.leases[value] = w
	valid := lock.NoExpiry(start)
	if w.ValidUntilNS != 0 {
		valid = time.Now().Add(time.Duration(w.ValidUntilNS - history.Monotonic()))
	}
	return lock.Lease{Key: key, Value: value, Token: w.Fence, Start: start, TTL: p.ttl(), ValidUntil: valid}
}

// wire is the lease as the client gave it.
func (p *Process) wire(l lock.Lease) Lease {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.leases[l.Value]; ok {
		return w
	}
	return Lease{Token: l.Value, Fence: l.Token}
}

func (p *Process) forget(l lock.Lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.leases, l.Value)
}

// readWrite is a read-write lock over the protocol.
type readWrite struct{ l *locker }

func (rw readWrite) Key() string { return rw.l.key }

func (rw readWrite) ReadLock() lock.Locker { return rw.mode(TypeAcquireRead) }

func (rw readWrite) WriteLock() lock.Locker { return rw.mode(TypeAcquireWrite) }

func (rw readWrite) mode(acquire string) lock.Locker {
	m := *rw.l
	m.acquire = acquire
	return &m
}

// semaphore is a semaphore over the protocol: its permits are leases.
type semaphore struct{ *locker }

func (s semaphore) Permits() int {
	if ls := s.p.cfg.Init.Lock; ls != nil {
		return ls.Permits
	}
	return 0
}

func (s semaphore) TrySetPermits(ctx context.Context) (bool, error) {
	rep, err := s.call(ctx, Request{Type: TypeSetPermits, Permits: s.Permits()})
	return set(s.locker, rep, err)
}

func set(l *locker, rep Reply, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	if rep.Type != TypeOK {
		return false, l.outcome(rep, lock.ErrNotObtained)
	}
	return *rep.Set, nil
}

// latch is a count-down latch over the protocol.
type latch struct{ l *locker }

func (t latch) Key() string { return t.l.key }

func (t latch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	rep, err := t.l.call(ctx, Request{Type: TypeSetCount, Count: &count})
	return set(t.l, rep, err)
}

func (t latch) CountDown(ctx context.Context) error {
	rep, err := t.l.call(ctx, Request{Type: TypeCountDown})
	if err == nil && rep.Type != TypeOK {
		err = t.l.outcome(rep, lock.ErrNotObtained)
	}
	return err
}

func (t latch) Await(ctx context.Context) error {
	var ms int64
	if d, ok := ctx.Deadline(); ok {
		ms = max(0, time.Until(d).Milliseconds())
	}
	rep, err := t.l.call(ctx, Request{Type: TypeAwait, WaitMS: &ms})
	if err == nil && rep.Type != TypeOK {
		err = t.l.outcome(rep, lock.ErrNotObtained)
	}
	return err
}

func (t latch) Count(ctx context.Context) (int64, error) {
	rep, err := t.l.call(ctx, Request{Type: TypeCount})
	if err != nil {
		return 0, err
	}
	if rep.Type != TypeOK {
		return 0, t.l.outcome(rep, lock.ErrUnknown)
	}
	return *rep.Count, nil
}
