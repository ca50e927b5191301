package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/nemesis"
)

// Discovery and node settings are checked before anything starts, and a
// target that cannot run a plan says why.
func TestPlanTargetChecks(t *testing.T) {
	sentinels, _ := cluster.ParseTopology("replicated:1+sentinels")
	ext := filepath.Join(t.TempDir(), "ext.json")
	if err := os.WriteFile(ext, []byte(`{"topology": "independent:1", "nodes": {"n1": {"addr": "127.0.0.1:7001"}},
		"toxiproxy": "http://127.0.0.1:8474", "links": {"c0->n1": {}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*Plan)
		want string
	}{
		{"discovery unknown", func(p *Plan) { p.Lock.Discovery = "dns" }, "discovery \"dns\" unknown"},
		{"sentinel discovery without sentinels", func(p *Plan) { p.Lock.Discovery = DiscoverySentinel }, "needs a topology with Sentinels"},
		{"node config of the harness", func(p *Plan) { p.NodeConfig = map[string]string{"port": "1"} }, "port is set by the harness"},
		{"node config name", func(p *Plan) { p.NodeConfig = map[string]string{"--x": "1"} }, "not a directive name"},
		{"server", func(p *Plan) { p.Server = "keydb" }, "unknown server"},
		{"down-after without sentinels", func(p *Plan) { p.SentinelDownAfter = span(t, "2s") }, "sentinel_down_after"},
		{"down-after on an external deployment", func(p *Plan) {
			p.Provider, p.External, p.Topology, p.SentinelDownAfter = "external", ext, sentinels, span(t, "2s")
		}, "the Sentinels' down-after"},
		{"node config on an external deployment", func(p *Plan) {
			p.Provider, p.External = "external", ext
			p.NodeConfig = map[string]string{"min-replicas-to-write": "1"}
		}, "external deployment's owner"},
		{"external of another topology", func(p *Plan) {
			p.Provider, p.External, p.Topology, p.Lock.Discovery = "external", ext, sentinels, DiscoveryFixed
		}, "needs topology replicated:1+sentinels"},
		{"TLS to a Redis Cluster", func(p *Plan) {
			p.Topology, p.Access = cluster.Topology{Kind: cluster.RedisCluster, N: 3}, &access.Config{TLS: &access.TLS{}}
		}, "access.tls: TLS to a Redis Cluster (topology cluster:3) is not supported yet"},
		{"TLS to a Redis Cluster on docker", func(p *Plan) {
			p.Provider, p.Topology, p.Access = "docker", cluster.Topology{Kind: cluster.RedisCluster, N: 3}, &access.Config{TLS: &access.TLS{}}
		}, "access.tls: TLS to a Redis Cluster"},
	} {
		p := basePlan(t, "checks")
		c.edit(&p)
		err := Runnable(p)
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrPlan mentioning %q", c.name, err, c.want)
		}
	}
	p := basePlan(t, "fine")
	p.Topology, p.Lock.Discovery = sentinels, DiscoverySentinel
	p.NodeConfig = map[string]string{"min-replicas-to-write": "1"}
	if err := Runnable(p); err != nil {
		t.Errorf("sentinel discovery with node config on the process provider: %v", err)
	}
	if args := p.nodeArgs(); strings.Join(args, " ") != "--min-replicas-to-write 1" {
		t.Errorf("node args %q", args)
	}
	p = basePlan(t, "cluster")
	p.Topology = cluster.Topology{Kind: cluster.RedisCluster, N: 3}
	p.Access = &access.Config{Client: access.Credentials{User: "locks", Password: access.Secret{Env: "LOCKS_PASSWORD"}}}
	if err := Runnable(p); err != nil {
		t.Errorf("a Redis Cluster with an ACL user and no TLS: %v", err)
	}
}

// A plan whose topology's kind cannot run it (TLS to a Redis Cluster) is
// refused by Validate, naming the field, and by Run before anything
// starts: no run directory.
func TestTopologyKindRefusesUpFront(t *testing.T) {
	p := basePlan(t, "cluster-tls")
	p.Topology, p.Access = cluster.Topology{Kind: cluster.RedisCluster, N: 1}, &access.Config{TLS: &access.TLS{}}
	err := p.Validate()
	var fe *field.Error
	if !errors.Is(err, ErrPlan) || !errors.As(err, &fe) || fe.Path != "access.tls" {
		t.Fatalf("Validate: %v, want ErrPlan naming access.tls", err)
	}
	store := t.TempDir()
	out, err := Run(t.Context(), p, Options{Store: store})
	if !errors.Is(err, ErrPlan) || out != nil || !strings.Contains(err.Error(), "access.tls: TLS to a Redis Cluster") {
		t.Fatalf("Run: %v (outcome %v)", err, out)
	}
	if entries, _ := os.ReadDir(store); len(entries) != 0 {
		t.Errorf("the refused run left %d entries in the store", len(entries))
	}
}

// Target.Apply moves a plan and names the flag at fault.
func TestTargetApply(t *testing.T) {
	p := basePlan(t, "t")
	got, err := Target{Provider: "docker", Server: "valkey"}.Apply(p)
	if err != nil || got.Provider != "docker" || got.Server != cluster.Valkey {
		t.Fatalf("%+v, %v", got, err)
	}
	for _, c := range []struct {
		t    Target
		want string
	}{
		{Target{Provider: "k8s"}, "--provider"},
		{Target{Provider: "docker", External: "x.json"}, "--external"},
		{Target{Provider: "external"}, "--external FILE"},
		{Target{Server: "memcached"}, "--server"},
	} {
		if _, err := c.t.Apply(p); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.t, err, c.want)
		}
	}
}

// fieldPaths are the paths of the field errors in err, outermost first.
func fieldPaths(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*field.Error); ok {
			out = append(out, fe.Path)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				walk(next)
			}
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// A problem of a fault step names its JSON path in the plan, the field's
// where the problem is one field's, the step's (with its kind) otherwise,
// every problem of every step; the topology's verdict on the lock and an
// even number of masters for a lock that needs an odd one name the
// topology.
func TestPlanErrorsNameTheirPath(t *testing.T) {
	p := basePlan(t, "paths")
	p.Faults = []nemesis.Step{
		{At: span(t, "1s"), Fault: nemesis.Kill, Nodes: []string{"n1"}, For: span(t, "1s")},
		{At: span(t, "1s"), Fault: nemesis.Clock, Nodes: []string{"n1"}, For: span(t, "1s")},
		{At: span(t, "1s"), Fault: nemesis.Pause, Nodes: []string{"n9"}, For: span(t, "1s")},
		{At: span(t, "3s"), Fault: nemesis.Failover, FailoverParams: nemesis.FailoverParams{Via: nemesis.ViaPromote}, Nodes: []string{"n1"}},
	}
	err := p.Validate()
	for _, want := range []string{
		`faults[1].offset: must be non-zero`,
		`faults[2].nodes[0]: no node "n9" in independent:1`,
		`faults[3] (failover): topology independent:1 has no replicas`,
	} {
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want ErrPlan saying %q", err, want)
		}
	}
	if got := strings.Join(fieldPaths(err), " "); got != "faults[1].offset faults[2].nodes[0] faults[3]" {
		t.Errorf("field paths %q", got)
	}
	if strings.Contains(err.Error(), "step ") {
		t.Errorf("a step named the old way: %v", err)
	}

	for _, c := range []struct {
		variant, topo, want string
	}{
		{"redlock", "independent:4", "topology: independent:4 has 4 masters: lock redlock needs an odd number of them"},
		{"redlock", "replicated:1", "topology: lock redlock needs independent masters"},
		{"single", "groups:3", "topology: topology groups:3 is for locks over independent masters"},
	} {
		p := basePlan(t, "topology")
		p.Lock.Variant = c.variant
		p.Topology, _ = cluster.ParseTopology(c.topo)
		err := p.Validate()
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), c.want) || strings.Join(fieldPaths(err), " ") != "topology" {
			t.Errorf("%s on %s: %v (paths %q), want %q at topology", c.variant, c.topo, err, fieldPaths(err), c.want)
		}
	}
}
