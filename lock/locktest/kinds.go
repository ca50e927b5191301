package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/lock"
)

// RWSuite is the conformance suite of a read-write lock
// (lock.ReadWriteLocker): its write lock passes Suite as a mutex, readers
// share, and a writer excludes readers and writers.
type RWSuite struct {
	// New returns an independent owner's read-write lock on key.
	New func(t testing.TB, key string, ttl time.Duration) lock.ReadWriteLocker
	// Exclude names tests that do not apply (Suite's names for the write
	// lock, or RWShare, RWExclusion, RWContention), mapped to the reason.
	Exclude map[string]string
	TTL     time.Duration
}

// Names of RWSuite's own tests.
const (
	RWShare      = "ReadersShare"
	RWExclusion  = "WriterExcludes"
	RWContention = "Contention"
)

// Run runs Suite on the write lock, then the read-write tests.
func (s RWSuite) Run(t *testing.T) {
	if s.TTL == 0 {
		s.TTL = 400 * time.Millisecond
	}
	t.Run("WriteLock", func(t *testing.T) {
		Suite{New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return s.New(t, key, ttl).WriteLock()
		}, Exclude: s.Exclude, TTL: s.TTL}.Run(t)
	})
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{{RWShare, s.share}, {RWExclusion, s.exclusion}, {RWContention, s.contention}} {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := s.Exclude[tc.name]; ok {
				t.Skipf("excluded for this variant: %s", why)
			}
			tc.f(t)
		})
	}
}

func (s RWSuite) share(t *testing.T) {
	key := Key(t)
	a, b := s.New(t, key, s.TTL), s.New(t, key, s.TTL)
	la, err := a.ReadLock().Acquire(Context(t))
	if err != nil {
		t.Fatalf("reader A: %v", err)
	}
	lb, err := b.ReadLock().Acquire(Context(t))
	if err != nil {
		t.Fatalf("reader B while A reads: %v (readers must share)", err)
	}
	if la.Value == lb.Value {
		t.Fatalf("two owners' read leases carry the same value %q", la.Value)
	}
	if err := a.ReadLock().Release(Context(t), la); err != nil {
		t.Fatalf("reader A release: %v", err)
	}
	if err := b.ReadLock().Release(Context(t), lb); err != nil {
		t.Fatalf("reader B release: %v", err)
	}
	if err := b.ReadLock().Release(Context(t), lb); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release of B's read lease: err = %v, want ErrNotHeld", err)
	}
}

func (s RWSuite) exclusion(t *testing.T) {
	key := Key(t)
	r, w, r2 := s.New(t, key, s.TTL), s.New(t, key, s.TTL), s.New(t, key, s.TTL)
	lr, err := r.ReadLock().Acquire(Context(t))
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	if _, err := w.WriteLock().Acquire(Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("writer while a reader holds: err = %v, want ErrNotObtained", err)
	}
	if err := r.ReadLock().Release(Context(t), lr); err != nil {
		t.Fatalf("reader release: %v", err)
	}
	lw, err := w.WriteLock().Acquire(Context(t))
	if err != nil {
		t.Fatalf("writer after the last reader left: %v", err)
	}
	if _, err := r2.ReadLock().Acquire(Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("reader while a writer holds: err = %v, want ErrNotObtained", err)
	}
	if err := w.ReadLock().Release(Context(t), lw); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("the writer's lease released through the read lock: err = %v, want ErrNotHeld", err)
	}
	if err := w.WriteLock().Release(Context(t), lw); err != nil {
		t.Fatalf("writer release: %v", err)
	}
	lr2, err := r2.ReadLock().Acquire(Context(t))
	if err != nil {
		t.Fatalf("reader after the writer left: %v", err)
	}
	if err := r2.ReadLock().Release(Context(t), lr2); err != nil {
		t.Fatalf("reader release: %v", err)
	}
}

// contention runs readers and writers that wait for their turn; a writer
// must always be alone, and readers must at some point be inside together.
func (s RWSuite) contention(t *testing.T) {
	const owners, rounds = 6, 12
	ttl := 2 * time.Second
	key := Key(t)
	var readers, writers, maxReaders atomic.Int64
	var bad atomic.Value
	var wg sync.WaitGroup
	errs := make(chan error, owners)
	c := Context(t)
	for i := 0; i < owners; i++ {
		rw := s.New(t, key, ttl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				write := (i+r)%3 == 0
				l := rw.ReadLock()
				if write {
					l = rw.WriteLock()
				}
				lease, err := acquireWait(c, l)
				if err != nil {
					errs <- err
					return
				}
				if write {
					if w := writers.Add(1); w > 1 || readers.Load() > 0 {
						bad.Store(fmt.Sprintf("a writer entered with %d writers and %d readers inside", w-1, readers.Load()))
					}
				} else {
					n := readers.Add(1)
					for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
					}
					if writers.Load() > 0 {
						bad.Store("a reader entered while a writer was inside")
					}
				}
				time.Sleep(3 * time.Millisecond)
				if write {
					writers.Add(-1)
				} else {
					readers.Add(-1)
				}
				if err := l.Release(c, lease); err != nil {
					errs <- fmt.Errorf("release: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	if maxReaders.Load() < 2 {
		t.Fatalf("readers were never inside together (max %d): they must share", maxReaders.Load())
	}
}

// SemaphoreSuite is the conformance suite of a lock.Semaphore: no more
// holders than permits, a release frees a permit, waiters are woken.
type SemaphoreSuite struct {
	// New returns an independent client's semaphore on key with permits
	// permits (set up already or not: the suite calls TrySetPermits),
	// applying opts (the suite's retry strategy) after its own.
	New     func(t testing.TB, key string, permits int, ttl time.Duration, opts ...lock.Option) lock.Semaphore
	Exclude map[string]string
	TTL     time.Duration
}

// Names of SemaphoreSuite's tests.
const (
	SemPermits    = "Permits"
	SemContention = "Contention"
	SemWake       = "WaiterWoken"
)

// Run runs every test not excluded.
func (s SemaphoreSuite) Run(t *testing.T) {
	if s.TTL == 0 {
		s.TTL = 2 * time.Second
	}
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{{SemPermits, s.permits}, {SemContention, s.contention}, {SemWake, s.wake}} {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := s.Exclude[tc.name]; ok {
				t.Skipf("excluded for this variant: %s", why)
			}
			tc.f(t)
		})
	}
}

func (s SemaphoreSuite) setUp(t *testing.T, sem lock.Semaphore, want bool) {
	t.Helper()
	set, err := sem.TrySetPermits(Context(t))
	if err != nil {
		t.Fatalf("TrySetPermits: %v", err)
	}
	if set != want {
		t.Fatalf("TrySetPermits = %v, want %v", set, want)
	}
}

func (s SemaphoreSuite) permits(t *testing.T) {
	const n = 3
	key := Key(t)
	sems := make([]lock.Semaphore, n+1)
	for i := range sems {
		sems[i] = s.New(t, key, n, s.TTL)
		if sems[i].Permits() != n {
			t.Fatalf("Permits() = %d, want %d", sems[i].Permits(), n)
		}
	}
	s.setUp(t, sems[0], true)
	s.setUp(t, sems[1], false)
	var leases []lock.Lease
	for i := 0; i < n; i++ {
		l, err := sems[i].Acquire(Context(t))
		if err != nil {
			t.Fatalf("holder %d of %d permits: %v", i+1, n, err)
		}
		if l.Key != key || !l.ValidUntil.After(l.Start) {
			t.Fatalf("lease %+v: want key %q and a validity after its start", l, key)
		}
		leases = append(leases, l)
	}
	if _, err := sems[n].Acquire(Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("holder %d of %d permits: err = %v, want ErrNotObtained", n+1, n, err)
	}
	if err := sems[0].Release(Context(t), leases[0]); err != nil {
		t.Fatalf("release: %v", err)
	}
	l, err := sems[n].Acquire(Context(t))
	if err != nil {
		t.Fatalf("acquire after a release: %v", err)
	}
	for i, sl := range append(leases[1:], l) {
		if err := sems[i+1].Release(Context(t), sl); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
}

func (s SemaphoreSuite) contention(t *testing.T) {
	const permits, owners, rounds = 2, 6, 10
	key := Key(t)
	var inside, maxInside atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, owners)
	c := Context(t)
	s.setUp(t, s.New(t, key, permits, s.TTL), true)
	for i := 0; i < owners; i++ {
		sem := s.New(t, key, permits, s.TTL)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				lease, err := acquireWait(c, sem)
				if err != nil {
					errs <- err
					return
				}
				n := inside.Add(1)
				for m := maxInside.Load(); n > m && !maxInside.CompareAndSwap(m, n); m = maxInside.Load() {
				}
				time.Sleep(3 * time.Millisecond)
				inside.Add(-1)
				if err := sem.Release(c, lease); err != nil {
					errs <- fmt.Errorf("release: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := maxInside.Load(); m > permits {
		t.Fatalf("%d holders inside at once with %d permits", m, permits)
	} else if m < permits {
		t.Fatalf("at most %d holders were inside at once with %d permits: permits were not all used", m, permits)
	}
}

func (s SemaphoreSuite) wake(t *testing.T) {
	key := Key(t)
	holder := s.New(t, key, 1, time.Minute)
	s.setUp(t, holder, true)
	l, err := holder.Acquire(Context(t))
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	waiter := s.New(t, key, 1, time.Minute, lock.WithRetry(lock.Wait(0, 0)))
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		wl, err := waiter.Acquire(ctx)
		if err == nil {
			err = waiter.Release(ctx, wl)
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond)
	released := time.Now()
	if err := holder.Release(Context(t), l); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if d := time.Since(released); d > 2*time.Second {
		t.Fatalf("the waiter got the permit %v after the release: it was not woken", d)
	}
}

// LatchSuite is the conformance suite of a lock.Latch.
type LatchSuite struct {
	New func(t testing.TB, key string) lock.Latch
}

// Run runs the latch tests.
func (s LatchSuite) Run(t *testing.T) {
	t.Run("CountAndAwait", s.countAndAwait)
	t.Run("AwaitEndsWithContext", s.awaitTimeout)
}

func (s LatchSuite) countAndAwait(t *testing.T) {
	key := Key(t)
	a, b := s.New(t, key), s.New(t, key)
	if n, err := a.Count(Context(t)); err != nil || n != 0 {
		t.Fatalf("count of a latch never set = %d, %v; want 0", n, err)
	}
	if err := a.Await(Context(t)); err != nil {
		t.Fatalf("await on a latch never set: %v (it is open)", err)
	}
	if set, err := a.TrySetCount(Context(t), 2); err != nil || !set {
		t.Fatalf("TrySetCount(2) = %v, %v", set, err)
	}
	if set, err := b.TrySetCount(Context(t), 5); err != nil || set {
		t.Fatalf("second TrySetCount = %v, %v; want false: the latch is set", set, err)
	}
	passed := make(chan time.Time, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Await(ctx); err != nil {
			t.Errorf("await: %v", err)
		}
		passed <- time.Now()
	}()
	time.Sleep(100 * time.Millisecond)
	if err := a.CountDown(Context(t)); err != nil {
		t.Fatalf("count down: %v", err)
	}
	if n, err := a.Count(Context(t)); err != nil || n != 1 {
		t.Fatalf("count after one count-down = %d, %v; want 1", n, err)
	}
	select {
	case <-passed:
		t.Fatalf("the waiter passed with the count at 1")
	case <-time.After(200 * time.Millisecond):
	}
	zero := time.Now()
	if err := a.CountDown(Context(t)); err != nil {
		t.Fatalf("count down: %v", err)
	}
	at := <-passed
	if at.Before(zero) {
		t.Fatalf("the waiter passed before the count reached zero")
	}
	if d := at.Sub(zero); d > 2*time.Second {
		t.Fatalf("the waiter passed %v after the count reached zero: it was not woken", d)
	}
	if set, err := b.TrySetCount(Context(t), 1); err != nil || !set {
		t.Fatalf("TrySetCount after the latch opened = %v, %v; want true", set, err)
	}
}

func (s LatchSuite) awaitTimeout(t *testing.T) {
	key := Key(t)
	l := s.New(t, key)
	if _, err := l.TrySetCount(Context(t), 1); err != nil {
		t.Fatalf("TrySetCount: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := l.Await(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("await on a closed latch past its context: err = %v, want ErrNotObtained", err)
	}
}
