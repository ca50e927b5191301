package cluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGroupsPromote starts two groups, checks that each replica follows its
// primary, promotes one group's replica and checks that the clients' proxy
// of that group now leads to it while the other group is untouched.
func TestGroupsPromote(t *testing.T) {
	t.Parallel()
	topo, err := ParseTopology("groups:2")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(topo.Nodes(), ","); got != "n1,n1r,n2,n2r" {
		t.Fatalf("nodes %s", got)
	}
	if g, ok := topo.PromoteGroup("n2r"); !ok || strings.Join(g, ",") != "n2,n2r" {
		t.Fatalf("PromoteGroup(n2r) = %v, %v", g, ok)
	}
	if _, ok := topo.PromoteGroup("n3"); ok {
		t.Fatal("PromoteGroup(n3) found a group of groups:2")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, Spec{Topology: topo, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkGroupsPromote(t, ctx, c)
}

// checkGroupsPromote checks on a running groups:2 that each replica
// follows its primary, and that a promotion re-points the clients' proxy
// of its group, losing the write its replica never got, while the other
// group is untouched.
func checkGroupsPromote(t *testing.T, ctx context.Context, c *Cluster) {
	t.Helper()
	view, err := c.ClientView(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(view.Nodes, ","); got != "n1,n2" {
		t.Fatalf("client view nodes %s, want the group slots n1,n2", got)
	}
	g1 := redis.NewClient(&redis.Options{Addr: view.Addrs["n1"], MaxRetries: -1})
	defer g1.Close()
	if err := g1.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	replica := redis.NewClient(&redis.Options{Addr: c.nodes["n1r"].addr, MaxRetries: -1})
	defer replica.Close()
	deadline := time.Now().Add(5 * time.Second)
	for replica.Get(ctx, "k").Val() != "before" {
		if time.Now().After(deadline) {
			t.Fatal("n1r never got the write made on n1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Cut group 1's replication, write, promote: the write is lost.
	if err := c.Cut(Blackhole, Both, ReplicationLink("n1r", "n1")); err != nil {
		t.Fatal(err)
	}
	if err := g1.Set(ctx, "k", "after", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.PrimaryOf(ctx, "n1r"); p != "n1" {
		t.Fatalf("primary of group 1 = %s, want n1", p)
	}
	if err := c.Promote(ctx, "n1r"); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.PrimaryOf(ctx, "n1"); p != "n1r" {
		t.Fatalf("primary of group 1 after the promotion = %s, want n1r", p)
	}
	if p, _ := c.PrimaryOf(ctx, "n2r"); p != "n2" {
		t.Fatalf("primary of group 2 = %s, want n2", p)
	}
	var got string
	for deadline := time.Now().Add(5 * time.Second); ; {
		got, err = g1.Get(ctx, "k").Result()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group 1 through the client's proxy after the promotion: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != "before" {
		t.Fatalf("group 1 reads %q after promoting its lagging replica, want the replica's %q", got, "before")
	}
	if err := g1.Set(ctx, "k2", "x", 0).Err(); err != nil {
		t.Fatalf("write to group 1's new primary: %v", err)
	}
	if _, err := c.Primary(ctx); err == nil {
		t.Fatal("Primary of a groups topology answered one node")
	}
}

// TestProxiesListenOnReservedPorts: every proxy of the harness listens on
// a port outside the kernel's ephemeral range, reserved against other
// tumbler processes until Close. A promotion re-points a group's proxies
// by closing and reopening their listeners on the same port; on a port the
// kernel hands out, an outgoing connection or another listener took it in
// between once ("bind: address already in use", TestGroupsPromote beside
// other tests).
func TestProxiesListenOnReservedPorts(t *testing.T) {
	t.Parallel()
	c := startCluster(t, Spec{Topology: topo(t, "groups:2"), Clients: 2})
	lo, hi := portRange()
	var locks []string
	for _, l := range c.Links() {
		addr, err := c.LinkAddr(l)
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port < lo || port > hi {
			t.Errorf("proxy %s listens on %s, outside the reserved range %d-%d", l, addr, lo, hi)
		}
		lock := filepath.Join(StateDir(), "ports", p+".lock")
		if _, err := os.Stat(lock); err != nil {
			t.Errorf("proxy %s's port %s is not reserved: %v", l, p, err)
		}
		locks = append(locks, lock)
	}
	if len(locks) == 0 {
		t.Fatal("no links")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, lock := range locks {
		if _, err := os.Stat(lock); err == nil {
			t.Errorf("%s still reserved after Close", lock)
		}
	}
}
