// Command tumbler is the command line of tumbler, a Jepsen-style
// correctness and fault-injection harness for Redis distributed locks: it
// runs a lock against real Redis servers while a nemesis injects faults,
// checks the history for double grants and their consequences, and writes a
// report. It is a thin shell over the runner, scenarios and reports
// packages.
//
// Exit codes (DESIGN.md §8): 0 valid, 1 invalid, 2 unknown (also a valid
// verdict on a run that was interrupted: it covers only part of the run),
// 254 bad arguments, 255 the harness itself failed, 130 a second Ctrl-C.
// reproduce and matrix exit 0 when every run matched its row's
// expectation, 1 when one did not, 255 when none mismatched but a run failed.
package main

import (
	"context"
	"os"

	"github.com/tumbler-dev/tumbler/workloads"
)

func main() {
	// Clients run as re-executions of this binary.
	if workloads.IsWorker() {
		workloads.WorkerMain()
		return
	}
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
