// Package locktest is the conformance suite every lock variant runs against
// real Redis: mutual exclusion under contention, refusal to release someone
// else's lease, expiry, and extend. Its siblings do the same for the
// siblings of lock.Locker: RWSuite, SemaphoreSuite and LatchSuite. A variant whose documented flaw breaks
// one of these properties excludes that test by name, with the reason, and
// proves the flaw in its own tests instead. Context, Client and Clients are
// the helpers every lock test needs.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/conform"
)

// Suite describes the variant under test.
type Suite struct {
	// New returns an independent client's lock on key: each call is another
	// contender (its own owner value, ideally its own connections).
	New func(t testing.TB, key string, ttl time.Duration) lock.Locker
	// Exclude names tests that do not apply, mapped to the reason.
	Exclude map[string]string
	// TTL for the timing tests; default 400 ms.
	TTL time.Duration
	// NoValidity: the lock does not expose a validity to its caller (a
	// client whose library says only "held", lock/protocol's leases without
	// valid_until_ns), so its leases are held until released: ValidUntil
	// must be far in the future (lock.NoExpiry), not within the TTL.
	NoValidity bool
	// Remote: the lock runs in another process (conform.Target.Remote).
	Remote bool
}

// Names of the tests in the suite, for Exclude: package conform's checks.
const (
	MutualExclusion = conform.MutualExclusion
	ReleaseOthers   = conform.ReleaseOthers
	Expiry          = conform.Expiry
	Extend          = conform.Extend
	LeaseFields     = conform.LeaseFields
)

// Run runs every check of package conform not excluded (but LostReply,
// which needs a proxy to cut replies: the tests of a variant prove that
// case their own way).
func (s Suite) Run(t *testing.T) {
	for _, c := range conform.Checks {
		if c.Name == conform.LostReply {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := s.Exclude[c.Name]; ok {
				t.Skipf("excluded for this variant: %s", why)
			}
			validity := conform.ValidityExposed
			if s.NoValidity {
				validity = conform.ValidityNone
			}
			target := conform.Target{TTL: s.TTL, Validity: validity, Remote: s.Remote,
				New: func(key string, ttl time.Duration) (lock.Locker, error) { return s.New(t, key, ttl), nil }}
			// A check's own waits bound it; the context only turns a hang
			// into a failure, with room for slow contenders (eight client
			// programs of an interpreted library on a busy machine).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := c.Run(ctx, target, Key(t)); errors.Is(err, conform.ErrNotApplicable) {
				t.Skip(err)
			} else if err != nil {
				t.Fatal(err)
			}
		})
	}
}

var keySeq atomic.Int64

// Key returns a key no other test in this process uses.
func Key(t testing.TB) string {
	return fmt.Sprintf("locktest:%s:%d", t.Name(), keySeq.Add(1))
}

// Context returns a context for one step of a test, cancelled on test
// cleanup. Its deadline turns a hung request into a failure, not a hung
// test; it is far beyond any step's expected time.
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Client returns a lock.NewClient to addr (tweak as there), closed on test
// cleanup.
func Client(t testing.TB, addr string, tweak ...func(*redis.Options)) *redis.Client {
	c := lock.NewClient(addr, tweak...)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Clients returns a Client per address, as multi-node locks take them.
func Clients(t testing.TB, addrs []string, tweak ...func(*redis.Options)) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		out[i] = Client(t, a, tweak...)
	}
	return out
}

// acquireWait is conform.AcquireWait, for the sibling suites.
func acquireWait(c context.Context, l conform.Acquirer) (lock.Lease, error) {
	return conform.AcquireWait(c, l)
}
