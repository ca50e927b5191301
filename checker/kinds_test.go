package checker

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
)

func mode(m string) mod { return func(i, d *history.Op) { i.Mode, d.Mode = m, m } }

func reader(proc int, key string, from, to float64) []part {
	return []part{acq(proc, key, from-1, from, history.OK, vu(to+1000), mode(history.ModeRead)), relm(proc, key, to, to+1, history.ModeRead)}
}

func writer(proc int, key string, from, to float64) []part {
	return []part{acq(proc, key, from-1, from, history.OK, vu(to+1000), mode(history.ModeWrite)), relm(proc, key, to, to+1, history.ModeWrite)}
}

func relm(proc int, key string, call, ret float64, m string) part {
	return op(proc, history.Release, key, call, ret, history.OK, mode(m))
}

func flat(ps ...[]part) []part {
	var out []part
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

func TestReadersWriters(t *testing.T) {
	rw := Config{Subject: Subject{Shape: lock.KindReadWrite}}
	t.Run("readers share, writers alone", func(t *testing.T) {
		res := check(t, build(flat(reader(1, "k", 10, 100), reader(2, "k", 50, 150), writer(3, "k", 160, 200), reader(1, "k", 210, 300))...), rw)
		expect(t, res, verdicts{})
		for _, name := range []string{MutualExclusion, Linearizability} {
			if c, _ := res.Checker(name); !c.Skipped {
				t.Errorf("%s ran on a read-write history", name)
			}
		}
		if c, _ := res.Checker(ReadersWriters); c.Stats["read_holds"] != 3 || c.Stats["write_holds"] != 1 {
			t.Errorf("stats %v", c.Stats)
		}
	})
	t.Run("writer during readers", func(t *testing.T) {
		res := check(t, build(append(flat(reader(1, "k", 10, 100), reader(2, "k", 20, 150), writer(3, "k", 80, 200)), fault("f1", "failover", "failover", 60, 70))...), rw)
		expect(t, res, verdicts{ReadersWriters: Invalid})
		if len(res.Anomalies) != 2 {
			t.Fatalf("anomalies %+v: want the writer against each reader", res.Anomalies)
		}
		a := res.Anomalies[0]
		if a.Kind != WriterOverlap || a.At != ns(80) || a.Clients[0] != 3 || len(a.Faults) != 1 {
			t.Fatalf("anomaly %+v", a)
		}
	})
	t.Run("two writers", func(t *testing.T) {
		res := check(t, build(flat(writer(1, "k", 10, 100), writer(2, "k", 90, 150))...), rw)
		expect(t, res, verdicts{ReadersWriters: Invalid})
	})
	t.Run("other keys do not conflict", func(t *testing.T) {
		res := check(t, build(flat(writer(1, "a", 10, 100), writer(2, "b", 20, 150))...), rw)
		expect(t, res, verdicts{})
	})
}

// TestReadersWritersProperty: random schedules built to respect the rule
// are valid; moving one writer onto another hold makes them invalid.
func TestReadersWritersProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200; n++ {
		var parts []part
		at := 10.0
		var writes [][2]float64
		for i := 0; i < 20; i++ {
			if rng.IntN(3) == 0 {
				d := 5 + rng.Float64()*20
				parts = append(parts, writer(rng.IntN(4), "k", at, at+d)...)
				writes = append(writes, [2]float64{at, at + d})
				at += d + 2
				continue
			}
			end := at
			for r := 0; r < 1+rng.IntN(3); r++ {
				d := 5 + rng.Float64()*20
				parts = append(parts, reader(10+r, "k", at+float64(r), at+float64(r)+d)...)
				end = max(end, at+float64(r)+d)
			}
			at = end + 2
		}
		res := check(t, build(parts...), Config{Subject: Subject{Shape: lock.KindReadWrite}})
		if res.Verdict != Valid {
			t.Fatalf("schedule %d: %s: %+v", n, res.Verdict, res.Anomalies)
		}
		if len(writes) < 2 {
			continue
		}
		w := writes[0]
		bad := append(parts, writer(99, "k", w[0]+1, w[1]+1)...)
		if res := check(t, build(bad...), Config{Subject: Subject{Shape: lock.KindReadWrite}}); res.Verdict != Invalid {
			t.Fatalf("schedule %d with an extra writer inside another: %s", n, res.Verdict)
		}
	}
}

func permit(proc int, key string, from, to, validity float64) []part {
	return []part{acq(proc, key, from-1, from, history.OK, vu(validity)), rel(proc, key, to, to+1, history.OK)}
}

func TestSemaphore(t *testing.T) {
	sem := Config{Subject: Subject{Shape: lock.KindSemaphore, Permits: 2}}
	t.Run("two holders of two permits", func(t *testing.T) {
		res := check(t, build(flat(permit(1, "s", 10, 100, 1e6), permit(2, "s", 20, 150, 1e6), permit(3, "s", 110, 200, 1e6))...), sem)
		expect(t, res, verdicts{})
		if c, _ := res.Checker(Semaphore); c.Stats["most_held_at_once"] != 2 {
			t.Errorf("stats %v", c.Stats)
		}
		if c, _ := res.Checker(MutualExclusion); !c.Skipped {
			t.Errorf("mutual exclusion ran on a semaphore")
		}
	})
	t.Run("three holders of two permits", func(t *testing.T) {
		res := check(t, build(flat(permit(1, "s", 10, 100, 1e6), permit(2, "s", 20, 150, 1e6), permit(3, "s", 90, 200, 1e6))...), sem)
		expect(t, res, verdicts{Semaphore: Invalid})
		a := res.Anomalies[0]
		if a.Kind != PermitsExceeded || a.From != ns(90) || a.To != ns(100) || a.Clients[0] != 3 {
			t.Fatalf("anomaly %+v", a)
		}
	})
	t.Run("expired permit ends the hold", func(t *testing.T) {
		res := check(t, build(flat(permit(1, "s", 10, 500, 50), permit(2, "s", 20, 150, 1e6), permit(3, "s", 90, 200, 1e6))...), sem)
		expect(t, res, verdicts{})
	})
	t.Run("write after the permit expired while others held all", func(t *testing.T) {
		ops := flat(permit(1, "s", 10, 500, 50), permit(2, "s", 20, 450, 1e6), permit(3, "s", 90, 400, 1e6))
		ops = append(ops, write(1, "s", 300, 310, history.OK, wvu(50)), fault("f1", "step-pause", "pause client 1", 30, 40))
		res := check(t, build(ops...), sem)
		expect(t, res, verdicts{Semaphore: Invalid})
		a := res.Anomalies[0]
		if a.Kind != PermitsExceeded || a.At != ns(310) || len(a.Clients) != 3 {
			t.Fatalf("anomaly %+v", a)
		}
	})
	t.Run("write after the permit expired with a permit free", func(t *testing.T) {
		ops := flat(permit(1, "s", 10, 500, 50), permit(2, "s", 20, 450, 1e6))
		ops = append(ops, write(1, "s", 300, 310, history.OK, wvu(50)))
		expect(t, check(t, build(ops...), sem), verdicts{})
	})
}

func enq(proc int, key string, call, ret, deadline float64) part {
	return op(proc, history.Enqueue, key, call, ret, history.OK, vu(deadline))
}

func TestFairness(t *testing.T) {
	fair := Config{Subject: Subject{Fair: true}}
	t.Run("grants in queue order", func(t *testing.T) {
		res := check(t, build(
			acq(1, "k", 0, 1, history.OK, vu(1000)), rel(1, "k", 100, 101, history.OK),
			acq(2, "k", 10, 102, history.OK, vu(1100)), enq(2, "k", 10, 11, 5100),
			acq(3, "k", 20, 210, history.OK, vu(1200)), enq(3, "k", 20, 21, 5100), enq(3, "k", 103, 104, 5200),
			rel(2, "k", 200, 201, history.OK),
		), fair)
		expect(t, res, verdicts{})
		if c, _ := res.Checker(Fairness); c.Stats["queue_entries"] != 2 || c.Stats["grants"] != 3 {
			t.Errorf("stats %v", c.Stats)
		}
	})
	t.Run("a later waiter granted first", func(t *testing.T) {
		res := check(t, build(
			fault("f1", "failover", "failover", 50, 60),
			acq(1, "k", 0, 1, history.OK, vu(1000)),
			acq(2, "k", 10, 300, history.OK, vu(1300)), enq(2, "k", 10, 11, 5100), enq(2, "k", 150, 151, 5200),
			acq(3, "k", 20, 100, history.OK, vu(1100)), enq(3, "k", 20, 21, 5100),
		), fair)
		expect(t, res, verdicts{MutualExclusion: Invalid, Linearizability: Invalid, Fairness: Invalid})
		var a *Anomaly
		for i := range res.Anomalies {
			if res.Anomalies[i].Kind == UnfairGrant {
				a = &res.Anomalies[i]
			}
		}
		if a == nil || a.Clients[0] != 3 || a.Clients[1] != 2 || a.At != ns(100) || len(a.Faults) != 1 {
			t.Fatalf("unfair grant %+v", a)
		}
	})
	t.Run("a waiter whose entry timed out may be passed over", func(t *testing.T) {
		res := check(t, build(
			acq(1, "k", 0, 1, history.OK, vu(1000)), rel(1, "k", 100, 101, history.OK),
			// client 2 queued first, but polled again only after its
			// entry's timeout (200): it may have been purged.
			acq(2, "k", 10, 900, history.OK, vu(1900)), enq(2, "k", 10, 11, 200), enq(2, "k", 500, 501, 6000),
			acq(3, "k", 20, 300, history.OK, vu(1300)), enq(3, "k", 20, 21, 5100), rel(3, "k", 400, 401, history.OK),
		), fair)
		expect(t, res, verdicts{})
		if c, _ := res.Checker(Fairness); c.Stats["queue_entries_timed_out"] != 1 || len(c.Notes) != 1 {
			t.Errorf("stats %v notes %v", c.Stats, c.Notes)
		}
	})
	t.Run("a waiter granted after its entry timed out", func(t *testing.T) {
		res := check(t, build(
			acq(1, "k", 0, 1, history.OK, vu(1000)), rel(1, "k", 100, 101, history.OK),
			acq(2, "k", 10, 900, history.OK, vu(1900)), enq(2, "k", 10, 11, 200),
			acq(3, "k", 20, 300, history.OK, vu(1300)), enq(3, "k", 20, 21, 5100), rel(3, "k", 400, 401, history.OK),
		), fair)
		expect(t, res, verdicts{})
		if c, _ := res.Checker(Fairness); c.Stats["queue_entries_timed_out"] != 1 {
			t.Errorf("stats %v", c.Stats)
		}
	})
	t.Run("a waiter that gave up", func(t *testing.T) {
		res := check(t, build(
			acq(1, "k", 0, 1, history.OK, vu(1000)), rel(1, "k", 100, 101, history.OK),
			acq(2, "k", 10, 60, history.Fail), enq(2, "k", 10, 11, 5100), op(2, history.Dequeue, "k", 58, 59, history.OK),
			acq(3, "k", 20, 110, history.OK, vu(1100)), enq(3, "k", 20, 21, 5100),
		), fair)
		expect(t, res, verdicts{})
	})
}

func initOp(proc int, key string, call, ret float64, count string) part {
	return op(proc, history.Init, key, call, ret, history.OK, func(i, d *history.Op) { i.Value, d.Value = count, count })
}

func TestLatch(t *testing.T) {
	latch := Config{Subject: Subject{Shape: lock.KindLatch}}
	t.Run("waiters pass after the count-downs", func(t *testing.T) {
		res := check(t, build(
			initOp(0, "l", 0, 1, "2"),
			op(1, history.Await, "l", 5, 120, history.OK),
			op(2, history.CountDown, "l", 50, 51, history.OK),
			op(3, history.CountDown, "l", 100, 101, history.OK),
		), latch)
		expect(t, res, verdicts{})
		for _, name := range []string{MutualExclusion, Linearizability, Liveness, StaleWrites} {
			if c, _ := res.Checker(name); !c.Skipped {
				t.Errorf("%s ran on a latch history", name)
			}
		}
	})
	t.Run("a waiter passes early", func(t *testing.T) {
		res := check(t, build(
			initOp(0, "l", 0, 1, "2"),
			fault("f1", "failover", "failover", 30, 40),
			op(1, history.Await, "l", 5, 60, history.OK),
			op(2, history.CountDown, "l", 50, 51, history.OK),
			op(3, history.CountDown, "l", 100, 101, history.OK),
		), latch)
		expect(t, res, verdicts{Latch: Invalid})
		if a := res.Anomalies[0]; a.Kind != LatchEarly || a.At != ns(60) || len(a.Faults) != 1 {
			t.Fatalf("anomaly %+v", a)
		}
	})
	t.Run("an unknown count-down may have counted", func(t *testing.T) {
		res := check(t, build(
			initOp(0, "l", 0, 1, "2"),
			op(1, history.Await, "l", 5, 60, history.OK),
			op(2, history.CountDown, "l", 50, 51, history.OK),
			op(3, history.CountDown, "l", 40, 99, history.Info),
		), latch)
		expect(t, res, verdicts{})
	})
	t.Run("a waiter that began before the count was set", func(t *testing.T) {
		res := check(t, build(
			op(1, history.Await, "l", 0, 3, history.OK),
			initOp(0, "l", 1, 2, "2"),
		), latch)
		expect(t, res, verdicts{})
	})
	t.Run("a waiter stuck after zero", func(t *testing.T) {
		res := check(t, build(
			initOp(0, "l", 0, 1, "2"),
			fault("f1", "failover", "failover", 60, 70),
			op(1, history.Await, "l", 5, 3000, history.Fail),
			op(2, history.CountDown, "l", 50, 51, history.OK),
			op(3, history.CountDown, "l", 100, 101, history.OK),
		), latch)
		expect(t, res, verdicts{LatchLiveness: Invalid})
		if a := res.Anomalies[0]; a.Kind != LatchStuck || a.From != ns(101) || len(a.Faults) != 1 {
			t.Fatalf("anomaly %+v", a)
		}
	})
	t.Run("a waiter that gave up before zero", func(t *testing.T) {
		res := check(t, build(
			initOp(0, "l", 0, 1, "2"),
			op(1, history.Await, "l", 5, 80, history.Fail),
			op(2, history.CountDown, "l", 50, 51, history.OK),
			op(3, history.CountDown, "l", 100, 101, history.OK),
		), latch)
		expect(t, res, verdicts{})
	})
}

func TestKindConfigErrors(t *testing.T) {
	// A subject is one shape: a read-write latch cannot be written, and
	// permits belong to a semaphore only.
	for _, c := range []struct {
		s    Subject
		want string
	}{
		{Subject{Shape: "read-write-latch"}, `Config.Shape: kind "read-write-latch" unknown`},
		{Subject{Shape: lock.KindLatch, Permits: 2}, "permits belong to a semaphore, not a latch"},
		{Subject{Permits: 2}, "permits belong to a semaphore, not a lock"},
		{Subject{Shape: lock.KindSemaphore, Permits: -1}, "Config.Permits must not be negative"},
		{Subject{Shape: lock.KindSemaphore}, "a semaphore needs at least 1 permit"},
	} {
		if _, err := Check(nil, Config{TTL: 1, Subject: c.s}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.s, err, c.want)
		}
	}
	if !IsName(Fairness) || IsName("fair") {
		t.Fatal("IsName")
	}
}

func TestAvailabilityWithin(t *testing.T) {
	res := check(t, build(
		fault("f1", "kill", "kill n3", 100, 200),
		acq(1, "k", 50, 120, history.OK, vu(1000)), rel(1, "k", 130, 131, history.OK),
		acq(2, "k", 110, 150, history.Fail),
		acq(3, "k", 160, 250, history.OK, vu(1000)),
	), Config{})
	av := res.Availability[0]
	if av.During.OK != 1 || av.During.Fail != 1 {
		t.Fatalf("during %+v: want the ok begun before the fault and the failure", av.During)
	}
	if av.Within.OK != 0 || av.Within.Fail != 1 || av.Within.SuccessRate != 0 {
		t.Fatalf("within %+v: want only the failure begun and ended inside", av.Within)
	}
}

// TestSemaphoreProperty: random schedules that never use more than the
// permits are valid; one more holder over a busy instant makes them invalid.
func TestSemaphoreProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n < 200; n++ {
		permits := 1 + rng.IntN(3)
		var parts []part
		free := make([]float64, permits) // when each permit slot is free again
		busy := [2]float64{}
		for i := 0; i < 25; i++ {
			s := rng.IntN(permits)
			from := free[s] + 2 + rng.Float64()*10
			to := from + 5 + rng.Float64()*20
			parts = append(parts, permit(10*s+rng.IntN(10), "s", from, to, 1e6)...)
			free[s] = to + 1
			if i == 12 {
				busy = [2]float64{from, to}
			}
		}
		cfg := Config{Subject: Subject{Shape: lock.KindSemaphore, Permits: permits}}
		if res := check(t, build(parts...), cfg); res.Verdict != Valid {
			t.Fatalf("schedule %d (%d permits): %s: %+v", n, permits, res.Verdict, res.Anomalies)
		}
		// Fill every slot over the busy instant, then one more.
		mid := (busy[0] + busy[1]) / 2
		extra := []part{}
		for s := 0; s < permits; s++ {
			extra = append(extra, permit(100+s, "s", mid-0.5, mid+0.5, 1e6)...)
		}
		if res := check(t, build(append(parts, extra...)...), cfg); res.Verdict != Invalid {
			t.Fatalf("schedule %d with %d extra holders: %s", n, permits, res.Verdict)
		}
	}
}

// TestEveryLockKindIsChecked: every lock kind (lock.Kinds) is a valid
// subject some checker judges; a kind added to package lock without a
// checker fails.
func TestEveryLockKindIsChecked(t *testing.T) {
	for _, k := range lock.Kinds {
		s := Subject{Shape: k}
		if k == lock.KindSemaphore {
			s.Permits = 1
		}
		if err := s.validate(); err != nil {
			t.Errorf("kind %s: %v", k, err)
		}
		var judged []string
		for _, c := range checkers {
			if ok, _ := c.Applies(s); ok && c.Name != Liveness && c.Name != Refusals {
				judged = append(judged, c.Name)
			}
		}
		if len(judged) == 0 {
			t.Errorf("kind %s: no checker judges it", k)
		}
	}
}
