package coverage

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/nemesis"
)

const ms = int64(time.Millisecond)

// hist builds a synthetic history; times are in milliseconds.
type hist struct{ ops []history.Op }

func (h *hist) add(o history.Op) {
	o.Index = int64(len(h.ops))
	h.ops = append(h.ops, o)
}

// hold: client c acquires key k at from (ok at from+10) with validity
// until vu, and releases at to (0: never).
func (h *hist) hold(c int, from, vu, to int64) {
	k, v := "tumbler:0", "owner-"+string(rune('a'+c))
	h.add(history.Op{Process: history.Process(c), Client: c, Type: history.Invoke, F: history.Acquire, Key: k, Time: from * ms})
	h.add(history.Op{Process: history.Process(c), Client: c, Type: history.OK, F: history.Acquire, Key: k, Value: v, ValidUntil: vu * ms, Time: (from + 10) * ms})
	if to > 0 {
		h.add(history.Op{Process: history.Process(c), Client: c, Type: history.Invoke, F: history.Release, Key: k, Value: v, Time: to * ms})
		h.add(history.Op{Process: history.Process(c), Client: c, Type: history.OK, F: history.Release, Key: k, Value: v, Time: (to + 5) * ms})
	}
}

// fault: a fault that ran from start to stop. Without traits it has its
// kind's, as the nemesis records them.
func (h *hist) fault(f history.Fault, start, stop int64) {
	if f.Traits == nil {
		f.Traits = nemesis.Kind(f.Kind).Traits()
	}
	g := f
	h.add(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.Start, Fault: &f, Time: start * ms})
	h.add(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.Stop, Fault: &g, Time: stop * ms})
}

func (h *hist) sorted() []history.Op {
	ops := slices.Clone(h.ops)
	slices.SortStableFunc(ops, func(a, b history.Op) int { return int(a.Time - b.Time) })
	for i := range ops {
		ops[i].Index = int64(i)
	}
	return ops
}

var one = Setup{TTL: time.Second, Validity: 900 * time.Millisecond, Leases: true,
	Nodes: []string{"n1"}, LeaseNodes: []string{"n1"}}

func five() Setup {
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	return Setup{TTL: time.Second, Validity: 900 * time.Millisecond, Leases: true, Quorum: true,
		Nodes: nodes, LeaseNodes: nodes}
}

func judge(t *testing.T, s Setup, h *hist, anomalies ...checker.Anomaly) *Run {
	t.Helper()
	ops := h.sorted()
	holds, err := checker.Holds(ops, checker.Config{})
	if err != nil {
		t.Fatalf("holds: %v", err)
	}
	return Judge(Input{Setup: s, Ops: ops, Holds: holds, Anomalies: anomalies})
}

func reached(t *testing.T, r *Run, name string) Result {
	t.Helper()
	w, ok := r.Get(name)
	if !ok {
		t.Fatalf("no window %q in %+v", name, r)
	}
	return w
}

func TestRestartEmptyWithinTheTTL(t *testing.T) {
	cases := []struct {
		name        string
		empty       bool
		start, stop int64
		want        int
	}{
		{"empty, back while the lease is valid", true, 300, 500, 1},
		{"with its persistence", false, 300, 500, 0},
		{"back after the key expired", true, 300, 1200, 0},
		{"down after the holder released", true, 700, 800, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &hist{}
			h.hold(0, 100, 1000, 650)
			h.fault(history.Fault{ID: "f0", Kind: "restart", Targets: []string{"n1"}, Empty: c.empty}, c.start, c.stop)
			w := reached(t, judge(t, one, h), RestartEmpty)
			if w.Reached != c.want {
				t.Fatalf("reached %d, want %d: %+v", w.Reached, c.want, w)
			}
			if c.want > 0 && (w.First != c.start*ms || !slices.Equal(w.Reaches[0].Faults, []string{"f0"})) {
				t.Fatalf("reach %+v: want from %d by f0", w.Reaches[0], c.start*ms)
			}
		})
	}
}

func TestRestartEmptyOnlyOnTheLeaseNodes(t *testing.T) {
	s := five()
	h := &hist{}
	h.hold(0, 100, 1000, 900)
	// The nemesis read the lease on n1..n3; n5 is not of the lease.
	h.fault(history.Fault{ID: "f0", Kind: "restart", Targets: []string{"n5"}, Empty: true, Lease: []string{"n1", "n2", "n3"}}, 300, 400)
	if w := reached(t, judge(t, s, h), RestartEmpty); w.Reached != 0 {
		t.Fatalf("a node off the lease counted: %+v", w)
	}
	h.fault(history.Fault{ID: "f1", Kind: "restart", Targets: []string{"n2"}, Empty: true, Lease: []string{"n1", "n2", "n3"}}, 500, 600)
	if w := reached(t, judge(t, s, h), RestartEmpty); w.Reached != 1 || w.Reaches[0].Faults[0] != "f1" {
		t.Fatalf("want f1's restart of n2: %+v", w)
	}
}

func TestLeaseNodesAfterAFailoverAreUnknown(t *testing.T) {
	s := Setup{TTL: time.Second, Validity: 900 * time.Millisecond, Leases: true, Failover: true,
		Nodes: []string{"p", "r1"}, LeaseNodes: []string{"p"}}
	h := &hist{}
	h.fault(history.Fault{ID: "f0", Kind: "failover"}, 0, 50)
	h.hold(0, 100, 1000, 900)
	h.fault(history.Fault{ID: "f1", Kind: "kill", Targets: []string{"p"}, Empty: true}, 300, 400)
	if w := reached(t, judge(t, s, h), LeaseNodeFault); w.Reached != 0 {
		t.Fatalf("after a failover p need not be the primary: %+v", w)
	}
	h2 := &hist{}
	h2.hold(0, 100, 1000, 900)
	h2.fault(history.Fault{ID: "f1", Kind: "kill", Targets: []string{"p"}, Empty: true}, 300, 400)
	if w := reached(t, judge(t, s, h2), LeaseNodeFault); w.Reached != 1 {
		t.Fatalf("a kill of the primary under a hold: %+v", w)
	}
}

func TestBareMajority(t *testing.T) {
	for _, c := range []struct {
		cut  []string
		want int
	}{{[]string{"n1", "n2"}, 1}, {[]string{"n1"}, 0}, {[]string{"n1", "n2", "n3"}, 0}} {
		h := &hist{}
		h.fault(history.Fault{ID: "f0", Kind: "partition", Targets: c.cut}, 50, 700)
		h.hold(0, 100, 1000, 600)
		if w := reached(t, judge(t, five(), h), BareMajority); w.Reached != c.want {
			t.Errorf("cut %v: reached %d, want %d", c.cut, w.Reached, c.want)
		}
	}
	// A cut of clients, not nodes, leaves the lease on every node.
	h := &hist{}
	h.fault(history.Fault{ID: "f0", Kind: "partition", Targets: []string{"n1", "n2", "client:1"}}, 50, 700)
	h.hold(0, 100, 1000, 600)
	if w := reached(t, judge(t, five(), h), BareMajority); w.Reached != 0 {
		t.Errorf("a client's cut counted: %+v", w)
	}
}

func TestHolderStoppedPastItsValidity(t *testing.T) {
	for _, c := range []struct {
		name        string
		target      string
		start, stop int64
		want        int
	}{
		{"outlasts the validity", "client:0", 300, 1300, 1},
		{"healed in time", "client:0", 300, 800, 0},
		{"another client", "client:1", 300, 1300, 0},
		// Stopped inside its acquire: the lease counts from the invoke.
		{"during the acquire", "client:0", 105, 1300, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hist{}
			h.hold(0, 100, 1000, 1400)
			h.fault(history.Fault{ID: "f0", Kind: "client-pause", Targets: []string{c.target}}, c.start, c.stop)
			if w := reached(t, judge(t, one, h), HolderStopped); w.Reached != c.want {
				t.Fatalf("reached %d, want %d: %+v", w.Reached, c.want, w)
			}
		})
	}
}

// TestHolderStoppedPastTheTTL: a lock that exposes no validity still
// leases its key for a TTL, which a stopped or cut-off holder cannot
// renew. A cut-off holder that the lock's own loss signal stopped is not
// this window (the signal's timing is the lock's), a stopped one is.
func TestHolderStoppedPastTheTTL(t *testing.T) {
	noExpiry := history.NoExpiryAfter/ms + 1
	for _, c := range []struct {
		name        string
		kind        string
		start, stop int64
		lost        int64 // the lock's loss signal, 0: none (released at 2500)
		want        int
	}{
		{"cut off past the TTL", "client-partition", 300, 1600, 0, 1},
		{"cut off within the TTL", "client-partition", 300, 1200, 0, 0},
		{"cut off, told late by the lock", "client-partition", 300, 1600, 1500, 0},
		{"stopped, told late by the lock", "client-pause", 300, 1600, 1500, 1},
		{"cut off, told in time", "client-partition", 300, 1600, 1200, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hist{}
			if c.lost > 0 {
				h.hold(0, 100, noExpiry, 0)
				h.add(history.Op{Process: 0, Client: 0, Type: history.Info, F: history.Lost, Key: "tumbler:0", Value: "owner-a", Time: c.lost * ms})
			} else {
				h.hold(0, 100, noExpiry, 2500)
			}
			h.fault(history.Fault{ID: "f0", Kind: c.kind, Targets: []string{"client:0"}}, c.start, c.stop)
			if w := reached(t, judge(t, one, h), HolderStopped); w.Reached != c.want {
				t.Fatalf("reached %d, want %d: %+v", w.Reached, c.want, w)
			}
		})
	}
}

func TestClockPastValidity(t *testing.T) {
	for _, c := range []struct {
		offset time.Duration
		want   int
	}{{1500 * time.Millisecond, 1}, {500 * time.Millisecond, 0}, {-2 * time.Second, 0}} {
		h := &hist{}
		h.hold(0, 100, 1000, 900)
		h.fault(history.Fault{ID: "f0", Kind: "clock", Targets: []string{"n1"}, Offset: int64(c.offset)}, 300, 700)
		if w := reached(t, judge(t, one, h), ClockPastValidity); w.Reached != c.want {
			t.Errorf("offset %v: reached %d, want %d", c.offset, w.Reached, c.want)
		}
	}
}

func TestPromotedLackingKey(t *testing.T) {
	s := Setup{TTL: time.Second, Validity: 900 * time.Millisecond, Leases: true, Failover: true,
		Nodes: []string{"p", "r1"}, LeaseNodes: []string{"p"}}
	h := &hist{}
	h.fault(history.Fault{ID: "f0", Kind: "failover", CutReplication: true}, 50, 2000)
	h.hold(0, 100, 1000, 900)
	if w := reached(t, judge(t, s, h), PromotedLackingKey); w.Reached != 1 {
		t.Fatalf("a grant under a failover's cut: %+v", w)
	}
	// A latch's count-down whose reply was lost under the cut may have
	// applied: the promoted replica may lack it.
	h3 := &hist{}
	h3.fault(history.Fault{ID: "f0", Kind: "failover", CutReplication: true}, 50, 2000)
	h3.add(history.Op{Process: 0, Type: history.Invoke, F: history.CountDown, Key: "tumbler:0", Time: 300 * ms})
	h3.add(history.Op{Process: 0, Type: history.Info, F: history.CountDown, Key: "tumbler:0", Time: 310 * ms})
	latch := s
	latch.Leases = false
	if w := reached(t, judge(t, latch, h3), PromotedLackingKey); w.Reached != 1 {
		t.Fatalf("an unknown count-down under a failover's cut: %+v", w)
	}
	h2 := &hist{}
	h2.hold(0, 100, 1000, 900)
	h2.fault(history.Fault{ID: "f0", Kind: "failover"}, 1500, 2000)
	if w := reached(t, judge(t, s, h2), PromotedLackingKey); w.Reached != 0 {
		t.Fatalf("a failover with replication intact: %+v", w)
	}
	h2.fault(history.Fault{ID: "f1", Kind: "partition", Targets: []string{"r1->p"}, CutReplication: true}, 50, 1600)
	if w := reached(t, judge(t, s, h2), PromotedLackingKey); w.Reached != 1 || !slices.Equal(w.Reaches[0].Faults, []string{"f1", "f0"}) {
		t.Fatalf("a grant while a partition cut replication, then a failover: %+v", w)
	}
}

func TestLateRenewal(t *testing.T) {
	s := one
	s.Renews = true
	for _, c := range []struct {
		at   int64
		want int
	}{{1100, 1}, {800, 0}} {
		h := &hist{}
		h.hold(0, 100, 1000, 1500)
		h.add(history.Op{Process: 0, Client: 0, Type: history.Invoke, F: history.Extend, Key: "tumbler:0", Value: "owner-a", Time: c.at * ms})
		h.add(history.Op{Process: 0, Client: 0, Type: history.OK, F: history.Extend, Key: "tumbler:0", Value: "owner-a", ValidUntil: (c.at + 1000) * ms, Time: (c.at + 5) * ms})
		if w := reached(t, judge(t, s, h), LateRenewal); w.Reached != c.want {
			t.Errorf("renewal at %d ms: reached %d, want %d (%+v)", c.at, w.Reached, c.want, w)
		}
	}
	// No renewal at all while holding past the validity.
	h := &hist{}
	h.hold(0, 100, 1000, 1500)
	if w := reached(t, judge(t, s, h), LateRenewal); w.Reached != 1 {
		t.Errorf("held past its validity without renewal: %+v", w)
	}
	if w := reached(t, judge(t, one, h), LateRenewal); w.NotApplicable == "" {
		t.Errorf("a lock that does not renew: the window must not apply: %+v", w)
	}
}

func TestLostAcquireReply(t *testing.T) {
	for _, c := range []struct {
		typ  history.Type
		kind string
		want int
	}{{history.Info, "reply-loss", 1}, {history.OK, "reply-loss", 0}, {history.Info, "partition", 0}} {
		h := &hist{}
		h.fault(history.Fault{ID: "f0", Kind: c.kind, Targets: []string{"n1"}}, 50, 400)
		h.add(history.Op{Process: 0, Client: 0, Type: history.Invoke, F: history.Acquire, Key: "tumbler:0", Time: 100 * ms})
		h.add(history.Op{Process: 0, Client: 0, Type: c.typ, F: history.Acquire, Key: "tumbler:0", Value: "v", ValidUntil: 1000 * ms, Time: 300 * ms})
		if w := reached(t, judge(t, one, h), LostAcquireReply); w.Reached != c.want {
			t.Errorf("%s acquire under %s: reached %d, want %d", c.typ, c.kind, w.Reached, c.want)
		}
	}
}

func TestAnomalyFollowed(t *testing.T) {
	h := &hist{}
	h.hold(0, 100, 1000, 650)
	h.fault(history.Fault{ID: "f0", Kind: "restart", Targets: []string{"n1"}, Empty: true}, 300, 500)
	if w := reached(t, judge(t, one, h, checker.Anomaly{Kind: checker.DoubleGrant, At: 600 * ms}), RestartEmpty); !w.AnomalyFollowed {
		t.Fatalf("an anomaly 100 ms after the reach: %+v", w)
	}
	if w := reached(t, judge(t, one, h, checker.Anomaly{Kind: checker.DoubleGrant, At: 50 * ms}), RestartEmpty); w.AnomalyFollowed {
		t.Fatalf("an anomaly before the reach followed it: %+v", w)
	}
	if w := reached(t, judge(t, one, h, checker.Anomaly{Kind: checker.DoubleGrant, At: 9000 * ms}), RestartEmpty); w.AnomalyFollowed {
		t.Fatalf("an anomaly 8.5 s later, naming no fault of it, followed it: %+v", w)
	}
	// Each anomaly is tied to the windows it followed, on its own.
	near := checker.Anomaly{Kind: checker.DoubleGrant, At: 600 * ms}
	far := checker.Anomaly{Kind: checker.StaleWrite, At: 9000 * ms}
	r := judge(t, one, h, near, far)
	if got := r.Followed(near); !slices.Contains(got, RestartEmpty) {
		t.Errorf("the double grant 100 ms after the restart followed %v", got)
	}
	if got := r.Followed(far); slices.Contains(got, RestartEmpty) {
		t.Errorf("the stale write 8.5 s later followed %v", got)
	}
	if got := r.Followed(checker.Anomaly{Kind: checker.DoubleGrant, At: 1}); got != nil {
		t.Errorf("an anomaly the run does not have followed %v", got)
	}
	if got := (*Run)(nil).Followed(near); got != nil {
		t.Errorf("no coverage: %v", got)
	}
}

// TestGenericWindows: the windows any lock without fencing or a checked
// validity fails in are marked generic, those that tell about the lock
// are not.
func TestGenericWindows(t *testing.T) {
	for _, w := range Windows() {
		want := w.Name == HolderStopped || w.Name == AcquireStalled || w.Name == LateGrant
		if w.Generic != want || IsGeneric(w.Name) != want {
			t.Errorf("%s: generic %v, want %v", w.Name, w.Generic, want)
		}
	}
	deployment := []string{LeaseNodeFault, BareMajority, RestartEmpty, ClockPastValidity, PromotedLackingKey}
	for _, w := range Windows() {
		want := slices.Contains(deployment, w.Name)
		if w.Deployment != want || IsDeployment(w.Name) != want || w.Deployment && w.Generic {
			t.Errorf("%s: deployment %v (generic %v), want %v", w.Name, w.Deployment, w.Generic, want)
		}
	}
	if IsGeneric("no-such-window") {
		t.Error("an unknown window is generic")
	}
}

func TestApplicability(t *testing.T) {
	latch := Setup{TTL: time.Second, Failover: true, Nodes: []string{"p", "r1"}}
	r := Judge(Input{Setup: latch})
	for _, w := range r.Windows {
		want := w.Name == PromotedLackingKey
		if w.Counts() != want {
			t.Errorf("latch on replicated: %s counts %v, want %v (%s)", w.Name, w.Counts(), want, w.NotApplicable)
		}
	}
	s := one
	s.Quorum = true
	if w, _ := Judge(Input{Setup: s}).Get(BareMajority); w.Counts() {
		t.Errorf("a quorum of one node: bare majority must not apply")
	}
	s = five()
	s.Traits = nemesis.Partition.Traits()
	r = Judge(Input{Setup: s})
	if w, _ := r.Get(RestartEmpty); w.OutOfReach == "" {
		t.Errorf("restart-empty with partitions only: want out of reach")
	}
	if w, _ := r.Get(BareMajority); !w.Counts() {
		t.Errorf("bare majority with partitions on 5 nodes must count: %+v", w)
	}
}

func TestTally(t *testing.T) {
	s := one
	s.Traits = nemesis.Restart.Traits()
	tl := NewTally(s)
	if tl.CoveredK(1) {
		t.Fatal("covered before any run")
	}
	h := &hist{}
	h.hold(0, 100, 1000, 650)
	h.fault(history.Fault{ID: "f0", Kind: "restart", Targets: []string{"n1"}, Empty: true}, 300, 500)
	r := judge(t, s, h)
	tl.Add(r)
	// restart reaches lease-node-fault and restart-empty; the others are
	// out of reach with restarts only.
	if !tl.CoveredK(1) || tl.CoveredK(2) {
		t.Fatalf("after one run reaching both: covered(1) %v covered(2) %v: %+v", tl.CoveredK(1), tl.CoveredK(2), tl)
	}
	tl.Add(Judge(Input{Setup: s}))
	if got := tl.Reached(RestartEmpty); got != 1 {
		t.Fatalf("reached %d, want 1", got)
	}
	sum := strings.Join(tl.Summary(), "\n")
	if !strings.Contains(sum, "node of the lease restarted empty within the TTL: reached 1 time in 1 of 2 runs") {
		t.Fatalf("summary:\n%s", sum)
	}
}

// TestWindowTraitsAreDeclared: every window is reached by traits, each a
// trait, and a fault kind declares one of them — a window no kind can
// reach, or a trait renamed on one side only, fails here.
func TestWindowTraitsAreDeclared(t *testing.T) {
	names := map[string]bool{}
	for _, w := range Windows() {
		if names[w.Name] {
			t.Errorf("window %s twice", w.Name)
		}
		names[w.Name] = true
		if w.Label == "" || w.Reason == "" || strings.Contains(w.Reason, "\n") {
			t.Errorf("window %s: want a label and a one-line reason", w.Name)
		}
		if len(w.Traits) == 0 {
			t.Errorf("window %s: reached by no trait", w.Name)
		}
		for _, tr := range w.Traits {
			if !tr.Valid() {
				t.Errorf("window %s: %q is no trait", w.Name, tr)
			}
		}
		if len(nemesis.KindsWith(w.Traits...)) == 0 {
			t.Errorf("window %s: no fault kind declares %s", w.Name, w.Traits.Or())
		}
	}
}

// TestFaultsKnownByTheirTraits: the windows read what a fault does from
// its traits, whatever its kind is called: a kind tumbler does not know
// that restarts a node reaches restart-empty, and a restart recorded
// without traits reaches nothing (a history written before traits were
// recorded gets its kinds' from the runner as it is read).
func TestFaultsKnownByTheirTraits(t *testing.T) {
	h := &hist{}
	h.hold(0, 100, 1000, 650)
	h.fault(history.Fault{ID: "f0", Kind: "meteor", Traits: history.TraitSet{history.TouchesNode, history.RestartsNode},
		Targets: []string{"n1"}, Empty: true}, 300, 500)
	r := judge(t, one, h)
	for _, name := range []string{RestartEmpty, LeaseNodeFault} {
		if w := reached(t, r, name); w.Reached != 1 {
			t.Errorf("a meteor that restarts n1 empty: %s reached %d times", name, w.Reached)
		}
	}
	h = &hist{}
	h.hold(0, 100, 1000, 650)
	h.fault(history.Fault{ID: "f0", Kind: "restart", Traits: history.TraitSet{}, Targets: []string{"n1"}, Empty: true}, 300, 500)
	r = judge(t, one, h)
	for _, w := range r.Windows {
		if w.Reached != 0 {
			t.Errorf("a restart recorded without traits reached %s: %+v", w.Name, w)
		}
	}
	s := one
	s.Traits = history.TraitSet{history.RestartsNode}
	if w, _ := Judge(Input{Setup: s}).Get(HolderStopped); w.OutOfReach != "needs a fault that stops-client or isolates-client" {
		t.Errorf("holder-stopped with restarts only: %q", w.OutOfReach)
	}
}

func TestWeightPrefersWindowsReachedLeast(t *testing.T) {
	s := five()
	for _, k := range []nemesis.Kind{nemesis.Partition, nemesis.Restart, nemesis.Clock} {
		s.Traits = s.Traits.With(k.Traits()...)
	}
	tl := NewTally(s)
	restartEmpty := []Shape{{Traits: nemesis.Restart.Traits(), Lease: true, Empty: true}}
	keep := []Shape{{Traits: nemesis.Restart.Traits(), Lease: true}}
	random := []Shape{{Traits: nemesis.Clock.Traits(), Nodes: []string{"n9"}, Offset: time.Second}}
	// Nothing reached yet: an empty restart of the lease aims at two
	// windows, one with persistence at one, a clock off the lease at none.
	if a, b, c := tl.Weight(restartEmpty, s), tl.Weight(keep, s), tl.Weight(random, s); !(a > b && b > c) {
		t.Fatalf("weights %v, %v, %v: want decreasing", a, b, c)
	}
	for _, w := range Windows() {
		if w.Aims(restartEmpty[0], s) != (w.Name == LeaseNodeFault || w.Name == RestartEmpty) {
			t.Errorf("an empty restart of the lease: aims at %s %v", w.Name, w.Aims(restartEmpty[0], s))
		}
	}
	// Once restart-empty was reached often, the scene weighs less.
	before := tl.Weight(restartEmpty, s)
	for range 5 {
		tl.Add(&Run{Windows: []Result{{Heading: Heading{Name: RestartEmpty}, Reached: 1}}})
	}
	if after := tl.Weight(restartEmpty, s); after >= before {
		t.Fatalf("weight %v after 5 reaches, %v before", after, before)
	}
	cut := Shape{Traits: nemesis.Partition.Traits(), Cut: 2}
	if w, _ := Lookup(BareMajority); !w.Aims(cut, s) || w.Aims(Shape{Traits: nemesis.Partition.Traits(), Cut: 3}, s) {
		t.Errorf("a cut of 2 of 5 aims at a bare majority, of 3 does not")
	}
}

func TestTallyMerge(t *testing.T) {
	a, b := NewTally(one), NewTally(one)
	a.Add(&Run{Windows: []Result{{Heading: Heading{Name: RestartEmpty}, Reached: 2, AnomalyFollowed: true}}})
	b.Add(&Run{Windows: []Result{{Heading: Heading{Name: RestartEmpty}, Reached: 1}}})
	b.Add(&Run{Windows: []Result{{Heading: Heading{Name: RestartEmpty}}}})
	a.Merge(b)
	i := slices.IndexFunc(a.Windows, func(c Count) bool { return c.Name == RestartEmpty })
	if c := a.Windows[i]; a.Runs != 3 || c.Reached != 3 || c.Runs != 2 || c.Followed != 1 {
		t.Fatalf("merged: %d runs, %+v", a.Runs, c)
	}
}

func TestAcquireStalled(t *testing.T) {
	for _, c := range []struct {
		name        string
		start, stop int64
		want        int
	}{
		{"stopped inside the acquire past the validity", 105, 1500, 1},
		{"stopped inside it, briefly", 105, 400, 0},
		{"stopped before it asked", 50, 1500, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hist{}
			h.fault(history.Fault{ID: "f0", Kind: "client-pause", Targets: []string{"client:0"}}, c.start, c.stop)
			h.add(history.Op{Process: 0, Client: 0, Type: history.Invoke, F: history.Acquire, Key: "tumbler:0", Time: 100 * ms})
			h.add(history.Op{Process: 0, Client: 0, Type: history.OK, F: history.Acquire, Key: "tumbler:0", Value: "v", ValidUntil: 1000 * ms, Time: (c.stop + 5) * ms})
			if w := reached(t, judge(t, one, h), AcquireStalled); w.Reached != c.want {
				t.Fatalf("reached %d, want %d: %+v", w.Reached, c.want, w)
			}
		})
	}
	w, _ := Lookup(AcquireStalled)
	pause := nemesis.StepPause.Traits()
	if !w.Aims(Shape{Traits: pause, Acquiring: true, Stop: 2 * time.Second}, one) || w.Aims(Shape{Traits: pause, Stop: 2 * time.Second}, one) {
		t.Error("a long pause armed inside the acquire aims at the window; one at another step does not")
	}
}

// grant adds client c's acquire invoked at from and granted at at, its
// validity ending at vu (ms), then released at at+10.
func (h *hist) grant(c int, from, at, vu int64) {
	k, v := "tumbler:0", "owner-"+string(rune('a'+c))
	h.add(history.Op{Process: history.Process(c), Client: c, Type: history.Invoke, F: history.Acquire, Key: k, Time: from * ms})
	h.add(history.Op{Process: history.Process(c), Client: c, Type: history.OK, F: history.Acquire, Key: k, Value: v, ValidUntil: vu * ms, Time: at * ms})
	h.add(history.Op{Process: history.Process(c), Client: c, Type: history.Invoke, F: history.Release, Key: k, Value: v, Time: (at + 10) * ms})
	h.add(history.Op{Process: history.Process(c), Client: c, Type: history.OK, F: history.Release, Key: k, Value: v, Time: (at + 15) * ms})
}

// TestLateGrant: a grant heard after its validity ended is a late grant,
// named with the faults of its traits active during the call; one whose
// client a single stop held past the validity is acquire-stalled's and
// not counted again; a grant in time, or one without expiry, is not late.
func TestLateGrant(t *testing.T) {
	for _, c := range []struct {
		name       string
		fault      history.Fault
		at, vu     int64
		late, stal int
		faults     []string
	}{
		{"a delayed reply", history.Fault{ID: "f0", Kind: "latency", Targets: []string{"n1"}}, 1400, 1000, 1, 0, []string{"f0"}},
		{"in time", history.Fault{ID: "f0", Kind: "latency", Targets: []string{"n1"}}, 900, 1000, 0, 0, nil},
		{"stopped past the validity inside it", history.Fault{ID: "f0", Kind: "client-pause", Targets: []string{"client:0"}}, 1400, 1000, 0, 1, nil},
		{"late with another client paused", history.Fault{ID: "f0", Kind: "client-pause", Targets: []string{"client:1"}}, 1400, 1000, 1, 0, nil},
		{"no expiry", history.Fault{ID: "f0", Kind: "latency", Targets: []string{"n1"}}, 1400, 1 << 40, 0, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hist{}
			h.fault(c.fault, 105, 1300)
			h.grant(0, 100, c.at, c.vu)
			r := judge(t, one, h)
			late, stalled := reached(t, r, LateGrant), reached(t, r, AcquireStalled)
			if late.Reached != c.late || stalled.Reached != c.stal {
				t.Fatalf("late-grant %d, acquire-stalled %d; want %d, %d: %+v", late.Reached, stalled.Reached, c.late, c.stal, late)
			}
			if c.late > 0 && (late.First != c.vu*ms || late.Reaches[0].To != c.at*ms || !slices.Equal(late.Reaches[0].Faults, c.faults)) {
				t.Fatalf("reach %+v: want from the validity's end to the grant, naming %v", late.Reaches[0], c.faults)
			}
		})
	}
	w, _ := Lookup(LateGrant)
	if !w.Aims(Shape{Traits: nemesis.Latency.Traits(), Delay: 600 * time.Millisecond}, one) || w.Aims(Shape{Traits: nemesis.Latency.Traits(), Delay: 10 * time.Millisecond}, one) {
		t.Error("a latency of two thirds of the validity aims at late grants, one of 10 ms does not")
	}
}

// TestClientClockMoved: a holder's own clock stepped by more than the
// validity, either way, while it held — at the fault's start or at its
// heal —, or drifted that far during the hold; another client's clock that
// far off while the lease was held; not a small step, nor a holder's
// step that came and went outside its hold, nor a clock off while nobody
// held.
func TestClientClockMoved(t *testing.T) {
	for _, c := range []struct {
		name        string
		fault       history.Fault
		start, stop int64
		want        int
		from        int64
	}{
		{"stepped behind while held", history.Fault{Offset: int64(-1500 * time.Millisecond)}, 300, 2000, 1, 300},
		{"stepped ahead while held", history.Fault{Offset: int64(2 * time.Second)}, 300, 2000, 1, 300},
		{"stepped a little", history.Fault{Offset: int64(500 * time.Millisecond)}, 300, 700, 0, 0},
		{"stepped back at the heal while held", history.Fault{Offset: int64(-3 * time.Second)}, 50, 400, 1, 400},
		{"stepped before the hold and back after it", history.Fault{Offset: int64(-3 * time.Second)}, 50, 1500, 0, 0},
		{"another client's clock while the lease was held", history.Fault{Offset: int64(3 * time.Second), Targets: []string{"client:1"}}, 300, 700, 1, 300},
		{"another client's clock drifting at 3× while it was held", history.Fault{Rate: 3, Targets: []string{"client:1"}}, 150, 950, 1, 600},
		{"another client's clock once nobody held", history.Fault{Offset: int64(3 * time.Second), Targets: []string{"client:1"}}, 1250, 1400, 0, 0},
		{"drifted at 3× for 800 ms while held", history.Fault{Rate: 3}, 150, 950, 1, 150 + 450},
		{"drifted at 1.5× for 800 ms while held", history.Fault{Rate: 1.5}, 150, 950, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.fault
			f.ID, f.Kind = "f0", "client-clock"
			if f.Rate != 0 {
				f.Kind = "client-drift"
			}
			if f.Targets == nil {
				f.Targets = []string{"client:0"}
			}
			h := &hist{}
			h.hold(0, 100, 1000, 1200)
			h.fault(f, c.start, c.stop)
			w := reached(t, judge(t, one, h), ClientClockMoved)
			if w.Reached != c.want || c.want > 0 && w.First != c.from*ms {
				t.Fatalf("reached %d from %d ms, want %d from %d ms: %+v", w.Reached, w.First/ms, c.want, c.from, w)
			}
		})
	}
	w, _ := Lookup(ClientClockMoved)
	clk := nemesis.ClientClock.Traits()
	if !w.Aims(Shape{Traits: clk, Holder: true, Offset: -2 * time.Second}, one) || !w.Aims(Shape{Traits: clk, Offset: 2 * time.Second}, one) ||
		w.Aims(Shape{Traits: clk, Holder: true, Offset: 500 * time.Millisecond}, one) ||
		w.Aims(Shape{Traits: nemesis.Clock.Traits(), Holder: true, Offset: -2 * time.Second}, one) {
		t.Error("a client's clock stepped 2 s either way aims at the window; by 500 ms, or a node's, it does not")
	}
}

// TestClockDriftPastValidity: a lease node's clock running fast expires
// the key before its holder's validity ends when the rate is above
// TTL/validity (here 1 s / 900 ms ≈ 1.11: the catalog's redlock-drift
// rows' rule); a slower drift, one behind, and a drift recorded without
// its rate (a history written before rates were) reach nothing.
func TestClockDriftPastValidity(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
		from int64 // ms: when the key expired on the node
	}{{3, 1, 466}, {1.2, 1, 941}, {1.1, 0, 0}, {0.5, 0, 0}, {0, 0, 0}} {
		h := &hist{}
		h.hold(0, 100, 1000, 950)
		h.fault(history.Fault{ID: "f0", Kind: "drift", Targets: []string{"n1"}, Rate: c.rate}, 150, 1500)
		w := reached(t, judge(t, one, h), ClockPastValidity)
		if w.Reached != c.want || c.want > 0 && w.First/ms != c.from {
			t.Errorf("rate %v: reached %d from %d ms, want %d from %d ms (%+v)", c.rate, w.Reached, w.First/ms, c.want, c.from, w)
		}
	}
	w, _ := Lookup(ClockPastValidity)
	drift := nemesis.ClockDrift.Traits()
	if !w.Aims(Shape{Traits: drift, Lease: true, Rate: 1.2}, one) || w.Aims(Shape{Traits: drift, Lease: true, Rate: 1.1}, one) || w.Aims(Shape{Traits: drift, Rate: 1.2}, one) {
		t.Error("a drift of the lease's node at 1.2× aims at the window; at 1.1×, or off the lease, it does not")
	}
}
