package workloads_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// A builder that refuses to build, with an error of a registered kind
// (errRefused) and of an unregistered one (errUnregistered).
var (
	errRefused      = errors.New("refused by the test builder")
	errUnregistered = errors.New("a kind nobody registered")
)

const refusingBuilder = "test-refusing"

func init() {
	workloads.RegisterBuilder(refusingBuilder, func(json.RawMessage) (workloads.Factory, func() error, error) {
		return nil, nil, fmt.Errorf("%w: option \"bogus\" unknown (%w)", errRefused, errUnregistered)
	})
	workloads.RegisterErrorKind("test-refused", errRefused)
}

// TestBuilderErrorKeepsItsKind: a builder's error ends the workload with
// its message and, in a worker process as in process, the registered kinds
// it is (errors.Is), and only those: a refusal built in a worker is still a
// refusal at the harness.
func TestBuilderErrorKeepsItsKind(t *testing.T) {
	for _, mode := range []workloads.Mode{workloads.Processes, workloads.InProcess} {
		t.Run(string(mode), func(t *testing.T) {
			e := &env{clock: history.NewClock(), rec: &memRecorder{}}
			cfg := workloads.Config{
				Options:   workloads.Options{Kind: workloads.Mutex, Mode: mode, Clients: 2, Keys: 1, Hold: spans.Between(time.Millisecond, 2*time.Millisecond)},
				KeyPrefix: "wl:" + t.Name() + ":",
				Lock:      workloads.LockSpec{Builder: refusingBuilder, Spec: json.RawMessage(`{}`)},
				TimeLimit: 5 * time.Second, Seed: 1,
			}
			start := time.Now()
			_, err := workloads.Run(testCtx(t), cfg, e.harness(t, false))
			if err == nil {
				t.Fatal("a workload whose builder refuses ran without an error")
			}
			if !errors.Is(err, errRefused) {
				t.Errorf("error %q is not the builder's registered kind", err)
			}
			if mode == workloads.Processes && errors.Is(err, errUnregistered) {
				t.Errorf("error %q from a worker is a kind nobody registered", err)
			}
			for _, w := range []string{"client ", `lock builder "test-refusing"`, `option "bogus" unknown`} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("the workload took %v to end after its builder refused, want it ended at once", took)
			}
		})
	}
}
