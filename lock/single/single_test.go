package single_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/single"
)

func newLock(t testing.TB, addr, key string, ttl time.Duration, opts ...lock.Option) *single.Lock {
	l, err := single.New(locktest.Client(t, addr), key, ttl, opts...)
	if err != nil {
		t.Fatalf("single.New: %v", err)
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
	c := lock.NewClient("127.0.0.1:1") // never dialled: construction must fail first
	defer c.Close()
	var typedNil *redis.Client
	cases := []struct {
		name   string
		client redis.UniversalClient
		key    string
		ttl    time.Duration
		opts   []lock.Option
		want   string
	}{
		{"nil client", nil, "k", time.Second, nil, "nil redis client"},
		{"typed nil client", typedNil, "k", time.Second, nil, "nil redis client"},
		{"empty key", c, "", time.Second, nil, "empty key"},
		{"zero TTL", c, "k", 0, nil, "TTL 0s must be positive"},
		{"negative TTL", c, "k", -time.Second, nil, "must be positive"},
		{"WAIT no replicas", c, "k", time.Second, []lock.Option{single.WithWait(0, 100*time.Millisecond)}, "replica count 0"},
		{"WAIT zero timeout", c, "k", time.Second, []lock.Option{single.WithWait(1, 0)}, "block forever"},
		{"WAIT timeout ≥ TTL", c, "k", time.Second, []lock.Option{single.WithWait(1, time.Second)}, "not shorter than the TTL"},
		{"bad retry", c, "k", time.Second, []lock.Option{lock.WithRetry(lock.Strategy{Delay: -1})}, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := single.New(tc.client, tc.key, tc.ttl, tc.opts...)
			if !errors.Is(err, lock.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want an ErrConfig mentioning %q", l, err, tc.want)
			}
		})
	}
	// A ring shards keys over independent nodes and lends no connection
	// of a key's node: WAIT cannot follow its SET. (A cluster client can:
	// the cluster-failover-wait row runs WAIT through one.)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := single.New(ring, "k", time.Second, single.WithWait(1, 100*time.Millisecond)); !errors.Is(err, lock.ErrConfig) || !strings.Contains(err.Error(), "cannot pin a connection") {
		t.Fatalf("WithWait on a ring client = %v, want ErrConfig (cannot pin a connection)", err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	if _, err := single.New(cc, "k", time.Second, single.WithWait(1, 100*time.Millisecond)); err != nil {
		t.Fatalf("WithWait on a cluster client: %v", err)
	}
	if _, err := single.NewWith(nil, c, "k", time.Second); !errors.Is(err, lock.ErrConfig) {
		t.Fatalf("NewWith(nil acquire) = %v, want ErrConfig", err)
	}
}

// The key must carry the owner value and a PX expiry no longer than the TTL:
// a lock without an expiry is the deadlock blog posts on Redis locks start from.
func TestAcquireSetsValueAndExpiry(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	ttl := 800 * time.Millisecond
	l := newLock(t, srv.Addr, "k", ttl)
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	rc := locktest.Client(t, srv.Addr)
	if v := rc.Get(locktest.Context(t), "k").Val(); v != lease.Value {
		t.Fatalf("key holds %q, lease value %q", v, lease.Value)
	}
	if pttl := rc.PTTL(locktest.Context(t), "k").Val(); pttl <= 0 || pttl > ttl {
		t.Fatalf("PTTL %v, want within (0, %v]", pttl, ttl)
	}
	time.Sleep(ttl / 2)
	if _, err := l.Extend(locktest.Context(t), lease); err != nil {
		t.Fatal(err)
	}
	if pttl := rc.PTTL(locktest.Context(t), "k").Val(); pttl <= ttl*3/4 || pttl > ttl {
		t.Fatalf("PTTL after extend %v, want it reset to about %v", pttl, ttl)
	}
}

// A reply lost to a read timeout is an unknown outcome, and really is one:
// the stopped server runs the SET once resumed and the key ends up ours.
func TestReadTimeoutIsUnknown(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	admin := locktest.Client(t, srv.Addr)
	c := locktest.Client(t, srv.Addr, func(o *redis.Options) { o.ReadTimeout = 100 * time.Millisecond })
	l, err := single.New(c, "k", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A pooled connection, so the SET itself is what waits for the reply.
	if err := c.Ping(locktest.Context(t)).Err(); err != nil {
		t.Fatal(err)
	}
	resume := srv.Freeze(t)
	_, err = l.Acquire(locktest.Context(t))
	resume()
	t.Logf("acquire against a stopped server: %v", err)
	if !errors.Is(err, lock.ErrUnknown) || errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire against a stopped server: %v, want ErrUnknown only", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for admin.Exists(locktest.Context(t), "k").Val() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the timed-out SET never ran after the resume: the test did not show an unknown outcome")
		}
		time.Sleep(20 * time.Millisecond)
	}
	lease := lock.Lease{Key: "k", Value: admin.Get(locktest.Context(t), "k").Val()}
	resume = srv.Freeze(t)
	_, extendErr := l.Extend(locktest.Context(t), lease)
	releaseErr := l.Release(locktest.Context(t), lease)
	resume()
	if !errors.Is(extendErr, lock.ErrUnknown) {
		t.Fatalf("extend against a stopped server: %v, want ErrUnknown", extendErr)
	}
	if !errors.Is(releaseErr, lock.ErrUnknown) {
		t.Fatalf("release against a stopped server: %v, want ErrUnknown", releaseErr)
	}
}

// Nothing was sent to a server that refuses connections: definitely not
// obtained, so a retry loop may go on.
func TestDialFailureIsNotObtained(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	l := newLock(t, srv.Addr, "k", time.Second)
	srv.Stop()
	_, err := l.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, lock.ErrUnknown) {
		t.Fatalf("acquire against a stopped server: %v, want ErrNotObtained", err)
	}
}

func TestRetryWaitsForRelease(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	holder := newLock(t, srv.Addr, "k", 5*time.Second)
	waiter := newLock(t, srv.Addr, "k", 5*time.Second, lock.WithRetry(lock.Wait(20*time.Millisecond, 10*time.Millisecond)))
	held, err := holder.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(locktest.Context(t), 150*time.Millisecond)
	defer cancel()
	// Usually the deadline falls between attempts (ErrNotObtained); on a
	// loaded machine it may end an attempt, whose outcome is then unknown.
	if _, err := waiter.Acquire(short); !errors.Is(err, context.DeadlineExceeded) ||
		!errors.Is(err, lock.ErrNotObtained) && !errors.Is(err, lock.ErrUnknown) {
		t.Fatalf("waiting on a held lock until the context ends: %v, want ErrNotObtained (or ErrUnknown) wrapping the deadline", err)
	}
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		released <- time.Now()
		_ = holder.Release(context.Background(), held)
	}()
	got, err := waiter.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if rel := <-released; got.Start.Before(rel.Add(-50 * time.Millisecond)) {
		t.Fatalf("waiter's granted attempt started at %v, before the holder released at %v", got.Start, rel)
	}
}

func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, 2)
	primary, replica := srv[0], srv[1]
	redistest.Replicate(t, primary, replica)
	pc, rc := locktest.Client(t, primary.Addr), locktest.Client(t, replica.Addr)
	l := newLock(t, primary.Addr, "k", 2*time.Second, single.WithWait(1, 300*time.Millisecond))

	t.Run("acknowledged", func(t *testing.T) {
		lease, err := l.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatalf("acquire with a live replica: %v", err)
		}
		// WAIT returned 1, so the replica has the key already.
		if v := rc.Get(locktest.Context(t), "k").Val(); v != lease.Value {
			t.Fatalf("replica holds %q right after an acknowledged acquire, want %q", v, lease.Value)
		}
		if err := l.Release(locktest.Context(t), lease); err != nil {
			t.Fatal(err)
		}
	})

	// WAIT counts the writes of its own connection: each acquire's WAIT must
	// run on the connection that sent its SET, also when acquires overlap.
	t.Run("same connection", func(t *testing.T) {
		lines, stopMonitor := monitor(t, primary.Addr)
		shared := locktest.Client(t, primary.Addr) // one pool, as many locks share it
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := 0; g < 8; g++ {
			l, err := single.New(shared, fmt.Sprintf("k%d", g), 2*time.Second, single.WithWait(1, 300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < 5; r++ {
					lease, err := l.Acquire(locktest.Context(t))
					if err == nil {
						err = l.Release(locktest.Context(t), lease)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(100 * time.Millisecond) // let MONITOR catch up
		stopMonitor()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		last := map[string]string{} // client address → its previous command
		waits := 0
		for line := range lines {
			_, rest, ok := strings.Cut(line, "[0 ")
			addr, cmd, ok2 := strings.Cut(rest, "] ")
			if !ok || !ok2 || addr == "lua" {
				continue
			}
			name := strings.ToLower(strings.Trim(strings.SplitN(cmd, " ", 2)[0], `"`))
			if name == "wait" {
				waits++
				if last[addr] != "set" {
					t.Fatalf("WAIT on %s followed %q there, not the SET of its acquire", addr, last[addr])
				}
			}
			last[addr] = name
		}
		if waits == 0 {
			t.Fatal("MONITOR saw no WAIT")
		}
	})

	t.Run("replica paused", func(t *testing.T) {
		resume := replica.Freeze(t)
		_, err := l.Acquire(locktest.Context(t))
		resume()
		if !errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "only 0 of 1 replicas acknowledged") {
			t.Fatalf("acquire while the replica is stopped: %v, want ErrNotObtained with only 0 of 1 replicas acknowledged", err)
		}
		if n := pc.Exists(locktest.Context(t), "k").Val(); n != 0 {
			t.Fatalf("the unacknowledged lock is still on the primary")
		}
	})

	t.Run("replica killed", func(t *testing.T) {
		replica.Stop()
		_, err := l.Acquire(locktest.Context(t))
		if !errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "only 0 of 1 replicas acknowledged") {
			t.Fatalf("acquire without a replica: %v, want ErrNotObtained with only 0 of 1 replicas acknowledged", err)
		}
		if n := pc.Exists(locktest.Context(t), "k").Val(); n != 0 {
			t.Fatalf("the unacknowledged lock is still on the primary")
		}
	})
}

// monitor runs MONITOR on a connection of its own and returns the lines it
// prints. It returns once the server has answered +OK, so no command sent
// afterwards is missed; stop closes the connection, then lines. (go-redis's
// Monitor starts asynchronously and races inside the library.)
func monitor(t *testing.T, addr string) (lines <-chan string, stop func()) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if l, err := r.ReadString('\n'); err != nil || l != "+OK\r\n" {
		t.Fatalf("MONITOR answered %q, %v", l, err)
	}
	ch := make(chan string, 100000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			ch <- strings.TrimRight(l, "\r\n")
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { conn.Close(); <-done }) }
	t.Cleanup(stop)
	return ch, stop
}
