package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

func start(t *testing.T, spec cluster.Spec) *cluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func deployment(t *testing.T, c *cluster.Cluster) Deployment {
	d := Deployment{Nodes: map[string]string{}, Sentinels: map[string]string{}}
	for _, n := range c.Nodes() {
		d.Nodes[n], _ = c.Addr(n)
	}
	for _, s := range c.Sentinels() {
		d.Sentinels[s], _ = c.Addr(s)
	}
	return d
}

func findings(r Report, check string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

// A primary with a replica and Sentinels, no persistence, an evicting
// memory limit, no min-replicas and a down-after shorter than the TTL:
// every one of those is named, with the rows that show it.
func TestAuditRisky(t *testing.T) {
	topo, _ := cluster.ParseTopology("replicated:1+sentinels")
	c := start(t, cluster.Spec{Topology: topo, NodeArgs: []string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-lru"}})
	d := deployment(t, c)
	d.TTL = 10 * time.Second
	rep, err := Run(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Risky() || rep.Shape != "sentinel" || !strings.HasPrefix(rep.Server, "redis 7.") {
		t.Fatalf("report %+v", rep)
	}
	failover := []string{"single-failover", "redis-py-failover", "symfony-redisstore-failover", "laravel-lock-failover"}
	for check, want := range map[string][]string{
		"persistence":         {"single-restart-empty", "symfony-combined-restart-empty"},
		"eviction":            {"lock-key-evicted"},
		"failover-writes":     failover,
		"replica-persistence": {"single-restart-empty"},
		"sentinel-timing":     failover,
	} {
		fs := findings(rep, check)
		for _, row := range want {
			if len(fs) == 0 || !fs[0].Risky || !slices.Contains(fs[0].Rows, row) {
				t.Errorf("%s: %+v, want a risk naming %s", check, fs, row)
			}
		}
	}
	if fs := findings(rep, "failover-writes"); len(fs) != 1 || fs[0].Node != "p" {
		t.Errorf("failover-writes is judged on the primary only: %+v", fs)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "RISK eviction on p: maxmemory 104857600, maxmemory-policy volatile-lru") ||
		!strings.Contains(buf.String(), "reproduce: tumbler reproduce single-failover") {
		t.Errorf("text report:\n%s", buf.String())
	}
}

// A standalone node with appendfsync always, no memory limit and a clock
// in step: nothing risky. The same node with min-replicas set but a
// replica is still a failover risk, bounded.
func TestAuditSafe(t *testing.T) {
	topo, _ := cluster.ParseTopology("independent:1")
	c := start(t, cluster.Spec{Topology: topo, Persistence: cluster.AOFAlways})
	rep, err := Run(context.Background(), deployment(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Risky() || rep.Shape != "standalone" {
		t.Fatalf("a safe node judged risky: %+v", rep.Findings)
	}
	for _, check := range []string{"persistence", "eviction", "clock"} {
		if len(findings(rep, check)) != 1 {
			t.Errorf("no %s finding: %+v", check, rep.Findings)
		}
	}

	rtopo, _ := cluster.ParseTopology("replicated:1")
	rc := start(t, cluster.Spec{Topology: rtopo, Persistence: cluster.AOFAlways,
		NodeArgs: []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "4"}})
	rep, err = Run(context.Background(), deployment(t, rc))
	if err != nil {
		t.Fatal(err)
	}
	fs := findings(rep, "failover-writes")
	if len(fs) != 1 || !fs[0].Risky || !slices.Contains(fs[0].Rows, "sentinel-split-brain-min-replicas") || !strings.Contains(fs[0].Why, "(4s") {
		t.Errorf("min-replicas: %+v", fs)
	}
	if len(findings(rep, "replica-persistence")) != 0 {
		t.Errorf("replicas with AOF flagged: %+v", findings(rep, "replica-persistence"))
	}
}

// A wrong password is ErrAccess naming the node; a closed port is
// ErrUnreachable.
func TestAuditCannotRead(t *testing.T) {
	t.Setenv("TUMBLER_AUDIT_PW", "right")
	topo, _ := cluster.ParseTopology("independent:1")
	c := start(t, cluster.Spec{Topology: topo,
		Access: &access.Config{Client: access.Credentials{Password: access.Secret{Env: "TUMBLER_AUDIT_PW"}}}})
	d := deployment(t, c)
	d.Login = access.NewLogin("", "wrong", nil)
	if _, err := Run(context.Background(), d); !errors.Is(err, cluster.ErrAccess) || !strings.Contains(err.Error(), "n1 at ") || strings.Contains(err.Error(), "right") {
		t.Fatalf("wrong password: %v", err)
	}
	d.Login = access.NewLogin("", "right", nil)
	if _, err := Run(context.Background(), d); err != nil {
		t.Fatalf("right password: %v", err)
	}
	d.Nodes["n2"] = "127.0.0.1:1"
	if _, err := Run(context.Background(), d); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "n2") {
		t.Fatalf("closed port: %v", err)
	}
}

// A node whose clock runs 20 % fast is named with the drift rows; one at
// the host's pace is measured and not risky.
func TestAuditClockRate(t *testing.T) {
	topo, _ := cluster.ParseTopology("independent:2")
	c := start(t, cluster.Spec{Topology: topo, Clock: true})
	if err := c.SetClockDrift("n1", clockshim.Rate(1.2, clockshim.Mono())); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), deployment(t, c))
	if err != nil {
		t.Fatal(err)
	}
	fs := findings(rep, "clock-rate")
	if len(fs) != 2 {
		t.Fatalf("clock-rate findings: %+v", fs)
	}
	for _, f := range fs {
		rate, within := measuredPace(t, f.Setting)
		switch f.Node {
		case "n1":
			if !f.Risky || !slices.Contains(f.Rows, "redlock-drift-beyond-factor") || math.Abs(rate-1.2) > within {
				t.Errorf("n1 at 1.2×: %+v", f)
			}
		case "n2":
			if f.Risky || math.Abs(rate-1) > within {
				t.Errorf("n2 at the host's pace: %+v", f)
			}
		}
	}
}

// measuredPace reads the pace and its error bar back from a clock-rate
// finding's setting: the audit measures over a quarter second, so a pace
// is only known to within the error it states (0.9973× ±1.09% is the
// host's pace), and a test holds it to that, not to its fourth digit.
func measuredPace(t *testing.T, setting string) (rate, within float64) {
	t.Helper()
	var span string
	var pct float64
	if _, err := fmt.Sscanf(setting, "wall clock runs at %f× the auditor's (over %s ±%f%%)", &rate, &span, &pct); err != nil {
		t.Fatalf("clock-rate setting %q: %v", setting, err)
	}
	return rate, pct / 100
}

// A memory limit under noeviction is named without a risk; a node whose
// last save failed while stop-writes-on-bgsave-error is yes refuses every
// write now, which is a risk pointing at refused-writes-release.
func TestAuditMemoryAndRefusedWrites(t *testing.T) {
	topo, _ := cluster.ParseTopology("independent:1")
	c := start(t, cluster.Spec{Topology: topo, NodeArgs: []string{"--maxmemory", "100mb", "--maxmemory-policy", "noeviction"}})
	rep, err := Run(context.Background(), deployment(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if fs := findings(rep, "eviction"); len(fs) != 1 || fs[0].Risky || !slices.Contains(fs[0].Rows, "noeviction-oom") {
		t.Errorf("noeviction: %+v", fs)
	}
	if fs := findings(rep, "refused-writes"); len(fs) != 0 {
		t.Errorf("a node without save points cannot refuse writes for a failed save: %+v", fs)
	}
	ctx := context.Background()
	if err := c.RefuseWrites(ctx, "n1", cluster.RefuseMisconf); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.AcceptWrites(ctx, "n1") }()
	rep, err = Run(ctx, deployment(t, c))
	if err != nil {
		t.Fatal(err)
	}
	fs := findings(rep, "refused-writes")
	if len(fs) != 1 || !fs[0].Risky || !slices.Contains(fs[0].Rows, "refused-writes-release") || !strings.Contains(fs[0].Setting, "last save err") {
		t.Errorf("a node refusing writes after a failed save: %+v", fs)
	}
}
