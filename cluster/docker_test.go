package cluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster/image"
	"github.com/tumbler-dev/tumbler/internal/tlstest"
)

// Docker tests run wherever a Docker daemon answers. Without one they are
// skipped, unless TUMBLER_DOCKER_TESTS=1 (CI) makes that a failure. The
// Redis image is TUMBLER_REDIS_IMAGE if set (e.g. redis:7 where a registry
// is reachable: clock tests are then skipped), else tumbler's own, built
// here on first use (root and debootstrap, about 40 s, once per machine).
const (
	dockerTestsEnv = "TUMBLER_DOCKER_TESTS"
	redisImageEnv  = "TUMBLER_REDIS_IMAGE"
)

func needDocker(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := DockerAvailable(ctx); err != nil {
		if os.Getenv(dockerTestsEnv) == "1" {
			t.Fatalf("%s=1 but Docker cannot be used: %v", dockerTestsEnv, err)
		}
		t.Skipf("no Docker here (%v); set %s=1 to make this a failure", err, dockerTestsEnv)
	}
}

var testImage struct {
	once  sync.Once
	image string
	err   error
}

// dockerImage is the Redis image for the docker tests, built once per
// test binary (and once per machine: image.Build caches by tag).
func dockerImage(t *testing.T) string {
	t.Helper()
	needDocker(t)
	if img := os.Getenv(redisImageEnv); img != "" {
		return img
	}
	testImage.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		testImage.image, testImage.err = image.Build(ctx, Redis)
		if d := time.Since(start); d > 5*time.Second && testImage.err == nil {
			fmt.Fprintf(os.Stderr, "built %s in %v\n", testImage.image, d.Round(100*time.Millisecond))
		}
	})
	if err := testImage.err; err != nil {
		_, noDeboot := exec.LookPath("debootstrap")
		if os.Getenv(dockerTestsEnv) != "1" && (os.Geteuid() != 0 || noDeboot != nil) {
			t.Skipf("cannot build the Redis image here (%v); set %s=redis:7 to use the official one, or %s=1 to make this a failure", err, redisImageEnv, dockerTestsEnv)
		}
		t.Fatalf("build the Redis image: %v", err)
	}
	return testImage.image
}

// startDocker starts a cluster on a DockerProvider, closed on cleanup,
// and checks then that no container or network of the run is left.
func startDocker(t *testing.T, img string, spec Spec) (*Cluster, *DockerProvider) {
	t.Helper()
	ctx := testCtx(t, 2*time.Minute)
	prov, err := NewDockerProvider(ctx, DockerOptions{Image: img, Logf: t.Logf})
	if err != nil {
		t.Fatalf("docker provider: %v", err)
	}
	spec.Provider = prov
	c, err := Start(ctx, spec)
	if err != nil {
		if n := runLeftovers(t, prov.Run()); n != 0 {
			t.Errorf("a failed Start left %d containers/networks of run %s", n, prov.Run())
		}
		t.Fatalf("start %s on docker: %v", spec.Topology, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if n := runLeftovers(t, prov.Run()); n != 0 {
			t.Errorf("Close left %d containers/networks labelled %s=%s", n, DockerRunLabel, prov.Run())
		}
	})
	return c, prov
}

// runLeftovers counts the containers (stopped ones too) and networks with
// run's label: `docker ps -a --filter label=tumbler.run=<run>` and the
// same for networks.
func runLeftovers(t *testing.T, run string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli, err := image.Docker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	filter := make(client.Filters).Add("label", DockerRunLabel+"="+run)
	ctrs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		t.Fatal(err)
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		t.Fatal(err)
	}
	return len(ctrs.Items) + len(nets.Items)
}

func TestDockerIndependent(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	c, prov := startDocker(t, img, Spec{Topology: topo(t, "independent:3"), Clients: 1, Clock: true})
	ctx := testCtx(t, 90*time.Second)

	// Nodes live on the provider's network; the proxies on its gateway.
	for _, n := range c.Nodes() {
		addr, _ := c.Addr(n)
		host, _, _ := net.SplitHostPort(addr)
		if ip, err := netip.ParseAddr(host); err != nil || !prov.subnet.Contains(ip) {
			t.Errorf("%s at %s, outside the network's %s", n, addr, prov.subnet)
		}
		via, _ := c.ClientAddr(0, n)
		if host, _, _ := net.SplitHostPort(via); host != prov.ProxyHost() {
			t.Errorf("proxy c0->%s listens on %s, not on the gateway %s", n, via, prov.ProxyHost())
		}
	}
	if got := c.Info().Provider; got != "docker" {
		t.Errorf("Info().Provider = %q", got)
	}

	n1via, _ := c.ClientAddr(0, "n1")
	n1 := dial(t, n1via, time.Second)
	if err := n1.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}
	addr1, _ := c.Addr("n1")
	if v, err := dial(t, addr1, time.Second).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET directly = %q, %v; want v", v, err)
	}

	t.Run("kill and start empty", func(t *testing.T) {
		if err := c.Kill("n1"); err != nil {
			t.Fatal(err)
		}
		if c.Up("n1") || prov.Pid("n1") != 0 {
			t.Fatalf("n1 still up after Kill (pid %d)", prov.Pid("n1"))
		}
		// Like a killed process: the address stays and refuses at once
		// (the sandbox keeps the namespace), rather than vanishing.
		if conn, err := net.DialTimeout("tcp", addr1, 2*time.Second); err == nil {
			conn.Close()
			t.Fatal("a killed node accepts connections")
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("connecting to a killed node: %v, want connection refused", err)
		}
		if err := c.StartNode(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if again, _ := c.Addr("n1"); again != addr1 {
			t.Fatalf("n1 came back at %s, not %s", again, addr1)
		}
		if err := n1.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("after a restart without persistence GET k = %v, want nil", err)
		}
	})

	t.Run("restart from AOF", func(t *testing.T) {
		if err := c.Restart(ctx, "n2", RestartOptions{Persistence: AOFEverySec}); err != nil {
			t.Fatal(err)
		}
		n2via, _ := c.ClientAddr(0, "n2")
		n2 := dial(t, n2via, time.Second)
		if err := n2.Set(ctx, "kept", "yes", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, "n2", RestartOptions{}); err != nil {
			t.Fatal(err)
		}
		if v, err := n2.Get(ctx, "kept").Result(); err != nil || v != "yes" {
			t.Fatalf("after a kill with aof-everysec GET kept = %q, %v; want yes", v, err)
		}
		if _, err := os.Stat(filepath.Join(c.Dir(), "n2", "data", "appendonlydir")); err != nil {
			t.Errorf("the AOF is not in the bind-mounted data dir: %v", err)
		}
		if err := c.Restart(ctx, "n2", RestartOptions{Persistence: PersistNone}); err != nil {
			t.Fatal(err)
		}
		if err := n2.Get(ctx, "kept").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("after a restart empty GET kept = %v, want nil", err)
		}
	})

	t.Run("pause and resume", func(t *testing.T) {
		n3via, _ := c.ClientAddr(0, "n3")
		n3 := dial(t, n3via, 300*time.Millisecond)
		// The short read timeout is for the paused PING below; the first
		// one, which also dials through the proxy, may take longer on a
		// loaded host (seen in CI), so it is retried until it answers.
		eventually(t, 5*time.Second, "n3 answers before the pause", func() bool { return n3.Ping(ctx).Err() == nil })
		if err := c.Pause("n3"); err != nil {
			t.Fatal(err)
		}
		if !prov.Paused("n3") || !c.Info().Procs[2].Paused {
			t.Error("n3 not reported paused")
		}
		if err := n3.Ping(ctx).Err(); err == nil {
			t.Fatal("a paused node answered PING")
		}
		if err := c.Resume("n3"); err != nil {
			t.Fatal(err)
		}
		fresh := dial(t, n3via, time.Second)
		if err := fresh.Ping(ctx).Err(); err != nil {
			t.Fatalf("after Resume: %v", err)
		}
	})

	t.Run("clock", func(t *testing.T) {
		if prov.shim == "" {
			if err := c.SetClock("n3", time.Hour); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("SetClock on an image without the shim = %v, want ErrUnsupported", err)
			}
			t.Skipf("image %s has no clock shim", img)
		}
		n3via, _ := c.ClientAddr(0, "n3")
		n3 := dial(t, n3via, time.Second)
		if err := n3.Set(ctx, "lease", "x", 10*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.SetClock("n3", time.Hour); err != nil {
			t.Fatal(err)
		}
		now, err := n3.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if skew := now.Sub(time.Now()); skew < 59*time.Minute || skew > 61*time.Minute {
			t.Fatalf("TIME in the container is %v ahead, want 1h", skew)
		}
		if n, err := n3.Exists(ctx, "lease").Result(); err != nil || n != 0 {
			t.Fatalf("a 10-minute key after a 1-hour jump: EXISTS = %d, %v; want 0", n, err)
		}
		if err := c.SetClock("n3", 0); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cut and heal", func(t *testing.T) {
		if err := c.Cut(Reset, Both, "c0->n1"); err != nil {
			t.Fatal(err)
		}
		if err := n1.Set(ctx, "k", "v", 0).Err(); err == nil {
			t.Fatal("SET through a cut link succeeded")
		}
		if err := c.Heal(); err != nil {
			t.Fatal(err)
		}
		if err := dial(t, n1via, time.Second).Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET after Heal: %v", err)
		}
	})

	log := c.LogFiles()["n1"]
	if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), "Ready to accept connections") {
		t.Errorf("n1's log %s: %v, %q", log, err, string(b[max(0, len(b)-300):]))
	}
}

func TestDockerReplicatedSentinels(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	c, _ := startDocker(t, img, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1})
	ctx := testCtx(t, 90*time.Second)

	pvia, _ := c.ClientAddr(0, "p")
	p := dial(t, pvia, 2*time.Second)
	if err := p.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Wait(ctx, 1, 2*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v: r1 does not replicate through r1->p", n, err)
	}
	r1, _ := c.Addr("r1")
	if v, err := dial(t, r1, time.Second).Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET on r1 = %q, %v", v, err)
	}
	if err := c.Kill("p"); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitFailover(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got != "r1" {
		t.Fatalf("failover to %s, want r1", got)
	}
	// The new primary serves clients through their proxies.
	r1via, _ := c.ClientAddr(0, "r1")
	if err := dial(t, r1via, time.Second).Set(ctx, "after", "failover", 0).Err(); err != nil {
		t.Fatalf("SET on the new primary: %v", err)
	}
}

const dockerChildEnv = "TUMBLER_DOCKER_OWNER_CHILD"

// TestDockerCleanupWhenOwnerFails runs a child test that starts a docker
// cluster and then fails: with t.Fatal (its t.Cleanup must remove
// everything) and with a panic on another goroutine (nothing runs; the
// record under StateDir lets SweepOrphans remove the containers).
func TestDockerCleanupWhenOwnerFails(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	for _, mode := range []string{"fatal", "panic"} {
		t.Run(mode, func(t *testing.T) {
			ctx := testCtx(t, 90*time.Second)
			child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDockerOwnerChild$", "-test.count=1", "-test.v")
			child.Env = append(os.Environ(), dockerChildEnv+"="+mode, redisImageEnv+"="+img, dockerTestsEnv+"=1")
			out, err := child.CombinedOutput()
			run := ""
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if r, ok := strings.CutPrefix(sc.Text(), "RUN "); ok {
					run = r
				}
			}
			if err == nil || run == "" {
				t.Fatalf("the child should start a cluster and fail (err %v):\n%s", err, out)
			}
			if mode == "fatal" {
				if n := runLeftovers(t, run); n != 0 {
					t.Fatalf("a failed test's cleanup left %d containers/networks of run %s:\n%s", n, run, out)
				}
				return
			}
			if !strings.Contains(string(out), "panic: owner panics") {
				t.Fatalf("the child failed otherwise:\n%s", out)
			}
			if n := runLeftovers(t, run); n == 0 {
				t.Log("a concurrent sweep (another test's Start) removed the run first")
			}
			if _, err := SweepOrphans(); err != nil {
				t.Logf("sweep: %v", err)
			}
			if n := runLeftovers(t, run); n != 0 {
				t.Fatalf("after SweepOrphans, %d containers/networks of the dead owner's run %s remain", n, run)
			}
		})
	}
}

func TestDockerOwnerChild(t *testing.T) {
	mode := os.Getenv(dockerChildEnv)
	if mode == "" {
		t.Skip("run by TestDockerCleanupWhenOwnerFails")
	}
	_, prov := startDocker(t, os.Getenv(redisImageEnv), Spec{Topology: topo(t, "independent:2"), Clients: 1})
	fmt.Println("RUN " + prov.Run())
	if mode == "panic" {
		go panic("owner panics")
		select {}
	}
	t.Fatal("owner fails on purpose")
}

func TestDockerUnsupportedClock(t *testing.T) {
	t.Parallel()
	needDocker(t)
	// A provider whose image has no shim refuses clock faults by name,
	// without any container: the refusal comes before the lookup.
	d := &DockerProvider{image: image.OfficialRedis, ctrs: map[string]*dctr{}}
	err := d.SetClock("n1", time.Second)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "clock offset") || !strings.Contains(err.Error(), image.OfficialRedis) {
		t.Fatalf("SetClock = %v", err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// TestDockerStartFailure: a node that cannot start reports Redis's own
// complaint, and the failed Start leaves nothing behind.
func TestDockerStartFailure(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	ctx := testCtx(t, time.Minute)
	prov, err := NewDockerProvider(ctx, DockerOptions{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(ctx, Spec{Topology: topo(t, "independent:1"), Provider: prov, NodeArgs: []string{"--no-such-directive", "x"}})
	if err == nil || !strings.Contains(err.Error(), "no-such-directive") {
		t.Fatalf("Start with a bad directive: %v", err)
	}
	if n := runLeftovers(t, prov.Run()); n != 0 {
		t.Fatalf("a failed Start left %d containers/networks", n)
	}
}

// TestDockerAccess: containers run with an ACL user, a default-user
// password and TLS with client certificates, their secret files mounted
// from a private directory: clients log in through their proxies,
// Sentinel fails over with TLS and auth-pass, and the cluster's directory
// (the containers' bind mount) holds no secret.
func TestDockerAccess(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	certs := tlstest.Certs(t)
	pw := "docker-" + t.Name() + "-pw"
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte(pw), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, _ := startDocker(t, img, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1, Dir: dir,
		Access: &access.Config{
			Client: access.Credentials{User: "locks", Password: access.Secret{File: pwFile}},
			TLS: &access.TLS{CAFile: certs.CA, CertFile: certs.ClientCert, KeyFile: certs.ClientKey, ServerName: tlstest.ServerName,
				ServerCertFile: certs.ServerCert, ServerKeyFile: certs.ServerKey},
		}})
	ctx := testCtx(t, 90*time.Second)
	if err := c.CheckClients(ctx); err != nil {
		t.Fatal(err)
	}
	v, _ := c.ClientView(0)
	login, err := v.Login()
	if err != nil {
		t.Fatal(err)
	}
	fc := redis.NewFailoverClient(v.FailoverOptions(login))
	defer fc.Close()
	if err := fc.Set(ctx, "tumbler:k", "v", 0).Err(); err != nil {
		t.Fatalf("set as locks over TLS: %v", err)
	}
	if err := c.Kill("p"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.WaitFailover(ctx, "p"); err != nil || got != "r1" {
		t.Fatalf("failover: %s, %v", got, err)
	}
	grepDir(t, dir, pw)
}

// TestDockerValkey builds tumbler's Valkey image (debootstrap bookworm with
// valkey from bookworm-backports; minutes on first use, once per machine)
// and fails a Valkey primary over to its replica in containers. It stays
// serial: beside the package's parallel tests its Sentinels' election
// was aborted once (all three flagged the primary o_down, none failing
// over) and Sentinel retries only after twice the 120 s failover-timeout.
func TestDockerValkey(t *testing.T) {
	needDocker(t)
	img := os.Getenv(image.Env(Valkey))
	if img == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var err error
		start := time.Now()
		if img, err = image.Build(ctx, Valkey); err != nil {
			_, noDeboot := exec.LookPath("debootstrap")
			if os.Getenv(dockerTestsEnv) != "1" && (os.Geteuid() != 0 || noDeboot != nil) {
				t.Skipf("cannot build the Valkey image here: %v", err)
			}
			t.Fatalf("build the Valkey image: %v", err)
		}
		t.Logf("%s ready in %v", img, time.Since(start).Round(100*time.Millisecond))
	}
	ctx := testCtx(t, 2*time.Minute)
	prov, err := NewDockerProvider(ctx, DockerOptions{Server: Valkey, Image: img, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1, Provider: prov, Server: Valkey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if n := runLeftovers(t, prov.Run()); n != 0 {
			t.Errorf("Close left %d containers/networks", n)
		}
	})
	v, err := c.Version(ctx)
	if err != nil || !strings.HasPrefix(v, "valkey 8.") {
		t.Fatalf("version %q, %v: want valkey 8", v, err)
	}
	if err := c.Kill("p"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.WaitFailover(ctx, "p"); err != nil || got != "r1" {
		t.Fatalf("failover: %s, %v", got, err)
	}
}

// TestDockerGroups: groups:2 in containers, whose clients' proxies the
// harness re-points at a promotion as it does for processes.
func TestDockerGroups(t *testing.T) {
	t.Parallel()
	c, _ := startDocker(t, dockerImage(t), Spec{Topology: topo(t, "groups:2"), Clients: 1})
	checkGroupsPromote(t, testCtx(t, 90*time.Second), c)
}

// TestDockerRedisCluster: a cluster:2+1 in containers forms through its
// proxies, serves a client's cluster client through that client's own
// proxies, and fails a shard over when its primary dies.
func TestDockerRedisCluster(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	c, _ := startDocker(t, img, Spec{Topology: topo(t, "cluster:3+1"), Clients: 1})
	ctx := testCtx(t, 90*time.Second)
	cc := clusterClient(t, c, 0)
	key := "tumbler:0"
	if err := cc.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	shard, _ := c.Topology().KeyShard(key)
	if err := c.Kill(shard); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitFailover(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if got != shard+"r1" {
		t.Fatalf("failover to %s, want %sr1", got, shard)
	}
	var v string
	for deadline := time.Now().Add(5 * time.Second); ; {
		if v, err = cc.Get(ctx, key).Result(); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v != "v" {
		t.Fatalf("GET on the new primary = %q, %v", v, err)
	}
}
