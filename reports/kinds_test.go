package reports

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

// kindRun checks ops (times in ms) under cfg and makes a Run of them.
func kindRun(t *testing.T, cfg checker.Config, ops []history.Op) Run {
	t.Helper()
	for i := range ops {
		ops[i].Index = int64(i)
		ops[i].Time *= int64(time.Millisecond)
		ops[i].ValidUntil *= int64(time.Millisecond)
	}
	cfg.TTL = time.Second
	res, err := checker.Check(ops, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Run{Name: "kinds", TTL: time.Second, Ops: ops, Check: cfg, Result: res, Started: time.Now()}
}

func opCall(client int, f, key string, from, to int64, typ history.Type, mod func(*history.Op)) []history.Op {
	inv := history.Op{Process: history.Process(client), Client: client, Type: history.Invoke, F: f, Key: key, Time: from}
	done := inv
	done.Type, done.Time = typ, to
	if mod != nil {
		mod(&inv)
		mod(&done)
	}
	return []history.Op{inv, done}
}

func hold(client int, mode string, from, to int64) []history.Op {
	set := func(o *history.Op) { o.Mode, o.Value = mode, "o"+string(rune('a'+client)) }
	acq := opCall(client, history.Acquire, "k", from-1, from, history.OK, set)
	acq[1].ValidUntil = to + 500
	return append(acq, opCall(client, history.Release, "k", to, to+1, history.OK, set)...)
}

func sorted(parts ...[]history.Op) []history.Op {
	var ops []history.Op
	for _, p := range parts {
		ops = append(ops, p...)
	}
	for i := 1; i < len(ops); i++ {
		for j := i; j > 0 && ops[j].Time < ops[j-1].Time; j-- {
			ops[j], ops[j-1] = ops[j-1], ops[j]
		}
	}
	return ops
}

func TestTimelineReadWriteLanes(t *testing.T) {
	r := kindRun(t, checker.Config{Subject: checker.Subject{Shape: lock.KindReadWrite}}, sorted(
		hold(0, history.ModeRead, 10, 100), hold(1, history.ModeRead, 20, 120), hold(0, history.ModeWrite, 200, 300)))
	dir, _ := writeReport(t, r)
	svg := readFile(t, filepath.Join(dir, TimelineFile))
	for _, want := range []string{"client 0 · read", "client 1 · read", "client 0 · write", "read hold (a lane per mode)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
}

func TestTimelinePermitsAndQueue(t *testing.T) {
	r := kindRun(t, checker.Config{Subject: checker.Subject{Shape: lock.KindSemaphore, Permits: 1}}, sorted(hold(0, "", 10, 100), hold(1, "", 50, 150)))
	if r.Result.Verdict != checker.Invalid {
		t.Fatalf("two holders of one permit: %s", r.Result.Verdict)
	}
	dir, _ := writeReport(t, r)
	svg := readFile(t, filepath.Join(dir, TimelineFile))
	if !strings.Contains(svg, "permits held") || !strings.Contains(svg, "2 holders of 1 permits") {
		t.Error("the timeline does not chart the permits held, or not their excess")
	}
	enq := opCall(1, history.Enqueue, "k", 20, 21, history.OK, func(o *history.Op) { o.Value = "ob" })
	enq[1].ValidUntil = 5000
	acq := opCall(1, history.Acquire, "k", 20, 102, history.OK, func(o *history.Op) { o.Value = "ob" })
	acq[1].ValidUntil = 1102
	r = kindRun(t, checker.Config{Subject: checker.Subject{Fair: true}}, sorted(hold(0, "", 10, 100), acq, enq))
	if r.Result.Verdict != checker.Valid {
		t.Fatalf("a fair grant: %s", r.Result.Verdict)
	}
	dir, _ = writeReport(t, r)
	svg = readFile(t, filepath.Join(dir, TimelineFile))
	if !strings.Contains(svg, "queued #1 for") {
		t.Error("the timeline does not show the queue entry")
	}
}
