package workloads_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/workloads"
)

func TestMain(m *testing.M) {
	if workloads.IsWorker() {
		if os.Getenv(forgetWorkerMain) != "" {
			os.Exit(0) // a program that does not call WorkerMain (TestForgottenWorkerMain)
		}
		workloads.WorkerMain()
		return
	}
	os.Exit(m.Run())
}

const forgetWorkerMain = "WORKLOADS_TEST_FORGET_WORKERMAIN"

// testSpec is the tests' lock: a lock/variants lock on the one server at
// Addr. Its fields are variants.Spec's (Variant defaults to "single").
type testSpec struct {
	Addr          string        `json:"addr"`
	Variant       string        `json:"variant,omitempty"`
	Inner         string        `json:"inner,omitempty"` // the lock a "watchdog" renews
	TTL           time.Duration `json:"ttl"`
	SetNXOnExtend bool          `json:"setnx_on_extend,omitempty"`
	Permits       int           `json:"permits,omitempty"`
	// WallValue makes owner values start with the client's wall clock in
	// Unix milliseconds, so the history shows which clock the lock read.
	WallValue bool `json:"wall_value,omitempty"`
}

const testBuilder = "test"

func init() {
	workloads.RegisterBuilder(testBuilder, buildTest)
}

func buildTest(raw json.RawMessage) (workloads.Factory, func() error, error) {
	var s testSpec
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("test lock spec: %w", err)
	}
	if s.Addr == "" {
		return nil, nil, fmt.Errorf("test lock spec has no addr")
	}
	vs := variants.Spec{Options: variants.Options{Variant: cmp.Or(s.Variant, "single"), Inner: s.Inner, SetNXOnExtend: s.SetNXOnExtend, Permits: s.Permits}, TTL: s.TTL}
	if err := vs.Validate(); err != nil {
		return nil, nil, fmt.Errorf("test lock spec: %w", err)
	}
	c := lock.NewClient(s.Addr)
	f := func(key string, opts ...lock.Option) (lock.Primitive, error) {
		if s.WallValue {
			var o lock.Options
			if err := lock.Apply(&o, opts); err != nil {
				return nil, err
			}
			wall := o.WallClock
			opts = append(opts, lock.WithValue(func() string {
				return fmt.Sprintf("%d-%s", wall().UnixMilli(), lock.RandomValue())
			}))
		}
		return variants.BuildPrimitive(vs, []redis.UniversalClient{c}, key, opts...)
	}
	return f, c.Close, nil
}

func spec(t testing.TB, s testSpec) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// memRecorder keeps a history in memory, numbering it as the history
// writer does.
type memRecorder struct {
	mu  sync.Mutex
	ops []history.Op
}

func (m *memRecorder) Record(op history.Op) (history.Op, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	op.Index = int64(len(m.ops))
	m.ops = append(m.ops, op)
	return op, nil
}

func (m *memRecorder) snapshot() []history.Op {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]history.Op(nil), m.ops...)
}

func (m *memRecorder) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ops)
}

// waitFor polls the history until pred holds for some op, or fails the test.
func (m *memRecorder) waitFor(t *testing.T, what string, limit time.Duration, pred func(history.Op) bool) history.Op {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, op := range m.snapshot() {
			if pred(op) {
				return op
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s in the history after %v", what, limit)
	return history.Op{}
}

func redisClient(t testing.TB, addr string) *redis.Client {
	c := lock.NewClient(addr)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
