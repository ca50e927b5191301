package adapters

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/tumbler-dev/tumbler/lock"
)

// RueidislockVersion is the github.com/redis/rueidis release whose
// rueidislock package the adapter wraps (go.mod pins it).
const RueidislockVersion = "v1.0.79"

// Rueidislock is a rueidislock Locker (github.com/redis/rueidis/rueidislock,
// RueidislockVersion) on one name, behind lock.Locker. The name is the
// lock's key; rueidislock stores it as KeyMajority×2−1 keys
// "rueidislock:<i>:<key>" (its KeyPrefix) on the one rueidis client it
// has — one node, or spread over the shards of a Redis Cluster.
//
// What rueidislock does, read from its source (lock.go at
// RueidislockVersion), not from its README:
//   - an acquire sends, key after key, a script that runs
//     SET key value NX PXAT <deadline> and GET key (GET makes the key
//     tracked for client-side caching). The deadline is the client's
//     wall clock (time.Now) plus KeyValidity, in Unix milliseconds: a node
//     whose clock is ahead of the client's by more than KeyValidity answers
//     OK and stores nothing, so every client is granted the lock
//     (TestRueidislockNodeClockAhead). Each key's request is bounded by
//     TryNextAfter; it stops at KeyMajority grants, or as soon as a key
//     answers "held" (the remaining keys count as failed and are not
//     tried), and fails if KeyValidity ran out first. Keys it set on a
//     failed acquire it deletes again before returning.
//   - a held lock is renewed in the background every ExtendInterval by a
//     compare-and-PEXPIREAT to the client's now + KeyValidity, and the lock
//     is given up — its context cancelled — once KeyMajority keys are no
//     longer ours: a renewal that finds the key gone or someone else's, or
//     an invalidation message (the key was changed or expired on the
//     server), or a renewal error.
//   - the lock is the context WithContext returns and its cancel function
//     releases it: it deletes the keys (compare-and-delete) and waits for
//     the deletes. Neither reports anything.
//
// Defaults are rueidislock's own (KeyValidity, KeyMajority 2,
// ExtendInterval KeyValidity/2, TryNextAfter 20 ms, client-side caching
// on), with KeyValidity set to the lock's TTL; lock.WithNodeTimeout sets
// TryNextAfter. RueidislockOptions reaches the other fields.
//
// How its API maps onto lock.Locker:
//   - Acquire calls TryWithContext once per attempt of the configured
//     strategy (tumbler's lock.Retry does the waiting; rueidislock's own
//     wait in WithContext, woken by invalidations, is not used), with the
//     caller's context detached from its cancellation: rueidislock ties
//     the lease's lifetime to the context it is given, and a lease must
//     outlive the Acquire call. An attempt is therefore bounded by
//     TryNextAfter per key (and by KeyValidity for the clean-up of a
//     failure), not by the caller's deadline.
//   - Lease.Value is the adapter's handle of the lease: rueidislock keeps
//     the random value it stores to itself. Release and Extend work only
//     through the adapter that acquired the lease; any other, or a forged
//     value, gets ErrNotHeld.
//   - Lease.Start is the instant before TryWithContext. rueidislock
//     exposes no expiry to its caller — the context it returns has no
//     deadline; the lock is held until that context is cancelled — so
//     ValidUntil is lock.NoExpiry(Start), and Lease.Lost is closed, after
//     lock.Options.OnRenew was told (phase "lost"), when rueidislock
//     cancels the context of a lease not released.
//   - Release cancels the lease's context and waits for rueidislock's
//     deletes (ErrUnknown if ctx ends first). It returns nil even if a
//     delete failed, since rueidislock does not say, and ErrNotHeld for a
//     lease already lost, released, or not held by this adapter.
//   - Extend cannot renew on demand (rueidislock renews by itself): it
//     returns the lease unchanged while rueidislock still holds it, and
//     ErrNotHeld once it was lost or released.
//
// Errors of an acquire: rueidislock.ErrNotLocked (a key held by another
// owner, no majority, or KeyValidity spent first) and server error replies
// are ErrNotObtained; a failure to dial is ErrNotObtained (nothing was
// sent); anything else — above all a key's request that timed out after
// TryNextAfter — is ErrUnknown. rueidislock returns the error of the last
// key it tried only: an earlier key's lost reply is hidden behind a later
// key's definite answer (the keys rueidislock may have set were then
// deleted again, with an outcome it does not report).
//
// The rueidis client is the adapter's own, built on first use from the
// go-redis client's settings: address (a Cluster client's seed
// addresses), dialer (so it goes through the same proxies, Sentinel
// primary and TLS), username, password, database and client name. It is
// closed when the adapter has held no lease and made no call for idleFor,
// when the go-redis client is found closed (checked every janitorTick:
// the leases it still held are then lost, as with a process that
// crashed), or by Close.
type Rueidislock struct {
	client redis.UniversalClient
	key    string
	ttl    time.Duration
	cfg    rueidisConfig
	opt    rueidislock.LockerOption

	mu      sync.Mutex
	locker  rueidislock.Locker // nil until used, and after it was closed
	held    map[string]*rueidisLease
	busy    int // acquires in flight
	lastUse time.Time
	closed  bool // Close was called, or the go-redis client was closed
}

// janitorTick is how often an adapter with a rueidis client checks whether
// it is idle or its go-redis client was closed.
const janitorTick = time.Second

// idleNanos is how long an adapter's rueidis client stays open without a
// held lease or a call (atomic: tests shorten it).
var idleNanos atomic.Int64

func init() { idleNanos.Store(int64(5 * time.Second)) }

func idleFor() time.Duration { return time.Duration(idleNanos.Load()) }

type rueidisConfig struct {
	lock.Options
	passthrough []func(*rueidislock.LockerOption)
}

// rueidisLease is one lease held through rueidislock.
type rueidisLease struct {
	lease    lock.Lease
	ctx      context.Context
	cancel   context.CancelFunc // rueidislock's: releases and waits
	lost     chan struct{}
	released atomic.Bool
}

// RueidislockOptions changes rueidislock's LockerOption after the adapter
// filled it (the rueidis client's address, dialer and login, KeyValidity,
// TryNextAfter): KeyMajority, KeyPrefix, NoLoopTracking, FallbackSETPX,
// ClientOption.DisableCache, …. Only NewRueidislock accepts it.
func RueidislockOptions(fs ...func(*rueidislock.LockerOption)) lock.Option {
	return func(c lock.Configurable) error {
		rc, ok := c.(*rueidisConfig)
		if !ok {
			return fmt.Errorf("adapters.RueidislockOptions applies only to the rueidislock adapter, not to %T", c)
		}
		for i, f := range fs {
			if f == nil {
				return fmt.Errorf("rueidislock option %d is nil", i)
			}
		}
		rc.passthrough = append(rc.passthrough, fs...)
		return nil
	}
}

// NewRueidislock returns a rueidislock lock on key with a TTL of ttl
// (KeyValidity), over the node or cluster client is connected to: a
// *redis.Client or a *redis.ClusterClient. Nothing is dialled before the
// first Acquire.
func NewRueidislock(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Rueidislock, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: rueidislock: nil redis client", lock.ErrConfig)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	co, err := rueidisClientOption(client)
	if err != nil {
		return nil, fmt.Errorf("%w: rueidislock: %w", lock.ErrConfig, err)
	}
	r := &Rueidislock{client: client, key: key, ttl: ttl, cfg: rueidisConfig{Options: lock.DefaultOptions()}, held: map[string]*rueidisLease{}}
	if err := lock.Apply(&r.cfg, opts); err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	r.opt = rueidislock.LockerOption{ClientOption: co, KeyValidity: ttl, TryNextAfter: r.cfg.NodeTimeout}
	for _, f := range r.cfg.passthrough {
		f(&r.opt)
	}
	return r, nil
}

// rueidisClientOption is the rueidis client setup that reaches the server
// c reaches, the way c does.
func rueidisClientOption(c redis.UniversalClient) (rueidis.ClientOption, error) {
	var co rueidis.ClientOption
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	network := "tcp"
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		if o.CredentialsProvider != nil || o.CredentialsProviderContext != nil || o.StreamingCredentialsProvider != nil || o.OnConnect != nil {
			return co, errors.New("the go-redis client sets up its connections with a credentials provider or OnConnect, which a rueidis client cannot repeat")
		}
		co = rueidis.ClientOption{InitAddress: []string{o.Addr}, Username: o.Username, Password: o.Password, SelectDB: o.DB, ClientName: o.ClientName}
		dial, network = o.Dialer, o.Network // go-redis's default dialer does TLS
	case *redis.ClusterClient:
		o := c.Options()
		if o.CredentialsProvider != nil || o.CredentialsProviderContext != nil || o.StreamingCredentialsProvider != nil || o.OnConnect != nil {
			return co, errors.New("the go-redis cluster client sets up its connections with a credentials provider or OnConnect, which a rueidis client cannot repeat")
		}
		co = rueidis.ClientOption{InitAddress: slices.Clone(o.Addrs), Username: o.Username, Password: o.Password, ClientName: o.ClientName, TLSConfig: o.TLSConfig}
		dial = o.Dialer
	default:
		return co, fmt.Errorf("a %T: the adapter needs a *redis.Client or a *redis.ClusterClient to learn where and how to connect", c)
	}
	if dial != nil {
		co.DialCtxFn = func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, network, addr)
		}
	}
	return co, nil
}

// Key is the lock's name in rueidislock (its keys are
// "<KeyPrefix>:<i>:<key>").
func (r *Rueidislock) Key() string { return r.key }

// Acquire calls TryWithContext once per attempt of the configured strategy.
func (r *Rueidislock) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, r.cfg.Retry, r.try)
}

func (r *Rueidislock) try(ctx context.Context) (lock.Lease, error) {
	lk, err := r.use()
	if err != nil {
		return lock.Lease{}, err
	}
	defer r.unuse()
	start := time.Now()
	lctx, cancel, err := lk.TryWithContext(context.WithoutCancel(ctx), r.key)
	if err != nil {
		return lock.Lease{}, rueidisAcquireError(r.key, err)
	}
	l := &rueidisLease{ctx: lctx, cancel: cancel, lost: make(chan struct{})}
	l.lease = lock.Lease{Key: r.key, Value: r.cfg.NewValue(), Start: start, TTL: r.ttl, ValidUntil: lock.NoExpiry(start), Lost: l.lost}
	r.mu.Lock()
	r.held[l.lease.Value] = l
	r.mu.Unlock()
	go r.watch(l)
	return l.lease, nil
}

// use returns the rueidislock Locker, building it on first use, and counts
// an acquire in flight until unuse.
func (r *Rueidislock) use() (rueidislock.Locker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("%w: %s: the rueidislock adapter was closed (or its go-redis client was)", lock.ErrNotObtained, r.key)
	}
	if r.locker == nil {
		lk, err := rueidislock.NewLocker(r.opt)
		if err != nil {
			// rueidis dials and sets the connection up here: no SET was sent.
			return nil, fmt.Errorf("%w: %s: rueidis client: %w", lock.ErrNotObtained, r.key, err)
		}
		r.locker = lk
		go r.janitor(lk)
	}
	r.busy++
	r.lastUse = time.Now()
	return r.locker, nil
}

func (r *Rueidislock) unuse() {
	r.mu.Lock()
	r.busy--
	r.lastUse = time.Now()
	r.mu.Unlock()
}

// watch waits for the lease's context: cancelled by rueidislock while the
// lease is not released, the lease is lost.
func (r *Rueidislock) watch(l *rueidisLease) {
	<-l.ctx.Done()
	if l.released.Load() {
		return
	}
	r.forget(l)
	r.cfg.Renewed(lock.RenewEvent{Phase: "lost", Lease: l.lease, Time: time.Now(),
		Err: fmt.Errorf("%w: %s: rueidislock cancelled the lease's context: a majority of its keys is no longer ours", lock.ErrNotHeld, r.key)})
	close(l.lost)
	l.cancel() // what a holder's deferred cancel does: waits for rueidislock's clean-up
}

// forget drops l from the leases held; the idle time counts from now.
func (r *Rueidislock) forget(l *rueidisLease) {
	r.mu.Lock()
	if r.held[l.lease.Value] == l {
		delete(r.held, l.lease.Value)
	}
	r.lastUse = time.Now()
	r.mu.Unlock()
}

// janitor closes lk once the adapter is idle or its go-redis client was
// closed, whichever comes first.
func (r *Rueidislock) janitor(lk rueidislock.Locker) {
	t := time.NewTicker(janitorTick)
	defer t.Stop()
	for range t.C {
		gone := clientClosed(r.client)
		r.mu.Lock()
		if r.locker != lk {
			r.mu.Unlock()
			return
		}
		idle := len(r.held) == 0 && r.busy == 0 && time.Since(r.lastUse) >= idleFor()
		if !gone && !idle {
			r.mu.Unlock()
			continue
		}
		r.locker = nil
		r.closed = r.closed || gone
		r.mu.Unlock()
		lk.Close()
		return
	}
}

// clientClosed reports whether c was closed, without sending anything: a
// command under a context already cancelled fails with redis.ErrClosed
// on a closed client and with the context's error on an open one, before
// any connection is taken (TestClientClosedProbe holds go-redis to it).
func clientClosed(c redis.UniversalClient) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return errors.Is(c.Ping(ctx).Err(), redis.ErrClosed)
}

// Close closes the adapter's rueidis client: leases still held are lost
// (their keys stay until they expire), and later acquires fail.
func (r *Rueidislock) Close() {
	r.mu.Lock()
	lk := r.locker
	r.locker, r.closed = nil, true
	r.mu.Unlock()
	if lk != nil {
		lk.Close()
	}
}

// lookup returns the adapter's lease with l's value.
func (r *Rueidislock) lookup(l lock.Lease) (*rueidisLease, error) {
	if l.Key != r.key {
		return nil, fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, l.Key, r.key)
	}
	r.mu.Lock()
	h, ok := r.held[l.Value]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s: this adapter holds no rueidislock lease %q (lost, released, or never acquired here)", lock.ErrNotHeld, r.key, l.Value)
	}
	return h, nil
}

// Release cancels the lease's context, which makes rueidislock delete its
// keys, and waits for the deletes.
func (r *Rueidislock) Release(ctx context.Context, l lock.Lease) error {
	h, err := r.lookup(l)
	if err != nil {
		return err
	}
	if h.released.Swap(true) {
		return fmt.Errorf("%w: %s: lease already released", lock.ErrNotHeld, r.key)
	}
	r.forget(h)
	lostBefore := h.ctx.Err() != nil
	done := make(chan struct{})
	go func() {
		h.cancel()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("%w: %s: rueidislock's deletes still in flight: %w", lock.ErrUnknown, r.key, context.Cause(ctx))
	}
	if lostBefore {
		return fmt.Errorf("%w: %s: rueidislock had already given the lease up (its context was cancelled)", lock.ErrNotHeld, r.key)
	}
	return nil
}

// Extend returns l while rueidislock still holds it: it renews by itself.
func (r *Rueidislock) Extend(_ context.Context, l lock.Lease) (lock.Lease, error) {
	h, err := r.lookup(l)
	if err != nil {
		return lock.Lease{}, err
	}
	if h.ctx.Err() != nil || h.released.Load() {
		return lock.Lease{}, fmt.Errorf("%w: %s: rueidislock gave the lease up", lock.ErrNotHeld, r.key)
	}
	return h.lease, nil
}

// rueidisAcquireError maps TryWithContext's error (see Rueidislock).
func rueidisAcquireError(key string, err error) error {
	var oe *net.OpError
	_, server := rueidis.IsRedisErr(err)
	switch {
	case errors.Is(err, rueidislock.ErrNotLocked), errors.Is(err, rueidislock.ErrLockerClosed), server,
		errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("%w: %s: %w", lock.ErrNotObtained, key, err)
	default:
		return fmt.Errorf("%w: %s: %w", lock.ErrUnknown, key, err)
	}
}

var _ lock.Locker = (*Rueidislock)(nil)
