package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/clients"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/variants"
)

// benchTTL is the lease of every lock of BenchmarkProtocolCost: long
// enough that no cycle outlives it.
const benchTTL = 2500 * time.Millisecond

// benchBatch is how many cycles each variant runs in a row in a round.
const benchBatch = 10

// BenchmarkProtocolCost measures what the lock client protocol
// (clients/PROTOCOL.md) adds to one acquire+release cycle, each against its
// baseline in the same run, on one redis-server:
//
//	redis-py       redis-py's Lock over the protocol (clients/redis-py), timed
//	               around Acquire and Release as a run times them
//	redis-py-self  the same Lock's acquire()+release() timed inside Python
//	               (testdata/protocol-cost/redispy_cycle.py), no protocol
//	py-echo        a Python client with no library (testdata/protocol-cost/
//	               echo_client.py): the lines redis-py's client exchanges,
//	               through the same shared code, and no Redis
//	go-client      tumbler's single lock over the protocol: this test binary
//	               as the Go client (GoClientEnv)
//	single         the same lock in-process
//
// The three locks are built by buildClientLocks, as a run builds a
// client's locks (a client program with the clock shim, as a run starts
// it), and the Python baseline runs with the shim as well. Each round runs
// benchBatch cycles of every variant, the order rotating every round, so
// the machine's noise hits all alike; b.N counts rounds. It reports every
// median cycle (<name>-p50-ns), the ratios redis-py/redis-py-self and
// go-client/single, and what the protocol adds per call (one cycle is two
// calls): redis-py-us/call = (redis-py − redis-py-self)/2 and
// go-client-us/call = (go-client − single)/2, medians in µs; and
// py-echo-us/call, py-echo/2, the protocol's own cost per call to a Python
// client, of which the rest of redis-py-us/call is the library's calls
// slowed by the hops around them.
// docs/measurements.md ("The lock client protocol's cost") records a run.
func BenchmarkProtocolCost(b *testing.B) {
	srv := redistest.Start(b, 1)[0]
	view := cluster.ClientView{Nodes: []string{"n1"}, Addrs: map[string]string{"n1": srv.Addr}}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	goClient := &clients.Spec{Command: []string{exe}, Env: []string{GoClientEnv + "=1"}, Options: json.RawMessage(`{"variant":"single"}`)}
	echo, err := filepath.Abs(filepath.Join("testdata", "protocol-cost", "echo_client.py"))
	if err != nil {
		b.Fatal(err)
	}
	pyEcho := &clients.Spec{Command: []string{"/usr/bin/python3", "-B", echo}, Steps: []clients.Step{{Name: "granted", Acquiring: true}}}
	program := func(spec *clients.Spec, key string) lock.Locker {
		return benchLocker(b, variants.Options{Variant: variants.ClientVariant, Client: spec}, view, key)
	}
	vs := []benchVariant{
		{"single", lockCycles(benchLocker(b, variants.Options{Variant: "single"}, view, "bench:single"))},
		{"go-client", lockCycles(program(goClient, "bench:go-client"))},
		{"redis-py", lockCycles(program(&clients.Spec{Name: "redis-py"}, "bench:redis-py"))},
		{"redis-py-self", pythonCycles(b, srv.Addr, "bench:redis-py-self")},
		{"py-echo", lockCycles(program(pyEcho, "bench:py-echo"))},
	}
	for _, v := range vs { // connections, script caches, first-use allocations
		if _, err := v.cycles(50); err != nil {
			b.Fatalf("%s warm-up: %v", v.name, err)
		}
	}
	samples := make([][]time.Duration, len(vs))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range vs {
			k := (i + j) % len(vs)
			got, err := vs[k].cycles(benchBatch)
			if err != nil {
				b.Fatalf("%s: %v", vs[k].name, err)
			}
			samples[k] = append(samples[k], got...)
		}
	}
	b.StopTimer()
	med := map[string]time.Duration{}
	var line strings.Builder
	for k, v := range vs {
		slices.Sort(samples[k])
		med[v.name] = samples[k][len(samples[k])/2]
		b.ReportMetric(float64(med[v.name].Nanoseconds()), v.name+"-p50-ns")
		fmt.Fprintf(&line, " %s %v", v.name, med[v.name])
	}
	b.Logf("median acquire+release cycle over %d cycles each:%s", len(samples[0]), line.String())
	for _, p := range [][2]string{{"redis-py", "redis-py-self"}, {"go-client", "single"}} {
		b.ReportMetric(float64(med[p[0]])/float64(med[p[1]]), p[0]+"/"+p[1])
		b.ReportMetric(float64(med[p[0]]-med[p[1]])/2/1e3, p[0]+"-us/call")
	}
	b.ReportMetric(float64(med["py-echo"])/2/1e3, "py-echo-us/call")
}

// benchVariant runs n timed cycles of one lock.
type benchVariant struct {
	name   string
	cycles func(n int) ([]time.Duration, error)
}

// benchLocker is the lock on key that buildClientLocks makes of o for a
// client that sees the nodes of view.
func benchLocker(b *testing.B, o variants.Options, view cluster.ClientView, key string) lock.Locker {
	b.Helper()
	raw, err := json.Marshal(ClientLock{Lock: variants.Spec{Options: o, TTL: benchTTL}, View: view,
		ReadTimeout: time.Second, Keys: []string{key}})
	if err != nil {
		b.Fatal(err)
	}
	factory, closeFn, err := buildClientLocks(raw)
	if err != nil {
		b.Fatalf("build %s: %v", key, err)
	}
	if closeFn != nil {
		b.Cleanup(func() { _ = closeFn() })
	}
	prim, err := factory(key)
	if err != nil {
		b.Fatalf("lock %s: %v", key, err)
	}
	l, ok := prim.(lock.Locker)
	if !ok {
		b.Fatalf("lock %s is a %T, not a lock.Locker", key, prim)
	}
	return l
}

// lockCycles times acquire+release cycles of l.
func lockCycles(l lock.Locker) func(int) ([]time.Duration, error) {
	ctx := context.Background()
	return func(n int) ([]time.Duration, error) {
		out := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			lease, err := l.Acquire(ctx)
			if err != nil {
				return nil, err
			}
			if err := l.Release(ctx, lease); err != nil {
				return nil, err
			}
			out = append(out, time.Since(start))
		}
		return out, nil
	}
}

// pythonCycles runs testdata/protocol-cost/redispy_cycle.py on key at addr,
// with the clock shim as a client program has it, and returns how to ask
// it for n cycles timed inside Python.
func pythonCycles(b *testing.B, addr, key string) func(int) ([]time.Duration, error) {
	b.Helper()
	shim, err := clockshim.Build()
	if err != nil {
		b.Fatal(err)
	}
	clockFile := filepath.Join(b.TempDir(), "clock")
	clock, err := clockshim.Open(clockFile)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = clock.Close() })
	cmd := exec.Command("/usr/bin/python3", "-B", filepath.Join("testdata", "protocol-cost", "redispy_cycle.py"),
		addr, key, strconv.FormatInt(benchTTL.Milliseconds(), 10), "1000")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+shim, clockshim.Env+"="+clockFile)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start redispy_cycle.py: %v", err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	r := bufio.NewReader(stdout)
	return func(n int) ([]time.Duration, error) {
		if _, err := fmt.Fprintln(stdin, n); err != nil {
			return nil, fmt.Errorf("redispy_cycle.py: %w", err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = fmt.Errorf("it exited (its stderr says why)")
			}
			return nil, fmt.Errorf("redispy_cycle.py: %w", err)
		}
		fields := strings.Fields(line)
		if len(fields) != n {
			return nil, fmt.Errorf("redispy_cycle.py: %d times for %d cycles: %q", len(fields), n, line)
		}
		out := make([]time.Duration, n)
		for i, f := range fields {
			ns, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("redispy_cycle.py: %q: %w", line, err)
			}
			out[i] = time.Duration(ns)
		}
		return out, nil
	}
}
