package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/redlock"
)

// Contenders sharing one set of clients share each node's pipelined
// connection: their commands interleave on it.
func TestConformanceSharedConnections(t *testing.T) {
	t.Parallel()
	cs := locktest.Clients(t, redistest.Addrs(redistest.Start(t, 5)))
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newLock(t, cs, key, ttl, stallProof)
		},
	}.Run(t)
}

// Clients that are not *redis.Client go through go-redis, one goroutine
// per node request.
func TestConformanceGoRedisTransport(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 5)
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			return newLock(t, redlock.RingClients(t, redistest.Addrs(servers)), key, ttl, stallProof)
		},
	}.Run(t)
}

// stat returns a field of INFO's section on the server (0 when absent).
func stat(t testing.TB, c redis.UniversalClient, section, field string) int {
	info, err := c.Info(locktest.Context(t), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var n int
			fmt.Sscanf(strings.TrimPrefix(rest, "calls="), "count=%d", &n)
			if n == 0 {
				fmt.Sscanf(rest, "calls=%d", &n)
			}
			return n
		}
	}
	return 0
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A node that applies the SET after the acquire answered at quorum (its
// writes are paused) applies the release after it too: the two go out on
// one connection, in order. Otherwise the late grant would stay for the TTL.
func TestLateGrantIsReleased(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	admin := locktest.Clients(t, redistest.Addrs(servers))
	l := newLock(t, cs, "late", 30*time.Second, lock.WithNodeTimeout(5*time.Second))
	for range 3 { // connections up, scripts loaded
		lease, err := l.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(locktest.Context(t), lease); err != nil {
			t.Fatal(err)
		}
	}
	sets := stat(t, admin[4], "commandstats", "cmdstat_set")
	if err := admin[4].Do(locktest.Context(t), "client", "pause", 500, "write").Err(); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire with one node's writes paused: %v", err)
	}
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatalf("release with one node's writes paused: %v", err)
	}
	if n := admin[4].Exists(locktest.Context(t), "late").Val(); n != 0 {
		t.Fatal("the paused node applied the SET before the pause ended: the test proves nothing")
	}
	eventually(t, "the paused node applies the late SET", func() bool { return stat(t, admin[4], "commandstats", "cmdstat_set") > sets })
	// The release is right behind the SET on its connection; a late grant
	// that outlived it would stay the TTL (30 s), far past eventually's 5 s.
	eventually(t, "no node holds the key after the release (a late grant would outlive it by the TTL)", func() bool { return holders(t, admin, "late") == 0 })
}

// Replies are matched to commands in order when a stalled node answers a
// backlog of them at once, and the lock's view stays right.
func TestStalledNodeBacklogInOrder(t *testing.T) {
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers), func(o *redis.Options) { o.ReadTimeout = 10 * time.Second })
	admin := locktest.Clients(t, redistest.Addrs(servers))
	l := newLock(t, cs, "backlog", 10*time.Second)
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatal(err)
	}
	// Acquire and Release return at a quorum: node 0's connection may
	// still be dialling (seen in CI on a loaded host), so wait for it.
	var before []string
	eventually(t, "node 0 has the lock's connection", func() bool {
		before = lockConns(t, admin[0])
		return len(before) == 1
	})
	thaw := servers[0].Freeze(t)
	var last lock.Lease
	for range 20 {
		if last, err = l.Acquire(locktest.Context(t)); err != nil {
			t.Fatalf("acquire with node 0 stalled: %v", err)
		}
		if err := l.Release(locktest.Context(t), last); err != nil {
			t.Fatalf("release with node 0 stalled: %v", err)
		}
	}
	thaw()
	eventually(t, "node 0 works through its backlog", func() bool {
		return stat(t, admin[0], "commandstats", "cmdstat_set") >= 21
	})
	// Node 0 answers each SET with OK and each release with 1 in the
	// order sent; a reply handed to the wrong command would be taken for
	// a protocol error and drop the connection, or leave the key behind.
	lease, err = l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "node 0 grants the lease after its backlog", func() bool { // it may answer after the quorum
		return admin[0].Get(locktest.Context(t), "backlog").Val() == lease.Value
	})
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no node holds the key after the last release", func() bool { return holders(t, admin, "backlog") == 0 })
	if after := lockConns(t, admin[0]); len(before) != 1 || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("node 0's lock connection was %v before the backlog and %v after: a reply handed to the wrong command drops it", before, after)
	}
}

// A connection whose oldest command waits past the client's ReadTimeout is
// dropped; the node takes part again through a new one once it is back.
func TestOverdueConnectionIsReplaced(t *testing.T) {
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers), func(o *redis.Options) { o.ReadTimeout = 200 * time.Millisecond })
	admin := locktest.Clients(t, redistest.Addrs(servers))
	l := newLock(t, cs, "overdue", 10*time.Second, lock.WithNodeTimeout(100*time.Millisecond))
	if lease, err := l.Acquire(locktest.Context(t)); err != nil || l.Release(locktest.Context(t), lease) != nil {
		t.Fatalf("warm-up: %v", err)
	}
	// Acquire and Release return at a quorum: node 0's connection may
	// still be dialling (seen in CI on a loaded host), so wait for it.
	var before []string
	eventually(t, "node 0 has the lock's connection", func() bool {
		before = lockConns(t, admin[0])
		return len(before) == 1
	})
	thaw := servers[0].Freeze(t)
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire with node 0 stalled: %v", err)
	}
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatalf("release with node 0 stalled: %v", err)
	}
	time.Sleep(400 * time.Millisecond) // past the read timeout: the connection is dropped
	thaw()
	eventually(t, "node 0 answers again", func() bool { return admin[0].Ping(locktest.Context(t)).Err() == nil })
	lease, err = l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "node 0 grants the lease through a new connection", func() bool {
		return admin[0].Get(locktest.Context(t), "overdue").Val() == lease.Value
	})
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no node holds the key", func() bool { return holders(t, admin, "overdue") == 0 })
	if after := lockConns(t, admin[0]); len(after) != 1 || len(before) != 1 || after[0] == before[0] {
		t.Fatalf("node 0's lock connection was %v before the stall and %v after: want the overdue one replaced", before, after)
	}
}

// A node that restarts empty is reconnected, and its scripts are loaded on
// the new connection before any EVALSHA reaches it.
func TestRestartedNodeRejoins(t *testing.T) {
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	l := newLock(t, cs, "restart", 10*time.Second)
	cycle := func() {
		t.Helper()
		lease, err := l.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(locktest.Context(t), lease); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	servers[0].Stop()
	cycle()
	servers[0].Restart(t)
	admin := servers[0].Client(t)
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restarted node grants the lease", func() bool {
		return admin.Get(locktest.Context(t), "restart").Val() == lease.Value
	})
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restarted node deletes the key", func() bool {
		return admin.Exists(locktest.Context(t), "restart").Val() == 0
	})
	if n := stat(t, admin, "errorstats", "errorstat_NOSCRIPT"); n != 0 {
		t.Fatalf("the restarted node answered NOSCRIPT %d times: scripts not loaded on connect", n)
	}
}

// SCRIPT FLUSH under a live connection: EVALSHA gets NOSCRIPT and the
// command is sent again as EVAL.
func TestScriptFlushFallsBackToEval(t *testing.T) {
	servers := redistest.Start(t, 3)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	admin := locktest.Clients(t, redistest.Addrs(servers))
	l := newLock(t, cs, "flush", 10*time.Second)
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	// Acquire returns at quorum: a node's connection may still be dialling,
	// and a dial loads the scripts ahead of the queued SET — after the
	// flush below, if it came late (a loaded CI machine), and that node
	// would never answer NOSCRIPT. Every node holding the key means every
	// connection is up with its scripts loaded before the flush.
	eventually(t, "every node holds the key", func() bool { return holders(t, admin, "flush") == 3 })
	for _, a := range admin {
		if err := a.ScriptFlush(locktest.Context(t)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if lease, err = l.Extend(locktest.Context(t), lease); err != nil {
		t.Fatalf("extend after SCRIPT FLUSH: %v", err)
	}
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatalf("release after SCRIPT FLUSH: %v", err)
	}
	eventually(t, "every node deleted the key", func() bool { return holders(t, admin, "flush") == 0 })
	for i, a := range admin {
		if n := stat(t, a, "errorstats", "errorstat_NOSCRIPT"); n < 1 {
			t.Fatalf("node %d never answered NOSCRIPT: the EVAL fallback was not exercised", i)
		}
	}
}

// lockConns returns the ids of the server's connections other than the
// one asking: the lock's own.
func lockConns(t testing.TB, c redis.UniversalClient) []string {
	ctx := locktest.Context(t)
	self, err := c.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
		if id != fmt.Sprint(self) {
			ids = append(ids, id)
		}
	}
	return ids
}

func TestIdleConnectionCloses(t *testing.T) {
	t.Parallel()
	defer redlock.SetIdle(200 * time.Millisecond)()
	servers := redistest.Start(t, 3)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	admin := servers[0].Client(t)
	l := newLock(t, cs, "idle", 10*time.Second)
	cycle := func() {
		t.Helper()
		lease, err := l.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(locktest.Context(t), lease); err != nil {
			t.Fatal(err)
		}
	}
	cycle()
	if ids := lockConns(t, admin); len(ids) != 1 {
		t.Fatalf("lock connections on node 0 after a cycle: %v, want one", ids)
	}
	eventually(t, "the idle connection closes", func() bool { return len(lockConns(t, admin)) == 0 })
	cycle()
	if ids := lockConns(t, admin); len(ids) != 1 {
		t.Fatalf("lock connections on node 0 after the redial: %v, want one", ids)
	}
}

// The connection authenticates and selects the client's database.
func TestAuthAndDatabase(t *testing.T) {
	servers := redistest.Start(t, 3)
	for _, s := range servers { // after the start: the provider's readiness PING has no password
		if err := s.Client(t).ConfigSet(locktest.Context(t), "requirepass", "sesame").Err(); err != nil {
			t.Fatal(err)
		}
	}
	opts := func(pw string) func(*redis.Options) {
		return func(o *redis.Options) { o.Password, o.DB = pw, 3 }
	}
	admin := locktest.Clients(t, redistest.Addrs(servers), opts("sesame"))
	l := newLock(t, locktest.Clients(t, redistest.Addrs(servers), opts("sesame")), "auth", 10*time.Second)
	lease, err := l.Acquire(locktest.Context(t))
	if err != nil {
		t.Fatalf("acquire with a password and DB 3: %v", err)
	}
	eventually(t, "every node holds the key in DB 3", func() bool { return holders(t, admin, "auth") == 3 })
	if err := l.Release(locktest.Context(t), lease); err != nil {
		t.Fatal(err)
	}
	wrong := newLock(t, locktest.Clients(t, redistest.Addrs(servers), opts("wrong")), "auth", 10*time.Second)
	_, err = wrong.Acquire(locktest.Context(t))
	if !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, lock.ErrUnknown) || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("acquire with a wrong password: %v, want ErrNotObtained naming WRONGPASS (nothing was sent)", err)
	}
}

// Goroutines whose locks share clients (and so each node's connection)
// interleave their commands on it; every fan-out gets its answers and every
// lease is released. The node timeout is long: a reply the transport lost
// would fail a fan-out with "no answer within the node timeout" rather than
// pass for a slow machine.
//
// When Acquire returns, the quorum that answered holds the lease's value:
// nothing else of this key goes out before its release. The other nodes
// may not have applied the SET yet, nor the releases before it: Release
// also returns at quorum, and a straggler's delete, written on its node's
// connection, may still be unread by the server when the admin's GET on
// another connection is served (the project's CI saw a node hold the round
// before's value). What a straggler holds is always one of this lock's own
// values: a reply handed to the wrong fan-out would show as a value of
// another round granted, or of no round at all.
func TestConcurrentUseOfSharedConnections(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 5)
	cs := locktest.Clients(t, redistest.Addrs(servers))
	admin := locktest.Clients(t, redistest.Addrs(servers))
	const workers, rounds = 8, 100
	locks := make([]*redlock.Lock, workers)
	for i := range locks { // each its own key: no contention, only interleaving
		locks[i] = newLock(t, cs, fmt.Sprintf("conc%d", i), 10*time.Second, lock.WithNodeTimeout(5*time.Second))
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ours := map[string]bool{"": true} // every value this lock was given
			for range rounds {
				lease, err := l.Acquire(context.Background())
				if err != nil {
					errs <- err
					return
				}
				ours[lease.Value] = true
				holding := 0
				for i, c := range admin {
					switch v := c.Get(context.Background(), l.Key()).Val(); {
					case v == lease.Value:
						holding++
					case !ours[v]:
						errs <- fmt.Errorf("%s: node %d holds %q, none of this lock's values", l.Key(), i, v)
						return
					}
				}
				if holding < l.Quorum() {
					errs <- fmt.Errorf("%s: %d nodes hold the lease's value, fewer than the quorum %d that granted it", l.Key(), holding, l.Quorum())
					return
				}
				if err := l.Release(context.Background(), lease); err != nil {
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
	for _, l := range locks {
		eventually(t, "no node holds "+l.Key(), func() bool { return holders(t, admin, l.Key()) == 0 })
	}
}

// Through go-redis a node's commands may take different pooled
// connections, so nothing orders a late SET before the release: the lock
// waits for every node's answer, and when a call returns every node has
// applied its command.
// TestGoRedisTransportWaitsForEveryNode runs with stallProof: under a
// loaded machine a node answering past the default node timeout is left
// out of the quorum, which is that timeout's job, not the transport's.
func TestGoRedisTransportWaitsForEveryNode(t *testing.T) {
	servers := redistest.Start(t, 5)
	admin := locktest.Clients(t, redistest.Addrs(servers))
	l := newLock(t, redlock.RingClients(t, redistest.Addrs(servers)), "every", 10*time.Second, stallProof)
	for range 20 {
		lease, err := l.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		if n := holders(t, admin, "every"); n != 5 {
			t.Fatalf("%d of 5 nodes hold the key when the acquire returned", n)
		}
		if err := l.Release(locktest.Context(t), lease); err != nil {
			t.Fatal(err)
		}
		if n := holders(t, admin, "every"); n != 0 {
			t.Fatalf("%d nodes still hold the key when the release returned", n)
		}
	}
}
