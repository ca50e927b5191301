package protocol

import (
	"math"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/lock"
)

// Clock probes: the smallest lock client programs, in Python and PHP, whose
// acquire answers with the program's own wall clock (ns) as the lease's
// token, read the way each language's libraries read it.
var clockProbes = map[string][]string{
	"python": {"/usr/bin/python3", "-c", `
import json, sys, time
for line in sys.stdin:
    r = json.loads(line)
    out = {"in_reply_to": r["id"], "type": "ok"}
    if r["type"] == "init":
        out["library"] = "clock probe"
    elif r["type"] == "acquire":
        out["lease"] = {"token": str(time.time_ns())}
    print(json.dumps(out), flush=True)
`},
	"php": {"/usr/bin/php", "-r", `
while (($line = fgets(STDIN)) !== false) {
    $r = json_decode($line, true);
    $out = ["in_reply_to" => $r["id"], "type" => "ok"];
    if ($r["type"] === "init") { $out["library"] = "clock probe"; }
    if ($r["type"] === "acquire") { $out["lease"] = ["token" => sprintf("%.0f", microtime(true) * 1e9)]; }
    echo json_encode($out), "\n";
}
`},
}

// TestClientClockRate: a lock client program's wall clock follows the
// client's wall clock when that runs at a rate (a client-drift fault): the
// clock shim in Python and PHP counts 1.5 s for every second of the host's.
func TestClientClockRate(t *testing.T) {
	shim, err := clockshim.Build()
	if err != nil {
		t.Skipf("no clock shim here: %v", err)
	}
	for lang, cmd := range clockProbes {
		t.Run(lang, func(t *testing.T) {
			if _, err := exec.LookPath(cmd[0]); err != nil {
				t.Skipf("%s is not installed: %v", cmd[0], err)
			}
			p, err := Start(Config{
				Name: "clock-" + lang, Command: cmd, ClockShim: shim,
				Init: Init{Kind: KindLock, Keys: []string{fakeKey}, TTLMS: 1000, Connect: ConnectNode, Nodes: []Node{{Name: "n1", Addr: "127.0.0.1:1"}}, ReadTimeoutMS: 100},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			drift := clockshim.Rate(1.5, clockshim.Mono())
			wall := func() time.Time { return time.Now().Add(drift.At(clockshim.Mono())) }
			prim, err := p.Primitive(fakeKey, lock.WithWallClock(wall))
			if err != nil {
				t.Fatal(err)
			}
			l := prim.(lock.Locker)
			read := func() (host time.Time, program int64) {
				before := time.Now()
				lease, err := l.Acquire(ctxFor(t, time.Second))
				if err != nil {
					t.Fatal(err)
				}
				host = before.Add(time.Since(before) / 2)
				if program, err = strconv.ParseInt(lease.Value, 10, 64); err != nil {
					t.Fatalf("the probe's token %q is no clock reading", lease.Value)
				}
				if err := l.Release(ctxFor(t, time.Second), lease); err != nil {
					t.Fatal(err)
				}
				return host, program
			}
			h1, w1 := read()
			time.Sleep(800 * time.Millisecond)
			h2, w2 := read()
			rate := float64(w2-w1) / float64(h2.Sub(h1))
			if math.Abs(rate-1.5) > 0.05 {
				t.Errorf("%s's clock ran at %.3f× the host's over %v, want 1.5", lang, rate, h2.Sub(h1))
			}
			if ahead := time.Duration(w2 - h2.UnixNano()); ahead < 300*time.Millisecond {
				t.Errorf("%s's clock is %v ahead after %v at 1.5×", lang, ahead, h2.Sub(h1))
			}
		})
	}
}
