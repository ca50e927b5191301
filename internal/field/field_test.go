package field

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

var errRoot = errors.New("root")

func flags(p string) (string, bool) {
	n, ok := map[string]string{"lock.drift_factor": "--drift-factor", "lock.wait_replicas": "--wait-replicas",
		"lock.wait_timeout": "--wait-timeout", "workload.clients": "--clients"}[p]
	return n, ok
}

func TestPathsAndFlags(t *testing.T) {
	for _, c := range []struct {
		err          error
		plan, flagly string
	}{
		{Errorf("drift_factor", "%g must be in [0, 1)", 1.5),
			"lock.drift_factor: 1.5 must be in [0, 1)", "--drift-factor: 1.5 must be in [0, 1)"},
		{Errorf("wait_timeout", "%v needs %v", "1s", Ref("wait_replicas")),
			"lock.wait_timeout: 1s needs lock.wait_replicas", "--wait-timeout: 1s needs --wait-replicas"},
		// A message that names its own field is not prefixed with it.
		{Errorf("wait_replicas", "%v %d is negative", Self, -1),
			"lock.wait_replicas -1 is negative", "--wait-replicas -1 is negative"},
		// A path no flag sets stays a path.
		{Errorf("thread_wait_time", "%v applies only to fair", Self),
			"lock.thread_wait_time applies only to fair", "lock.thread_wait_time applies only to fair"},
		// Any other error becomes an error of the section.
		{fmt.Errorf("plain: %w", errRoot), "lock: plain: root", "lock: plain: root"},
	} {
		got := Within("lock", c.err)
		if got.Error() != c.plan {
			t.Errorf("Within: %q, want %q", got, c.plan)
		}
		wrapped := fmt.Errorf("%w: %w", errRoot, got)
		renamed := Rename(wrapped, flags)
		if want := "root: " + c.flagly; renamed.Error() != want {
			t.Errorf("Rename: %q, want %q", renamed, want)
		}
		if !errors.Is(renamed, errRoot) {
			t.Errorf("Rename lost what the error wraps: %v", renamed)
		}
	}
}

func TestJoinAndNesting(t *testing.T) {
	inner := Join(Errorf("clients", "%v = %d, want 1 to %d clients", Self, 0, 10000), nil, Errorf("latch.count", "%d, want ≥ 1", 0))
	err := Within("workload", inner)
	want := "workload.clients = 0, want 1 to 10000 clients\nworkload.latch.count: 0, want ≥ 1"
	if err.Error() != want {
		t.Fatalf("%q, want %q", err, want)
	}
	if got := Rename(err, flags).Error(); !strings.HasPrefix(got, "--clients = 0") || !strings.Contains(got, "workload.latch.count") {
		t.Errorf("renamed: %q", got)
	}
	if Join(nil, nil) != nil || Within("x", nil) != nil || Rename(nil, flags) != nil {
		t.Error("no error became one")
	}
	// Indexes join without a dot; a wrapped error is still reachable.
	e := Within("lock", Within("client_ttl", Errorf("[1]", "%w", errRoot)))
	if e.Error() != "lock.client_ttl[1]: root" || !errors.Is(e, errRoot) {
		t.Errorf("%q", e)
	}
}
