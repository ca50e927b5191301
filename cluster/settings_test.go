package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// configOf reads one setting of node.
func configOf(t *testing.T, c *Cluster, node, key string) string {
	t.Helper()
	m, err := direct(t, c, node).ConfigGet(testCtx(t, 5*time.Second), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m[key]
}

func fillers(t *testing.T, c *Cluster, node string) int {
	t.Helper()
	keys, err := direct(t, c, node).Keys(testCtx(t, 5*time.Second), FillerPrefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

// Under volatile-ttl a push evicts the key nearest its expiry — a lock
// key, whose TTL is the shortest — and keeps the fillers, which have none;
// the heal restores the settings and deletes the fillers.
func TestSqueezeVolatileTTLEvictsTheLockKey(t *testing.T) {
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", time.Second)
	if err := c.Squeeze(ctx, "n1", "volatile-ttl"); err != nil {
		t.Fatal(err)
	}
	if got := configOf(t, c, "n1", "maxmemory-policy"); got != "volatile-ttl" {
		t.Fatalf("policy during the squeeze: %q", got)
	}
	if ok, err := cl.SetNX(ctx, "tumbler:0", "holder", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX during the squeeze: %v %v", ok, err)
	}
	if err := c.PushMemory(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if n, err := cl.Exists(ctx, "tumbler:0").Result(); err != nil || n != 0 {
		t.Fatalf("after a push the lock key is still there (%d, %v): volatile-ttl should evict it first", n, err)
	}
	if ok, err := cl.SetNX(ctx, "tumbler:0", "second", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("a second holder could not take the evicted lock: %v %v", ok, err)
	}
	filled := fillers(t, c, "n1")
	if filled == 0 {
		t.Fatal("no filler keys after the squeeze")
	}
	if err := c.Unsqueeze(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := configOf(t, c, "n1", "maxmemory"); got != "0" {
		t.Errorf("maxmemory after the heal: %q, want 0", got)
	}
	if got := configOf(t, c, "n1", "maxmemory-policy"); got != "noeviction" {
		t.Errorf("policy after the heal: %q, want noeviction", got)
	}
	if n := fillers(t, c, "n1"); n != 0 {
		t.Errorf("%d of %d fillers left after the heal", n, filled)
	}
}

// Under noeviction the node refuses SET with OOM, keeps the lock key, and
// still runs a compare-and-delete release: DEL needs no memory.
func TestSqueezeNoEvictionRefusesSetNotDel(t *testing.T) {
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", time.Second)
	if ok, err := cl.SetNX(ctx, "tumbler:0", "holder", 30*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX: %v %v", ok, err)
	}
	if err := c.Squeeze(ctx, "n1", NoEviction); err != nil {
		t.Fatal(err)
	}
	err := cl.SetNX(ctx, "tumbler:1", "other", 30*time.Second).Err()
	var re redis.Error
	if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET NX under noeviction when full: %v, want an OOM error reply", err)
	}
	release := redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)
	if n, err := release.Run(ctx, cl, []string{"tumbler:0"}, "holder").Int(); err != nil || n != 1 {
		t.Fatalf("compare-and-delete under noeviction: %d, %v; DEL needs no memory", n, err)
	}
	if err := c.Unsqueeze(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetNX(ctx, "tumbler:1", "other", 30*time.Second).Err(); err != nil {
		t.Fatalf("SET NX after the heal: %v", err)
	}
}

// MISCONF and READONLY refuse writes with their error replies; the heal
// lets writes through again and puts the settings back.
func TestRefuseWrites(t *testing.T) {
	c := startCluster(t, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, 30*time.Second)
	cl := through(t, c, 0, "n1", time.Second)
	dir := configOf(t, c, "n1", "dir")
	for _, r := range Refusals {
		t.Run(string(r), func(t *testing.T) {
			if err := c.RefuseWrites(ctx, "n1", r); err != nil {
				t.Fatal(err)
			}
			err := cl.Set(ctx, "tumbler:0", "x", time.Minute).Err()
			want := map[Refusal]string{RefuseMisconf: "MISCONF", RefuseReadonly: "READONLY"}[r]
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("SET while refusing (%s): %v, want a %s error reply", r, err, want)
			}
			if err := c.RefuseWrites(ctx, "n1", r); err == nil {
				t.Fatal("a second refusal on the same node was accepted")
			}
			if err := c.AcceptWrites(ctx, "n1"); err != nil {
				t.Fatal(err)
			}
			if err := cl.Set(ctx, "tumbler:0", "x", time.Minute).Err(); err != nil {
				t.Fatalf("SET after the heal: %v", err)
			}
			if got := configOf(t, c, "n1", "dir"); got != dir {
				t.Errorf("dir after the heal: %q, want %q", got, dir)
			}
			if got := configOf(t, c, "n1", "save"); got != "" {
				t.Errorf("save after the heal: %q, want none", got)
			}
		})
	}
}
