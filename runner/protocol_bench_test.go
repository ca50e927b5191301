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

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/protocol"
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
//	py-pipe        two line round trips through a Python program that
//	               writes back what it reads (testdata/protocol-cost/
//	               pipe_echo.py): the floor of two processes exchanging
//	               lines on this machine
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
// slowed by the hops around them. The redis-py client also times each of
// its calls inside Python (TUMBLER_CLIENT_TIMING), so the same cycles are
// timed on both sides: redis-py-inside-p50-ns is their median inside
// Python, and redis-py-same-cycle-us/call the median over cycles of
// (tumbler's time − Python's time of that cycle)/2, what the protocol adds
// around the very calls it carries. py-pipe-us/call is the floor per
// call, and py-echo/py-pipe what the protocol's own code costs over it.
// docs/measurements.md ("The lock client protocol's cost") records a run.
func BenchmarkProtocolCost(b *testing.B) {
	srv := redistest.Start(b, 1)[0]
	view := cluster.ClientView{Nodes: []string{"n1"}, Addrs: map[string]string{"n1": srv.Addr}}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	goClient := &protocol.Program{Command: []string{exe}, Env: []string{GoClientEnv + "=1"}, Options: json.RawMessage(`{"variant":"single"}`)}
	echo, err := filepath.Abs(filepath.Join("testdata", "protocol-cost", "echo_client.py"))
	if err != nil {
		b.Fatal(err)
	}
	pyEcho := &protocol.Program{Command: []string{"/usr/bin/python3", "-B", echo}, Traits: lock.Traits{Steps: []lock.Step{{Name: "granted", Acquiring: true}}}}
	program := func(spec *protocol.Program, key, log string) (lock.Locker, func() error) {
		return benchLocker(b, variants.Options{Variant: variants.ClientVariant, Client: spec}, view, key, log)
	}
	single, _ := benchLocker(b, variants.Options{Variant: "single"}, view, "bench:single", "")
	goLock, _ := program(goClient, "bench:go-client", "")
	// The redis-py client logs how long each call spent in the library
	// (clients/_shared, TUMBLER_CLIENT_TIMING), so the very cycles timed
	// here are also timed inside Python.
	pyLog := filepath.Join(b.TempDir(), "redis-py.log")
	pyLock, closePy := program(&protocol.Program{Name: "redis-py", Env: []string{"TUMBLER_CLIENT_TIMING=1"}}, "bench:redis-py", pyLog)
	echoLock, _ := program(pyEcho, "bench:py-echo", "")
	vs := []benchVariant{
		{"single", lockCycles(single)},
		{"go-client", lockCycles(goLock)},
		{"redis-py", lockCycles(pyLock)},
		{"redis-py-self", pythonCycles(b, srv.Addr, "bench:redis-py-self")},
		{"py-echo", lockCycles(echoLock)},
		{"py-pipe", pipeCycles(b)},
	}
	for _, v := range vs { // connections, script caches, first-use allocations
		if _, err := v.cycles(benchWarmup); err != nil {
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
	b.ReportMetric(float64(med["py-pipe"])/2/1e3, "py-pipe-us/call")
	b.ReportMetric(float64(med["py-echo"])/float64(med["py-pipe"]), "py-echo/py-pipe")
	if err := closePy(); err != nil {
		b.Fatalf("redis-py client: %v", err)
	}
	inside, err := readTimings(pyLog)
	if err != nil {
		b.Fatal(err)
	}
	outside := samplesOf(vs, samples, "redis-py")
	if len(inside) != benchWarmup+len(outside) {
		b.Fatalf("%s: %d cycles timed inside Python, %d by tumbler (and %d warm-up)", pyLog, len(inside), len(outside), benchWarmup)
	}
	inside = inside[benchWarmup:]
	added := make([]time.Duration, len(outside))
	for i := range outside {
		added[i] = outside[i] - inside[i]
	}
	slices.Sort(inside)
	slices.Sort(added)
	b.ReportMetric(float64(inside[len(inside)/2].Nanoseconds()), "redis-py-inside-p50-ns")
	b.ReportMetric(float64(added[len(added)/2])/2/1e3, "redis-py-same-cycle-us/call")
}

// benchWarmup is how many cycles each variant runs before the timed rounds.
const benchWarmup = 50

// samplesOf is the unsorted copy of name's cycles, in the order they ran.
func samplesOf(vs []benchVariant, samples [][]time.Duration, name string) []time.Duration {
	for k, v := range vs {
		if v.name == name {
			return slices.Clone(samples[k])
		}
	}
	return nil
}

// readTimings reads a Python client's "timing TYPE NS" log lines
// (clients/_shared/tumbler_client.py, Timings) into cycles: each
// acquire's time plus the following release's.
func readTimings(path string) ([]time.Duration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	var acquire time.Duration = -1
	for n, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "timing" {
			continue
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %q: %w", path, n+1, line, err)
		}
		switch {
		case f[1] == "acquire" && acquire < 0:
			acquire = time.Duration(ns)
		case f[1] == "release" && acquire >= 0:
			out = append(out, acquire+time.Duration(ns))
			acquire = -1
		default:
			return nil, fmt.Errorf("%s:%d: %q out of the acquire, release order", path, n+1, line)
		}
	}
	return out, nil
}

// benchVariant runs n timed cycles of one lock.
type benchVariant struct {
	name   string
	cycles func(n int) ([]time.Duration, error)
}

// benchLocker is the lock on key that buildClientLocks makes of o for a
// client that sees the nodes of view.
// A client program's stderr goes to log (none: "").
func benchLocker(b *testing.B, o variants.Options, view cluster.ClientView, key, log string) (lock.Locker, func() error) {
	b.Helper()
	raw, err := json.Marshal(ClientLock{Lock: variants.Spec{Options: o, TTL: benchTTL}, View: view,
		ReadTimeout: time.Second, Keys: []string{key}, ClientLog: log})
	if err != nil {
		b.Fatal(err)
	}
	factory, closeFn, err := buildClientLocks(raw)
	if err != nil {
		b.Fatalf("build %s: %v", key, err)
	}
	if closeFn == nil {
		closeFn = func() error { return nil }
	}
	b.Cleanup(func() { _ = closeFn() })
	prim, err := factory(key)
	if err != nil {
		b.Fatalf("lock %s: %v", key, err)
	}
	l, ok := prim.(lock.Locker)
	if !ok {
		b.Fatalf("lock %s is a %T, not a lock.Locker", key, prim)
	}
	return l, closeFn
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
	stdin, r := startPython(b, []string{"LD_PRELOAD=" + shim, clockshim.Env + "=" + clockFile},
		"redispy_cycle.py", addr, key, strconv.FormatInt(benchTTL.Milliseconds(), 10), "1000")
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

// pipeCycles runs testdata/protocol-cost/pipe_echo.py and returns how to
// time n cycles of two line round trips through it (an acquire's request
// line and a release's), read with a plain buffered reader: the floor of
// any exchange of lines between two processes on this machine.
func pipeCycles(b *testing.B) func(int) ([]time.Duration, error) {
	b.Helper()
	stdin, r := startPython(b, nil, "pipe_echo.py")
	lines := [][]byte{
		[]byte(`{"type":"acquire","id":1,"key":"bench:py-pipe","wait_ms":0}` + "\n"),
		[]byte(`{"type":"release","id":2,"key":"bench:py-pipe","lease":{"token":"echo-1"}}` + "\n"),
	}
	return func(n int) ([]time.Duration, error) {
		out := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			for _, l := range lines {
				if _, err := stdin.Write(l); err != nil {
					return nil, fmt.Errorf("pipe_echo.py: %w", err)
				}
				if _, err := r.ReadBytes('\n'); err != nil {
					return nil, fmt.Errorf("pipe_echo.py: %w", err)
				}
			}
			out = append(out, time.Since(start))
		}
		return out, nil
	}
}

// startPython starts testdata/protocol-cost/SCRIPT with args and env added
// to the environment, stops it when the benchmark ends, and returns its
// stdin and its stdout.
func startPython(b *testing.B, env []string, script string, args ...string) (io.WriteCloser, *bufio.Reader) {
	b.Helper()
	cmd := exec.Command("/usr/bin/python3", append([]string{"-B", filepath.Join("testdata", "protocol-cost", script)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
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
		b.Fatalf("start %s: %v", script, err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	return stdin, bufio.NewReader(stdout)
}
