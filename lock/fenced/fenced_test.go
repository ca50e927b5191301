package fenced_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/fenced"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/single"
)

func newLock(t testing.TB, addr, key string, ttl time.Duration, opts ...lock.Option) *fenced.Lock {
	l, err := fenced.New(locktest.Client(t, addr), key, ttl, opts...)
	if err != nil {
		t.Fatalf("fenced.New: %v", err)
	}
	return l
}

func TestConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 1)[0]
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newLock(t, srv.Addr, key, ttl)
		},
	}.Run(t)
}

func TestConfigErrors(t *testing.T) {
	c := lock.NewClient("127.0.0.1:1")
	defer c.Close()
	for name, f := range map[string]func() (*fenced.Lock, error){
		"nil client": func() (*fenced.Lock, error) { return fenced.New(nil, "k", time.Second) },
		"empty key":  func() (*fenced.Lock, error) { return fenced.New(c, "", time.Second) },
		"zero TTL":   func() (*fenced.Lock, error) { return fenced.New(c, "k", 0) },
		"bad WAIT": func() (*fenced.Lock, error) {
			return fenced.New(c, "k", time.Second, single.WithWait(-1, time.Millisecond))
		},
	} {
		if l, err := f(); !errors.Is(err, lock.ErrConfig) || l != nil {
			t.Errorf("%s: New = %v, %v; want nil, ErrConfig", name, l, err)
		}
	}
}

// Contenders record the token of every grant inside the critical section;
// mutual exclusion orders the grants, so the tokens must strictly increase,
// and a refused acquire must not have burnt a token.
func TestTokensIncreaseAcrossGrants(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	const contenders, rounds = 4, 10
	var mu sync.Mutex
	var tokens []int64
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for i := 0; i < contenders; i++ {
		l := newLock(t, srv.Addr, "k", 2*time.Second, lock.WithRetry(lock.Wait(time.Millisecond, time.Millisecond)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				lease, err := l.Acquire(locktest.Context(t))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				tokens = append(tokens, lease.Token)
				mu.Unlock()
				if err := l.Release(locktest.Context(t), lease); err != nil {
					errs <- err
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
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("grant %d got token %d after token %d: tokens %v", i, tokens[i], tokens[i-1], tokens)
		}
	}
	// Tokens are 1..grants: no refused attempt incremented the counter.
	if first, last := tokens[0], tokens[len(tokens)-1]; first != 1 || last != contenders*rounds {
		t.Fatalf("tokens run %d..%d over %d grants, want 1..%d", first, last, len(tokens), contenders*rounds)
	}
	if c := locktest.Client(t, srv.Addr).Get(locktest.Context(t), fenced.CounterKey("k")).Val(); c != strconv.Itoa(contenders*rounds) {
		t.Fatalf("counter key holds %q, want %d", c, contenders*rounds)
	}
}

func TestTokenSurvivesInLease(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	rc := locktest.Client(t, srv.Addr)
	if err := rc.Set(locktest.Context(t), fenced.CounterKey("k"), 41, 0).Err(); err != nil {
		t.Fatal(err)
	}
	a, b := newLock(t, srv.Addr, "k", time.Second), newLock(t, srv.Addr, "k", time.Second)
	lease, err := a.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if lease.Token != 42 {
		t.Fatalf("token %d, want 42 (counter was 41)", lease.Token)
	}
	if _, err := b.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("B acquired a held fenced lock: %v", err)
	}
	ext, err := a.Extend(locktest.Context(t), lease)
	if err != nil {
		t.Fatal(err)
	}
	if ext.Token != 42 {
		t.Fatalf("token after extend %d, want 42", ext.Token)
	}
	if c := rc.Get(locktest.Context(t), fenced.CounterKey("k")).Val(); c != "42" {
		t.Fatalf("counter %q after a refused acquire and an extend, want 42", c)
	}
	if pttl := rc.PTTL(locktest.Context(t), fenced.CounterKey("k")).Val(); pttl != -1 {
		t.Fatalf("counter key has an expiry (PTTL %v): tokens would restart", pttl)
	}
}

// WithWait carries over from single: the replica has key and counter when
// the acquire succeeds; without a replica the grant is withdrawn.
func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 2)
	primary, replica := srv[0], srv[1]
	pc, rc := locktest.Client(t, primary.Addr), locktest.Client(t, replica.Addr)
	redistest.Replicate(t, primary, replica)
	l := newLock(t, primary.Addr, "k", 2*time.Second, single.WithWait(1, 300*time.Millisecond))
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if v, c := rc.Get(locktest.Context(t), "k").Val(), rc.Get(locktest.Context(t), fenced.CounterKey("k")).Val(); v != lease.Value || c != strconv.FormatInt(lease.Token, 10) {
		t.Fatalf("replica has key %q counter %q after an acknowledged acquire, want %q and %d", v, c, lease.Value, lease.Token)
	}
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatal(err)
	}
	replica.Stop()
	if _, err := l.Acquire(locktest.Context(t)); !errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "only 0 of 1") {
		t.Fatalf("acquire without a replica: %v, want ErrNotObtained (only 0 of 1 replicas)", err)
	}
	if pc.Exists(locktest.Context(t), "k").Val() != 0 {
		t.Fatal("withdrawn grant left the key on the primary")
	}
}
