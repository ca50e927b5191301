package lock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/lock"
)

// Retry retries only a definite refusal: after an unknown outcome the
// caller may hold the lock, and retrying would hide that.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	calls := 0
	refuse := func(context.Context) (lock.Lease, error) { calls++; return lock.Lease{}, lock.ErrNotObtained }

	if _, err := lock.Retry(ctx, lock.Strategy{Attempts: 3}, refuse); !errors.Is(err, lock.ErrNotObtained) || calls != 3 {
		t.Errorf("3 attempts: err %v after %d calls", err, calls)
	}
	calls = 0
	unknown := func(context.Context) (lock.Lease, error) { calls++; return lock.Lease{}, lock.ErrUnknown }
	if _, err := lock.Retry(ctx, lock.Wait(0, 0), unknown); !errors.Is(err, lock.ErrUnknown) || calls != 1 {
		t.Errorf("unknown outcome: err %v after %d calls, want one call", err, calls)
	}
	calls = 0
	third := func(context.Context) (lock.Lease, error) {
		if calls++; calls < 3 {
			return lock.Lease{}, lock.ErrNotObtained
		}
		return lock.Lease{Key: "k"}, nil
	}
	if l, err := lock.Retry(ctx, lock.Wait(time.Millisecond, time.Millisecond), third); err != nil || l.Key != "k" || calls != 3 {
		t.Errorf("granted on the third attempt: %+v, %v, %d calls", l, err, calls)
	}

	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err := lock.Retry(cctx, lock.Wait(5*time.Millisecond, 5*time.Millisecond), refuse)
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("context ended while waiting: %v, want both ErrNotObtained and DeadlineExceeded", err)
	}
}

func TestClassify(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: nil
	}{
		{"nil", nil, nil},
		{"redis.Nil is a refusal", redis.Nil, lock.ErrNotObtained},
		{"client closed: nothing sent", redis.ErrClosed, lock.ErrNotObtained},
		{"READONLY reply", fmt.Errorf("eval: %w", readonly{}), lock.ErrNotObtained},
		{"dial failed: nothing sent", dial, lock.ErrNotObtained},
		{"read timeout: may have run", read, lock.ErrUnknown},
		{"context ended mid-request", context.DeadlineExceeded, lock.ErrUnknown},
		{"already classified", lock.ErrNotHeld, lock.ErrNotHeld},
	} {
		got := lock.Classify(tc.err, lock.ErrNotObtained)
		if (tc.want == nil) != (got == nil) || (tc.want != nil && !errors.Is(got, tc.want)) {
			t.Errorf("%s: Classify(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// readonly is a server error reply as go-redis returns it.
type readonly struct{}

func (readonly) Error() string { return "READONLY You can't write against a read only replica." }
func (readonly) RedisError()   {}

func TestOptions(t *testing.T) {
	o := lock.DefaultOptions()
	if err := lock.WithDrift(0.01, 2*time.Millisecond)(&o); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(100, 0)
	if got, want := o.ValidUntil(start, time.Second), start.Add(988*time.Millisecond); !got.Equal(want) {
		t.Errorf("ValidUntil = %v, want start + TTL − (1%% of TTL + 2 ms) = %v", got, want)
	}
	for name, opt := range map[string]lock.Option{
		"drift factor 1":    lock.WithDrift(1, 0),
		"negative drift":    lock.WithDrift(-0.1, 0),
		"negative retry":    lock.WithRetry(lock.Strategy{Delay: -time.Second}),
		"zero node timeout": lock.WithNodeTimeout(0),
		"nil value":         lock.WithValue(nil),
		"nil wall clock":    lock.WithWallClock(nil),
	} {
		o := lock.DefaultOptions()
		if err := opt(&o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, tc := range []struct {
		key string
		ttl time.Duration
	}{{"", time.Second}, {"k", 0}, {"k", -time.Second}, {"k", time.Microsecond}} {
		if err := lock.CheckKeyTTL(tc.key, tc.ttl); !errors.Is(err, lock.ErrConfig) {
			t.Errorf("CheckKeyTTL(%q, %v) = %v, want ErrConfig", tc.key, tc.ttl, err)
		}
	}
	if a, b := lock.RandomValue(), lock.RandomValue(); a == b || len(a) != 32 {
		t.Errorf("RandomValue: %q, %q", a, b)
	}
}
