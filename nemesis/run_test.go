package nemesis

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/workloads"
)

// noLeak fails the test if goroutines started during it outlive it. It
// counts the whole process's goroutines, so a test that calls it must not
// run beside others: t.Setenv panics in a parallel test (and a later
// t.Parallel panics after it), which makes that mistake a failure.
func noLeak(t *testing.T) {
	t.Setenv("TUMBLER_TEST_SERIAL", "noLeak")
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
	})
}

func fakeEnv(f *fakeCluster, cl *fakeClients, o *fakeOracle) Env {
	e := Env{Cluster: f, Clock: history.NewClock(), NodeClock: true, ClientMode: workloads.Processes}
	if cl != nil {
		e.Clients = cl
	}
	if o != nil {
		e.Oracle = o
	}
	return e
}

// sequence is the records as (f, id, type) in order.
func sequence(ops []history.Op) []string {
	var out []string
	for _, op := range ops {
		out = append(out, fmt.Sprintf("%s %s %s", op.F, op.Fault.ID, op.Type))
	}
	return out
}

func TestRunReplaysOnTime(t *testing.T) {
	noLeak(t)
	plan := mustPlan(t, `{"ttl":"200ms","steps":[
		{"at":"100ms","fault":"partition","nodes":["n1"],"for":"1ttl"},
		{"at":"150ms","fault":"latency","nodes":["n2"],"latency":"10ms","for":"1.5ttl"},
		{"at":"200ms","fault":"pause","nodes":["n3"],"for":"0.5ttl"},
		{"at":"200ms","fault":"clock","nodes":["n2"],"offset":"1ttl","strobe":"20ms","for":"0.5ttl"},
		{"at":"350ms","fault":"kill","nodes":["n3"],"for":"0.5ttl","persistence":"aof-always"},
		{"at":"300ms","fault":"client-pause","clients":[0],"for":"0.5ttl"},
		{"at":"500ms","fault":"restart","nodes":["n1"],"delay":"0.5ttl"},
		{"at":"520ms","fault":"partition","nodes":["n2"],"for":"0.5ttl"}
	]}`)
	steps, err := plan.compile(Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 3}, Clients: 3, NodeClock: true})
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	worst := time.Duration(0)
	for round := 0; round < 2; round++ {
		f := newFakeCluster(t, "independent:3", 3)
		f.startDelay = 20 * time.Millisecond
		s := newSink()
		env := fakeEnv(f, &fakeClients{n: 3}, nil)
		if err := Run(context.Background(), plan, env, s); err != nil {
			t.Fatal(err)
		}
		ops := s.Ops()
		seq := sequence(ops)
		if round == 0 {
			first = seq
		} else if !slices.Equal(seq, first) {
			t.Errorf("replay gave another sequence:\n%v\n%v", first, seq)
		}
		for _, op := range ops {
			c := steps[indexOf(t, op.Fault.ID)]
			want := c.at
			if op.F == history.Stop {
				if c.Fault == Restart || c.Fault == Kill {
					continue // ends when the node is up
				}
				want += c.dur
			}
			late := time.Duration(op.Time) - want
			worst = max(worst, late)
			// Generous: the figure to watch is logged below.
			if late < 0 || late > 100*time.Millisecond {
				t.Errorf("%s %s at %v, scheduled %v", op.F, op.Fault.ID, time.Duration(op.Time), want)
			}
		}
		// The restart's delay did not hold up the partition 20 ms later.
		if len(f.Toxics()) != 0 || f.down["n1"] || f.down["n3"] || f.paused["n3"] || f.clock["n2"] != 0 {
			t.Errorf("not all healed: toxics %v down %v paused %v clock %v", f.Toxics(), f.down, f.paused, f.clock)
		}
		strobes := 0
		for _, c := range f.Calls() {
			if strings.HasPrefix(c, "clock n2") {
				strobes++
			}
		}
		if strobes < 4 {
			t.Errorf("the strobe set n2's clock %d times in 100 ms at a 20 ms interval", strobes)
		}
	}
	t.Logf("worst lateness of a start or stop against its schedule: %v", worst)
}

func indexOf(t *testing.T, id string) int {
	var i int
	if _, err := fmt.Sscanf(id, "f%d", &i); err != nil {
		t.Fatalf("fault id %q", id)
	}
	return i - 1
}

func TestRunComposesFaultsOnOneLink(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:2", 2)
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","fault":"latency","links":["c0->n1","c1->n1"],"latency":"20ms","for":"600ms"},
		{"at":"200ms","fault":"partition","links":["c0->n1"],"mode":"blackhole","for":"200ms"},
		{"at":"700ms","fault":"partition","links":["c1->n2"],"mode":"reset","for":"600ms"},
		{"at":"900ms","fault":"latency","links":["c1->n2"],"latency":"5ms","direction":"upstream","for":"200ms"}
	]}`)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), plan, fakeEnv(f, nil, nil), s) }()

	s.wait(t, history.Start, "f2", 2*time.Second)
	tox := f.Toxics()
	if tox["c0->n1"]["cut-upstream"] != "blackhole" || tox["c0->n1"]["delay-downstream"] != "20ms±0s" || tox["c1->n1"]["cut-upstream"] != "" {
		t.Errorf("during latency and partition: %v", tox)
	}
	s.wait(t, history.Stop, "f2", 2*time.Second)
	tox = f.Toxics()
	if tox["c0->n1"]["cut-upstream"] != "" || tox["c0->n1"]["delay-upstream"] != "20ms±0s" {
		t.Errorf("the partition's heal must leave the latency: %v", tox)
	}
	s.wait(t, history.Stop, "f1", 2*time.Second)
	if len(f.Toxics()) != 0 {
		t.Errorf("after both: %v", f.Toxics())
	}
	s.wait(t, history.Start, "f4", 2*time.Second)
	tox = f.Toxics()
	if tox["c1->n2"]["cut-downstream"] != "reset" || tox["c1->n2"]["delay-upstream"] != "5ms±0s" || tox["c1->n2"]["delay-downstream"] != "" {
		t.Errorf("partition with upstream latency: %v", tox)
	}
	callsBefore := len(f.Calls())
	s.wait(t, history.Stop, "f4", 2*time.Second)
	// Lifting the latency must not heal the cut link (which would close a
	// blackhole's connections): a zero delay instead.
	lift := f.Calls()[callsBefore:]
	if len(lift) != 1 || lift[0] != "delay 0s 0s upstream c1->n2" {
		t.Errorf("lifting the latency under a cut: %v", lift)
	}
	if tox := f.Toxics(); tox["c1->n2"]["cut-upstream"] != "reset" || tox["c1->n2"]["delay-upstream"] != "" {
		t.Errorf("after lifting the latency: %v", tox)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(f.Toxics()) != 0 {
		t.Errorf("after the plan: %v", f.Toxics())
	}
}

func TestRunClientFaults(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:2", 3)
	cl := &fakeClients{n: 3}
	o := newFakeOracle()
	o.holder["held"] = 1
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","trigger":"grant","key":"k","fault":"client-pause","client":"holder","for":"100ms"},
		{"at":"300ms","fault":"client-clock","clients":[0],"offset":"1s","for":"300ms"},
		{"at":"400ms","fault":"client-clock","clients":[0],"offset":"-250ms","for":"100ms"},
		{"at":"700ms","fault":"step-pause","clients":[1],"step":"s","pause":"50ms","for":"100ms"},
		{"at":"900ms","fault":"step-crash","clients":[2],"step":"t","for":"100ms"},
		{"at":"1100ms","fault":"client-partition","clients":[1],"for":"100ms"},
		{"at":"1300ms","fault":"client-pause","client":"holder","key":"held","for":"100ms"},
		{"at":"1500ms","fault":"client-pause","client":"holder","key":"nobody","for":"100ms"},
		{"at":"1500ms","trigger":"grant","key":"never","timeout":"100ms","fault":"client-pause","clients":[0],"for":"100ms"}
	]}`)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), plan, fakeEnv(f, cl, o), s) }()
	<-o.waiting
	o.grants <- 2
	<-o.waiting // the last step's trigger
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pause 2", "resume 2",
		"clock 0 1s", "clock 0 750ms", "clock 0 1s", "clock 0 0s",
		"arm 1 s {Pause:50ms Crash:false}", "arm 1 s {Pause:0s Crash:false}",
		"arm 2 t {Pause:0s Crash:true}", "arm 2 t {Pause:0s Crash:false}",
		"gate 1 true", "gate 1 false",
		"pause 1", "resume 1",
	}
	if got := cl.Calls(); !slices.Equal(got, want) {
		t.Errorf("client calls:\n got %q\nwant %q", got, want)
	}
	calls := strings.Join(f.Calls(), "\n")
	if !strings.Contains(calls, "cut blackhole both c1->n1,c1->n2") || !strings.Contains(calls, "heal c1->n1,c1->n2") {
		t.Errorf("client-partition links: %s", calls)
	}
	byID := map[string][]history.Op{}
	for _, op := range s.Ops() {
		byID[op.Fault.ID] = append(byID[op.Fault.ID], op)
	}
	if ops := byID["f1"]; len(ops) != 2 || ops[0].Client != 2 || !slices.Equal(ops[0].Fault.Targets, []string{"client:2"}) ||
		ops[0].Fault.Desc != `pause client 2 (holder of "k") (SIGSTOP) for 100ms` {
		t.Errorf("holder pause records: %v", ops)
	}
	if ops := byID["f7"]; len(ops) != 2 || ops[0].Client != 1 {
		t.Errorf("holder without trigger: %v", ops)
	}
	for _, id := range []string{"f8", "f9"} {
		ops := byID[id]
		if len(ops) != 2 || ops[0].Type != history.Fail || ops[1].Type != history.Fail || !strings.HasPrefix(ops[0].Error, "skipped: ") || ops[0].Time != ops[1].Time {
			t.Errorf("%s should be skipped: %v", id, ops)
		}
	}
	if !strings.Contains(byID["f8"][0].Error, `nobody holds "nobody"`) || !strings.Contains(byID["f9"][0].Error, `no grant of "never" within 100ms`) {
		t.Errorf("skip reasons: %q, %q", byID["f8"][0].Error, byID["f9"][0].Error)
	}
	if ops := byID["f6"]; ops[0].Fault.Desc != "cut client 1 from every node and from the resource for 100ms (blackhole)" {
		t.Errorf("client-partition sentence: %q", ops[0].Fault.Desc)
	}
}

func TestRunCancelHealsEverything(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:5", 2)
	cl := &fakeClients{n: 2}
	o := newFakeOracle()
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","fault":"partition","nodes":["n1","n2"],"for":"1m"},
		{"at":"0s","fault":"pause","nodes":["n3"],"for":"1m"},
		{"at":"0s","fault":"kill","nodes":["n4"],"for":"1m"},
		{"at":"0s","fault":"restart","nodes":["n5"],"delay":"1m"},
		{"at":"0s","fault":"clock","nodes":["n1"],"offset":"5s","for":"1m"},
		{"at":"0s","fault":"client-pause","clients":[1],"for":"1m"},
		{"at":"0s","fault":"client-partition","clients":[0],"for":"1m"},
		{"at":"0s","trigger":"grant","key":"k","fault":"client-pause","clients":[0],"for":"1m"},
		{"at":"1m","fault":"pause","nodes":["n1"],"for":"1m"}
	]}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, plan, fakeEnv(f, cl, o), s) }()
	for _, id := range []string{"f1", "f2", "f3", "f4", "f5", "f6", "f7"} {
		s.wait(t, history.Start, id, 2*time.Second)
	}
	<-o.waiting
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if len(f.Toxics()) != 0 || f.paused["n3"] || f.down["n4"] || f.down["n5"] || f.clock["n1"] != 0 {
		t.Errorf("cancel left faults: toxics %v paused %v down %v clock %v", f.Toxics(), f.paused, f.down, f.clock)
	}
	got := cl.Calls()
	if !slices.Contains(got, "resume 1") || !slices.Contains(got, "gate 0 false") {
		t.Errorf("clients not restored: %v", got)
	}
	starts, stops := 0, 0
	for _, op := range s.Ops() {
		switch op.F {
		case history.Start:
			starts++
		case history.Stop:
			stops++
		}
	}
	if starts != 7 || stops != 7 {
		t.Errorf("%d starts, %d stops; want 7 of each (the triggered and the later step never started)", starts, stops)
	}
}

func TestRunReportsFailures(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:3", 1)
	f.fail["kill"] = errors.New("boom")
	f.startDelay = 300 * time.Millisecond
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","fault":"kill","nodes":["n1"],"for":"100ms"},
		{"at":"0s","fault":"partition","nodes":["n3"],"for":"100ms"}
	]}`)
	err := Run(context.Background(), plan, fakeEnv(f, nil, nil), s)
	if err == nil || !strings.Contains(err.Error(), "step 1 (kill): boom") {
		t.Errorf("Run error: %v", err)
	}
	ops := s.Ops()
	if len(ops) != 4 || ops[0].Fault.ID != "f1" || ops[0].F != history.Start || ops[0].Error != "boom" {
		t.Errorf("records: %v", ops)
	}
	for _, op := range ops[1:] {
		if op.Error != "" || op.Fault.ID == "f1" && op.F != history.Stop {
			t.Errorf("record %v", op)
		}
	}

	// A conflict only the run can see: n2 is still starting when the
	// pause comes (the restart's window in the plan has ended).
	delete(f.fail, "kill")
	s = newSink()
	plan = mustPlan(t, `{"steps":[
		{"at":"0s","fault":"restart","nodes":["n2"]},
		{"at":"100ms","fault":"pause","nodes":["n2"],"for":"100ms"}
	]}`)
	err = Run(context.Background(), plan, fakeEnv(f, nil, nil), s)
	if err == nil || !strings.Contains(err.Error(), "step 2 (pause): n2 is down or restarting by step 1 (restart)") {
		t.Errorf("Run error: %v", err)
	}
	if f.paused["n2"] || f.down["n2"] {
		t.Errorf("n2 paused %v, down %v", f.paused["n2"], f.down["n2"])
	}
}

func TestRunFailoverAfterCuttingReplication(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "replicated:2+sentinels", 1)
	o := newFakeOracle()
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","trigger":"grant","key":"k","fault":"failover","via":"kill","cut_replication":true,"lag":"50ms"}
	]}`)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), plan, fakeEnv(f, nil, o), s) }()
	start := s.wait(t, history.Start, "f1", 2*time.Second)
	<-o.waiting
	if got := f.Calls(); !slices.Equal(got, []string{"cut blackhole both r1->p,r2->p"}) {
		t.Errorf("before the grant: %v", got)
	}
	o.grants <- 0
	stop := s.wait(t, history.Stop, "f1", 5*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"cut blackhole both r1->p,r2->p", "kill p", "failover p->r1", "heal r1->p,r2->p", "start p"}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if start.Fault.Desc != `cut replication r1->p, r2->p (blackhole), wait for a grant of "k", wait 50ms, then kill the primary p and let Sentinel fail over` {
		t.Errorf("desc %q", start.Fault.Desc)
	}
	if !strings.HasPrefix(stop.Value, "r1 took over from p ") || stop.Error != "" {
		t.Errorf("stop record: %v", stop)
	}
}

// TestRunPromoteOfThePrimaryIsSkipped: a promotion by hand of a node that
// became the primary since the plan was written (Sentinel failed over on
// its own, as it may during a generated schedule) is skipped and recorded
// as such, not a harness failure; the rest of the plan runs.
func TestRunPromoteOfThePrimaryIsSkipped(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "replicated:2+sentinels", 1)
	f.primary = "r1"
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","fault":"failover","via":"promote","nodes":["r1"]},
		{"at":"50ms","fault":"failover","via":"promote","nodes":["r2"]}
	]}`)
	if err := Run(context.Background(), plan, fakeEnv(f, nil, nil), s); err != nil {
		t.Fatalf("Run: %v", err)
	}
	var skipped, promoted bool
	for _, op := range s.Ops() {
		switch {
		case op.Fault.ID == "f1" && op.F == history.Start:
			skipped = op.Type == history.Fail && op.Error == "skipped: r1 is the primary already"
		case op.Fault.ID == "f2" && op.F == history.Start:
			promoted = op.Error == ""
		}
	}
	if !skipped || !promoted {
		t.Errorf("f1 skipped %v, f2 promoted %v: %v", skipped, promoted, s.Ops())
	}
	if got := f.Calls(); !slices.Equal(got, []string{"promote r2"}) {
		t.Errorf("calls %v, want [promote r2]", got)
	}
}

// TestRunFailoverAppliesOnTriggerTimeout: with on_timeout "apply" a failover
// whose grant never comes still happens once the timeout has passed.
func TestRunFailoverAppliesOnTriggerTimeout(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "replicated:1+sentinels", 1)
	o := newFakeOracle()
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","trigger":"grant","key":"k","timeout":"150ms","on_timeout":"apply","fault":"failover","via":"kill","cut_replication":true}
	]}`)
	began := time.Now()
	if err := Run(context.Background(), plan, fakeEnv(f, nil, o), s); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 150*time.Millisecond {
		t.Errorf("applied after %v, before the trigger's timeout", d)
	}
	want := []string{"cut blackhole both r1->p", "kill p", "failover p->r1", "heal r1->p", "start p"}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	start := s.wait(t, history.Start, "f1", time.Second)
	if start.Type != history.Info || !strings.Contains(start.Fault.Desc, `wait up to 150ms for a grant of "k"`) {
		t.Errorf("start record %v", start)
	}
}

// TestRunSettledAfterTheStartsFaults: Env.Settled is called once, after
// the faults due at 0 s are in place (a failover's cut, whose grant is
// still to come) and before a later step.
func TestRunSettledAfterTheStartsFaults(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "replicated:1+sentinels", 1)
	o := newFakeOracle()
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","trigger":"grant","key":"k","timeout":"100ms","fault":"failover","via":"kill","cut_replication":true},
		{"at":"500ms","fault":"pause","nodes":["r1"],"for":"10ms"}
	]}`)
	env := fakeEnv(f, nil, o)
	var calls []string
	settled := 0
	env.Settled = func() { settled++; calls = f.Calls() }
	if err := Run(context.Background(), plan, env, s); err != nil {
		t.Fatal(err)
	}
	if settled != 1 {
		t.Fatalf("Settled called %d times, want once", settled)
	}
	if !slices.Equal(calls, []string{"cut blackhole both r1->p"}) {
		t.Errorf("calls when settled: %v, want the cut alone (not the later pause)", calls)
	}
}

func TestOnTimeoutNeedsATrigger(t *testing.T) {
	for _, js := range []string{
		`{"steps":[{"at":"0s","on_timeout":"apply","fault":"failover","via":"kill"}]}`,
		`{"steps":[{"at":"0s","trigger":"grant","key":"k","on_timeout":"later","fault":"failover","via":"kill"}]}`,
	} {
		p := mustPlan(t, js)
		err := p.Validate(Setup{Topology: cluster.Topology{Kind: cluster.Replicated, N: 1, Sentinels: true}, Clients: 1})
		if err == nil || !strings.Contains(err.Error(), "on_timeout") {
			t.Errorf("%s: err = %v, want one naming on_timeout", js, err)
		}
	}
}

// TestRunAfterWaitsPastTheGrant: a triggered step with "after" applies that
// long after its grant, not at once; "after" without a trigger, or
// negative, is refused naming the field.
func TestRunAfterWaitsPastTheGrant(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:1", 1)
	o := newFakeOracle()
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","trigger":"grant","key":"k","after":"200ms","fault":"pause","nodes":["n1"],"for":"10ms"}
	]}`)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), plan, fakeEnv(f, nil, o), s) }()
	select {
	case <-o.waiting:
	case err := <-done:
		t.Fatalf("Run ended before waiting for the grant: %v", err)
	}
	granted := time.Now()
	o.grants <- 0
	s.wait(t, history.Start, "f1", 2*time.Second)
	if d := time.Since(granted); d < 200*time.Millisecond {
		t.Errorf("applied %v after the grant, want at least the 200ms of after", d)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, js := range []string{
		`{"steps":[{"at":"0s","after":"10ms","fault":"pause","nodes":["n1"],"for":"10ms"}]}`,
		`{"steps":[{"at":"0s","trigger":"grant","key":"k","after":"-10ms","fault":"pause","nodes":["n1"],"for":"10ms"}]}`,
	} {
		p := mustPlan(t, js)
		err := p.Validate(Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 1}, Clients: 1})
		if err == nil || !strings.Contains(err.Error(), "after") {
			t.Errorf("%s: err = %v, want one naming after", js, err)
		}
	}
}

// TestRunNodeSelectors: "lease" picks a node whose key holds the holder's
// value (the holder of now, without a trigger), "primary" the primary of
// the moment; a lease nobody holds, or that no node holds, skips the step
// and says why.
func TestRunNodeSelectors(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:3", 2)
	for node, v := range map[string]string{"n1": "v1", "n3": "v1", "n2": "v0"} {
		f.setValue(node, "held", v)
	}
	o := newFakeOracle()
	o.holder["held"] = 1
	o.holder["ghost"] = 0
	s := newSink()
	plan := mustPlan(t, `{"seed":1,"steps":[
		{"at":"0s","key":"held","fault":"pause","node":"lease","for":"50ms"},
		{"at":"100ms","key":"nobody","fault":"pause","node":"lease","for":"50ms"},
		{"at":"100ms","key":"ghost","fault":"clock","node":"lease","offset":"1s","for":"50ms"}
	]}`)
	if err := Run(context.Background(), plan, fakeEnv(f, &fakeClients{n: 2}, o), s); err != nil {
		t.Fatal(err)
	}
	byID := map[string][]history.Op{}
	for _, op := range s.Ops() {
		byID[op.Fault.ID] = append(byID[op.Fault.ID], op)
	}
	if ops := byID["f1"]; len(ops) != 2 || len(ops[0].Fault.Targets) != 1 || (ops[0].Fault.Targets[0] != "n1" && ops[0].Fault.Targets[0] != "n3") {
		t.Errorf("lease pause records: %v", ops)
	} else if calls := strings.Join(f.Calls(), ";"); calls != "pause "+ops[0].Fault.Targets[0]+";resume "+ops[0].Fault.Targets[0] {
		t.Errorf("calls %s", calls)
	} else if !slices.Equal(ops[0].Fault.Lease, []string{"n1", "n3"}) || ops[0].Fault.Empty {
		// What coverage judges from: every node the lease was read on;
		// a pause brings nothing back empty.
		t.Errorf("the lease pause's start records lease %v, empty %v", ops[0].Fault.Lease, ops[0].Fault.Empty)
	}
	if op := byID["f3"][0]; len(op.Fault.Lease) != 0 || op.Fault.Offset != 0 {
		t.Errorf("a skipped step records what it saw: %+v", op.Fault)
	}
	for id, why := range map[string]string{"f2": `nobody holds "nobody"`, "f3": `no node holds client 0's lease on "ghost"`} {
		ops := byID[id]
		if len(ops) != 2 || ops[0].Type != history.Fail || !strings.Contains(ops[0].Error, why) {
			t.Errorf("%s should be skipped (%s): %v", id, why, ops)
		}
	}
	if d := byID["f2"][0].Fault.Desc; d != `pause a node holding the lease on "nobody" (SIGSTOP) for 50ms` {
		t.Errorf("a skipped lease step's sentence: %q", d)
	}

	f = newFakeCluster(t, "replicated:2", 1)
	f.primary = "r2"
	s = newSink()
	plan = mustPlan(t, `{"steps":[{"at":"0s","fault":"kill","node":"primary","for":"50ms","persistence":"aof-always"}]}`)
	if err := Run(context.Background(), plan, fakeEnv(f, nil, nil), s); err != nil {
		t.Fatal(err)
	}
	if ops := s.Ops(); len(ops) != 2 || !slices.Equal(ops[0].Fault.Targets, []string{"r2"}) ||
		ops[0].Fault.Desc != "kill r2 (the primary) for 50ms, then start it again empty (it ran without persistence, so wrote no AOF), in aof-always from then on" ||
		!ops[0].Fault.Empty || !slices.Equal(ops[0].Fault.Lease, []string{"r2"}) {
		t.Errorf("primary kill records: %v", ops)
	}
	// Killed again, r2 now has the AOF it wrote since.
	s = newSink()
	plan = mustPlan(t, `{"steps":[{"at":"0s","fault":"kill","node":"primary","for":"50ms"}]}`)
	if err := Run(context.Background(), plan, fakeEnv(f, nil, nil), s); err != nil {
		t.Fatal(err)
	}
	if ops := s.Ops(); len(ops) != 2 || ops[0].Fault.Desc != "kill r2 (the primary) for 50ms, then start it again from its AOF (aof-always)" || ops[0].Fault.Empty {
		t.Errorf("second kill records: %v", ops)
	}
}

// TestStartText: what a kill or restart says it brings back, before it is
// resolved (the plan's words) and after (by the mode the node ran with).
func TestStartText(t *testing.T) {
	const none, every, always = cluster.PersistNone, cluster.AOFEverySec, cluster.AOFAlways
	for _, tc := range []struct {
		step, prior cluster.Persistence
		want        string
	}{
		{"", "", "with its persistence"},
		{none, "", "empty"},
		{always, "", "in aof-always (from its AOF, if it wrote one)"},
		{"", none, "empty (it runs without persistence)"},
		{none, none, "empty (it runs without persistence)"},
		{none, always, "empty (its aof-always files wiped)"},
		{always, none, "empty (it ran without persistence, so wrote no AOF), in aof-always from then on"},
		{"", every, "from its AOF (aof-everysec)"},
		{every, every, "from its AOF (aof-everysec)"},
		{always, every, "from the AOF it wrote in aof-everysec, in aof-always from then on"},
	} {
		if got := startText(&compiled{Step: Step{RestartParams: RestartParams{Persistence: tc.step}}}, target{prior: tc.prior}); got != tc.want {
			t.Errorf("step %q, prior %q: %q, want %q", tc.step, tc.prior, got, tc.want)
		}
	}
}

// TestRunGroupsFailoverPromotesSeveral: a promotion of one replica per
// group cuts each group's replication, waits for the grant, then promotes
// the replicas one after the other; a second node of one group is refused.
func TestRunGroupsFailoverPromotesSeveral(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "groups:5", 1)
	o := newFakeOracle()
	s := newSink()
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","trigger":"grant","key":"k","fault":"failover","via":"promote","nodes":["n1r","n2r","n4r"],"cut_replication":true}
	]}`)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), plan, fakeEnv(f, nil, o), s) }()
	start := s.wait(t, history.Start, "f1", 2*time.Second)
	<-o.waiting
	if got := f.Calls(); !slices.Equal(got, []string{"cut blackhole both n1r->n1,n2r->n2,n4r->n4"}) {
		t.Errorf("before the grant: %v", got)
	}
	o.grants <- 0
	s.wait(t, history.Stop, "f1", 5*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"cut blackhole both n1r->n1,n2r->n2,n4r->n4", "promote n1r", "promote n2r", "promote n4r", "heal n1r->n1,n2r->n2,n4r->n4"}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if !strings.HasPrefix(start.Fault.Desc, "cut replication n1r->n1, n2r->n2, n4r->n4 (blackhole)") {
		t.Errorf("desc %q", start.Fault.Desc)
	}
	for _, tc := range []struct{ topo, nodes, want string }{
		{"groups:5", `["n1r","n1"]`, "names group n1 twice"},
		{"replicated:2", `["r1","r2"]`, "needs the one replica to promote"},
	} {
		tp, _ := cluster.ParseTopology(tc.topo)
		p := mustPlan(t, `{"steps":[{"at":"0s","fault":"failover","via":"promote","nodes":`+tc.nodes+`}]}`)
		if err := p.Validate(Setup{Topology: tp, Clients: 2}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s promote %s: %v, want %q", tc.topo, tc.nodes, err, tc.want)
		}
	}
}
