package protocol

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/lock"
)

// clockProbe is the smallest lock client program, whose acquire answers
// with the program's own wall clock (ns) as the lease's token, read the way
// one language's libraries read it, and its CLOCK_MONOTONIC (ns) as the
// lease's fence.
type clockProbe struct {
	name string
	cmd  []string
	// resolution of the wall clock it reads (time() counts whole seconds).
	resolution time.Duration
}

// clockProbes: Python's time.time_ns (clock_gettime), PHP's microtime
// (gettimeofday) and PHP's time() (time), each a call the clock shim
// shifts (clients/PROTOCOL.md, "Clocks").
var clockProbes = []clockProbe{
	{"python", []string{"/usr/bin/python3", "-c", `
import json, sys, time
for line in sys.stdin:
    r = json.loads(line)
    out = {"in_reply_to": r["id"], "type": "ok"}
    if r["type"] == "init":
        out["library"] = "clock probe"
    elif r["type"] == "acquire":
        out["lease"] = {"token": str(time.time_ns()), "fence": time.monotonic_ns()}
    print(json.dumps(out), flush=True)
`}, time.Microsecond},
	{"php-microtime", phpProbe(`sprintf("%.0f", microtime(true) * 1e9)`), time.Microsecond},
	{"php-time", phpProbe(`sprintf("%d000000000", time())`), time.Second},
}

// phpProbe is the PHP probe whose wall clock reading is the expression now.
func phpProbe(now string) []string {
	return []string{"/usr/bin/php", "-r", `
while (($line = fgets(STDIN)) !== false) {
    $r = json_decode($line, true);
    $out = ["in_reply_to" => $r["id"], "type" => "ok"];
    if ($r["type"] === "init") { $out["library"] = "clock probe"; }
    if ($r["type"] === "acquire") { $out["lease"] = ["token" => ` + now + `, "fence" => hrtime(true)]; }
    echo json_encode($out), "\n";
}
`}
}

// ciEnv, when set (.ci/run sets it), makes a missing interpreter or clock
// shim a failure of these tests instead of a skip: CI installs them
// (scripts/setup), so their absence there is a broken setup, not a
// machine without PHP.
const ciEnv = "TUMBLER_CI"

// missing skips the test for what this machine lacks, or fails it in CI.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(ciEnv) != "" {
		t.Fatalf("%s (%s is set: CI must have it; scripts/setup installs it)", msg, ciEnv)
	}
	t.Skipf("%s; skipped (set %s=1 to make this a failure)", msg, ciEnv)
}

// clockShim is the clock shim's path, built once.
func clockShim(t *testing.T) string {
	t.Helper()
	shim, err := clockshim.Build()
	if err != nil {
		missing(t, "no clock shim here: %v", err)
	}
	return shim
}

// probeLock starts probe under the clock shim with its wall clock
// following wall, and returns its lock.
func probeLock(t *testing.T, probe clockProbe, shim string, wall func() time.Time) lock.Locker {
	t.Helper()
	if _, err := exec.LookPath(probe.cmd[0]); err != nil {
		missing(t, "%s is not installed: %v", probe.cmd[0], err)
	}
	p, err := Start(Config{
		Name: "clock-" + probe.name, Command: probe.cmd, ClockShim: shim,
		Init: Init{Kind: lock.KindLock, Keys: []string{fakeKey}, TTLMS: 1000, Connect: ConnectNode, Nodes: []Node{{Name: "n1", Addr: "127.0.0.1:1"}}, ReadTimeoutMS: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	prim, err := p.Primitive(fakeKey, lock.WithWallClock(wall))
	if err != nil {
		t.Fatal(err)
	}
	return prim.(lock.Locker)
}

// clockRead is one reading of a probe's clocks, with the host's around it.
type clockRead struct {
	host    time.Time     // the host's wall clock in the middle of the call
	call    time.Duration // how long the call took
	program int64         // the program's wall clock, ns since the epoch
	// mono is the program's CLOCK_MONOTONIC, and monoFrom, monoTo the
	// harness's before and after the call.
	mono, monoFrom, monoTo int64
}

func readClocks(t *testing.T, l lock.Locker) clockRead {
	t.Helper()
	before, monoFrom := time.Now(), history.Monotonic()
	lease, err := l.Acquire(ctxFor(t, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r := clockRead{call: time.Since(before), monoFrom: monoFrom, monoTo: history.Monotonic(), mono: lease.Token}
	r.host = before.Add(r.call / 2)
	if r.program, err = strconv.ParseInt(lease.Value, 10, 64); err != nil {
		t.Fatalf("the probe's token %q is no clock reading", lease.Value)
	}
	if err := l.Release(ctxFor(t, time.Second), lease); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestClientClockRate: a lock client program's wall clock follows the
// client's wall clock when that runs at a rate (a client-drift fault): the
// clock shim in Python and PHP (microtime) counts 1.5 s for every second
// of the host's.
func TestClientClockRate(t *testing.T) {
	shim := clockShim(t)
	for _, probe := range clockProbes {
		if probe.resolution >= time.Second {
			continue // too coarse to time a rate over a second
		}
		t.Run(probe.name, func(t *testing.T) {
			drift := clockshim.Rate(1.5, clockshim.Mono())
			l := probeLock(t, probe, shim, func() time.Time { return time.Now().Add(drift.At(clockshim.Mono())) })
			r1 := readClocks(t, l)
			time.Sleep(800 * time.Millisecond)
			r2 := readClocks(t, l)
			rate := float64(r2.program-r1.program) / float64(r2.host.Sub(r1.host))
			if math.Abs(rate-1.5) > 0.05 {
				t.Errorf("%s's clock ran at %.3f× the host's over %v, want 1.5", probe.name, rate, r2.host.Sub(r1.host))
			}
			if ahead := time.Duration(r2.program - r2.host.UnixNano()); ahead < 300*time.Millisecond {
				t.Errorf("%s's clock is %v ahead after %v at 1.5×", probe.name, ahead, r2.host.Sub(r1.host))
			}
		})
	}
}

// TestClientClockJump: a lock client program's wall clock jumps when the
// client's does (a client-clock fault's offset): forward an hour, back
// half an hour behind the host, then a little ahead, as Python's
// time.time_ns, PHP's microtime and PHP's time() read it, each within its
// resolution; the program's monotonic clock never moves with it.
func TestClientClockJump(t *testing.T) {
	shim := clockShim(t)
	for _, probe := range clockProbes {
		t.Run(probe.name, func(t *testing.T) {
			var offset atomic.Int64
			l := probeLock(t, probe, shim, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
			for _, jump := range []time.Duration{0, time.Hour, -30 * time.Minute, 90 * time.Second} {
				offset.Store(int64(jump))
				r := readClocks(t, l)
				want := r.host.Add(jump).UnixNano()
				// A reading falls within its call, and time() truncates
				// to its whole second.
				slack := r.call/2 + 50*time.Millisecond
				if d := time.Duration(r.program - want); d > slack || d < -(probe.resolution+slack) {
					t.Errorf("offset %v: %s's clock is %v off the client's (host %v + offset), want within %v (its resolution %v)",
						jump, probe.name, d, r.host.Format(time.StampMilli), slack, probe.resolution)
				}
				if r.mono < r.monoFrom || r.mono > r.monoTo {
					t.Errorf("offset %v: %s's CLOCK_MONOTONIC %d is outside the call [%d, %d]: the shim must not move it",
						jump, probe.name, r.mono, r.monoFrom, r.monoTo)
				}
			}
		})
	}
}
