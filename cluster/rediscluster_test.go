package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/internal/field"
)

func TestParseClusterTopology(t *testing.T) {
	for in, want := range map[string]Topology{
		"cluster:3":     {Kind: RedisCluster, N: 3},
		"cluster:3+1":   {Kind: RedisCluster, N: 3, Replicas: 1},
		"cluster:2 + 2": {Kind: RedisCluster, N: 2, Replicas: 2},
	} {
		got, err := ParseTopology(in)
		if err != nil || got != want {
			t.Errorf("ParseTopology(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, _ := ParseTopology(got.String()); back != got {
			t.Errorf("%q does not round-trip: %q", in, got.String())
		}
	}
	for in, want := range map[string]string{
		"cluster:0":           "1 to 5 shards",
		"cluster:3+3":         "0 to 2 replicas",
		"cluster:3+x":         "not a number of replicas",
		"cluster:3+sentinels": "not a number of replicas",
		"replicated:1+1":      `unknown addition "1"`,
	} {
		if _, err := ParseTopology(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTopology(%q) = %v, want an error with %q", in, err, want)
		}
	}
	tp := topo(t, "cluster:2+1")
	if got := strings.Join(tp.Nodes(), ","); got != "n1,n1r1,n2,n2r1" {
		t.Errorf("nodes %s", got)
	}
	if got := strings.Join(tp.Masters(), ","); got != "n1,n2" {
		t.Errorf("masters %s", got)
	}
	if err := tp.CheckLink(1, "bus->n2r1"); err != nil {
		t.Error(err)
	}
	if err := tp.CheckLink(1, "n1r1->n1"); err == nil || !strings.Contains(err.Error(), "bus->node") {
		t.Errorf("replication pair link in a cluster: %v", err)
	}
}

func TestKeySlot(t *testing.T) {
	// Values from CLUSTER KEYSLOT on Redis 7.0.
	for key, want := range map[string]int{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443, "a{}b": 13694, "tumbler:0": 8139, "tumbler:2": 16265} {
		if got := KeySlot(key); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if lo, hi := ShardSlots(3, 3); lo != 10922 || hi != 16383 {
		t.Errorf("shard 3 of 3: %d-%d", lo, hi)
	}
}

// clusterClient is client i's cluster client: seeded with its proxies,
// redirections routed through them.
func clusterClient(t *testing.T, c *Cluster, i int) *redis.ClusterClient {
	t.Helper()
	v, err := c.ClientView(i)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Cluster {
		t.Fatal("view of a cluster topology does not say cluster")
	}
	var seeds []string
	for _, x := range v.Nodes {
		seeds = append(seeds, v.Addrs[x])
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Dialer: v.Dialer(nil), MaxRedirects: 3,
		ReadTimeout: time.Second, DialTimeout: time.Second, DisableIdentity: true, Protocol: 2,
		ClusterStateReloadInterval: 200 * time.Millisecond})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func TestRedisClusterFormsAndFailsOver(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "cluster:3+1"), Clients: 2})
	ctx := testCtx(t, 60*time.Second)

	// Every slot served, every node a member.
	cc := clusterClient(t, c, 0)
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(slots) != 3 {
		t.Fatalf("CLUSTER SLOTS has %d ranges, want 3: %v", len(slots), slots)
	}
	// Redirections follow the announced addresses: client 0's proxies
	// carry every command (a cut of its links to the key's shard stops it).
	key := "tumbler:0"
	shard, ok := c.Topology().KeyShard(key)
	if !ok {
		t.Fatal("no shard for the key")
	}
	if err := cc.Set(ctx, key, "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := c.Values(ctx, key, time.Second); got[shard] != "a" {
		t.Fatalf("the key is not on %s: %v", shard, got)
	}
	if err := c.Cut(Reset, Both, ClientLink(0, shard)); err != nil {
		t.Fatal(err)
	}
	if err := cc.Set(ctx, key, "b", 0).Err(); err == nil {
		t.Fatalf("SET through a cut link to %s succeeded", shard)
	}
	if err := c.Heal(ClientLink(0, shard)); err != nil {
		t.Fatal(err)
	}

	// Replication cut, the primary killed: the cluster promotes the
	// replica, which never saw the last write.
	replica := shard + "r1"
	if err := c.Cut(Blackhole, Both, PeerLink(shard)); err != nil {
		t.Fatal(err)
	}
	if err := cc.Set(ctx, key, "lost", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(shard); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	p, err := c.WaitFailover(ctx, shard)
	if err != nil {
		t.Fatal(err)
	}
	if p != replica {
		t.Fatalf("failover to %s, want %s", p, replica)
	}
	t.Logf("%s took over in %v", p, time.Since(t0).Round(time.Millisecond))
	if got, err := c.PrimaryOf(ctx, shard); err != nil || got != replica {
		t.Fatalf("PrimaryOf(%s) = %s, %v", shard, got, err)
	}
	if err := c.Heal(PeerLink(shard)); err != nil {
		t.Fatal(err)
	}
	var v string
	for deadline := time.Now().Add(5 * time.Second); ; {
		v, err = cc.Get(ctx, key).Result()
		if err == nil || err == redis.Nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v == "lost" {
		t.Fatalf("the promoted replica has the write made while replication was cut")
	}
	if v != "a" {
		t.Fatalf("GET after the failover = %q, %v; want the last replicated value a", v, err)
	}

	// The old primary comes back as a replica of the new one; a takeover
	// gives it the slots back.
	if err := c.StartNode(ctx, shard); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c.clusterReady(ctx, c.nodes[shard]) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never rejoined: %s", shard, c.clusterReady(ctx, c.nodes[shard]))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.ClusterFailover(ctx, shard, FailoverTakeover); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if p, err := c.WaitFailover(wctx, replica); err != nil || p != shard {
		t.Fatalf("takeover: %s, %v", p, err)
	}
	if err := c.ClusterFailover(ctx, shard, "sideways"); err == nil || !strings.Contains(err.Error(), "want coordinated, force or takeover") {
		t.Fatalf("bad mode: %v", err)
	}
}

// A Redis Cluster refuses TLS through CheckTopology, the one rule Start
// and a plan's validation both ask, naming the plan's field; other kinds
// take TLS, and a cluster without TLS passes.
func TestRedisClusterRefusesTLS(t *testing.T) {
	tls := &access.Config{TLS: &access.TLS{}}
	spec := Spec{Topology: topo(t, "cluster:1"), Clients: 1, Access: tls}
	err := spec.CheckTopology()
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Path != "access.tls" || !strings.HasPrefix(err.Error(), "access.tls: TLS to a Redis Cluster (topology cluster:1)") {
		t.Errorf("CheckTopology with TLS: %v, want a field error at access.tls", err)
	}
	for _, ok := range []Spec{{Topology: topo(t, "cluster:1")}, {Topology: topo(t, "independent:1"), Access: tls}, {Topology: topo(t, "replicated:1+sentinels"), Access: tls}} {
		if err := ok.CheckTopology(); err != nil {
			t.Errorf("%s, TLS %v: %v", ok.Topology, ok.Access != nil, err)
		}
	}
	dir := filepath.Join(t.TempDir(), "cluster")
	_, err = Start(testCtx(t, 10*time.Second), Spec{Topology: topo(t, "cluster:1"), Clients: 1, Access: tls, Dir: dir})
	if !errors.As(err, &fe) || fe.Path != "access.tls" {
		t.Fatalf("Start with TLS: %v", err)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("Start refused TLS after making %s (%v)", dir, serr)
	}
}
