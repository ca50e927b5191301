package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/checker"
	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clienttest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/workloads"
)

// garbling is what the test's client program adds to tumbler's reference
// client: in client 0's first process, the reply to its GARBLE_AT-th
// request (init is the first) is a line that is not JSON; every reply that
// process wrote before is listed in GARBLE_STATE/replies ("acquire ok"),
// and every start of client 0 adds a line to GARBLE_STATE/starts.
const garbling = `
GARBLE = {"state": os.environ["GARBLE_STATE"], "at": int(os.environ["GARBLE_AT"]), "first": False, "n": 0}

def garble(req, rep):
    g = GARBLE
    if req["type"] == "init" and req["client"] == 0:
        starts = os.path.join(g["state"], "starts")
        g["first"] = not os.path.exists(starts)
        with open(starts, "a") as f:
            f.write("start\n")
    if not g["first"]:
        return False
    g["n"] += 1
    if g["n"] == g["at"]:
        print("garbage from the test client, not JSON", flush=True)
        return True
    if req["type"] != "init":
        with open(os.path.join(g["state"], "replies"), "a") as f:
            f.write("%s %s\n" % (req["type"], rep["type"]))
    return False

def main():`

// garblingClient writes the reference client with garbling as an
// executable program of the test's.
func garblingClient(t *testing.T) string {
	t.Helper()
	return clienttest.ReferenceCopy(t, "garbling-client.py",
		[2]string{"def main():", garbling},
		[2]string{`        rep["in_reply_to"] = req["id"]` + "\n", `        rep["in_reply_to"] = req["id"]` + "\n        if garble(req, rep):\n            continue\n"})
}

// TestClientProgramGarblesInARun: a run on a real server whose client 0's
// lock client program answers one call with a line that is not JSON. That
// call is recorded as info, with an error naming the client, the request
// and the line; every call the program answered before is in the history
// as it answered it; the program is restarted once and the client goes on
// (later acquires succeed); and the run is judged, valid.
func TestClientProgramGarblesInARun(t *testing.T) {
	t.Parallel()
	prog, state := garblingClient(t), t.TempDir()
	p := basePlan(t, "client-garbles")
	p.Lock.Options = variants.Options{Variant: variants.ClientVariant,
		Client: &protocol.Program{Command: []string{prog}, Env: []string{"GARBLE_STATE=" + state, "GARBLE_AT=4"}}}
	p.Workload.Mode, p.Workload.Clients = workloads.Processes, 2
	// Think between cycles leaves the lock free for a while after each
	// release: with none, the two clients starting together at time zero
	// let the first one in re-acquire at once, cycle after cycle, and the
	// other, polling, never got the lock (seen in 1 of 4 runs).
	p.Workload.Think = Range{span(t, "0.3ttl"), span(t, "0.5ttl")}
	p.TimeLimit = span(t, "6s") // the garbled call comes within the first few cycles, with time to go on after it
	out := runPlan(t, p)
	ops, err := history.ReadFile(filepath.Join(out.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var before []string // client 0's completed lock calls before the garbled one: "acquire ok"
	garbled, okAfter := -1, 0
	for _, op := range ops {
		if op.Client != 0 || op.Type == history.Invoke || (op.F != history.Acquire && op.F != history.Release && op.F != history.Extend) {
			continue
		}
		switch {
		case garbled < 0 && strings.Contains(op.Error, "not a JSON object"):
			garbled = int(op.Index)
			if op.Type != history.Info {
				t.Errorf("the garbled call is recorded %s, want info: %+v", op.Type, op)
			}
			for _, w := range []string{"client " + prog, "request 4 (" + op.F + " ", `line "garbage from the test client, not JSON"`} {
				if !strings.Contains(op.Error, w) {
					t.Errorf("the garbled call's error %q does not say %q", op.Error, w)
				}
			}
		case garbled < 0:
			before = append(before, op.F+" "+string(op.Type))
		case op.F == history.Acquire && op.Type == history.OK:
			okAfter++
		}
	}
	if garbled < 0 {
		t.Fatalf("no call of client 0 is recorded with the garbled line's error (report %s)", out.Dir)
	}
	replies, err := os.ReadFile(filepath.Join(state, "replies"))
	if err != nil {
		t.Fatal(err)
	}
	wantBefore := strings.Split(strings.TrimSpace(string(replies)), "\n")
	if strings.Join(before, "\n") != strings.Join(wantBefore, "\n") {
		t.Errorf("client 0's calls before the garbled one, in the history:\n%s\nwant what the program answered:\n%s", strings.Join(before, "\n"), strings.Join(wantBefore, "\n"))
	}
	t.Logf("client 0: %d calls before the garbled one (%s), %d acquires after it", len(before), strings.Join(before, ", "), okAfter)
	if okAfter < 1 {
		t.Errorf("client 0 acquired %d times after its program was restarted, want it to go on working", okAfter)
	}
	if starts, _ := os.ReadFile(filepath.Join(state, "starts")); strings.Count(string(starts), "start") != 2 {
		t.Errorf("client 0's program started %d times, want 2 (restarted once, after the garbled line)", strings.Count(string(starts), "start"))
	}
	if out.Result.Verdict != checker.Valid {
		t.Errorf("verdict %s, want valid: the lock is correct, one call's outcome is unknown; anomalies %+v", out.Result.Verdict, out.Result.Anomalies)
	}
}
