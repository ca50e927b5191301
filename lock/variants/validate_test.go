package variants

import (
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/spans"
)

// Each problem of a spec names its field by its JSON path in the lock's
// options, so a plan can name it as lock.<path>; drift_factor must be in
// [0, 1) and wait_timeout needs wait_replicas, whoever sets them.
func TestSpecNamesTheField(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		o    Options
		path string
		want string
	}{
		{Options{Variant: "redlock", DriftFactor: f(1.5)}, "drift_factor", "lock.drift_factor: 1.5 must be in [0, 1)"},
		{Options{Variant: "redlock", DriftFactor: f(1)}, "drift_factor", "lock.drift_factor: 1 must be in [0, 1)"},
		{Options{Variant: "redlock", DriftFactor: f(-0.01)}, "drift_factor", "lock.drift_factor: -0.01 must be in [0, 1)"},
		{Options{Variant: "single", WaitTimeout: spans.Fixed(time.Second)}, "wait_timeout", "lock.wait_timeout: 1s needs lock.wait_replicas"},
		{Options{Variant: "single", WaitReplicas: 1, WaitTimeout: spans.Fixed(-time.Second)}, "wait_timeout", "lock.wait_timeout: -1s is negative"},
		{Options{Variant: "redlock", NodeTimeout: spans.TTLs(-0.1)}, "node_timeout", "lock.node_timeout: -0.1ttl is negative"},
		{Options{Variant: "nope"}, "variant", `lock.variant: unknown lock "nope"`},
		{Options{Variant: "watchdog", Inner: "nope"}, "inner", `lock.inner: unknown lock "nope"`},
		{Options{Variant: "single", Permits: 2}, "permits", "lock.permits applies only to semaphores, not single"},
		{Options{Variant: "single", RedisRetries: -1}, "redis_retries", "lock.redis_retries -1 must be in [0, 10]"},
		{Options{Variant: "redsync", RedisRetries: 11}, "redis_retries", "lock.redis_retries 11 must be in [0, 10]"},
		{Options{Variant: ClientVariant, Client: &protocol.Program{Command: []string{"true"}}, RedisRetries: 3}, "redis_retries", "lock.redis_retries applies to the locks built here, not client"},
		{Options{Variant: ClientVariant, Client: &protocol.Program{Name: "tooz", Options: []byte(`{"lock_timeout": 2, "bogus": 1}`)}}, "client.options",
			`lock.client.options: client tooz has no option "bogus" (its options: lock_timeout, start_heart)`},
		{Options{Variant: ClientVariant, Client: &protocol.Program{Name: "redis-py", Options: []byte(`[1]`)}}, "client.options", "lock.client.options must be a JSON object"},
	} {
		err := Spec{Options: c.o, TTL: time.Second}.Validate()
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Path != c.path {
			t.Errorf("%+v: %v, want an error of field %s", c.o, err, c.path)
			continue
		}
		if got := field.Within("lock", err).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%+v: in a plan %q, want %q", c.o, got, c.want)
		}
	}
	for _, v := range []string{"single", "watchdog", "redsync", "redislock", "reentrant"} {
		if err := (Spec{Options: Options{Variant: v, RedisRetries: 3}, TTL: time.Second}).Validate(); err != nil {
			t.Errorf("%s with redis_retries 3: %v", v, err)
		}
	}
	for _, x := range []float64{0, 0.01, 0.99} {
		if err := (Spec{Options: Options{Variant: "redlock", DriftFactor: f(x)}, TTL: time.Second}).Validate(); err != nil {
			t.Errorf("drift_factor %g: %v", x, err)
		}
	}
}

// Resolve turns every span of the options into the duration it stands for
// under a TTL, and leaves the rest alone.
func TestOptionsResolve(t *testing.T) {
	o := Options{Variant: "fair", WaitTimeout: spans.TTLs(0.1), NodeTimeout: spans.Fixed(50 * time.Millisecond), ThreadWaitTime: spans.TTLs(2), Permits: 3}
	r := o.Resolve(2 * time.Second)
	if r.WaitTimeout.String() != "200ms" || r.NodeTimeout.String() != "50ms" || r.ThreadWaitTime.String() != "4s" || r.Permits != 3 || r.Variant != "fair" {
		t.Errorf("resolved: %+v", r)
	}
	for _, f := range spans.Fields(&r) {
		if f.Span.Relative() {
			t.Errorf("%s is still relative: %s", f.Name, f.Span)
		}
	}
	if o.ThreadWaitTime.String() != "2ttl" {
		t.Errorf("Resolve changed the options it was called on: %s", o.ThreadWaitTime)
	}
}
