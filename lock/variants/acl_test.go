package variants

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/recipes"
	"github.com/tumbler-dev/tumbler/spans"
)

// refused reports whether err is the server refusing a right: NOPERM for a
// command or a key, or the error of a command refused inside a script.
func refused(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "NOPERM") || strings.Contains(msg, "user executing the script can't")
}

// aclCycle runs every variant at once as the ACL user, each on its own
// keys, through the interface of its kind. A lock (and each mode of a
// read-write lock): acquire, a contender that tries twice (the reentrant
// lock subscribes in between), extend, release, and a takeover of a lease
// left to expire (the timestamp recipes GETSET then; not for the watchdog,
// whose lease does not expire). A semaphore: set up, take every permit, a
// contender, give them back, and for a permit-expirable one a permit left
// to expire and taken again. A latch: set, a waiter, count down. It returns
// the refusals it met, and any other error.
func aclCycle(t *testing.T, addr, user, pw string, round int) (noperm []string, other error) {
	t.Helper()
	login := func(o *redis.Options) { o.Username, o.Password = user, pw }
	specs := []Spec{{Options: Options{Variant: "single", WaitReplicas: 1, WaitTimeout: spans.Fixed(10 * time.Millisecond)}, TTL: time.Second}}
	for _, n := range BuiltHere() {
		if n == "rueidislock" {
			// Not under ACL: rueidislock's own client needs CLIENT TRACKING
			// and keys under its own prefix ("rueidislock:<i>:<key>"), rights
			// tumbler's locks do not need.
			continue
		}
		// Redlock on one node: a quorum of one. Its default node timeout
		// for 1 s (10 ms) is less than a fresh connection's dial, AUTH and
		// script load take on a loaded host; this test is about rights.
		s := Spec{Options: Options{Variant: n, NodeTimeout: spans.Fixed(500 * time.Millisecond)}, TTL: time.Second}
		if s.Kind() == lock.KindSemaphore {
			s.Permits = 2
		}
		specs = append(specs, s)
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		// over: the round is over. A recipe's renewal timer (timer-renew)
		// may still fire afterwards, and what it meets belongs to no round.
		over bool
	)
	for _, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			note := func(what string, err error) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case over:
				case err == nil:
				case refused(err):
					noperm = append(noperm, fmt.Sprintf("%s %s: %v", s.Variant, what, err))
				case errors.Is(err, lock.ErrNotObtained) && (strings.HasPrefix(what, "contended") || s.WaitReplicas > 0):
					// Contention, or WAIT that ran and heard from no replica.
				default:
					errs = append(errs, fmt.Errorf("%s %s: %w", s.Variant, what, err))
				}
			}
			key := fmt.Sprintf("tumbler:acl:%d:%s:%d", round, s.Variant, s.WaitReplicas)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			build := func(s Spec, key string, retry lock.Strategy) lock.Primitive {
				clients := locktest.Clients(t, []string{addr}, login)
				for _, c := range clients {
					// A lock may retry past a refused command (the fair
					// lock's queue script fails half-way, its retry finds
					// the waiter in the timeout set and skips the refused
					// RPUSH), so refusals are noted where they happen.
					c.AddHook(refusalHook{func(err error) { note("command", err) }})
				}
				p, err := BuildPrimitive(s, clients, key, lock.WithRetry(retry))
				if err != nil {
					panic(err)
				}
				return p
			}
			short := s
			short.TTL = 150 * time.Millisecond
			// As above, within the shorter TTL.
			short.NodeTimeout = spans.Fixed(120 * time.Millisecond)
			switch s.Kind() {
			case lock.KindLock:
				a, b := build(s, key, lock.TryOnce()).(lock.Locker), build(s, key, lock.Strategy{Attempts: 2, Delay: 20 * time.Millisecond}).(lock.Locker)
				var x, y lock.Locker
				// The watchdog and give-up-renew renew the lease they are
				// given (the latter until a renewal fails): nothing expires.
				// A lock whose TTL is whole seconds (go-zero) takes a free
				// key with the script it acquires with: waiting out a
				// second and its tolerance would test no other right.
				info, _ := s.Info()
				if s.Variant != "watchdog" && s.Variant != recipes.NameGiveUpRenew && !info.WholeSeconds {
					x, y = build(short, key+":x", lock.TryOnce()).(lock.Locker), build(short, key+":x", lock.TryOnce()).(lock.Locker)
				}
				aclLockCycle(ctx, note, "", a, b, x, y)
			case lock.KindReadWrite:
				mode := func(rw lock.Primitive, write bool) lock.Locker {
					if write {
						return rw.(lock.ReadWriteLocker).WriteLock()
					}
					return rw.(lock.ReadWriteLocker).ReadLock()
				}
				for _, write := range []bool{true, false} {
					k := fmt.Sprintf("%s:%t", key, write)
					a, b := mode(build(s, k, lock.TryOnce()), write), mode(build(s, k, lock.Strategy{Attempts: 2, Delay: 20 * time.Millisecond}), true)
					x, y := mode(build(short, k+":x", lock.TryOnce()), write), mode(build(short, k+":x", lock.TryOnce()), write)
					aclLockCycle(ctx, note, fmt.Sprintf("(write %t) ", write), a, b, x, y)
				}
			case lock.KindSemaphore:
				a, b := build(s, key, lock.TryOnce()).(lock.Semaphore), build(s, key, lock.TryOnce()).(lock.Semaphore)
				_, err := a.TrySetPermits(ctx)
				note("set permits", err)
				var leases []lock.Lease
				for range a.Permits() {
					l, err := a.Acquire(ctx)
					note("acquire", err)
					if err == nil {
						leases = append(leases, l)
					}
				}
				_, err = b.Acquire(ctx)
				note("contended acquire", err)
				for _, l := range leases {
					note("release", a.Release(ctx, l))
				}
				if s.Variant == "permit-expirable-semaphore" {
					x, y := build(short, key+":x", lock.TryOnce()).(lock.Semaphore), build(short, key+":x", lock.TryOnce()).(lock.Semaphore)
					_, err := x.TrySetPermits(ctx)
					note("set permits to expire", err)
					for range x.Permits() {
						_, err = x.Acquire(ctx)
						note("acquire to expire", err)
					}
					time.Sleep(250 * time.Millisecond)
					l, err := y.Acquire(ctx)
					note("acquire after expiry", err)
					if err == nil {
						note("release after expiry", y.Release(ctx, l))
					}
				}
			case lock.KindLatch:
				a, b := build(s, key, lock.TryOnce()).(lock.Latch), build(s, key, lock.TryOnce()).(lock.Latch)
				_, err := a.TrySetCount(ctx, 1)
				note("set count", err)
				// The waiter's own context ends a while after the count
				// down: with every right the count down wakes it at once;
				// without one (GET, DEL, PUBLISH, DECR, the keys) nothing
				// ever will, and the round need not wait for ctx's end.
				wctx, wcancel := context.WithCancel(ctx)
				defer wcancel()
				waited := make(chan error, 1)
				go func() { waited <- b.Await(wctx) }()
				time.Sleep(50 * time.Millisecond) // the waiter subscribes
				_, err = a.Count(ctx)
				note("count", err)
				note("count down", a.CountDown(ctx))
				select {
				case err = <-waited:
				case <-time.After(awaitGrace):
					wcancel()
					err = fmt.Errorf("not woken %v after the count down: %w", awaitGrace, <-waited)
				}
				note("await", err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	over = true
	return noperm, errors.Join(errs...)
}

// awaitGrace is how long aclCycle's latch waiter may take to wake after
// the count down: ample for a wake-up that comes at once.
const awaitGrace = 2 * time.Second

// refusalHook reports every refused command a client sends.
type refusalHook struct{ note func(error) }

func (refusalHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h refusalHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd) // cmd.Err() is set only after the hooks
		if refused(err) {
			h.note(err)
		}
		return err
	}
}

func (h refusalHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if refused(err) {
			h.note(err)
		}
		return err
	}
}

// aclLockCycle is aclCycle's round of one Locker: a acquires, b contends,
// a extends and releases; then x takes a short lease that y takes over
// once it expired (x nil: no takeover). what prefixes each step's name.
func aclLockCycle(ctx context.Context, note func(string, error), what string, a, b, x, y lock.Locker) {
	lease, err := a.Acquire(ctx)
	note(what+"acquire", err)
	if err == nil {
		// The contender's window must outlast its first queueing command
		// (a fresh connection's dial, AUTH and script load): a context that
		// ends inside a command leaves its outcome unknown, and the fair
		// lock then never sends the LREM that leaving the queue needs, so
		// the round could not tell whether +lrem is needed (it missed once
		// in 1 of ~20 loaded runs at 100 ms).
		wctx, wcancel := context.WithTimeout(ctx, contendFor)
		_, err := b.Acquire(wctx)
		wcancel()
		note("contended "+what+"acquire", err)
		lease, err = a.Extend(ctx, lease)
		note(what+"extend", err)
		note(what+"release", a.Release(ctx, lease))
	}
	if x == nil {
		return
	}
	if _, err := x.Acquire(ctx); err == nil {
		time.Sleep(250 * time.Millisecond)
		lb, err := y.Acquire(ctx)
		note(what+"acquire after expiry", err)
		if err == nil {
			note(what+"release after expiry", y.Release(ctx, lb))
		}
	} else {
		note(what+"acquire to expire", err)
	}
}

// TestACLIsLeast runs every lock as an ACL user with exactly ACL's rights,
// then with each rule dropped in turn (but PING, which only the run's login
// check sends): with all of them no lock is refused anything; without any
// one of them some lock is. Each round starts with an empty script cache,
// as a fresh server would.
func TestACLIsLeast(t *testing.T) {
	t.Parallel()
	// The rounds run aclRounds at once, each on a server of its own: a
	// round's ACL and script cache are its server's.
	servers := redistest.Start(t, aclRounds)
	set := func(srv *redistest.Server, rules []string) error {
		admin := srv.Client(t)
		args := []any{"ACL", "SETUSER", "locks", "reset", "on", ">secret"}
		for _, r := range rules {
			args = append(args, r)
		}
		if err := admin.Do(locktest.Context(t), args...).Err(); err != nil {
			return fmt.Errorf("ACL SETUSER %v: %w", rules, err)
		}
		return admin.ScriptFlush(locktest.Context(t)).Err()
	}
	rules := ACL("tumbler:")
	if err := set(servers[0], rules); err != nil {
		t.Fatal(err)
	}
	noperm, err := aclCycle(t, servers[0].Addr, "locks", "secret", 0)
	if len(noperm) > 0 || err != nil {
		t.Fatalf("with the whole ACL %v:\nrefused: %s\nother: %v", rules, strings.Join(noperm, "\n"), err)
	}
	free := make(chan *redistest.Server, len(servers))
	for _, srv := range servers {
		free <- srv
	}
	var wg sync.WaitGroup
	for i, r := range rules {
		if r == "+ping" || r == "-@all" || r == "resetkeys" || r == "resetchannels" {
			continue
		}
		srv := <-free
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { free <- srv }()
			if err := set(srv, slices.Delete(slices.Clone(rules), i, i+1)); err != nil {
				t.Errorf("without %q: %v", r, err)
				return
			}
			if noperm, _ := aclCycle(t, srv.Addr, "locks", "secret", i+1); len(noperm) == 0 {
				t.Errorf("without %q every lock still works: the ACL is not least", r)
			} else {
				t.Logf("without %s: %s", r, noperm[0])
			}
		}()
	}
	wg.Wait()
}

// contendFor is how long aclLockCycle's contender tries for the held lock.
const contendFor = 500 * time.Millisecond

// aclRounds is how many of TestACLIsLeast's rounds run at once.
const aclRounds = 4
