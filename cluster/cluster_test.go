package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
)

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startCluster starts a cluster closed on cleanup, and checks on cleanup
// that Close left none of its processes running.
func startCluster(t testing.TB, spec Spec) *Cluster {
	t.Helper()
	c, err := Start(testCtx(t, 60*time.Second), spec)
	if err != nil {
		t.Fatalf("start %s: %v", spec.Topology, err)
	}
	t.Cleanup(func() {
		pids := pidsOf(c)
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		for name, pid := range pids {
			if processExists(pid) {
				t.Errorf("%s (pid %d) still running after Close", name, pid)
			}
		}
	})
	return c
}

func pidsOf(c *Cluster) map[string]int {
	out := map[string]int{}
	for _, p := range c.Info().Procs {
		if p.Pid != 0 {
			out[p.Name] = p.Pid
		}
	}
	return out
}

// processExists is false for a pid that is gone or a zombie.
func processExists(pid int) bool {
	_, err := procStart(pid)
	return err == nil
}

func topo(t testing.TB, s string) Topology {
	t.Helper()
	tp, err := ParseTopology(s)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// dial is a client like the workloads': no retries, explicit timeouts.
func dial(t testing.TB, addr string, readTimeout time.Duration) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: readTimeout, WriteTimeout: readTimeout, PoolSize: 1, DisableIdentity: true, Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func direct(t testing.TB, c *Cluster, node string) *redis.Client {
	addr, err := c.Addr(node)
	if err != nil {
		t.Fatal(err)
	}
	return dial(t, addr, 2*time.Second)
}

func through(t testing.TB, c *Cluster, client int, node string, readTimeout time.Duration) *redis.Client {
	addr, err := c.ClientAddr(client, node)
	if err != nil {
		t.Fatal(err)
	}
	return dial(t, addr, readTimeout)
}

func eventually(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParseTopology(t *testing.T) {
	good := map[string]Topology{
		"independent:5":            {Kind: Independent, N: 5},
		"independent:1":            {Kind: Independent, N: 1},
		"replicated:2":             {Kind: Replicated, N: 2},
		"replicated:1+sentinels":   {Kind: Replicated, N: 1, Sentinels: true},
		"replicated:1 + sentinels": {Kind: Replicated, N: 1, Sentinels: true},
		" Replicated : 3 ":         {Kind: Replicated, N: 3},
		"groups:5":                 {Kind: Groups, N: 5},
	}
	for in, want := range good {
		got, err := ParseTopology(in)
		if err != nil || got != want {
			t.Errorf("ParseTopology(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		again, err := ParseTopology(got.String())
		if err != nil || again != got {
			t.Errorf("round trip of %q through %q: %+v, %v", in, got.String(), again, err)
		}
	}
	bad := map[string]string{
		"":                        "want independent:N",
		"independent":             "want independent:N",
		"independent:0":           "1 to 15 masters",
		"independent:16":          "1 to 15 masters",
		"independent:x":           `"x" is not a number`,
		"independent:3+sentinels": `sentinels watch a replicated topology`,
		"replicated:0":            "1 to 8 replicas",
		"replicated:2+watchers":   `unknown addition "watchers"`,
		"mesh:3":                  `unknown kind "mesh"`,
		"groups:8":                "1 to 7 groups",
		"groups:3+sentinels":      "groups run without Sentinels",
	}
	for in, want := range bad {
		_, err := ParseTopology(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTopology(%q) error %v, want one containing %q", in, err, want)
		}
	}
	if err := (Topology{Kind: Independent, N: 2, Sentinels: true}).Validate(); err == nil {
		t.Error("independent with sentinels validated")
	}
	var tp Topology
	if err := json.Unmarshal([]byte(`"replicated:2+sentinels"`), &tp); err != nil || tp.String() != "replicated:2+sentinels" {
		t.Errorf("JSON topology: %+v, %v", tp, err)
	}
	if got := (Topology{Kind: Replicated, N: 2, Sentinels: true}); strings.Join(got.Nodes(), ",") != "p,r1,r2" || strings.Join(got.SentinelNames(), ",") != "s1,s2,s3" {
		t.Errorf("names: %v %v", got.Nodes(), got.SentinelNames())
	}
	if _, err := ParsePersistence("aof-sometimes"); err == nil || !strings.Contains(err.Error(), "aof-always") {
		t.Errorf("bad persistence error: %v", err)
	}
}

func TestBadSpecs(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{}, "no topology"},
		{Spec{Topology: Topology{Kind: Independent, N: 1}, Clients: -1}, "clients must be"},
		{Spec{Topology: Topology{Kind: Independent, N: 1}, Persistence: "rdb"}, "unknown persistence"},
	} {
		if _, err := Start(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) error %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func TestMissingToolsNameDebianPackages(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ctx := testCtx(t, 10*time.Second)
	_, err := Start(ctx, Spec{Topology: Topology{Kind: Independent, N: 1}})
	if err == nil || !strings.Contains(err.Error(), "Debian package redis-server") {
		t.Errorf("without redis-server: %v", err)
	}
	if _, err := lookBinary("redis-sentinel"); err == nil || !strings.Contains(err.Error(), "Debian package redis-sentinel") {
		t.Errorf("without redis-sentinel: %v", err)
	}
	if _, err := clockshim.Compile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "Debian package gcc") {
		t.Errorf("without cc: %v", err)
	}
}

func TestIndependentClientsReachTheirNodes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	c := startCluster(t, Spec{Topology: topo(t, "independent:3"), Clients: 2, Dir: dir, APIAddr: "127.0.0.1:0"})
	ctx := testCtx(t, 30*time.Second)

	for client := 0; client < 2; client++ {
		for _, x := range c.Nodes() {
			key := fmt.Sprintf("from-c%d", client)
			if err := through(t, c, client, x, 2*time.Second).Set(ctx, key, x, 0).Err(); err != nil {
				t.Fatalf("c%d->%s: %v", client, x, err)
			}
		}
	}
	for _, x := range c.Nodes() {
		for client := 0; client < 2; client++ {
			if got := direct(t, c, x).Get(ctx, fmt.Sprintf("from-c%d", client)).Val(); got != x {
				t.Errorf("node %s holds %q for c%d's key, want its own name: the proxy went elsewhere", x, got, client)
			}
		}
	}

	if got, want := len(c.Links()), 6; got != want {
		t.Errorf("%d links, want %d (2 clients × 3 nodes)", got, want)
	}
	if got := strings.Join(c.LinksTo("n2"), " "); got != "c0->n2 c1->n2" {
		t.Errorf("LinksTo(n2) = %s", got)
	}
	if got := strings.Join(c.ClientLinks(1), " "); got != "c1->n1 c1->n2 c1->n3" {
		t.Errorf("ClientLinks(1) = %s", got)
	}
	if _, err := c.ClientAddr(2, "n1"); err == nil {
		t.Error("client 3 of 2 got an address")
	}
	if err := c.Cut(Reset, Both, "c0->n9"); err == nil || !strings.Contains(err.Error(), `"n9" is not a data node`) {
		t.Errorf("cut of an unknown link: %v", err)
	}
	if err := c.Cut("drop", Both, "c0->n1"); err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Errorf("cut with an unknown mode: %v", err)
	}
	if err := c.Delay(time.Second, 0, "sideways", "c0->n1"); err == nil || !strings.Contains(err.Error(), "unknown direction") {
		t.Errorf("delay with an unknown direction: %v", err)
	}
	if err := c.Kill("n7"); err == nil || !strings.Contains(err.Error(), "data nodes n1, n2, n3") {
		t.Errorf("kill of an unknown node: %v", err)
	}
	if err := c.Promote(ctx, "n1"); err == nil {
		t.Error("promote in an independent topology succeeded")
	}
	if err := c.SetClock("n1", time.Second); err == nil || !strings.Contains(err.Error(), "Spec.Clock") {
		t.Errorf("set clock without the shim: %v", err)
	}

	// toxiproxy's API shows the same proxies.
	resp, err := http.Get("http://" + c.APIAddr() + "/proxies")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var listed map[string]struct{ Listen, Upstream string }
	if err := json.Unmarshal(body, &listed); err != nil {
		t.Fatalf("API /proxies: %v: %s", err, body)
	}
	n1, _ := c.Addr("n1")
	if p, ok := listed["c1->n1"]; !ok || p.Upstream != n1 {
		t.Errorf("API lists c1->n1 as %+v, want upstream %s", p, n1)
	}

	logs := c.LogFiles()
	for _, x := range c.Nodes() {
		if b, err := os.ReadFile(logs[x]); err != nil || !strings.Contains(string(b), "Ready to accept connections") {
			t.Errorf("log of %s at %s: %v", x, logs[x], err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(logs["n1"]); err != nil {
		t.Errorf("Spec.Dir given, yet the log is gone after Close: %v", err)
	}
	if err := c.Cut(Reset, Both, "c0->n1"); err == nil {
		t.Error("cut after Close succeeded")
	}
}

func TestTempDirRemovedOnClose(t *testing.T) {
	t.Parallel()
	c, err := Start(testCtx(t, 30*time.Second), Spec{Topology: topo(t, "independent:1")})
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Dir()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary cluster dir %s still there: %v", dir, err)
	}
}

// The CLI's default store is relative; servers run in their own directory,
// so a relative Spec.Dir once put a path into redis.conf that they could not
// find.
func TestRelativeDirWithPersistence(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := Start(testCtx(t, 30*time.Second), Spec{Topology: topo(t, "independent:1"), Dir: filepath.Join("store", "run"), Persistence: AOFEverySec})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !filepath.IsAbs(c.Dir()) {
		t.Errorf("Dir() = %q, want an absolute path", c.Dir())
	}
	if err := c.Restart(testCtx(t, 30*time.Second), "n1", RestartOptions{}); err != nil {
		t.Fatalf("restart with a relative store: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestCutResetFailsFastAndHeals(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 2})
	ctx := testCtx(t, 30*time.Second)
	c1 := through(t, c, 0, "n1", 3*time.Second)
	c2 := through(t, c, 1, "n1", 3*time.Second)
	if err := c1.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Cut(Reset, Both, "c0->n1"); err != nil {
		t.Fatal(err)
	}
	// The open connection and a new one both fail, and not by timing out.
	for i := 0; i < 2; i++ {
		err := c1.Ping(ctx).Err()
		if err == nil || isTimeout(err) {
			t.Fatalf("ping %d through a reset link: %v, want a connection error", i, err)
		}
	}
	if err := c2.Ping(ctx).Err(); err != nil {
		t.Errorf("c1->n1 is not cut, yet: %v", err)
	}
	if err := c.Heal("c0->n1"); err != nil {
		t.Fatal(err)
	}
	if err := c1.Ping(ctx).Err(); err != nil {
		t.Errorf("ping after heal: %v", err)
	}
}

func TestBlackholeDirections(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", 500*time.Millisecond)
	n1 := direct(t, c, "n1")

	for _, tc := range []struct {
		dir     Direction
		applied bool // whether the command reaches the server
	}{{Upstream, false}, {Downstream, true}, {Both, false}} {
		key := "k-" + string(tc.dir)
		if err := cl.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Cut(Blackhole, tc.dir, "c0->n1"); err != nil {
			t.Fatal(err)
		}
		err := cl.Set(ctx, key, "v", 0).Err()
		if !isTimeout(err) {
			t.Errorf("%s blackhole: SET returned %v, want a timeout", tc.dir, err)
		}
		time.Sleep(100 * time.Millisecond)
		if got := n1.Exists(ctx, key).Val() == 1; got != tc.applied {
			t.Errorf("%s blackhole: key set on the server = %v, want %v", tc.dir, got, tc.applied)
		}
		if err := c.Heal(); err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(ctx).Err(); err != nil {
			// Healing a blackhole closes the connections it held; the
			// pool's next dial is fresh.
			if err := cl.Ping(ctx).Err(); err != nil {
				t.Errorf("%s: ping after heal: %v", tc.dir, err)
			}
		}
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", 5*time.Second)
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Delay(300*time.Millisecond, 50*time.Millisecond, Upstream, "c0->n1"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("ping with 300±50ms upstream latency took %v", took)
	}
	if err := c.Delay(time.Second, 2*time.Second, Both, "c0->n1"); err == nil {
		t.Error("jitter above latency accepted")
	}
	if err := c.Heal("c0->n1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

func replicaOf(t testing.TB, c *Cluster, node string) (status, port string) {
	t.Helper()
	info, err := direct(t, c, node).Info(testCtx(t, 5*time.Second), "replication").Result()
	if err != nil {
		t.Fatalf("INFO of %s: %v", node, err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "master_link_status:"); ok {
			status = v
		}
		if v, ok := strings.CutPrefix(line, "master_port:"); ok {
			port = v
		}
	}
	return status, port
}

func linkPort(t testing.TB, c *Cluster, link string) string {
	t.Helper()
	addr, err := c.LinkAddr(link)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	return port
}

func TestReplicationThroughItsOwnLink(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:2"), Clients: 1})
	ctx := testCtx(t, 60*time.Second)
	p := direct(t, c, "p")
	for _, r := range []string{"r1", "r2"} {
		status, port := replicaOf(t, c, r)
		if status != "up" || port != linkPort(t, c, ReplicationLink(r, "p")) {
			t.Errorf("%s: link %s via port %s, want up via %s's proxy", r, status, port, ReplicationLink(r, "p"))
		}
	}
	if got := len(c.Links()); got != 3+6+3 {
		t.Errorf("%d links, want 12 (3 client, 6 replication, 3 peer)", got)
	}
	if err := p.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"r1", "r2"} {
		eventually(t, 5*time.Second, r+" gets the key", func() bool { return direct(t, c, r).Get(ctx, "before").Val() == "1" })
	}

	if err := c.Cut(Reset, Both, "r1->p"); err != nil {
		t.Fatal(err)
	}
	// Within about a second r1's REPLCONF ACK hits the reset.
	eventually(t, 10*time.Second, "r1 sees its link down", func() bool { s, _ := replicaOf(t, c, "r1"); return s == "down" })
	if err := p.Set(ctx, "during", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "r2 gets the write", func() bool { return direct(t, c, "r2").Get(ctx, "during").Val() == "1" })
	time.Sleep(time.Second)
	if direct(t, c, "r1").Exists(ctx, "during").Val() != 0 {
		t.Fatal("r1 got a write while its replication link was cut")
	}
	if err := c.Heal("r1->p"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "r1 catches up after heal", func() bool { return direct(t, c, "r1").Get(ctx, "during").Val() == "1" })

	// Restarting a replica brings it back as a replica through its link.
	if err := c.Restart(ctx, "r2", RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "restarted r2 resyncs", func() bool { return direct(t, c, "r2").Get(ctx, "during").Val() == "1" })
	if _, port := replicaOf(t, c, "r2"); port != linkPort(t, c, "r2->p") {
		t.Errorf("restarted r2 replicates via port %s, want r2->p's", port)
	}

	// Promote by hand without sentinels: the others follow through their links.
	if err := c.Promote(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Primary(ctx); got != "r1" {
		t.Errorf("primary after promote: %s", got)
	}
	for _, x := range []string{"p", "r2"} {
		eventually(t, 10*time.Second, x+" follows r1", func() bool {
			s, port := replicaOf(t, c, x)
			return s == "up" && port == linkPort(t, c, ReplicationLink(x, "r1"))
		})
	}
}

func TestRestartEmptyLosesKeys(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", 2*time.Second)
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pid := pidsOf(c)["n1"]
	if err := c.Restart(ctx, "n1", RestartOptions{Delay: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if processExists(pid) {
		t.Errorf("old n1 (pid %d) still there after restart", pid)
	}
	// The pooled connection died with the old process; the next is new.
	_ = cl.Ping(ctx).Err()
	if n, err := cl.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Errorf("after an empty restart EXISTS k = %d, %v; want 0", n, err)
	}
	if c.Info().Procs[0].Persistence != PersistNone {
		t.Errorf("persistence %q", c.Info().Procs[0].Persistence)
	}
	if err := c.Kill("n1"); err != nil {
		t.Fatal(err)
	}
	if c.Up("n1") {
		t.Error("n1 up after Kill")
	}
	if err := c.Kill("n1"); err != nil {
		t.Errorf("killing a dead node: %v", err)
	}
	if err := c.Pause("n1"); err == nil {
		t.Error("pausing a dead node succeeded")
	}
	if err := c.StartNode(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(ctx, "n1"); err == nil {
		t.Error("starting a running node succeeded")
	}
	if err := direct(t, c, "n1").Ping(ctx).Err(); err != nil {
		t.Error(err)
	}
}

func TestRestartWithAOFKeepsKeys(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:2"), Persistence: AOFAlways})
	ctx := testCtx(t, 30*time.Second)
	for _, x := range c.Nodes() {
		cl := direct(t, c, x)
		for i := 0; i < 100; i++ {
			if err := cl.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// n1 restarts from its AOF (always); n2 is switched to everysec. A
	// SIGKILL loses nothing in either: Redis writes the AOF before it
	// replies, and the page cache outlives the process.
	if err := c.Restart(ctx, "n1", RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, "n2", RestartOptions{Persistence: AOFEverySec}); err != nil {
		t.Fatal(err)
	}
	for _, x := range c.Nodes() {
		if n := direct(t, c, x).DBSize(ctx).Val(); n != 100 {
			t.Errorf("%s has %d keys after an AOF restart, want 100", x, n)
		}
	}
	if got := direct(t, c, "n2").ConfigGet(ctx, "appendfsync").Val()["appendfsync"]; got != "everysec" {
		t.Errorf("n2 appendfsync %q after restart with everysec", got)
	}
	// Writes under everysec that reached the AOF file survive a kill
	// that comes before their fsync: the page cache outlives the process.
	// (An acknowledged write may not have reached the file yet: while a
	// background fsync runs, everysec holds writes back for up to 2 s, and
	// a kill then loses them. On a loaded CI host that lost 99 of 100.)
	n2 := direct(t, c, "n2")
	for i := 100; i < 200; i++ {
		if err := n2.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	aofWritten(t, n2)
	if err := c.Restart(ctx, "n2", RestartOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := direct(t, c, "n2").DBSize(ctx).Val(); n != 200 {
		t.Errorf("n2 has %d keys after a kill right after 100 everysec writes, want 200", n)
	}
	// And back to none: empty.
	if err := c.Restart(ctx, "n1", RestartOptions{Persistence: PersistNone}); err != nil {
		t.Fatal(err)
	}
	if n := direct(t, c, "n1").DBSize(ctx).Val(); n != 0 {
		t.Errorf("n1 has %d keys after restarting with none", n)
	}
	if p, known := c.Persistence("n1"); p != PersistNone || !known {
		t.Errorf("n1's persistence after restarting with none: %q, known %v", p, known)
	}
	// A node that ran without persistence wrote no AOF: restarted in an
	// AOF mode it comes back empty, and runs in that mode from then on.
	if err := direct(t, c, "n1").Set(ctx, "lost", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, "n1", RestartOptions{Persistence: AOFAlways}); err != nil {
		t.Fatal(err)
	}
	if n := direct(t, c, "n1").DBSize(ctx).Val(); n != 0 {
		t.Errorf("n1 has %d keys after running without persistence and restarting in aof-always, want 0", n)
	}
	if p, _ := c.Persistence("n1"); p != AOFAlways {
		t.Errorf("n1's persistence after restarting in aof-always: %q", p)
	}
	if p, known := c.Persistence("n2"); p != AOFEverySec || !known {
		t.Errorf("n2's persistence: %q, known %v, want aof-everysec", p, known)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", 300*time.Millisecond)
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause("n1"); err != nil {
		t.Fatal(err)
	}
	if !c.Info().Procs[0].Paused {
		t.Error("Info does not show n1 paused")
	}
	if err := cl.Ping(ctx).Err(); !isTimeout(err) {
		t.Errorf("ping of a paused node: %v, want a timeout", err)
	}
	if err := c.Resume("n1"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "n1 answers after resume", func() bool { return cl.Ping(ctx).Err() == nil })
}

func TestClientViewJSON(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "replicated:1"), Clients: 2})
	v, err := c.ClientView(1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back ClientView
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if a, _ := c.ClientAddr(1, "r1"); back.Addrs["r1"] != a || back.AddrList()[1] != a {
		t.Errorf("client view %s: r1 at %q, want %q", b, back.Addrs["r1"], a)
	}
	peer, _ := c.LinkAddr(PeerLink("r1"))
	if back.Announced[peer] != "r1" {
		t.Errorf("announced addresses %v lack r1's %s", back.Announced, peer)
	}
	if back.FailoverOptions(access.Login{}) != nil {
		t.Error("failover options without sentinels")
	}
	// The dialer sends r1's announced address through c1->r1: cutting that
	// link breaks the dial's first command, healing it restores it.
	ctx := testCtx(t, 20*time.Second)
	cl := redis.NewClient(&redis.Options{Addr: peer, Dialer: back.Dialer(nil), MaxRetries: -1, PoolSize: 1, DisableIdentity: true, Protocol: 2, ReadTimeout: time.Second})
	defer cl.Close()
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Cut(Reset, Both, ClientLink(1, "r1")); err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx).Err(); err == nil {
		t.Error("ping through a cut c1->r1 succeeded: the dialer bypassed the client's proxy")
	}
	if err := c.Heal(ClientLink(1, "r1")); err != nil {
		t.Fatal(err)
	}
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Error(err)
	}
	if _, err := c.ClientView(2); err == nil {
		t.Error("view of client 3 of 2")
	}
}

// limited is a provider that cannot pause, as an external deployment.
type limited struct{ *ProcessProvider }

func (limited) Name() string { return "limited" }

func (limited) Pause(name string) error { return Unsupported("pause "+name, "limited") }

func TestProviderRefusesWithErrUnsupported(t *testing.T) {
	t.Parallel()
	pp, err := NewProcessProvider()
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1, Provider: limited{pp}})
	err = c.Pause("n1")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "pause n1") || !strings.Contains(err.Error(), "limited provider") {
		t.Errorf("pause on a provider without it: %v", err)
	}
	if got := c.Info().Provider; got != "limited" {
		t.Errorf("Info names provider %q", got)
	}
	// Everything else still runs through it.
	if err := c.Restart(testCtx(t, 20*time.Second), "n1", RestartOptions{}); err != nil {
		t.Error(err)
	}
}

// TestValuesReadsEveryNodeDirectly: Values reads a key on every data node
// through the harness's own connections — a cut does not hide a node — and
// leaves out the nodes without it, down, or too slow to answer (paused).
func TestValuesReadsEveryNodeDirectly(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: Topology{Kind: Independent, N: 5}, Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(direct(t, c, "n1").Set(ctx, "k", "a", 0).Err())
	must(direct(t, c, "n2").Set(ctx, "k", "a", 0).Err())
	must(direct(t, c, "n3").HSet(ctx, "k", "owner", "1").Err())
	must(direct(t, c, "n4").Set(ctx, "k", "b", 0).Err())
	must(c.Cut(Blackhole, Both, ClientLink(0, "n1"), ClientLink(0, "n2")))
	must(c.Pause("n4"))
	t.Cleanup(func() { _ = c.Resume("n4") })
	must(c.Kill("n2"))
	began := time.Now()
	got := c.Values(ctx, "k", 300*time.Millisecond)
	took := time.Since(began)
	want := map[string]string{"n1": "a", "n3": ""}
	if len(got) != len(want) || got["n1"] != "a" || got["n3"] != "" {
		t.Errorf("Values = %v, want %v (n2 down, n4 paused, n5 without the key)", got, want)
	}
	if _, ok := got["n3"]; !ok {
		t.Error("a hash key (a reentrant lock's) is not reported")
	}
	t.Logf("Values with a paused node took %v (bound 300ms)", took)
}

// aofWritten waits until the node's AOF buffer is empty: every write it
// acknowledged is in the file (the page cache), whether or not fsynced.
func aofWritten(t *testing.T, cl *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := cl.Info(testCtx(t, 5*time.Second), "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "aof_buffer_length:0\r\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AOF buffer is not empty after 10 s:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
