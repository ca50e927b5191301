package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/wait"
)

// sentinelQuorum is how many Sentinels must agree that the primary is down.
const sentinelQuorum = 2

// sentinelConfig is a Sentinel's first config file: it watches the current
// primary at its announced (peer proxy) address.
func (c *Cluster) sentinelConfig() []string {
	c.mu.Lock()
	primary := c.primary
	c.mu.Unlock()
	host, port := c.announced(primary)
	return []string{
		fmt.Sprintf("sentinel monitor %s %s %s %d", MasterName, host, port, sentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", MasterName, c.spec.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", MasterName, c.spec.FailoverTimeout.Milliseconds()),
	}
}

// startSentinels starts the Sentinels, makes the clients' proxies to them
// and waits until they know the topology (waitSentinels).
func (c *Cluster) startSentinels(ctx context.Context) error {
	if err := c.each(c.topo.SentinelNames(), func(n *node) error { return c.startNode(ctx, n) }); err != nil {
		return err
	}
	// Clients reach the Sentinels through their own proxies too.
	if err := c.makeProxies(); err != nil {
		return err
	}
	return c.waitSentinels(ctx)
}

// sentinelMaster is SENTINEL MASTER's reply as a map.
func sentinelMaster(ctx context.Context, s *redis.Client) (map[string]string, error) {
	v, err := s.Do(ctx, "SENTINEL", "MASTER", MasterName).Slice()
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		m[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
	}
	return m, nil
}

// waitSentinels waits until every Sentinel knows every replica and the
// other Sentinels: before that a crash of the primary would find no quorum
// and no replica to promote. Sentinels find each other through hello
// messages they publish on the primary every 2 s; for the wait, the period
// is cut to 100 ms (SENTINEL DEBUG, Redis 7) and then put back, so the
// Sentinels behave as usual during the run.
func (c *Cluster) waitSentinels(ctx context.Context) error {
	names := c.topo.SentinelNames()
	restore := map[string]string{}
	for _, name := range names {
		s := c.nodes[name].admin
		if v, err := s.Do(ctx, "SENTINEL", "DEBUG").Slice(); err == nil {
			for i := 0; i+1 < len(v); i += 2 {
				if strings.EqualFold(fmt.Sprint(v[i]), "publish-period") {
					restore[name] = fmt.Sprint(v[i+1])
				}
			}
		}
		if restore[name] != "" {
			_ = s.Do(ctx, "SENTINEL", "DEBUG", "publish-period", "100").Err()
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, name := range names {
		s := c.nodes[name]
		for {
			m, err := sentinelMaster(ctx, s.admin)
			if err == nil && m["num-slaves"] == strconv.Itoa(c.topo.N) && m["num-other-sentinels"] == strconv.Itoa(SentinelCount-1) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("sentinel %s did not see %d replicas and %d other sentinels in time (last: %v, %v)%s",
					name, c.topo.N, SentinelCount-1, m, err, tailOf(c.prov.LogFile(name)))
			}
			if err := wait.For(ctx, 10*time.Millisecond); err != nil {
				return err
			}
		}
	}
	for name, period := range restore {
		if err := c.nodes[name].admin.Do(ctx, "SENTINEL", "DEBUG", "publish-period", period).Err(); err != nil {
			return fmt.Errorf("sentinel %s: restore publish-period %s: %w", name, period, err)
		}
	}
	return nil
}

// nodeAt maps an address Sentinel reports (a peer proxy's) to a node name.
func (c *Cluster) nodeAt(host, port string) (string, bool) {
	addr := net.JoinHostPort(host, port)
	for _, name := range c.order {
		if a := c.announceAddr(name); a != "" && a == addr {
			return name, true
		}
	}
	return "", false
}

// sentinelViews asks every running Sentinel which node it takes for the
// primary and whether it is failing over. Sentinels that do not answer
// within a second (down, paused, cut) are left out.
func (c *Cluster) sentinelViews(ctx context.Context) (primaries map[string]string, failingOver bool) {
	primaries = map[string]string{}
	for _, name := range c.topo.SentinelNames() {
		s := c.nodes[name]
		if !c.Up(name) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		addr, err := s.admin.Do(sctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
		var m map[string]string
		if err == nil {
			m, err = sentinelMaster(sctx, s.admin)
		}
		cancel()
		if err != nil || len(addr) != 2 {
			continue
		}
		if strings.Contains(m["flags"], "failover_in_progress") {
			failingOver = true
		}
		if n, ok := c.nodeAt(addr[0], addr[1]); ok {
			primaries[name] = n
		} else {
			primaries[name] = net.JoinHostPort(addr[0], addr[1]) // not a node we know: say so
		}
	}
	return primaries, failingOver
}

// Primary is the current primary of a replicated topology: with Sentinels,
// the node most of the answering Sentinels name; without, the node the
// harness last made primary (at start, p; then Promote's).
func (c *Cluster) Primary(ctx context.Context) (string, error) {
	if !c.topo.Traits().OnePrimary {
		return "", fmt.Errorf("primary: %s has no primary", c.topo)
	}
	if !c.topo.Sentinels {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.primary, nil
	}
	views, _ := c.sentinelViews(ctx)
	if len(views) == 0 {
		return "", fmt.Errorf("primary: no sentinel answered")
	}
	count := map[string]int{}
	best := ""
	for _, p := range views {
		count[p]++
		if count[p] > count[best] || (count[p] == count[best] && p < best) {
			best = p
		}
	}
	if _, ok := c.nodes[best]; !ok {
		return "", fmt.Errorf("primary: sentinels name %s, which is no node of this cluster", best)
	}
	return best, nil
}

func (c *Cluster) needSentinels(op string) error {
	if !c.topo.Sentinels {
		return fmt.Errorf("%s: topology %s has no sentinels (use replicated:R+sentinels)", op, c.topo)
	}
	if c.closed.Load() {
		return fmt.Errorf("%s: cluster closed", op)
	}
	return nil
}

// SentinelFailover asks a Sentinel to fail over now (SENTINEL FAILOVER,
// which needs no agreement that the primary is down). It returns once a
// Sentinel accepted; WaitFailover waits for the outcome.
func (c *Cluster) SentinelFailover(ctx context.Context) error {
	if err := c.needSentinels("sentinel failover"); err != nil {
		return err
	}
	var errs []error
	for _, name := range c.topo.SentinelNames() {
		if !c.Up(name) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.nodes[name].admin.Do(sctx, "SENTINEL", "FAILOVER", MasterName).Err()
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return fmt.Errorf("sentinel failover: no sentinel accepted: %w", errors.Join(errs...))
}

// WaitFailover waits until the Sentinels have failed over away from from:
// every answering Sentinel (at least a quorum) names the same other node,
// none has a failover in progress, and that node says it is a master.
// Then it points every other running data node at the new primary through
// its own replication proxy (Sentinel pointed them at the peer proxy), so
// replication links can still be cut one by one, and returns the new
// primary. Sentinel does not undo this within failover-timeout. A replica
// that cannot sync from the new primary (its peer link cut, say) keeps the
// leader's failover open until failover-timeout, and WaitFailover waiting
// until ctx ends.
//
// In a Redis Cluster it waits until another node of from's shard is a
// master serving the shard's slots, and returns it; the cluster re-points
// the shard's other nodes itself. A topology that fails over neither way
// has nothing to wait for.
func (c *Cluster) WaitFailover(ctx context.Context, from string) (string, error) {
	return c.kind.waitFailover(ctx, c, from)
}

// waitSentinelFailover is WaitFailover with Sentinels.
func (c *Cluster) waitSentinelFailover(ctx context.Context, from string) (string, error) {
	if err := c.needSentinels("wait for failover"); err != nil {
		return "", err
	}
	if _, err := c.node("wait for failover", from, true); err != nil {
		return "", err
	}
	for {
		views, busy := c.sentinelViews(ctx)
		if p, ok := agreed(views); ok && !busy && p != from && len(views) >= sentinelQuorum {
			n := c.nodes[p]
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			role, err := n.admin.Do(rctx, "ROLE").Slice()
			cancel()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return p, c.follow(ctx, p)
			}
		}
		if err := wait.For(ctx, 50*time.Millisecond); err != nil {
			return "", fmt.Errorf("wait for failover from %s: %w (sentinels say %v; %s)", from, err, views, c.sentinelFlags())
		}
	}
}

// sentinelFlags is each answering Sentinel's flags for the primary (s_down,
// o_down, failover_in_progress), for an error that must say why no
// failover came: "flags: s1 s_down,o_down,master, s2 …".
func (c *Cluster) sentinelFlags() string {
	var out []string
	for _, name := range c.topo.SentinelNames() {
		if !c.Up(name) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := sentinelMaster(ctx, c.nodes[name].admin)
		cancel()
		if err != nil {
			out = append(out, name+" "+err.Error())
			continue
		}
		out = append(out, name+" "+m["flags"])
	}
	return "flags: " + strings.Join(out, ", ")
}

func agreed(views map[string]string) (string, bool) {
	p := ""
	for _, v := range views {
		if p != "" && v != p {
			return "", false
		}
		p = v
	}
	return p, p != ""
}

// Promote makes a replica the primary by hand, the way an operator would
// without Sentinel: in a replicated topology the primary, in a groups
// topology the primary of its group (see the kinds' promote). A Redis
// Cluster promotes by ClusterFailover, and independent masters have no
// replicas.
func (c *Cluster) Promote(ctx context.Context, name string) error {
	return c.kind.promote(ctx, c, name)
}

// PrimaryOf is the primary of node's group: in a groups topology the
// group's, in a Redis Cluster the shard's (the node that serves its slots
// now), in a replicated one the topology's (Primary).
func (c *Cluster) PrimaryOf(ctx context.Context, node string) (string, error) {
	return c.kind.primaryOf(ctx, c, node)
}

func (c *Cluster) sentinelDo(ctx context.Context, name string, args ...any) error {
	if !c.Up(name) {
		return fmt.Errorf("%s is down and keeps its old view", name)
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.nodes[name].admin.Do(sctx, args...).Err(); err != nil {
		return fmt.Errorf("%s: %v: %w", name, args, err)
	}
	return nil
}
