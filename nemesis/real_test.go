package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/reentrant"
)

// These tests run real redis-server (and redis-sentinel) processes through
// cluster's process provider; every cluster is closed on cleanup.

func startCluster(t *testing.T, spec cluster.Spec) *cluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		t.Fatalf("start %s: %v", spec.Topology, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

func topology(t *testing.T, s string) cluster.Topology {
	t.Helper()
	tp, err := cluster.ParseTopology(s)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func redisClient(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: timeout,
		ReadTimeout: timeout, WriteTimeout: timeout, PoolSize: 1, DisableIdentity: true, Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// direct reaches a node bypassing every proxy.
func direct(t *testing.T, c *cluster.Cluster, node string) *redis.Client {
	t.Helper()
	addr, err := c.Addr(node)
	if err != nil {
		t.Fatal(err)
	}
	return redisClient(t, addr, 2*time.Second)
}

// through reaches node as client i (history numbering) does.
func through(t *testing.T, c *cluster.Cluster, i int, node string, timeout time.Duration) *redis.Client {
	t.Helper()
	addr, err := c.ClientAddr(i, node)
	if err != nil {
		t.Fatal(err)
	}
	return redisClient(t, addr, timeout)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// runPlan runs plan in the background; the returned func waits for Run's
// result. Cleanup cancels a run a failed test left behind.
func runPlan(t *testing.T, plan Plan, env Env, s *sink) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, plan, env, s) }()
	var err error
	waited := false
	wait := func() error {
		if !waited {
			err, waited = <-done, true
		}
		return err
	}
	t.Cleanup(func() { cancel(); _ = wait() })
	return wait
}

func realEnv(c *cluster.Cluster, clock bool) Env {
	return Env{Cluster: c, Clock: history.NewClock(), NodeClock: clock}
}

func TestRealPartitionAndPauseOnTime(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:3"), Clients: 1})
	ctx := context.Background()
	n1, n2, n3 := through(t, c, 0, "n1", time.Second), through(t, c, 0, "n2", time.Second), through(t, c, 0, "n3", 300*time.Millisecond)
	for _, cl := range []*redis.Client{n1, n2, n3} {
		if err := cl.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	plan := mustPlan(t, `{"steps":[
		{"at":"200ms","fault":"partition","nodes":["n2"],"mode":"reset","for":"1s"},
		{"at":"400ms","fault":"pause","nodes":["n3"],"for":"1s"}
	]}`)
	s := newSink()
	wait := runPlan(t, plan, realEnv(c, false), s)

	start := s.wait(t, history.Start, "f1", 5*time.Second)
	if err := n2.Ping(ctx).Err(); err == nil || isTimeout(err) {
		t.Errorf("ping through the reset cut: %v, want a connection error", err)
	}
	if err := n1.Ping(ctx).Err(); err != nil {
		t.Errorf("n1 is not cut: %v", err)
	}
	if start.Fault.Desc != "cut n2 from every client for 1s (reset)" || strings.Join(start.Fault.Targets, ",") != "n2" {
		t.Errorf("start record %v", start)
	}
	pause := s.wait(t, history.Start, "f2", 5*time.Second)
	if err := n3.Ping(ctx).Err(); !isTimeout(err) {
		t.Errorf("ping of the paused n3: %v, want a timeout", err)
	}
	stop := s.wait(t, history.Stop, "f1", 5*time.Second)
	if err := n2.Ping(ctx).Err(); err != nil {
		t.Errorf("ping after the heal: %v", err)
	}
	resume := s.wait(t, history.Stop, "f2", 5*time.Second)
	if err := n3.Ping(ctx).Err(); err != nil {
		if err := n3.Ping(ctx).Err(); err != nil { // the timed-out connection was dropped
			t.Errorf("n3 does not answer after the resume: %v", err)
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		op   history.Op
		want time.Duration
	}{{start, 200 * time.Millisecond}, {pause, 400 * time.Millisecond}, {stop, 1200 * time.Millisecond}, {resume, 1400 * time.Millisecond}} {
		late := time.Duration(x.op.Time) - x.want
		t.Logf("%s %s: %v after its time", x.op.F, x.op.Fault.ID, late)
		if late < 0 || late > 200*time.Millisecond {
			t.Errorf("%s %s at %v, scheduled %v", x.op.F, x.op.Fault.ID, time.Duration(x.op.Time), x.want)
		}
	}
}

func TestRealBlackholeDirections(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:1"), Clients: 1})
	ctx := context.Background()
	cl := through(t, c, 0, "n1", 300*time.Millisecond)
	n1 := direct(t, c, "n1")
	plan := mustPlan(t, `{"steps":[
		{"at":"100ms","fault":"partition","clients":[0],"direction":"upstream","for":"800ms"},
		{"at":"1.2s","fault":"partition","clients":[0],"direction":"downstream","for":"800ms"}
	]}`)
	s := newSink()
	wait := runPlan(t, plan, realEnv(c, false), s)
	for _, tc := range []struct {
		id, key string
		applied bool
	}{{"f1", "up", false}, {"f2", "down", true}} {
		// The connection must exist before the cut: a new one starts with
		// HELLO, whose reply a downstream cut would lose.
		if err := cl.Ping(ctx).Err(); err != nil {
			if err := cl.Ping(ctx).Err(); err != nil { // the heal closed the last one
				t.Fatal(err)
			}
		}
		s.wait(t, history.Start, tc.id, 5*time.Second)
		if err := cl.Set(ctx, tc.key, "v", 0).Err(); !isTimeout(err) {
			t.Errorf("%s: SET through the blackhole: %v, want a timeout", tc.id, err)
		}
		s.wait(t, history.Stop, tc.id, 5*time.Second)
		if got := n1.Exists(ctx, tc.key).Val() == 1; got != tc.applied {
			t.Errorf("%s blackhole: the SET ran on the server = %v, want %v", tc.key+"stream", got, tc.applied)
		}
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

func TestRealKillAndRestartPersistence(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:3"), Persistence: cluster.AOFAlways})
	ctx := context.Background()
	for _, n := range c.Nodes() {
		if err := direct(t, c, n).Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	plan := mustPlan(t, `{"steps":[
		{"at":"100ms","fault":"restart","nodes":["n1"],"persistence":"none"},
		{"at":"100ms","fault":"restart","nodes":["n2"],"persistence":"aof-always","delay":"200ms"},
		{"at":"100ms","fault":"kill","nodes":["n3"],"for":"500ms"}
	]}`)
	s := newSink()
	wait := runPlan(t, plan, realEnv(c, false), s)
	s.wait(t, history.Start, "f3", 5*time.Second)
	if c.Up("n3") {
		t.Error("n3 is up while killed")
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]bool{"n1": false, "n2": true, "n3": true} {
		if !c.Up(node) {
			t.Errorf("%s is down after the plan", node)
			continue
		}
		if got := direct(t, c, node).Exists(ctx, "k").Val() == 1; got != want {
			t.Errorf("%s kept its key: %v, want %v", node, got, want)
		}
	}
	var restart2 []history.Op
	for _, op := range s.Ops() {
		if op.Fault.ID == "f2" {
			restart2 = append(restart2, op)
		}
	}
	if len(restart2) != 2 || restart2[1].Time-restart2[0].Time < int64(200*time.Millisecond) {
		t.Errorf("the delayed restart's window must cover its delay: %v", restart2)
	}
}

func TestRealClockJumpExpiresOneNode(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:2"), Clock: true})
	ctx := context.Background()
	n1, n2 := direct(t, c, "n1"), direct(t, c, "n2")
	for _, n := range []*redis.Client{n1, n2} {
		if err := n.Set(ctx, "lock", "a", 5*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	plan := mustPlan(t, `{"ttl":"5s","steps":[{"at":"100ms","fault":"clock","nodes":["n1"],"offset":"2ttl","for":"1s"}]}`)
	s := newSink()
	wait := runPlan(t, plan, realEnv(c, true), s)
	start := s.wait(t, history.Start, "f1", 5*time.Second)
	if start.Fault.Desc != "jump n1's clock by +10s for 1s" {
		t.Errorf("desc %q", start.Fault.Desc)
	}
	if n1.Exists(ctx, "lock").Val() != 0 {
		t.Error("n1's lock survived a 10 s jump with 5 s to live")
	}
	if n2.Exists(ctx, "lock").Val() != 1 {
		t.Error("n2's lock expired: the jump was not n1's alone")
	}
	s.wait(t, history.Stop, "f1", 5*time.Second)
	if err := n1.Set(ctx, "lock2", "a", 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl := n1.PTTL(ctx, "lock2").Val(); ttl < 4*time.Second || ttl > 5*time.Second {
		t.Errorf("after the heal n1 counts %v left of 5 s: its clock is not back", ttl)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// TestRealDriftRunsANodeFast: a drift at 2× makes n1's TIME gain a second
// every second and expire a PX 1000 key in half a second of the host's,
// while n2 keeps the host's pace; the heal steps n1 back to the host.
func TestRealDriftRunsANodeFast(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:2"), Clock: true})
	ctx := context.Background()
	n1, n2 := direct(t, c, "n1"), direct(t, c, "n2")
	plan := mustPlan(t, `{"ttl":"1s","steps":[{"at":"100ms","fault":"drift","nodes":["n1"],"rate":2,"for":"2ttl"}]}`)
	s := newSink()
	wait := runPlan(t, plan, realEnv(c, true), s)
	start := s.wait(t, history.Start, "f1", 5*time.Second)
	if start.Fault.Desc != "run n1's clock at 2× the host's pace (+2s by the heal, then stepped back) for 2s" {
		t.Errorf("desc %q", start.Fault.Desc)
	}
	skew := func(cl *redis.Client) time.Duration {
		before := time.Now()
		tm, err := cl.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return tm.Sub(before.Add(time.Since(before) / 2))
	}
	for _, n := range []*redis.Client{n1, n2} {
		if err := n.Set(ctx, "lock", "a", time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	a1, a2 := skew(n1), skew(n2)
	time.Sleep(600 * time.Millisecond)
	g1, g2 := skew(n1)-a1, skew(n2)-a2
	if g1 < 500*time.Millisecond || g1 > 700*time.Millisecond {
		t.Errorf("n1 at 2× gained %v in 600 ms", g1)
	}
	if g2 < -50*time.Millisecond || g2 > 50*time.Millisecond {
		t.Errorf("n2 gained %v in 600 ms without a drift", g2)
	}
	if n1.Exists(ctx, "lock").Val() != 0 {
		t.Error("n1's PX 1000 key outlived 600 ms of the host's at 2×")
	}
	if n2.Exists(ctx, "lock").Val() != 1 {
		t.Error("n2's PX 1000 key is gone after 600 ms at the host's pace")
	}
	s.wait(t, history.Stop, "f1", 5*time.Second)
	if d := skew(n1); d < -50*time.Millisecond || d > 50*time.Millisecond {
		t.Errorf("after the heal n1 is %v off the host", d)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

func TestRealFailoverLosesTheCutWrite(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "replicated:1+sentinels"), Clients: 1})
	ctx := context.Background()
	p, r1 := direct(t, c, "p"), direct(t, c, "r1")
	if err := p.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); r1.Get(ctx, "before").Val() != "1"; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("r1 does not replicate p")
		}
	}
	o := newFakeOracle()
	env := realEnv(c, false)
	env.Oracle = o
	plan := mustPlan(t, `{"steps":[{"at":"0s","trigger":"grant","key":"lock","fault":"failover","via":"kill","cut_replication":true}]}`)
	s := newSink()
	wait := runPlan(t, plan, env, s)
	s.wait(t, history.Start, "f1", 5*time.Second)
	<-o.waiting
	// The grant: written on the primary while replication is cut.
	if err := p.Set(ctx, "lock", "A", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // what replication would need, were it up
	granted := env.Clock.Now()
	o.grants <- 0
	stop := s.wait(t, history.Stop, "f1", 40*time.Second)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Duration(stop.Time - granted)
	t.Logf("failover: %s; stop recorded %v after the grant (kill, election, old primary restarted)", stop.Value, took)
	// A failover takes about 3 s here; the bound leaves room for a loaded machine.
	if took > 10*time.Second || !strings.HasPrefix(stop.Value, "r1 took over from p") {
		t.Errorf("failover record %v after %v", stop, took)
	}
	if prim, err := c.Primary(ctx); err != nil || prim != "r1" {
		t.Fatalf("primary after the failover: %s, %v", prim, err)
	}
	if r1.Get(ctx, "before").Val() != "1" {
		t.Error("r1 lost the write replicated before the cut")
	}
	if err := r1.Get(ctx, "lock").Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("the new primary has the lock written while replication was cut: %v", err)
	}
	if !c.Up("p") {
		t.Error("the old primary was not started again at the heal")
	}
}

// TestRealLeaseSelector: "node": "lease" finds, right after the grant, the
// nodes whose key holds the granted value — reading each node directly, so
// a partition does not hide one — and restarts one of them, not a node
// holding another value; the record names the node it chose.
func TestRealLeaseSelector(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:5"), Clients: 1})
	ctx := context.Background()
	// Client 0's lease ("v0", as the fake oracle grants it) rests on n2
	// and n4; n3 holds another client's value, n1 and n5 nothing.
	for node, v := range map[string]string{"n2": "v0", "n4": "v0", "n3": "v1"} {
		if err := direct(t, c, node).Set(ctx, "lock", v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	o := newFakeOracle()
	env := realEnv(c, false)
	env.Oracle = o
	plan := mustPlan(t, `{"seed":3,"steps":[
		{"at":"0s","fault":"partition","nodes":["n2","n4"],"for":"2s"},
		{"at":"0s","trigger":"grant","key":"lock","fault":"restart","node":"lease","persistence":"none"}
	]}`)
	s := newSink()
	wait := runPlan(t, plan, env, s)
	<-o.waiting
	o.grants <- 0
	start := s.wait(t, history.Start, "f2", 5*time.Second)
	s.wait(t, history.Stop, "f2", 10*time.Second)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if len(start.Fault.Targets) != 1 {
		t.Fatalf("targets %v", start.Fault.Targets)
	}
	chosen := start.Fault.Targets[0]
	if chosen != "n2" && chosen != "n4" {
		t.Fatalf("the lease of client 0 rests on n2 and n4; the step restarted %s", chosen)
	}
	want := fmt.Sprintf(`restart %s (one of n2, n4 holding client 0's lease on "lock") empty (it runs without persistence)`, chosen)
	if start.Fault.Desc != want {
		t.Errorf("desc %q, want %q", start.Fault.Desc, want)
	}
	for _, node := range c.Nodes() {
		got := direct(t, c, node).Get(ctx, "lock").Val()
		want := map[string]string{"n2": "v0", "n4": "v0", "n3": "v1"}[node]
		if node == chosen {
			want = ""
		}
		if got != want {
			t.Errorf("%s holds %q after the restart, want %q", node, got, want)
		}
	}
	// The choice is the plan's: the same seed and step pick the same node
	// of the same lease.
	steps, err := plan.compile(env.Setup())
	if err != nil {
		t.Fatal(err)
	}
	if lease := []string{"n2", "n4"}; lease[steps[1].pick%2] != chosen {
		t.Errorf("step 2 picks %s, the run chose %s", lease[steps[1].pick%2], chosen)
	}
}

// discard is a sink for benchmarks.
type discard struct{}

func (discard) Record(op history.Op) (history.Op, error) { return op, nil }

// BenchmarkPartition times cutting two of five nodes from five clients (10
// links, each with a live connection) and healing it through the nemesis,
// against the same calls made on the cluster directly (target < 10 ms).
func BenchmarkPartition(b *testing.B) {
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Spec{Topology: cluster.Topology{Kind: cluster.Independent, N: 5}, Clients: 5})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var clients []*redis.Client
	for i := 0; i < 5; i++ {
		for _, x := range c.Nodes() {
			addr, _ := c.ClientAddr(i, x)
			cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, DisableIdentity: true, Protocol: 2})
			defer cl.Close()
			clients = append(clients, cl)
		}
	}
	touch := func() {
		for _, cl := range clients {
			_ = cl.Ping(ctx).Err()
		}
	}
	plan := Plan{Steps: []Step{{Fault: Partition, Nodes: []string{"n1", "n2"}, For: Fixed(time.Second)}}}
	env := Env{Cluster: c, Clock: history.NewClock()}
	steps, err := plan.compile(env.Setup())
	if err != nil {
		b.Fatal(err)
	}
	var links []string
	for _, n := range []string{"n1", "n2"} {
		for i := 0; i < 5; i++ {
			links = append(links, cluster.ClientLink(i, n))
		}
	}
	for _, via := range []string{"cluster", "nemesis"} {
		b.Run(via, func(b *testing.B) {
			r := newRunner(env, env.Setup(), discard{}, steps)
			r.ctx, r.cancel = context.WithCancel(ctx)
			defer r.cancel()
			var apply, heal time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				touch()
				*r.steps[0] = stepRun{c: steps[0]}
				r.queue = r.queue[:0]
				b.StartTimer()
				t0 := time.Now()
				if via == "cluster" {
					err = c.Cut(cluster.Blackhole, cluster.Both, links...)
				} else {
					r.start(0, hit{})
				}
				t1 := time.Now()
				if via == "cluster" {
					err = errors.Join(err, c.Heal(links...))
				} else {
					r.heal(0)
				}
				heal += time.Since(t1)
				apply += t1.Sub(t0)
				if err != nil || len(r.errs) > 0 {
					b.Fatal(err, r.errs)
				}
			}
			b.ReportMetric(float64(apply.Microseconds())/1000/float64(b.N), "apply-ms")
			b.ReportMetric(float64(heal.Microseconds())/1000/float64(b.N), "heal-ms")
		})
	}
}

// Memory pressure under volatile-ttl evicts a held lock key at once;
// readonly refuses writes until the heal; a reply loss makes a client
// that retries (go-redis's MaxRetries) report "not set" for a SET NX that
// took effect.
func TestRealSettingsFaults(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:2"), Clients: 1})
	ctx := context.Background()
	n1, n2 := through(t, c, 0, "n1", time.Second), through(t, c, 0, "n2", time.Second)
	if err := n1.Set(ctx, "tumbler:0", "holder", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	retrying := redis.NewClient(&redis.Options{Addr: n1.Options().Addr, MaxRetries: 3, ReadTimeout: 300 * time.Millisecond,
		PoolSize: 1, DisableIdentity: true, Protocol: 2})
	t.Cleanup(func() { _ = retrying.Close() })
	plan := mustPlan(t, `{"ttl":"1s","steps":[
		{"at":"0s","fault":"memory","nodes":["n1"],"policy":"volatile-ttl","for":"1s"},
		{"at":"0s","fault":"refuse-writes","nodes":["n2"],"refusal":"readonly","for":"600ms"},
		{"at":"1.2s","fault":"reply-loss","nodes":["n1"],"for":"500ms"}
	]}`)
	s := newSink()
	wait := runPlan(t, plan, realEnv(c, false), s)
	s.wait(t, history.Start, "f1", 5*time.Second)
	if n, err := n1.Exists(ctx, "tumbler:0").Result(); err != nil || n != 0 {
		t.Errorf("the held lock key under volatile-ttl pressure: exists %d (%v), want evicted", n, err)
	}
	s.wait(t, history.Start, "f2", 5*time.Second)
	if err := n2.Set(ctx, "tumbler:1", "x", time.Minute).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("SET on the demoted n2: %v, want READONLY", err)
	}
	s.wait(t, history.Stop, "f2", 5*time.Second)
	if err := n2.Set(ctx, "tumbler:1", "x", time.Minute).Err(); err != nil {
		t.Errorf("SET on n2 after the heal: %v", err)
	}
	s.wait(t, history.Stop, "f1", 5*time.Second)
	if m := direct(t, c, "n1").ConfigGet(ctx, "maxmemory").Val(); m["maxmemory"] != "0" {
		t.Errorf("maxmemory after the heal: %v", m)
	}
	if err := retrying.Ping(ctx).Err(); err != nil { // a connection before the loss
		t.Fatal(err)
	}
	s.wait(t, history.Start, "f3", 5*time.Second)
	set, err := retrying.SetNX(ctx, "ghost", "mine", 30*time.Second).Result()
	if err != nil || set {
		t.Errorf("retried SET NX across the reply loss: set %v, err %v; want \"not set\" (the retry finds the first attempt's key)", set, err)
	}
	if v := direct(t, c, "n1").Get(ctx, "ghost").Val(); v != "mine" {
		t.Errorf("the key after a SET NX reported not set: %q, want the client's own value", v)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// A reentrant acquire (Redisson's script) sent again after its reply was
// lost runs twice: the client is granted one hold and the hash counts two,
// so its one release leaves the lock held (Redisson #7367).
func TestRealRetriedReentrantAcquireCountsTwice(t *testing.T) {
	t.Parallel()
	c := startCluster(t, cluster.Spec{Topology: topology(t, "independent:1"), Clients: 1})
	ctx := context.Background()
	addr, err := c.ClientAddr(0, "n1")
	if err != nil {
		t.Fatal(err)
	}
	retrying := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 3, ReadTimeout: 300 * time.Millisecond,
		PoolSize: 1, DisableIdentity: true, Protocol: 2})
	t.Cleanup(func() { _ = retrying.Close() })
	l, err := reentrant.New(retrying, "tumbler:0", 30*time.Second, lock.WithValue(func() string { return "owner" }))
	if err != nil {
		t.Fatal(err)
	}
	// Load the scripts first: an EVALSHA answered NOSCRIPT runs nothing.
	warm, err := reentrant.New(retrying, "tumbler:warm", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if wl, err := warm.Acquire(ctx); err != nil || warm.Release(ctx, wl) != nil {
		t.Fatalf("warm-up acquire: %v", err)
	}
	s := newSink()
	wait := runPlan(t, mustPlan(t, `{"steps":[{"at":"100ms","fault":"reply-loss","nodes":["n1"],"for":"500ms"}]}`), realEnv(c, false), s)
	s.wait(t, history.Start, "f1", 5*time.Second)
	lease, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire across the reply loss: %v", err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	n1 := direct(t, c, "n1")
	count, err := n1.HGet(ctx, "tumbler:0", "owner").Int()
	if err != nil || count < 2 {
		t.Fatalf("hold count after one acquire resent across the loss: %d (%v), want at least 2", count, err)
	}
	if err := l.Release(ctx, lease); err != nil {
		t.Fatalf("the one release: %v", err)
	}
	if n, _ := n1.Exists(ctx, "tumbler:0").Result(); n != 1 {
		t.Fatalf("after the client's one release the lock is gone; want it still held (count %d)", count)
	}
}
