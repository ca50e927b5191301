package lock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// NewClient builds the go-redis client tumbler uses for locks. It never
// retries on its own (MaxRetries −1): go-redis's default retries a SET NX
// after a read timeout and can leave a lock held by a client that was told
// it failed (an unknown outcome, ARCHITECTURE.md, "Time and leases"); a
// plan asks for retries with lock.redis_retries, as a tweak. Timeouts are
// explicit so a lost reply surfaces as ErrUnknown instead of a hang.
//
// To log in (a password, an ACL user, TLS) pass access.Login.Apply as a
// tweak; tumbler's own clients read their Login from files or the
// environment (access.Resolve), never from a flag or a plan.
func NewClient(addr string, tweak ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{
		Addr:            addr,
		MaxRetries:      -1,
		DialTimeout:     time.Second,
		ReadTimeout:     time.Second,
		WriteTimeout:    time.Second,
		PoolSize:        4,
		DisableIdentity: true, // no CLIENT SETINFO round trips on connect
		Protocol:        2,
		// One dial per attempt: go-redis's default re-dials 5 times 100 ms
		// apart, so a dead node would answer "connection refused" only after
		// ~0.4 s, far past a Redlock node timeout, and look like a lost reply.
		DialerRetries: 1,
	}
	for _, t := range tweak {
		t(o)
	}
	return redis.NewClient(o)
}

// Classify turns a go-redis error into tumbler's typed errors. definite is
// the error to wrap when the command certainly did not take effect (e.g.
// ErrNotObtained for an acquire, ErrNotHeld for a release):
//   - nil stays nil;
//   - redis.Nil and server error replies (READONLY, LOADING, WRONGTYPE, …)
//     are definite: the server refused or the script returned nothing;
//   - a failure to dial or to get a pooled connection is definite: nothing
//     was sent;
//   - anything else (read timeout, EOF, context ended mid-request) is
//     ErrUnknown: the command may have run.
func Classify(err, definite error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnknown), errors.Is(err, ErrNotObtained), errors.Is(err, ErrNotHeld):
		return err
	case errors.Is(err, redis.Nil):
		return definite
	case isServerReply(err), notSent(err):
		return fmt.Errorf("%w: %w", definite, err)
	default:
		return fmt.Errorf("%w: %w", ErrUnknown, err)
	}
}

func isServerReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	// go-redis marks some transport errors as redis.Error too; a real reply
	// from the server is what matters here.
	var ne net.Error
	return !errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

func notSent(err error) bool {
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}
