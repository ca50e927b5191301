// Command tumbler is the command line of tumbler, a Jepsen-style
// correctness and fault-injection harness for Redis distributed locks: it
// runs a lock against real Redis servers while a nemesis injects faults,
// checks the history for double grants and their consequences, and writes a
// report. It is a thin shell over the runner, scenarios and reports
// packages.
//
// Exit codes (declared in package outcome, outcome.Exit*, which also
// decides which one each command returns): 0 valid, 1 invalid, 2 unknown
// (also a valid verdict on a run that was interrupted: it covers only part
// of the run), 254 bad input (arguments, a plan, a history), 255 the
// harness itself failed, 130 a second Ctrl-C.
// reproduce and matrix exit 0 when every run matched its row's
// expectation, 1 when one did not, 255 when none mismatched but a run failed.
package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/workloads"
)

// memoryLimit is the Go runtime's soft memory limit unless GOMEMLIMIT says
// otherwise: checking and reporting a long run's history (a few hundred
// bytes per operation while it is checked) would otherwise let the heap
// grow to twice what is live before collecting it; with the limit the
// collector works harder instead, and tumbler stays under 1 GiB as long as
// what is live fits (about two million operations). GOMEMLIMIT=off lifts it.
const memoryLimit = 900 << 20

func main() {
	// tumbler's own locks as a lock client program (a client worker's
	// child: check it before IsWorker, whose variable it inherits).
	if runner.IsGoClient() {
		runner.GoClientMain()
	}
	// Clients run as re-executions of this binary.
	if workloads.IsWorker() {
		workloads.WorkerMain()
		return
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
