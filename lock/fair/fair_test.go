package fair

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

func newLocker(t testing.TB, addr, key string, ttl time.Duration, opts ...lock.Option) *Locker {
	t.Helper()
	l, err := New(locktest.Client(t, addr), key, ttl, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

var waiting = lock.WithRetry(lock.Wait(0, 0))

func TestConformance(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newLocker(t, addr, key, ttl)
		},
		Exclude: map[string]string{
			locktest.ReleaseOthers: "Redisson's fair unlock answers 'released' when the lock no longer exists (the published version and current Redisson alike); TestReleaseOthers checks the rest",
		},
	}.Run(t)
}

func TestReleaseOthers(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	a, b := newLocker(t, addr, "k", time.Minute), newLocker(t, addr, "k", time.Minute)
	la, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	forged := la
	forged.Value = b.Owner()
	if err := b.Release(locktest.Context(t), forged); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("B releasing A's lock: err = %v, want ErrNotHeld", err)
	}
	if _, err := b.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B acquired while A holds: err = %v", err)
	}
	if err := a.Release(locktest.Context(t), la); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(locktest.Context(t), la); err != nil {
		t.Fatalf("second release of a gone lock: err = %v, want nil as Redisson answers", err)
	}
}

// TestFIFO queues waiters one after the other and checks they are granted
// in that order, each as its predecessor releases.
func TestFIFO(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	const n = 4
	var mu sync.Mutex
	var queued []string
	observe := lock.WithQueueObserver(func(ev lock.QueueEvent) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Phase == "queued" && (len(queued) == 0 || queued[len(queued)-1] != ev.Owner) {
			queued = append(queued, ev.Owner)
		}
	})
	holder := newLocker(t, addr, "k", time.Minute)
	lh, err := holder.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	granted := make(chan string, n)
	var lockers []*Locker
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 0; i < n; i++ {
		w := newLocker(t, addr, "k", time.Minute, waiting, observe, lock.WithValue(func() string { return fmt.Sprintf("w%d", i) }))
		lockers = append(lockers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			l, err := w.Acquire(ctx)
			if err != nil {
				t.Errorf("%s: %v", w.Owner(), err)
				granted <- ""
				return
			}
			granted <- w.Owner()
			time.Sleep(20 * time.Millisecond)
			if err := w.Release(context.Background(), l); err != nil {
				t.Errorf("%s release: %v", w.Owner(), err)
			}
		}()
		// Wait until it is queued before the next one comes.
		deadline := time.Now().Add(5 * time.Second)
		for {
			owners, _, _ := w.QueueState(locktest.Context(t))
			if len(owners) == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d not queued: queue %v", i, owners)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	owners, timeouts, err := holder.QueueState(locktest.Context(t))
	if err != nil || len(owners) != n {
		t.Fatalf("queue %v (%v): want %d waiters", owners, err, n)
	}
	// The published script times every waiter behind the head out at the
	// head's timeout plus threadWaitTime (the drift Redisson #1104 later
	// fixed by chaining each to its predecessor).
	for i := 1; i < n; i++ {
		if want := timeouts[0] + DefaultThreadWaitTime.Milliseconds(); timeouts[i] != want {
			t.Fatalf("timeouts %v: want the head's plus threadWaitTime (%d) behind it", timeouts, want)
		}
	}
	if err := holder.Release(locktest.Context(t), lh); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		select {
		case o := <-granted:
			order = append(order, o)
		case <-time.After(15 * time.Second):
			t.Fatalf("granted so far %v; the rest never came", order)
		}
	}
	for i, o := range order {
		if want := fmt.Sprintf("w%d", i); o != want {
			t.Fatalf("grant order %v, want w0..w%d (queue order)", order, n-1)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queued) < n || queued[0] != "w0" {
		t.Fatalf("queue events %v: want every waiter reported as queued", queued)
	}
	_ = lockers
}

// TestStaleWaiterPurged: a waiter that stops polling loses its place once
// it is at the head and its timeout (threadWaitTime past its turn) passed.
func TestStaleWaiterPurged(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	wait := WithThreadWaitTime(300 * time.Millisecond)
	holder := newLocker(t, addr, "k", 200*time.Millisecond, wait)
	stale := newLocker(t, addr, "k", time.Second, wait, lock.WithValue(func() string { return "stale" }))
	next := newLocker(t, addr, "k", time.Second, wait, waiting, lock.WithValue(func() string { return "next" }))
	var deadline time.Time
	stale.cfg.OnQueue = func(ev lock.QueueEvent) { deadline = ev.Deadline }
	lh, err := holder.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	// One poll queues the stale waiter; it never polls again.
	if _, _, err := stale.poll(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("stale poll: %v", err)
	}
	if d := time.Until(deadline); d < 300*time.Millisecond || d > 600*time.Millisecond {
		t.Fatalf("stale waiter's deadline in %v, want the holder's pttl (≤200ms) + threadWaitTime (300ms)", d)
	}
	_ = lh
	start := time.Now()
	ln, err := next.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("next waiter: %v", err)
	}
	if time.Now().Before(deadline) {
		t.Fatalf("next was granted %v before the stale head's timeout", deadline.Sub(time.Now()))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("next waited %v", d)
	}
	owners, _, _ := next.QueueState(locktest.Context(t))
	if len(owners) != 0 {
		t.Fatalf("queue %v after the purge and the grant: want empty", owners)
	}
	if err := next.Release(locktest.Context(t), ln); err != nil {
		t.Fatal(err)
	}
}

func TestGivingUpLeavesTheQueue(t *testing.T) {
	addr := redistest.Start(t, 1)[0].Addr
	holder := newLocker(t, addr, "k", time.Minute)
	var left []lock.QueueEvent
	w := newLocker(t, addr, "k", time.Minute, waiting, lock.WithQueueObserver(func(ev lock.QueueEvent) {
		if ev.Phase == "left" {
			left = append(left, ev)
		}
	}))
	if _, err := holder.Acquire(locktest.Context(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := w.Acquire(ctx); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("waiter past its context: err = %v, want ErrNotObtained", err)
	}
	owners, _, _ := w.QueueState(locktest.Context(t))
	if len(owners) != 0 {
		t.Fatalf("queue %v after the waiter gave up: want empty", owners)
	}
	if len(left) != 1 || left[0].Err != nil {
		t.Fatalf("left events %+v: want one, without error", left)
	}
}
