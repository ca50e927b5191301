package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
)

func role(t testing.TB, c *Cluster, node string) string {
	t.Helper()
	r, err := direct(t, c, node).Do(testCtx(t, 5*time.Second), "ROLE").Slice()
	if err != nil || len(r) == 0 {
		t.Fatalf("ROLE of %s: %v", node, err)
	}
	return r[0].(string)
}

// failoverClient is what a workload process builds from its ClientView.
func failoverClient(t testing.TB, c *Cluster, client int) *redis.Client {
	t.Helper()
	v, err := c.ClientView(client)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v) // as if handed to another process
	var back ClientView
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	o := back.FailoverOptions(access.Login{})
	if o == nil {
		t.Fatal("no failover options with sentinels")
	}
	o.MaxRetries, o.ReadTimeout, o.PoolSize, o.DisableIdentity, o.Protocol = -1, time.Second, 1, true, 2
	fc := redis.NewFailoverClient(o)
	t.Cleanup(func() { _ = fc.Close() })
	return fc
}

func TestSentinelFailoverAfterKill(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1})
	ctx := testCtx(t, 60*time.Second)
	if p, err := c.Primary(ctx); err != nil || p != "p" {
		t.Fatalf("primary at start: %s, %v", p, err)
	}
	fc := failoverClient(t, c, 0)
	if err := fc.Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := c.Kill("p"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := c.WaitFailover(ctx, "p")
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sentinels promoted %s %v after the kill", got, took)
	// About 3 s with down-after 1000 ms. The bound is loose
	// for a loaded machine; BenchmarkFailover reports the figure.
	if got != "r1" || took > 10*time.Second {
		t.Errorf("failover to %q took %v, want r1 within 10s", got, took)
	}
	if p, _ := c.Primary(ctx); p != "r1" {
		t.Errorf("Primary after failover: %s", p)
	}

	// The failover client follows, through its own proxy c0->r1.
	eventually(t, 10*time.Second, "failover client writes to r1", func() bool { return fc.Set(ctx, "k", "2", 0).Err() == nil })
	if v := direct(t, c, "r1").Get(ctx, "k").Val(); v != "2" {
		t.Errorf("r1 holds %q", v)
	}
	if err := c.Cut(Reset, Both, ClientLink(0, "r1")); err != nil {
		t.Fatal(err)
	}
	if err := fc.Set(ctx, "k", "3", 0).Err(); err == nil {
		t.Error("failover client wrote through a cut c0->r1: its traffic bypasses its proxy")
	}
	if err := c.Heal(); err != nil {
		t.Fatal(err)
	}

	// The old primary restarts as a replica of r1, through p->r1.
	if err := c.StartNode(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if r := role(t, c, "p"); r != "slave" {
		t.Errorf("restarted p has role %s", r)
	}
	eventually(t, 10*time.Second, "p replicates from r1 via p->r1", func() bool {
		s, port := replicaOf(t, c, "p")
		return s == "up" && port == linkPort(t, c, ReplicationLink("p", "r1"))
	})
}

func TestManualPromoteSticksUnderSentinels(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:2+sentinels"), Clients: 1})
	ctx := testCtx(t, 60*time.Second)
	if err := c.Promote(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if err := direct(t, c, "r2").Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("write on the promoted r2: %v", err)
	}
	// Sentinel reverts an unannounced promotion after about 8 s; wait past it.
	time.Sleep(12 * time.Second)
	if r := role(t, c, "r2"); r != "master" {
		t.Fatalf("r2 is %s 12 s after the promotion: Sentinel undid it", r)
	}
	if p, err := c.Primary(ctx); err != nil || p != "r2" {
		t.Errorf("sentinels name %s (%v), want r2", p, err)
	}
	for _, x := range []string{"p", "r1"} {
		s, port := replicaOf(t, c, x)
		if s != "up" || port != linkPort(t, c, ReplicationLink(x, "r2")) {
			t.Errorf("%s: link %s via port %s, want up via %s", x, s, port, ReplicationLink(x, "r2"))
		}
		if v := direct(t, c, x).Get(ctx, "after").Val(); v != "1" {
			t.Errorf("%s did not replicate r2's write", x)
		}
	}
	for _, s := range c.Sentinels() {
		m, err := sentinelMaster(ctx, c.nodes[s].admin)
		if err != nil || m["num-slaves"] != "2" || m["failover-timeout"] != "120000" || m["down-after-milliseconds"] != "1000" {
			t.Errorf("%s after promote: %v, %v", s, m, err)
		}
	}
}

func TestSentinelFailoverCommand(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:2+sentinels")})
	ctx := testCtx(t, 60*time.Second)
	if err := c.SentinelFailover(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitFailover(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got != "r1" && got != "r2" {
		t.Fatalf("failover to %q", got)
	}
	if r := role(t, c, got); r != "master" {
		t.Errorf("%s is %s", got, r)
	}
	// Everyone else now replicates through its own link to the new primary.
	for _, x := range c.Nodes() {
		if x == got {
			continue
		}
		eventually(t, 10*time.Second, x+" follows "+got, func() bool {
			s, port := replicaOf(t, c, x)
			return s == "up" && port == linkPort(t, c, ReplicationLink(x, got))
		})
	}
	if err := c.Pause("s1"); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Primary(ctx); err != nil || p != got {
		t.Errorf("primary with s1 paused: %s, %v", p, err)
	}
	if err := c.Resume("s1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill("s3"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(ctx, "s3"); err != nil {
		t.Fatalf("a sentinel restarts from its rewritten config: %v", err)
	}
}

func TestSentinelOnlyControlsNeedSentinels(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1")})
	ctx := testCtx(t, 10*time.Second)
	if err := c.SentinelFailover(ctx); err == nil || !strings.Contains(err.Error(), "no sentinels") {
		t.Errorf("SentinelFailover without sentinels: %v", err)
	}
	if _, err := c.WaitFailover(ctx, "p"); err == nil || !strings.Contains(err.Error(), "no sentinels") {
		t.Errorf("WaitFailover without sentinels: %v", err)
	}
	if p, err := c.Primary(ctx); err != nil || p != "p" {
		t.Errorf("Primary without sentinels: %s, %v", p, err)
	}
}

// A client asks the Sentinels through its own proxies c<i>->s<j>, and
// reaches the Sentinels the others announce through them too: cutting
// client 1's Sentinel links leaves it unable to find the primary while
// client 0 still can.
func TestClientsReachSentinelsThroughProxies(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 2})
	ctx := testCtx(t, 30*time.Second)
	v, err := c.ClientView(1)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range c.Sentinels() {
		proxy, err := c.LinkAddr(ClientLink(1, s))
		if err != nil {
			t.Fatal(err)
		}
		direct, _ := c.Addr(s)
		if v.Sentinels[i] != proxy || v.Announced[direct] != s {
			t.Fatalf("client view: sentinel %s at %s (want its proxy %s), announced %v", s, v.Sentinels[i], proxy, v.Announced)
		}
	}
	var cut []string
	for _, s := range c.Sentinels() {
		cut = append(cut, ClientLink(1, s))
	}
	if err := c.Cut(Reset, Both, cut...); err != nil {
		t.Fatal(err)
	}
	if err := failoverClient(t, c, 1).Set(ctx, "k", "1", 0).Err(); err == nil {
		t.Fatal("client 1 found the primary with every Sentinel link cut")
	}
	if err := failoverClient(t, c, 0).Set(ctx, "k", "1", 0).Err(); err != nil {
		t.Fatalf("client 0: %v", err)
	}
}

func TestTopologyLinks(t *testing.T) {
	tp := topo(t, "replicated:1+sentinels")
	links := tp.Links(2)
	if len(links) != 2*(2+3)+2+2 {
		t.Fatalf("%d links: %v", len(links), links)
	}
	for _, ok := range []string{"c1->s3", "c0->p", "r1->p", "p->r1", "peer->r1"} {
		if err := tp.CheckLink(2, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"c2->p", "peer->s1", "s1->p", "r1->r1", "c0->s4", "c0-p"} {
		if err := tp.CheckLink(2, bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := topo(t, "independent:3").CheckLink(1, "c0->s1"); err == nil || !strings.Contains(err.Error(), "c<i>->node") {
		t.Errorf("a Sentinel link on independent masters: %v", err)
	}
}

// A blackholed link loses a close as a partition loses the FIN: a replica
// that leaves its primary through a cut replication link still counts as
// connected on the primary until the heal, which closes it.
func TestBlackholeHidesClose(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1")})
	ctx := testCtx(t, 30*time.Second)
	connected := func() string {
		info, err := direct(t, c, "p").Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		return InfoFields(info)["connected_slaves"]
	}
	if n := connected(); n != "1" {
		t.Fatalf("p has %s replicas at start", n)
	}
	if err := c.Cut(Blackhole, Both, ReplicationLink("r1", "p")); err != nil {
		t.Fatal(err)
	}
	if err := direct(t, c, "r1").Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if n := connected(); n != "1" {
		t.Fatalf("p sees %s replicas once r1 left behind a blackhole: the close crossed the partition", n)
	}
	if err := c.Heal(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the heal closes the held connection", func() bool { return connected() == "0" })
}

// TestWaitFailoverSaysWhyNot: a wait for a failover that does not come
// (the primary is up) ends with what each Sentinel flags the primary with,
// so a failover that never came in a loaded run says whether the
// Sentinels saw the primary down, agreed on it, or were mid-election.
func TestWaitFailoverSaysWhyNot(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.WaitFailover(ctx, "p")
	if err == nil {
		t.Fatal("a failover came with the primary up")
	}
	t.Log(err)
	for _, s := range c.Topology().SentinelNames() {
		if !strings.Contains(err.Error(), s+" master") {
			t.Errorf("error does not give %s's flags: %v", s, err)
		}
	}
}
