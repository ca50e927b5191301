// Package multilock is Redisson's RedissonMultiLock and RedissonRedLock
// (as in Redisson's source): one Redisson lock (the reentrant hash of package
// reentrant) per independent node, taken one node after the other.
//
// MultiLock needs every node: the first node that refuses makes it give
// back what it got and start over, until its wait time is used up — so one
// node that is down fails every acquire (blog posts call it "鸡肋", useless;
// catalog row multilock-node-down). RedissonRedLock needs N/2+1 nodes: it
// tolerates N − (N/2+1) refusals (failedLocksLimit) before it starts over.
//
// The acquisition loop is the published tryLock(waitTime, leaseTime), kept as
// it is:
//
//   - each node's lock is taken with Redisson's tryLock(remainTime,
//     2×waitTime): it waits on that node (pub/sub, the holder's pttl) for
//     up to the time left of the whole budget, with a lease of twice the
//     wait time;
//   - after each node the time spent is taken off remainTime; when it runs
//     out, what was taken is given back and the acquire fails;
//   - an error from a node (a refused connection, a timeout) counts as a
//     refusal; the node is not unlocked (a lock its lost reply set stays
//     until its lease ends);
//   - once enough nodes granted, every granted node's lease is set to
//     leaseTime (PEXPIRE) and the lock is held. Nothing checks how long
//     that took: there is no validity check after acquiring. A client
//     stalled between the grants and the PEXPIRE (lock.StepGranted) for
//     longer than the nodes' leases comes back, sets the lease of keys that
//     meanwhile expired and were taken by someone else, and holds the lock
//     too (catalog row redisson-redlock-pause-during-acquire; tumbler's
//     redlock refuses there).
//
// Acquire is the published lock(leaseTime): it repeats tryLock with the wait
// time the published version derives from the lease (2 s for a lease up to 2 s, a random
// time between half the lease and the lease up to 5 s, between 5 s and the
// lease above), each capped by ctx, until a try succeeds, the strategy's
// Attempts are used (TryOnce: one tryLock) or ctx ends. The lease is what a
// Redisson caller believes: the lock is held for leaseTime from the moment
// the leases were set (the lease's Start), minus the usual drift allowance. Release unlocks
// every node (errors are Redisson's to ignore; the result here says how
// many nodes were released). Later Redisson versions deprecate
// RedissonRedLock (Redisson #2669) and give each node a share of the wait
// (calcLockWaitTime); this package keeps the published version.
package multilock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// Lock is a MultiLock or a RedissonRedLock on one key for one owner (a
// Java thread in Redisson: the owner id is the same on every node).
type Lock struct {
	name    string
	clients []redis.UniversalClient
	key     string
	ttl     time.Duration
	// need is how many nodes must grant: N (multi) or N/2+1 (redlock).
	need  int
	owner string
	cfg   lock.Options
}

// NewMulti returns Redisson's MultiLock over clients, one per independent
// node: every node must grant.
func NewMulti(clients []redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	return newLock("multi", clients, key, ttl, len(clients), opts)
}

// NewRedLock returns Redisson's RedissonRedLock over clients, one per
// independent node: N/2+1 must grant.
func NewRedLock(clients []redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	return newLock("redisson-redlock", clients, key, ttl, len(clients)/2+1, opts)
}

func newLock(name string, clients []redis.UniversalClient, key string, ttl time.Duration, need int, opts []lock.Option) (*Lock, error) {
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: %s: no redis clients", lock.ErrConfig, name)
	}
	seen := map[redis.UniversalClient]int{}
	for i, c := range clients {
		if err := single.CheckClient(c); err != nil {
			return nil, fmt.Errorf("%s: client %d: %w", name, i, err)
		}
		if j, dup := seen[c]; dup {
			return nil, fmt.Errorf("%w: %s: clients %d and %d are the same client: one node would count twice", lock.ErrConfig, name, j, i)
		}
		seen[c] = i
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &Lock{name: name, clients: clients, key: key, ttl: ttl, need: need, cfg: lock.DefaultOptions()}
	if err := lock.Apply(&l.cfg, opts); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l.owner = l.cfg.NewValue()
	if l.owner == "" {
		return nil, fmt.Errorf("%w: %s: the value generator gave an empty owner id", lock.ErrConfig, name)
	}
	return l, nil
}

// Key is the key of the lock on every node.
func (l *Lock) Key() string { return l.key }

// Need is how many nodes must grant.
func (l *Lock) Need() int { return l.need }

// failedLocksLimit is how many refusals a try tolerates before it starts
// over: 0 for a MultiLock, N − (N/2+1) for a RedLock.
func (l *Lock) failedLocksLimit() int { return len(l.clients) - l.need }

// WaitTime is the wait time the published lock(leaseTime) gives each tryLock.
func WaitTime(lease time.Duration) time.Duration {
	const two, five = 2 * time.Second, 5 * time.Second
	switch {
	case lease <= two:
		return two
	case lease <= five:
		return lease/2 + rand.N(lease-lease/2)
	default:
		return five + rand.N(lease-five)
	}
}

// Acquire repeats tryLock (see the package documentation) until it
// succeeds, the attempts run out or ctx ends. With lock.TryOnce it is
// Redisson's tryLock(0, leaseTime): every node is tried once, without
// waiting and without starting over.
func (l *Lock) Acquire(ctx context.Context) (lock.Lease, error) {
	if l.cfg.Retry.Attempts == 1 {
		return l.tryLock(ctx, 0)
	}
	var last error
	for n := 1; ; n++ {
		wait := WaitTime(l.ttl)
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if wait <= 0 || ctx.Err() != nil {
			if last == nil {
				last = fmt.Errorf("%w: %s %q: no time left to try", lock.ErrNotObtained, l.name, l.key)
			}
			return lock.Lease{}, last
		}
		lease, err := l.tryLock(ctx, wait)
		if err == nil || !errors.Is(err, lock.ErrNotObtained) {
			return lease, err
		}
		last = err
		if a := l.cfg.Retry.Attempts; a > 0 && n >= a {
			return lock.Lease{}, err
		}
	}
}

// tryLock is the published RedissonMultiLock.tryLock(waitTime, leaseTime)
// with leaseTime the TTL. A waitTime of 0 follows current Redisson, where
// the published version is silent or loops: each node's lock gets the lease itself and
// is tried once, and a refusal beyond the limit fails the try.
func (l *Lock) tryLock(ctx context.Context, waitTime time.Duration) (lock.Lease, error) {
	start := time.Now()
	newLease := 2 * waitTime
	if waitTime <= 0 {
		newLease = l.ttl
	}
	t := start
	remain := waitTime
	n := len(l.clients)
	failed := l.failedLocksLimit()
	var acquired []int
	var refusals []error
	for i := 0; i < n; i++ {
		err := l.lockNode(ctx, i, remain, newLease)
		if err == nil {
			acquired = append(acquired, i)
		} else {
			refusals = append(refusals, fmt.Errorf("node %d: %w", i, err))
			if n-len(acquired) == l.failedLocksLimit() {
				break
			}
			if failed == 0 {
				l.unlockNodes(ctx, acquired)
				if waitTime <= 0 {
					return lock.Lease{}, fmt.Errorf("%w: %s %q: refused by %d nodes, %d needed of %d: %v",
						lock.ErrNotObtained, l.name, l.key, len(refusals), l.need, n, lastErrs(refusals, 3))
				}
				failed = l.failedLocksLimit()
				acquired = acquired[:0]
				i = -1 // start over from the first node
			} else {
				failed--
			}
		}
		if waitTime <= 0 {
			continue
		}
		remain -= time.Since(t)
		t = time.Now()
		if remain <= 0 {
			l.unlockNodes(ctx, acquired)
			return lock.Lease{}, fmt.Errorf("%w: %s %q: wait time %v used up with %d of %d nodes (%d needed); last refusals: %v",
				lock.ErrNotObtained, l.name, l.key, waitTime, len(acquired), n, l.need, lastErrs(refusals, 3))
		}
	}
	if len(acquired) < l.need { // cannot happen with the loop above; guard the invariant
		l.unlockNodes(ctx, acquired)
		return lock.Lease{}, fmt.Errorf("%w: %s %q: %d of %d nodes", lock.ErrNotObtained, l.name, l.key, len(acquired), n)
	}
	if err := l.cfg.Step(ctx, lock.StepGranted); err != nil {
		l.unlockNodes(ctx, acquired)
		return lock.Lease{}, fmt.Errorf("%w: %s %q: %w", lock.ErrUnknown, l.name, l.key, err)
	}
	// The lease is counted from the PEXPIREs that set it.
	set := time.Now()
	l.expireNodes(ctx, acquired)
	return lock.Lease{Key: l.key, Value: l.owner, Start: set, TTL: l.ttl, ValidUntil: l.cfg.ValidUntil(set, l.ttl)}, nil
}

// lockNode is Redisson's RedissonLock.tryLock(wait, lease) on node i: one
// attempt when wait is not positive.
func (l *Lock) lockNode(ctx context.Context, i int, wait, lease time.Duration) error {
	retry := lock.TryOnce()
	if wait > 0 {
		retry = lock.Wait(0, 0)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	sub, err := reentrant.New(l.clients[i], l.key, lease, lock.WithValue(func() string { return l.owner }), lock.WithRetry(retry))
	if err != nil {
		return err
	}
	_, err = sub.Acquire(ctx)
	return err
}

// unlockNodes is Redisson's unlockInner: unlock each node, errors ignored.
// It runs even when ctx has ended.
func (l *Lock) unlockNodes(ctx context.Context, nodes []int) int {
	released := 0
	for _, err := range l.onNodes(ctx, nodes, func(ctx context.Context, i int) error {
		return l.subRelease(ctx, i)
	}) {
		if err == nil {
			released++
		}
	}
	return released
}

func (l *Lock) subRelease(ctx context.Context, i int) error {
	sub, err := reentrant.New(l.clients[i], l.key, l.ttl, lock.WithValue(func() string { return l.owner }))
	if err != nil {
		return err
	}
	return sub.Release(ctx, lock.Lease{Key: l.key, Value: l.owner})
}

// expireNodes sets the lease of the granted nodes' keys to the TTL
// (Redisson's expireAsync: a plain PEXPIRE, whoever holds the key now).
func (l *Lock) expireNodes(ctx context.Context, nodes []int) {
	l.onNodes(ctx, nodes, func(ctx context.Context, i int) error {
		return l.clients[i].PExpire(ctx, l.key, l.ttl).Err()
	})
}

// onNodes runs f on the nodes in parallel, each bounded by a second, and
// returns their errors in the order of nodes.
func (l *Lock) onNodes(ctx context.Context, nodes []int, f func(context.Context, int) error) []error {
	errs := make([]error, len(nodes))
	done := make(chan struct{}, len(nodes))
	base := context.WithoutCancel(ctx)
	for k, i := range nodes {
		go func() {
			nctx, cancel := context.WithTimeout(base, time.Second)
			errs[k] = f(nctx, i)
			cancel()
			done <- struct{}{}
		}()
	}
	for range nodes {
		<-done
	}
	return errs
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Release unlocks every node. Its answer says what the release did to the
// lock as others see it: the owner's holds block everyone else while they
// are on more than N − need nodes (for MultiLock one node is enough, for
// RedissonRedLock a quorum). It answers nil when it freed the lock: more
// than N − need nodes released the owner's hold, and no more than that
// may still carry it; ErrNotHeld when it cannot have changed anything (the
// nodes that released it, or may have, are too few to have blocked
// anyone); ErrUnknown otherwise. For RedissonRedLock that is the quorum
// rule (nil when a quorum released it); for MultiLock a release that freed
// some nodes while another had lost the hold (a node restarted empty) is a
// release, not "not held": the nodes it freed blocked every other owner
// until then, and calling it "not held" would tell the history it changed
// nothing.
func (l *Lock) Release(ctx context.Context, lease lock.Lease) error {
	if lease.Key != l.key {
		return fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, lease.Key, l.key)
	}
	if lease.Value != l.owner {
		return fmt.Errorf("%w: %s %q: lease of owner %q given to owner %q", lock.ErrNotHeld, l.name, l.key, lease.Value, l.owner)
	}
	errs := l.onNodes(ctx, all(len(l.clients)), func(ctx context.Context, i int) error {
		return l.subRelease(ctx, i)
	})
	done, open := count(errs)
	spare := len(errs) - l.need // nodes the owner may lack and still block no one
	switch {
	case done > spare && open <= spare:
		return nil
	case done+open > spare:
		freed := "if no undecided node still carries the hold"
		if spare > 0 {
			freed = fmt.Sprintf("if at most %d nodes still carry the hold", spare)
		}
		return fmt.Errorf("%w: %s %q released on %d of %d nodes, %d undecided (the lock is free %s): %v", lock.ErrUnknown, l.name, l.key, done, len(errs), open, freed, lastErrs(errs, 3))
	default:
		return fmt.Errorf("%w: %s %q released on %d of %d nodes (%d needed to have held it): %v", lock.ErrNotHeld, l.name, l.key, done, len(errs), spare+1, lastErrs(errs, 3))
	}
}

// count says how many of errs are nil (done) and how many unknown (open).
func count(errs []error) (done, open int) {
	for _, err := range errs {
		switch {
		case err == nil:
			done++
		case errors.Is(err, lock.ErrUnknown):
			open++
		}
	}
	return done, open
}

var renewScript = redis.NewScript(`
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;
`)

// Extend renews the owner's hold on every node (Redisson's renewal
// script); it succeeds when the needed number of nodes renewed.
func (l *Lock) Extend(ctx context.Context, lease lock.Lease) (lock.Lease, error) {
	if lease.Key != l.key || lease.Value != l.owner {
		return lock.Lease{}, fmt.Errorf("%w: %s %q: not this owner's lease", lock.ErrNotHeld, l.name, l.key)
	}
	start := time.Now()
	err := l.tally("renewed", l.onNodes(ctx, all(len(l.clients)), func(ctx context.Context, i int) error {
		n, err := renewScript.Run(ctx, l.clients[i], []string{l.key}, l.ttl.Milliseconds(), l.owner).Int64()
		if err != nil {
			return lock.Classify(err, lock.ErrNotHeld)
		}
		if n == 0 {
			return single.ErrNotOwner
		}
		return nil
	}))
	if err != nil {
		return lock.Lease{}, err
	}
	lease.Start, lease.TTL, lease.ValidUntil = start, l.ttl, l.cfg.ValidUntil(start, l.ttl)
	return lease, nil
}

func (l *Lock) tally(what string, errs []error) error {
	done, open := count(errs)
	switch {
	case done >= l.need:
		return nil
	case done+open >= l.need:
		return fmt.Errorf("%w: %s %q %s on %d of %d nodes, %d undecided (%d needed): %v", lock.ErrUnknown, l.name, l.key, what, done, len(errs), open, l.need, lastErrs(errs, 3))
	default:
		return fmt.Errorf("%w: %s %q %s on %d of %d nodes (%d needed): %v", lock.ErrNotHeld, l.name, l.key, what, done, len(errs), l.need, lastErrs(errs, 3))
	}
}

func lastErrs(errs []error, k int) []error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) > k {
		out = out[len(out)-k:]
	}
	return out
}

var _ lock.Locker = (*Lock)(nil)
