package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/tumbler-dev/tumbler/access"
)

// deployment is what a user runs and tumbler does not: daemonized
// redis-servers started by a shell command, and a toxiproxy server with
// its HTTP API. Its servers are in a process record, so SweepOrphans ends
// them should the test binary die before its cleanup.
type deployment struct {
	t     *testing.T
	dir   string
	nodes map[string]string // name → addr
	api   string            // toxiproxy API URL
	tox   *toxiclient.Client
	rec   *record
}

func startDeployment(t *testing.T, names ...string) *deployment {
	t.Helper()
	dep := &deployment{t: t, dir: t.TempDir(), nodes: map[string]string{}}
	var err error
	if dep.rec, err = newRecord(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dep.stop)
	for _, name := range names {
		port, err := reservePort()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(port.release)
		dep.nodes[name] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port.port))
		conf := strings.Join([]string{
			"port " + strconv.Itoa(port.port), "bind 127.0.0.1", "protected-mode no",
			"daemonize yes", "pidfile " + dep.pidFile(name),
			"dir " + dep.dir, "dbfilename " + name + ".rdb", "logfile " + filepath.Join(dep.dir, name+".log"),
			`save ""`, "appendonly no", "repl-diskless-sync-delay 0",
		}, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dep.dir, name+".conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		dep.sh(strings.ReplaceAll(dep.hooks().Start, "{node}", name))
		ctx := testCtx(t, 20*time.Second)
		if err := waitPing(ctx, dep.nodes[name], access.Login{}, nil); err != nil {
			t.Fatalf("deployment %s: %v", name, err)
		}
		dep.track()
	}

	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() {
		_ = hs.Close()
		_ = srv.Collection.Clear()
	})
	dep.api = "http://" + l.Addr().String()
	dep.tox = toxiclient.NewClient(dep.api)
	return dep
}

func (d *deployment) pidFile(name string) string { return filepath.Join(d.dir, name+".pid") }

// hooks are how the deployment's owner disturbs it.
func (d *deployment) hooks() ExternalHooks {
	pid := "$(cat " + d.dir + "/{node}.pid)"
	return ExternalHooks{
		Start:  "redis-server " + d.dir + "/{node}.conf",
		Kill:   "kill -KILL " + pid + " && rm " + d.dir + "/{node}.pid",
		Pause:  "kill -STOP " + pid,
		Resume: "kill -CONT " + pid,
	}
}

func (d *deployment) sh(line string) {
	d.t.Helper()
	if out, err := exec.Command("/bin/sh", "-c", line).CombinedOutput(); err != nil {
		d.t.Fatalf("%s: %v: %s", line, err, out)
	}
}

// pid is the running server's pid, 0 if none.
func (d *deployment) pid(name string) int {
	b, err := os.ReadFile(d.pidFile(name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 || !processExists(pid) {
		return 0
	}
	return pid
}

// track records the running servers for SweepOrphans.
func (d *deployment) track() {
	for name := range d.nodes {
		if pid := d.pid(name); pid != 0 {
			d.rec.add(name, pid)
		}
	}
}

func (d *deployment) stop() {
	for name := range d.nodes {
		for _, e := range d.rec.Procs {
			if e.Name == name && alive(e.Pid, e.Start) {
				_ = syscall.Kill(e.Pid, syscall.SIGKILL)
			}
		}
		if pid := d.pid(name); pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, e := range d.rec.Procs {
		for alive(e.Pid, e.Start) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(e.Pid, e.Start) {
			d.t.Errorf("deployment server %s (pid %d) survived SIGKILL", e.Name, e.Pid)
		}
	}
	d.rec.delete()
}

// proxy makes a proxy in the deployment's toxiproxy, as its owner would.
func (d *deployment) proxy(name, node string) string {
	d.t.Helper()
	p, err := d.tox.CreateProxy(name, "127.0.0.1:0", d.nodes[node])
	if err != nil {
		d.t.Fatalf("create proxy %s: %v", name, err)
	}
	return p.Listen
}

func (d *deployment) toxics(proxy string) []string {
	d.t.Helper()
	p, err := d.tox.Proxy(proxy)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []string
	for _, x := range p.ActiveToxics {
		out = append(out, x.Name)
	}
	return out
}

func (d *deployment) config(topology string, links map[string]ExternalLink) ExternalConfig {
	d.t.Helper()
	cfg := ExternalConfig{Topology: topo(d.t, topology), Nodes: map[string]ExternalNode{}, Toxiproxy: d.api,
		Links: links, Persistence: PersistNone, Hooks: d.hooks()}
	for name, addr := range d.nodes {
		cfg.Nodes[name] = ExternalNode{Addr: addr}
	}
	return cfg
}

// writeConfig writes cfg as JSON, as a user would, for LoadExternalConfig.
func writeConfig(t *testing.T, cfg any) string {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "external.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// stopped reports whether pid is stopped by a signal. A signal is handled
// when its target next runs, so it waits a little for the state to match
// want.
func stopped(pid int, want bool) bool {
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := strings.LastIndexByte(string(b), ')')
		is := err == nil && i > 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "T")
		if is == want || time.Now().After(deadline) {
			return is
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExternalIndependent(t *testing.T) {
	t.Parallel()
	dep := startDeployment(t, "n1", "n2", "n3")
	renamed := dep.proxy("client0_n2", "n2") // the owner's own naming
	dep.proxy("c0->n1", "n1")
	dep.proxy("c0->n3", "n3")
	cfg := dep.config("independent:3", map[string]ExternalLink{
		"c0->n1": {}, "c0->n2": {Proxy: "client0_n2"}, "c0->n3": {},
	})
	loaded, err := LoadExternalConfig(writeConfig(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	prov, err := NewExternalProvider(loaded)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 60*time.Second)
	c, err := Start(ctx, Spec{Topology: loaded.Topology, Clients: 1, Provider: prov})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = c.Close()
		}
	})

	if got := strings.Join(c.Links(), " "); got != "c0->n1 c0->n2 c0->n3" {
		t.Errorf("Links() = %s", got)
	}
	if via, _ := c.ClientAddr(0, "n2"); via != renamed {
		t.Errorf("c0->n2 is %s, want the proxy client1_n2 at %s", via, renamed)
	}
	if c.APIAddr() != strings.TrimPrefix(dep.api, "http://") || c.Info().Provider != "external" {
		t.Errorf("APIAddr %s, provider %s", c.APIAddr(), c.Info().Provider)
	}
	if err := c.Cut(Reset, Both, "c1->n1"); err == nil || !strings.Contains(err.Error(), "c1->n1") {
		t.Errorf("cut of an undeclared link: %v", err)
	}

	n1via, _ := c.ClientAddr(0, "n1")
	n1 := dial(t, n1via, time.Second)
	if err := n1.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the user's proxy: %v", err)
	}

	t.Run("cut, delay and heal through the API", func(t *testing.T) {
		if err := c.Cut(Reset, Both, "c0->n1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Cut(Reset, Both, "c0->n1"); err != nil {
			t.Fatalf("the same cut again: %v", err)
		}
		if got := strings.Join(dep.toxics("c0->n1"), " "); !strings.Contains(got, "cut-upstream") || !strings.Contains(got, "cut-downstream") {
			t.Fatalf("toxics on the user's proxy: %q", got)
		}
		if err := n1.Set(ctx, "k", "v", 0).Err(); err == nil {
			t.Fatal("SET through a cut link succeeded")
		}
		if err := c.Delay(300*time.Millisecond, 0, Upstream, "c0->n2"); err != nil {
			t.Fatal(err)
		}
		if got := dep.toxics("client0_n2"); len(got) != 1 || got[0] != "delay-upstream" {
			t.Fatalf("toxics on client1_n2: %v", got)
		}
		n2 := dial(t, renamed, 2*time.Second)
		start := time.Now()
		if err := n2.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 250*time.Millisecond {
			t.Fatalf("PING through a 300ms delay took %v", took)
		}
		if err := c.Heal(); err != nil {
			t.Fatal(err)
		}
		if got := dep.toxics("c0->n1"); len(got) != 0 {
			t.Fatalf("toxics left after Heal: %v", got)
		}
		if err := dial(t, n1via, time.Second).Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET after Heal: %v", err)
		}
	})

	t.Run("kill and start with hooks", func(t *testing.T) {
		pid := dep.pid("n1")
		if err := c.Kill("n1"); err != nil {
			t.Fatal(err)
		}
		// Kill returns once n1 no longer answers; the kernel may still be
		// tearing the process down (its sockets close before it exits), so
		// its pid is given a moment to go.
		if c.Up("n1") {
			t.Fatalf("n1 (pid %d) still answers after Kill", pid)
		}
		for deadline := time.Now().Add(2 * time.Second); processExists(pid); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("n1 (pid %d) still exists 2s after Kill returned", pid)
			}
		}
		if err := c.Kill("n1"); err != nil {
			t.Fatalf("killing a killed node: %v", err)
		}
		if err := c.StartNode(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		dep.track()
		if dep.pid("n1") == 0 || dep.pid("n1") == pid {
			t.Fatalf("n1 not started again (pid %d, was %d)", dep.pid("n1"), pid)
		}
		if err := dial(t, n1via, time.Second).Get(ctx, "k").Err(); err == nil {
			t.Fatal("k survived a restart of a node without persistence")
		}
		if m, known := c.Persistence("n1"); m != PersistNone || !known {
			t.Errorf("persistence of a deployment that declares none: %q, known %v", m, known)
		}
		// The deployment runs without persistence: an AOF restart is
		// refused before anything is killed.
		pid = dep.pid("n1")
		err := c.Restart(ctx, "n1", RestartOptions{Persistence: AOFEverySec})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "aof-everysec") {
			t.Fatalf("AOF restart of a deployment without persistence: %v", err)
		}
		if dep.pid("n1") != pid || !c.Up("n1") {
			t.Fatal("a refused restart killed the node")
		}
	})

	t.Run("pause and resume with hooks", func(t *testing.T) {
		if err := c.Pause("n3"); err != nil {
			t.Fatal(err)
		}
		if !stopped(dep.pid("n3"), true) {
			t.Fatal("n3 is not stopped after Pause")
		}
		n3via, _ := c.ClientAddr(0, "n3")
		if err := dial(t, n3via, 300*time.Millisecond).Ping(ctx).Err(); err == nil {
			t.Fatal("a paused node answered")
		}
		if err := c.Resume("n3"); err != nil {
			t.Fatal(err)
		}
		if err := dial(t, n3via, time.Second).Ping(ctx).Err(); err != nil {
			t.Fatalf("after Resume: %v", err)
		}
	})

	t.Run("faults without a hook are refused", func(t *testing.T) {
		c2, err := Start(ctx, Spec{Topology: loaded.Topology, Clients: 1, Clock: true, Provider: mustExternal(t, loaded)})
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		err = c2.SetClock("n2", time.Second)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "clock offset") || !strings.Contains(err.Error(), "external") {
			t.Fatalf("SetClock without a clock hook: %v", err)
		}
	})

	// Close puts the deployment back: no toxic, no paused or killed node.
	if err := c.Cut(Blackhole, Both, "c0->n3"); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause("n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill("n3"); err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	dep.track()
	if got := dep.toxics("c0->n3"); len(got) != 0 {
		t.Errorf("toxics left in the user's toxiproxy after Close: %v", got)
	}
	if pid := dep.pid("n2"); pid == 0 || stopped(pid, false) {
		t.Errorf("n2 (pid %d) left paused after Close", pid)
	}
	if dep.pid("n3") == 0 {
		t.Error("n3 left down after Close")
	}
	for name, addr := range dep.nodes {
		if err := dial(t, addr, time.Second).Ping(ctx).Err(); err != nil {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}

// TestExternalKillWaitsUntilDown: a kill hook that returns before the node
// is gone (it only sends the signal, here 300 ms late) does not end Kill:
// Kill returns once the node no longer answers, so a start right after it
// does not find the port taken.
func TestExternalKillWaitsUntilDown(t *testing.T) {
	t.Parallel()
	dep := startDeployment(t, "n1")
	dep.proxy("c0->n1", "n1")
	cfg := dep.config("independent:1", map[string]ExternalLink{"c0->n1": {}})
	cfg.Hooks.Kill = "(sleep 0.3; " + cfg.Hooks.Kill + ") >/dev/null 2>&1 &"
	prov := mustExternal(t, cfg)
	ctx := testCtx(t, 30*time.Second)
	if _, err := prov.Start(ctx, ProcSpec{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	addr := dep.nodes["n1"]
	began := time.Now()
	if err := prov.Kill("n1"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 250*time.Millisecond || answers(addr) {
		t.Fatalf("Kill returned after %v with n1 answering %v: want it to wait until n1 is down", took, answers(addr))
	}
	if _, err := prov.Start(ctx, ProcSpec{Name: "n1"}); err != nil {
		t.Fatalf("start right after Kill: %v", err)
	}
	dep.track()
}

func mustExternal(t *testing.T, cfg ExternalConfig) *ExternalProvider {
	t.Helper()
	cfg.Hooks.Clock = ""
	p, err := NewExternalProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExternalReplicated adopts a primary and replica whose replication
// runs through the owner's proxy r1->p: the harness finds the primary and
// can cut replication.
func TestExternalReplicated(t *testing.T) {
	t.Parallel()
	dep := startDeployment(t, "p", "r1")
	dep.proxy("c0->p", "p")
	dep.proxy("c0->r1", "r1")
	repl := dep.proxy("r1->p", "p")
	host, port, _ := net.SplitHostPort(repl)
	ctx := testCtx(t, 60*time.Second)
	r1 := dial(t, dep.nodes["r1"], time.Second)
	if err := r1.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := dep.config("replicated:1", map[string]ExternalLink{"c0->p": {}, "c0->r1": {}, "r1->p": {}})
	cfg.Persistence = "" // undeclared: what the deployment writes is not known
	c, err := Start(ctx, Spec{Topology: cfg.Topology, Clients: 1, Provider: mustExternal(t, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if got, _ := c.Primary(ctx); got != "p" {
		t.Fatalf("Primary() = %s", got)
	}
	if m, known := c.Persistence("p"); known {
		t.Errorf("persistence of a deployment that declares none: %q, known", m)
	}
	pvia, _ := c.ClientAddr(0, "p")
	p := dial(t, pvia, 2*time.Second)
	if n, err := p.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("r1 does not replicate through the user's r1->p (WAIT = %d, %v)", n, err)
	}
	if err := c.Cut(Blackhole, Downstream, "r1->p"); err != nil {
		t.Fatal(err)
	}
	if err := p.Set(ctx, "lost", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Wait(ctx, 1, 300*time.Millisecond).Result(); err != nil || n != 0 {
		t.Fatalf("WAIT across a cut replication link = %d, %v; want 0", n, err)
	}
	if err := c.Heal("r1->p"); err != nil {
		t.Fatal(err)
	}
	// A promotion by hand: without a declared p->r1 link, p follows r1 at
	// the address r1 announces.
	if err := c.Promote(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	role, err := dial(t, dep.nodes["p"], time.Second).Do(ctx, "ROLE").Slice()
	if err != nil || len(role) < 3 || role[0] != "slave" || fmt.Sprint(role[2]) != portOf(dep.nodes["r1"]) {
		t.Fatalf("p after promoting r1: ROLE = %v, %v", role, err)
	}
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func TestExternalConfigErrors(t *testing.T) {
	t.Parallel()
	good := func() map[string]any {
		return map[string]any{
			"topology":  "independent:2",
			"nodes":     map[string]any{"n1": map[string]any{"addr": "10.0.0.1:6379"}, "n2": map[string]any{"addr": "10.0.0.2:6379"}},
			"toxiproxy": "http://10.0.0.5:8474",
			"links":     map[string]any{"c0->n1": map[string]any{}, "c0->n2": map[string]any{"proxy": "x", "addr": "10.0.0.5:21002"}},
			"hooks":     map[string]any{"kill": "ssh {host} pkill -KILL -f 'redis-server *:{port}'", "clock": "set-offset {node} {offset_ms}"},
		}
	}
	if _, err := LoadExternalConfig(writeConfig(t, good())); err != nil {
		t.Fatalf("a good config: %v", err)
	}
	cases := []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"unknown field", func(m map[string]any) { m["toxiproxy_url"] = "x" }, `unknown field "toxiproxy_url"`},
		{"no topology", func(m map[string]any) { delete(m, "topology") }, "no topology"},
		{"bad topology", func(m map[string]any) { m["topology"] = "ring:3" }, "unknown kind"},
		{"missing node", func(m map[string]any) { delete(m["nodes"].(map[string]any), "n2") }, "n2 is missing"},
		{"extra node", func(m map[string]any) { m["nodes"].(map[string]any)["n9"] = map[string]any{"addr": "h:1"} }, `"n9" is not a node`},
		{"bad addr", func(m map[string]any) { m["nodes"].(map[string]any)["n1"] = map[string]any{"addr": "10.0.0.1"} }, "not host:port"},
		{"shell in host", func(m map[string]any) { m["nodes"].(map[string]any)["n1"] = map[string]any{"addr": "a;rm:1"} }, "bad host"},
		{"no toxiproxy", func(m map[string]any) { delete(m, "toxiproxy") }, "toxiproxy: the URL"},
		{"bad toxiproxy", func(m map[string]any) { m["toxiproxy"] = "10.0.0.5:8474" }, "not an http(s) URL"},
		{"bad link", func(m map[string]any) { m["links"].(map[string]any)["c1-n1"] = map[string]any{} }, "want <from>-><to>"},
		{"link to nowhere", func(m map[string]any) { m["links"].(map[string]any)["c0->n7"] = map[string]any{} }, `"n7" is not a data node`},
		{"peer on independent", func(m map[string]any) { m["links"].(map[string]any)["peer->n1"] = map[string]any{} }, "only a replicated topology"},
		{"bad placeholder", func(m map[string]any) { m["hooks"].(map[string]any)["start"] = "start {nodes}" }, "unknown placeholder {nodes}"},
		{"offset outside clock", func(m map[string]any) { m["hooks"].(map[string]any)["pause"] = "x {offset_ms}" }, "unknown placeholder {offset_ms}"},
		{"bad persistence", func(m map[string]any) { m["persistence"] = "rdb" }, "unknown persistence"},
		{"bad timeout", func(m map[string]any) { m["hook_timeout"] = "soon" }, "hook_timeout"},
		{"type error", func(m map[string]any) { m["nodes"] = []string{"n1"} }, "line "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.edit(m)
			_, err := LoadExternalConfig(writeConfig(t, m))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	yml := filepath.Join(t.TempDir(), "x.yaml")
	_ = os.WriteFile(yml, []byte("topology: independent:1\n"), 0o644)
	if _, err := LoadExternalConfig(yml); err == nil || !strings.Contains(err.Error(), "YAML") {
		t.Errorf("a YAML file: %v", err)
	}
	if _, err := LoadExternalConfig(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("a missing file loaded")
	}
}

// TestExternalAdoptErrors: what Start refuses before touching anything.
func TestExternalAdoptErrors(t *testing.T) {
	t.Parallel()
	dep := startDeployment(t, "n1")
	dep.proxy("c0->n1", "n1")
	cfg := dep.config("independent:1", map[string]ExternalLink{"c0->n1": {}})
	ctx := testCtx(t, 30*time.Second)
	for _, tc := range []struct {
		name string
		spec Spec
		cfg  func(ExternalConfig) ExternalConfig
		want string
	}{
		{"more clients than links", Spec{Topology: cfg.Topology, Clients: 2}, nil, "c1->n1"},
		{"another topology", Spec{Topology: topo(t, "independent:2"), Clients: 1}, nil, "is not the external deployment's"},
		{"no such proxy", Spec{Topology: cfg.Topology, Clients: 1}, func(c ExternalConfig) ExternalConfig {
			c.Links = map[string]ExternalLink{"c0->n1": {Proxy: "nope"}}
			return c
		}, `no proxy named "nope"`},
		{"toxiproxy down", Spec{Topology: cfg.Topology, Clients: 1}, func(c ExternalConfig) ExternalConfig {
			c.Toxiproxy = "http://127.0.0.1:1"
			return c
		}, "does not answer"},
		{"node down", Spec{Topology: cfg.Topology, Clients: 1}, func(c ExternalConfig) ExternalConfig {
			c.Nodes = map[string]ExternalNode{"n1": {Addr: "127.0.0.1:1"}}
			return c
		}, "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			use := cfg
			if tc.cfg != nil {
				use = tc.cfg(cfg)
			}
			tc.spec.Provider = mustExternal(t, use)
			sctx := ctx
			if tc.name == "node down" {
				var cancel context.CancelFunc
				sctx, cancel = context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
			}
			c, err := Start(sctx, tc.spec)
			if err == nil {
				c.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestDeployExternalConfig checks that deploy/external.json loads and
// agrees with deploy/toxiproxy.json, the proxies Compose starts.
func TestDeployExternalConfig(t *testing.T) {
	t.Parallel()
	cfg, err := LoadExternalConfig(filepath.Join("..", "deploy", "external.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Topology.String() != "independent:5" || len(cfg.Links) != 5 {
		t.Fatalf("deploy/external.json: %s with %d links, want independent:5 with c1's 5 links", cfg.Topology, len(cfg.Links))
	}
	b, err := os.ReadFile(filepath.Join("..", "deploy", "toxiproxy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var proxies []toxiclient.Proxy
	if err := json.Unmarshal(b, &proxies); err != nil {
		t.Fatalf("deploy/toxiproxy.json: %v", err)
	}
	listen := map[string]toxiclient.Proxy{}
	for _, p := range proxies {
		listen[p.Name] = p
	}
	for name, l := range cfg.Links {
		p, ok := listen[l.Proxy]
		if !ok {
			t.Errorf("link %s: proxy %q is not in toxiproxy.json", name, l.Proxy)
			continue
		}
		_, port, _ := net.SplitHostPort(p.Listen)
		_, want, _ := net.SplitHostPort(l.Addr)
		lk, _ := ParseLink(name)
		if port != want || !strings.HasPrefix(p.Upstream, lk.To+":") {
			t.Errorf("link %s dials port %s, proxy %s listens on %s for %s", name, want, p.Name, p.Listen, p.Upstream)
		}
	}
}

// TestExternalSentinels adopts a deployment with Sentinels and a password
// (a cluster tumbler started, with its toxiproxy's API served): the
// clients find the primary through their own proxies to the Sentinels, as
// declared in the config (c0->s1..s3), log in with the config's access,
// and lose the Sentinels when those links are cut.
func TestExternalSentinels(t *testing.T) {
	t.Parallel()
	pw := secretEnv(t, "TUMBLER_TEST_EXT_PW", "external-secret")
	inner := startCluster(t, Spec{Topology: topo(t, "replicated:1+sentinels"), Clients: 1, APIAddr: "127.0.0.1:0",
		Access: &access.Config{Client: access.Credentials{Password: pw}}})
	cfg := ExternalConfig{Topology: inner.Topology(), Nodes: map[string]ExternalNode{}, Links: map[string]ExternalLink{},
		Toxiproxy: "http://" + inner.APIAddr(), Access: &access.Config{Client: access.Credentials{Password: pw}}}
	for _, n := range append(inner.Nodes(), inner.Sentinels()...) {
		addr, _ := inner.Addr(n)
		cfg.Nodes[n] = ExternalNode{Addr: addr, Announce: inner.announceAddr(n)}
		cfg.Links[ClientLink(0, n)] = ExternalLink{}
	}
	prov, err := NewExternalProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 60*time.Second)
	c, err := Start(ctx, Spec{Topology: cfg.Topology, Clients: 1, Provider: prov, Access: cfg.Access})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CheckClients(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := c.ClientView(0)
	if err != nil {
		t.Fatal(err)
	}
	s1, _ := inner.LinkAddr(ClientLink(0, "s1"))
	if v.Sentinels[0] != s1 {
		t.Fatalf("client view sentinels %v: want the proxies, first %s", v.Sentinels, s1)
	}
	login, err := v.Login()
	if err != nil {
		t.Fatal(err)
	}
	fc := redis.NewFailoverClient(v.FailoverOptions(login))
	if err := fc.Set(ctx, "tumbler:ext", "1", 0).Err(); err != nil {
		t.Fatalf("set through the Sentinels' proxies: %v", err)
	}
	_ = fc.Close()
	if err := c.Cut(Reset, Both, ClientLink(0, "s1"), ClientLink(0, "s2"), ClientLink(0, "s3")); err != nil {
		t.Fatal(err)
	}
	fc = redis.NewFailoverClient(v.FailoverOptions(login))
	defer fc.Close()
	if err := fc.Set(ctx, "tumbler:ext", "2", 0).Err(); err == nil {
		t.Fatal("a client cut from every Sentinel found the primary")
	}
}
