// Package single is the lock of the Redis documentation's single-instance recipe on one Redis primary:
//
//   - acquire: SET key value NX PX ttl, with a fresh random owner value, in
//     one command so the lock can never exist without its expiry;
//   - release: a Lua compare-and-delete (GET, compare, DEL run atomically),
//     so a holder that outlived its TTL cannot delete the next holder's lock;
//   - extend: a Lua compare-and-pexpire, the same guard for renewals.
//
// The Redis documentation and the blog posts warn about what it cannot do: a primary that fails over before
// replicating the key hands the lock to a second client. WithWait narrows
// that window the way Redisson's checkLockSyncedSlaves does — WAIT for n
// replicas after the SET and give the lock back if fewer acknowledge — but
// WAIT is not consensus: a replica that acknowledged can still lose the race
// to be promoted against one that did not (catalog rows
// single-failover-wait and single-failover-wait-lagging).
//
// Failures follow lock.Classify: a reply that says "held by someone else" is
// ErrNotObtained, a lost reply (timeout, EOF) is ErrUnknown because the SET
// may have run. Acquire never retries after ErrUnknown.
//
// The package also exports the building blocks other variants reuse: the
// scripts (Release, Extend), the plain SET NX PX (SetNX) and NewWith, which
// builds this lock around another atomic acquire (package fenced).
package single

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// Conn is what an acquire attempt sends its commands through: any
// redis.UniversalClient, or the *redis.Conn that WithWait pins.
type Conn interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// SetFunc sends one acquire attempt. It must set key to value with a PX
// expiry of ttl only if key is absent, atomically, and return the fencing
// token it issued (0 when it issues none). A held key is redis.Nil.
type SetFunc func(ctx context.Context, c Conn, key, value string, ttl time.Duration) (token int64, err error)

// SetNX is the acquire of the Redis documentation: SET key value NX PX ttl. It issues no
// token.
func SetNX(ctx context.Context, c Conn, key, value string, ttl time.Duration) (int64, error) {
	cmd := redis.NewStatusCmd(ctx, "set", key, value, "nx", "px", ttl.Milliseconds())
	_ = c.Process(ctx, cmd)
	return 0, cmd.Err()
}

// The Lua source of the release (compare-and-delete) and extend
// (compare-and-pexpire) scripts: KEYS[1] is the lock's key, ARGV[1] the
// owner value, ARGV[2] the extend's TTL in milliseconds. Each returns 1 when
// the key held the value, 0 otherwise. Exported for Redlock's pipelined
// transport, which sends them without go-redis.
const (
	ReleaseLua = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	ExtendLua  = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
)

var (
	releaseScript = redis.NewScript(ReleaseLua)
	extendScript  = redis.NewScript(ExtendLua)
)

// Release runs the compare-and-delete on c: nil when key held value and is
// now deleted, ErrNotOwner when it held something else or nothing, and the
// error classified with ErrNotHeld as the definite one otherwise. The script is sent as EVALSHA
// and falls back to EVAL once on NOSCRIPT.
func Release(ctx context.Context, c redis.Scripter, key, value string) error {
	n, err := releaseScript.Run(ctx, c, []string{key}, value).Int64()
	return ScriptResult(n, err, key)
}

// Extend runs the compare-and-pexpire on c, setting key's expiry to ttl
// from now when it still holds value. Results as for Release.
func Extend(ctx context.Context, c redis.Scripter, key, value string, ttl time.Duration) error {
	n, err := extendScript.Run(ctx, c, []string{key}, value, ttl.Milliseconds()).Int64()
	return ScriptResult(n, err, key)
}

// ErrNotOwner is the ErrNotHeld that Release and Extend return when the
// script ran and found the key holding another owner's value or nothing.
// Other ErrNotHeld errors (a connection refused) mean the script did not
// run, so the key may still be ours until it expires.
var ErrNotOwner = fmt.Errorf("%w: the key holds another owner's value or nothing", lock.ErrNotHeld)

// ScriptResult maps a run of ReleaseLua or ExtendLua on key — its integer
// reply n, or the error that came instead — to Release's and Extend's
// results.
func ScriptResult(n int64, err error, key string) error {
	if err != nil {
		return lock.Classify(err, lock.ErrNotHeld)
	}
	if n == 0 {
		return fmt.Errorf("%w (%q)", ErrNotOwner, key)
	}
	return nil
}

// CheckClient refuses a nil client, including a typed nil pointer stored in
// the interface, which would otherwise panic on first use.
func CheckClient(c redis.UniversalClient) error {
	if c == nil {
		return fmt.Errorf("%w: nil redis client", lock.ErrConfig)
	}
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("%w: nil redis client (%T)", lock.ErrConfig, c)
	}
	return nil
}

// config is the configuration of a single (or fenced) lock.
type config struct {
	lock.Options
	// waitReplicas > 0 makes Acquire WAIT for that many replicas.
	waitReplicas int
	waitTimeout  time.Duration
}

// WithWait makes Acquire run WAIT replicas timeout after a successful SET.
// If fewer than replicas acknowledge within timeout, the lock is released
// and Acquire fails with ErrNotObtained ("only k of n replicas
// acknowledged"); if that release fails too, with ErrUnknown, since the key
// may still be ours. The lock is also given back when the WAIT used up the
// lease's validity. It applies to single and fenced locks only.
func WithWait(replicas int, timeout time.Duration) lock.Option {
	return func(c lock.Configurable) error {
		cfg, ok := c.(*config)
		if !ok {
			return fmt.Errorf("single.WithWait applies to single and fenced locks, not %T", c)
		}
		if replicas < 1 {
			return fmt.Errorf("WAIT replica count %d must be at least 1", replicas)
		}
		if timeout <= 0 {
			// WAIT n 0 blocks forever: a lock must not.
			return fmt.Errorf("WAIT timeout %v must be positive (0 would block forever)", timeout)
		}
		cfg.waitReplicas, cfg.waitTimeout = replicas, timeout
		return nil
	}
}

// Lock is a lock on one key of one Redis primary. It is safe for concurrent
// use; every Acquire makes a new owner value.
type Lock struct {
	client  redis.UniversalClient
	key     string
	ttl     time.Duration
	cfg     config
	set     SetFunc
	attempt func(context.Context) (lock.Lease, error) // bound once: no closure per Acquire
}

// New returns the SET NX PX lock on key with the given TTL.
func New(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	return NewWith(SetNX, client, key, ttl, opts...)
}

// NewWith returns a lock that acquires with set instead of SET NX PX and
// otherwise behaves as New: same release, extend, WAIT and retry handling.
func NewWith(set SetFunc, client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*Lock, error) {
	if set == nil {
		return nil, fmt.Errorf("%w: nil acquire function", lock.ErrConfig)
	}
	if err := CheckClient(client); err != nil {
		return nil, err
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, err
	}
	l := &Lock{client: client, key: key, ttl: ttl, cfg: config{Options: lock.DefaultOptions()}, set: set}
	if err := lock.Apply(&l.cfg, opts); err != nil {
		return nil, err
	}
	if l.cfg.waitReplicas > 0 && l.cfg.waitTimeout >= ttl {
		return nil, fmt.Errorf("%w: WAIT timeout %v is not shorter than the TTL %v: the lease could expire before the replicas answer", lock.ErrConfig, l.cfg.waitTimeout, ttl)
	}
	_, pins := client.(pinner)
	_, pinsByKey := client.(keyPinner)
	if l.cfg.waitReplicas > 0 && !pins && !pinsByKey {
		return nil, fmt.Errorf("%w: WithWait needs a *redis.Client or a *redis.ClusterClient: WAIT counts only the writes of the connection it runs on, so the SET and the WAIT must share one, and %T cannot pin a connection", lock.ErrConfig, client)
	}
	l.attempt = l.tryAcquire
	return l, nil
}

// Key is the Redis key of the lock.
func (l *Lock) Key() string { return l.key }

// TTL is the expiry every acquire and extend sets.
func (l *Lock) TTL() time.Duration { return l.ttl }

// Acquire tries to take the lock following the retry strategy.
func (l *Lock) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, l.cfg.Retry, l.attempt)
}

func (l *Lock) tryAcquire(ctx context.Context) (lock.Lease, error) {
	var conn Conn = l.client
	if l.cfg.waitReplicas > 0 {
		pinned, err := l.pin(ctx)
		if err != nil {
			return lock.Lease{}, err
		}
		defer pinned.Close()
		conn = pinned
	}
	value := l.cfg.NewValue()
	start := time.Now()
	token, err := l.set(ctx, conn, l.key, value, l.ttl)
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return lock.Lease{}, fmt.Errorf("%w: %q", lock.ErrHeld, l.key)
		}
		return lock.Lease{}, lock.Classify(err, lock.ErrNotObtained)
	}
	if err := l.cfg.Step(ctx, lock.StepGranted); err != nil {
		return lock.Lease{}, fmt.Errorf("%w: %q: %w", lock.ErrUnknown, l.key, err)
	}
	lease := lock.Lease{
		Key: l.key, Value: value, Token: token,
		Start: start, TTL: l.ttl, ValidUntil: l.cfg.ValidUntil(start, l.ttl),
	}
	if l.cfg.waitReplicas > 0 {
		if err := l.waitReplicas(ctx, conn.(*redis.Conn), lease); err != nil {
			return lock.Lease{}, err
		}
	}
	return lease, nil
}

// pinner is a client that can lend one connection for a sequence of
// commands (*redis.Client, including Sentinel failover clients).
type pinner interface{ Conn() *redis.Conn }

// keyPinner is a Redis Cluster client: it lends a connection of the
// primary that serves a key's slot, as it knows the slots now.
type keyPinner interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
}

// pin lends the connection the SET and its WAIT share. In a cluster it is
// one to the key's primary as the client knows it: if that is no longer
// the primary, the SET is refused with MOVED (a definite failure) and the
// client's periodic reload of the slot map catches up.
func (l *Lock) pin(ctx context.Context) (*redis.Conn, error) {
	if p, ok := l.client.(pinner); ok {
		return p.Conn(), nil
	}
	m, err := l.client.(keyPinner).MasterForKey(ctx, l.key)
	if err != nil {
		return nil, lock.Classify(fmt.Errorf("find the primary of %q: %w", l.key, err), lock.ErrNotObtained)
	}
	return m.Conn(), nil
}

// waitReplicas is Redisson's checkLockSyncedSlaves: a lock that too few
// replicas have seen is given back rather than trusted. It runs on the
// connection that sent the SET: WAIT on another connection would count
// that connection's writes, long acknowledged, and return at once.
func (l *Lock) waitReplicas(ctx context.Context, conn *redis.Conn, lease lock.Lease) error {
	acked, err := conn.Wait(ctx, l.cfg.waitReplicas, l.cfg.waitTimeout).Result()
	var why string
	switch {
	case err != nil:
		why = fmt.Sprintf("WAIT %d failed: %v", l.cfg.waitReplicas, err)
	case acked < int64(l.cfg.waitReplicas):
		why = fmt.Sprintf("only %d of %d replicas acknowledged", acked, l.cfg.waitReplicas)
	case !lease.Valid(time.Now()):
		why = fmt.Sprintf("the lease's validity ran out while waiting for %d replicas", l.cfg.waitReplicas)
	default:
		return nil
	}
	// Give the key back even if the caller's context is already done.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.waitTimeout)
	defer cancel()
	rerr := Release(rctx, conn, l.key, lease.Value)
	if rerr != nil && !errors.Is(rerr, ErrNotOwner) {
		return fmt.Errorf("%w: %q: %s, and releasing it failed: %w", lock.ErrUnknown, l.key, why, rerr)
	}
	return fmt.Errorf("%w: %q: %s (lock released)", lock.ErrNotObtained, l.key, why)
}

// Release deletes the key if it still holds the lease's owner value.
func (l *Lock) Release(ctx context.Context, lease lock.Lease) error {
	return Release(ctx, l.client, l.key, lease.Value)
}

// Extend resets the key's expiry to the TTL if it still holds the lease's
// owner value. The new lease counts its validity from before the request.
func (l *Lock) Extend(ctx context.Context, lease lock.Lease) (lock.Lease, error) {
	start := time.Now()
	if err := Extend(ctx, l.client, l.key, lease.Value, l.ttl); err != nil {
		return lock.Lease{}, err
	}
	lease.Start, lease.TTL, lease.ValidUntil = start, l.ttl, l.cfg.ValidUntil(start, l.ttl)
	return lease, nil
}

var _ lock.Locker = (*Lock)(nil)
