package scenarios

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/clients"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/runner"
)

// overProtocol is p with its lock driven over the lock client protocol:
// tumbler's own lock, served by this test binary as a Go client
// (runner.GoClientEnv), with the traits its variant declares.
func overProtocol(t *testing.T, p runner.Plan) runner.Plan {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	info, err := p.Lock.Options.Info()
	if err != nil {
		t.Fatal(err)
	}
	opts, err := json.Marshal(p.Lock.Options)
	if err != nil {
		t.Fatal(err)
	}
	spec := &clients.Spec{Command: []string{exe}, Env: []string{runner.GoClientEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Options: opts, Kind: string(info.Kind), Fencing: info.Tokens, AllNodes: info.AllNodes}
	for _, st := range info.Steps {
		spec.Steps = append(spec.Steps, clients.Step{Name: st.Name, Acquiring: st.Acquiring})
	}
	p.Lock.Options = variants.Options{Variant: variants.ClientVariant, Client: spec}
	return p
}

// TestProtocolSameVerdicts: tumbler's own locks driven over the lock client
// protocol, as any lock client program is, give each row the verdict the
// same lock gives it in-process (the row's expectation, which `tumbler
// reproduce --all` checks in-process): the protocol neither hides an
// anomaly nor makes one up. The rows cover a double grant by restart and by
// failover, a stale write after a real pause, fencing tokens carried across
// the protocol, a lock's own step reached over the protocol (a pause at
// redlock's granted step, which its validity check must refuse), and a lock on
// every node.
func TestProtocolSameVerdicts(t *testing.T) {
	store := t.TempDir()
	for _, name := range []string{"single-restart-empty", "single-failover", "single-gc-pause", "fenced-gc-pause", "redlock-pause-during-acquire", "redlock-restart-empty"} {
		t.Run(name, func(t *testing.T) {
			s, err := Get(name)
			if err != nil {
				t.Fatal(err)
			}
			p := overProtocol(t, s.PlanFor(1))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := runner.Run(ctx, p, runner.Options{Store: store, Expected: s.Expected(), Source: s.Source})
			if err != nil {
				t.Fatalf("run over the protocol: %v", err)
			}
			if rep := out.Judgement.Expected; !rep.Reproduced {
				t.Errorf("%s over the protocol: %s, want the row's verdict as in-process (report %s)", name, rep.Why, out.Dir)
			}
		})
	}
}
