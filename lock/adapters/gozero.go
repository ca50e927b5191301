package adapters

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/proc"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/tumbler-dev/tumbler/lock"
)

// GoZeroVersion is the github.com/zeromicro/go-zero release whose
// core/stores/redis RedisLock the adapter drives (go.mod pins it).
const GoZeroVersion = "v1.10.3"

// GoZero is go-zero's RedisLock (core/stores/redis, GoZeroVersion) on one
// key, behind lock.Locker, driven as go-zero's users drive it: one
// RedisLock object, made once with NewRedisLock and SetExpire, reused for
// every acquisition, so its owner id (16 random characters drawn when the
// object is made) is the same for every hold it takes.
//
// What RedisLock does, read from its source (redislock.go, lockscript.lua
// and delscript.lua at GoZeroVersion):
//   - AcquireCtx runs one script: if the key holds the object's id, SET it
//     again with PX (a fresh TTL) and answer OK; otherwise SET NX PX. So an
//     Acquire on an object that already holds the key succeeds at once and
//     refreshes the TTL: nothing counts the holds, and one Release frees
//     the lock whatever the number of Acquires before it.
//   - the TTL is SetExpire's whole seconds plus a fixed 500 ms of
//     "tolerance" (SetExpire never called: 500 ms).
//   - ReleaseCtx runs compare-and-delete with the id and answers whether
//     it deleted.
//   - there is no extend and no renewal: re-Acquiring a held lock is how
//     go-zero's maintainers describe refreshing it.
//
// The Redis client is go-zero's own, built as a go-zero service builds it
// (NewRedis with a RedisConf holding the defaults go-zero's config loader
// fills: type node, NonBlock, RESP3, maintenance notifications disabled)
// from the address and login of the go-redis client the harness hands the
// adapter (this client's proxy to the node). go-zero then makes, once per
// address and process, a go-redis client with its own settings: MaxRetries
// 3 (a command whose reply timed out or whose connection broke is sent
// again), go-redis's default timeouts, a pool of 10 per CPU with 8 idle
// connections kept, TLS without verification when the login uses TLS; and
// two hooks, a slow-call logger and a circuit breaker (Google SRE style)
// that refuses calls without sending them once too many failed — the
// breaker of the first Redis object made for the address, since the
// client and its hooks are shared. go-redis's defaults are those of the
// version the build resolves: tumbler's go.mod holds go-redis v9.23.0,
// whose read and write timeouts are 5 s and retry backoff 10 ms to 1 s (a
// service built with go-zero's own minimum, v9.21.0, has 3 s and 8 to
// 512 ms). On a server older than Redis 7.2 every new connection's CLIENT
// SETINFO fails, and go-zero's breaker counts each failure. The harness's
// read_timeout and redis_retries do not apply: go-zero's client is not
// configurable there. The context bounds go-redis's waits between retries,
// not a read (go-zero's client does not enable context timeouts): a call
// whose reply is late returns when it comes or after the read timeout,
// and its retries run only while the context allows them.
//
// How the API maps onto lock.Locker:
//   - Acquire calls AcquireCtx once per attempt of the configured strategy
//     (tumbler's lock.Retry does the waiting; RedisLock never waits).
//     false is lock.ErrHeld: the script's SET NX found the key holding
//     another id. Lease.Value is the object's id (read from the object
//     once, by reflection, so that the history names the value Redis
//     holds); Lease.Start is the instant AcquireCtx returned and
//     ValidUntil is Start + TTL: go-zero's caller is told true, and holds
//     the lock for the seconds it set, however long the reply took (the
//     500 ms of tolerance cover a slower reply up to that), as with
//     bsm/redislock.
//   - Release calls ReleaseCtx: false is lock.ErrNotHeld. A lease whose
//     value is not this object's id is refused without a call (go-zero's
//     Release takes no lease: it would release this object's hold). A
//     lease of an earlier acquisition by this object has the same value as
//     the current one, and releases it: go-zero cannot tell them apart.
//   - Extend calls AcquireCtx again, as go-zero's maintainers describe
//     refreshing a held lock: it succeeds while the key holds the id, and
//     also when the key is free — a lease that lapsed is re-created, not
//     refused (TestGoZeroExtendRecreates).
//
// Importing go-zero's core packages has process-wide effects, which
// the adapter's init undoes for tumbler: core/proc catches SIGINT and
// SIGTERM and, some seconds after the first, sends the signal to the
// process again — a second Ctrl-C, which tumbler obeys by quitting at once,
// without a report — so the time to force quit is set beyond any run; and
// core/stat logs the process's CPU and memory every minute on standard
// output, which logx.DisableStat stops. go-zero's error and slow-call logs
// go to standard error, as go-zero leaves them.
type GoZero struct {
	rl  *zredis.RedisLock
	key string
	ttl time.Duration
	id  string
	cfg lock.Options
}

func init() {
	proc.SetTimeToForceQuit(time.Duration(math.MaxInt64))
	logx.DisableStat()
}

// NewGoZero returns go-zero's RedisLock on key with an expiry of ttl, a
// whole number of seconds, over the node client reaches (a *redis.Client
// to one address: go-zero has no Sentinel client, and its cluster client
// would dial the addresses the nodes announce, past this client's
// proxies). Nothing is dialled before the first call.
func NewGoZero(client redis.UniversalClient, key string, ttl time.Duration, opts ...lock.Option) (*GoZero, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: go-zero: nil redis client", lock.ErrConfig)
	}
	if err := lock.CheckKeyTTL(key, ttl); err != nil {
		return nil, fmt.Errorf("go-zero: %w", err)
	}
	if ttl%time.Second != 0 {
		return nil, fmt.Errorf("%w: go-zero: ttl %v: RedisLock.SetExpire takes whole seconds", lock.ErrConfig, ttl)
	}
	conf, err := goZeroConf(client)
	if err != nil {
		return nil, fmt.Errorf("%w: go-zero: %w", lock.ErrConfig, err)
	}
	store, err := zredis.NewRedis(conf)
	if err != nil {
		return nil, fmt.Errorf("%w: go-zero: %w", lock.ErrConfig, err)
	}
	g := &GoZero{rl: zredis.NewRedisLock(store, key), key: key, ttl: ttl, cfg: lock.DefaultOptions()}
	if err := lock.Apply(&g.cfg, opts); err != nil {
		return nil, fmt.Errorf("go-zero: %w", err)
	}
	g.rl.SetExpire(int(ttl / time.Second))
	if g.id, err = goZeroID(g.rl); err != nil {
		return nil, fmt.Errorf("%w: go-zero: %w", lock.ErrConfig, err)
	}
	return g, nil
}

// goZeroConf is the RedisConf of a go-zero service that reaches the node
// c reaches, with the defaults go-zero's config loader fills in.
func goZeroConf(c redis.UniversalClient) (zredis.RedisConf, error) {
	rc, ok := c.(*redis.Client)
	if !ok {
		return zredis.RedisConf{}, fmt.Errorf("a %T: the adapter needs a *redis.Client to one node (go-zero's cluster client would dial the addresses the nodes announce, not this client's proxies)", c)
	}
	o := rc.Options()
	if o.Addr == "FailoverClient" { // go-redis's placeholder address of a Sentinel client
		return zredis.RedisConf{}, errors.New("a Sentinel client: go-zero has no Sentinel support (use the fixed address: lock.discovery fixed)")
	}
	return zredis.RedisConf{
		Host:               o.Addr,
		Type:               zredis.NodeType,
		User:               o.Username,
		Pass:               o.Password,
		Tls:                o.TLSConfig != nil,
		NonBlock:           true,
		Protocol:           3,
		MaintNotifications: "disabled",
		PingTimeout:        time.Second,
	}, nil
}

// goZeroID reads the owner id a RedisLock drew when it was made. go-zero
// keeps it unexported; the adapter reads it once so that the history
// names the value Redis holds.
func goZeroID(rl *zredis.RedisLock) (string, error) {
	f := reflect.ValueOf(rl).Elem().FieldByName("id")
	if !f.IsValid() || f.Kind() != reflect.String || f.String() == "" {
		return "", fmt.Errorf("RedisLock has no string field id: the adapter was written for go-zero %s", GoZeroVersion)
	}
	return f.String(), nil
}

// Key is the Redis key this lock guards.
func (g *GoZero) Key() string { return g.key }

// Acquire calls AcquireCtx once per attempt of the configured strategy.
func (g *GoZero) Acquire(ctx context.Context) (lock.Lease, error) {
	return lock.Retry(ctx, g.cfg.Retry, func(ctx context.Context) (lock.Lease, error) {
		ok, err := g.rl.AcquireCtx(ctx)
		if err != nil {
			return lock.Lease{}, goZeroError(g.key, err, lock.ErrNotObtained)
		}
		if !ok {
			return lock.Lease{}, fmt.Errorf("%w: %q", lock.ErrHeld, g.key)
		}
		// A stall here stands for one inside AcquireCtx between the
		// script's run and its reply: go-zero's caller is told true then.
		if err := g.cfg.Step(ctx, lock.StepGranted); err != nil {
			return lock.Lease{}, fmt.Errorf("%w: %s: %w", lock.ErrUnknown, g.key, err)
		}
		return g.lease(time.Now()), nil
	})
}

func (g *GoZero) lease(returned time.Time) lock.Lease {
	return lock.Lease{Key: g.key, Value: g.id, Start: returned, TTL: g.ttl, ValidUntil: returned.Add(g.ttl)}
}

// check refuses a lease that is not this object's: go-zero's Release and
// Acquire act on the object's own id, whatever lease the caller meant.
func (g *GoZero) check(l lock.Lease) error {
	if l.Key != g.key {
		return fmt.Errorf("%w: lease for key %q given to the lock on %q", lock.ErrNotHeld, l.Key, g.key)
	}
	if l.Value != g.id {
		return fmt.Errorf("%w: %s: lease value %q is not this RedisLock's id", lock.ErrNotHeld, g.key, l.Value)
	}
	return nil
}

// Release calls ReleaseCtx.
func (g *GoZero) Release(ctx context.Context, l lock.Lease) error {
	if err := g.check(l); err != nil {
		return err
	}
	ok, err := g.rl.ReleaseCtx(ctx)
	if err != nil {
		return goZeroError(g.key, err, lock.ErrNotHeld)
	}
	if !ok {
		return fmt.Errorf("%w: %s: go-zero's release deleted nothing (the key does not hold this RedisLock's id)", lock.ErrNotHeld, g.key)
	}
	return nil
}

// Extend calls AcquireCtx again: go-zero's way to refresh a held lock.
func (g *GoZero) Extend(ctx context.Context, l lock.Lease) (lock.Lease, error) {
	if err := g.check(l); err != nil {
		return lock.Lease{}, err
	}
	ok, err := g.rl.AcquireCtx(ctx)
	if err != nil {
		return lock.Lease{}, goZeroError(g.key, err, lock.ErrNotHeld)
	}
	if !ok {
		return lock.Lease{}, fmt.Errorf("%w: %s: the key holds another id", lock.ErrNotHeld, g.key)
	}
	return g.lease(time.Now()), nil
}

// goZeroError maps an error of go-zero's client: the breaker's refusal is
// definite (nothing was sent), the rest as lock.Classify says.
func goZeroError(key string, err, definite error) error {
	if errors.Is(err, breaker.ErrServiceUnavailable) {
		return fmt.Errorf("%w: %s: go-zero's circuit breaker refused the call: %w", definite, key, err)
	}
	return fmt.Errorf("%s: %w", key, lock.Classify(err, definite))
}

var _ lock.Locker = (*GoZero)(nil)
