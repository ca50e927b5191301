package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// Failover moves the primary of a replicated topology (see Via),
// optionally after cutting replication so the last writes are lost.
const Failover Kind = "failover"

// Via says how a failover step moves the primary.
type Via string

const (
	// ViaKill SIGKILLs the primary and waits for Sentinel to promote a
	// replica; at heal the old primary starts again as a replica.
	ViaKill Via = "kill"
	// ViaSentinel asks Sentinel to fail over (SENTINEL FAILOVER) and waits.
	ViaSentinel Via = "sentinel"
	// ViaPromote promotes the replica named in Nodes by hand.
	ViaPromote Via = "promote"

	// In a Redis Cluster, ViaKill SIGKILLs the shard's primary and the
	// cluster promotes a replica; these ask a replica to take over with
	// CLUSTER FAILOVER (cluster.ClusterFailoverMode): coordinated (no
	// option: it waits for the primary to catch it up), force (no waiting
	// for the primary, still the majority's votes) and takeover (no
	// agreement at all).
	ViaCoordinated = Via(cluster.FailoverCoordinated)
	ViaForce       = Via(cluster.FailoverForce)
	ViaTakeover    = Via(cluster.FailoverTakeover)
)

// primaryFinder finds the primary of a node's group or shard of the
// moment; *cluster.Cluster is one.
type primaryFinder interface {
	PrimaryOf(ctx context.Context, node string) (string, error)
}

// shardControl is what a failover in a Redis Cluster needs beyond
// Cluster; *cluster.Cluster has it.
type shardControl interface {
	primaryFinder
	ClusterFailover(ctx context.Context, replica string, mode cluster.ClusterFailoverMode) error
}

type failover struct{ kindBase }

func init() { register(70, failover{}) }

func (failover) kind() Kind { return Failover }

// traits: it kills or demotes the primary and promotes a replica, which may lack a key the old one held.
func (failover) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.PromotesReplica, history.LosesKey}
}

func (failover) doc() string {
	return "moves the primary (\"via\" kill: SIGKILL it, Sentinel — or a Redis Cluster — promotes a replica; sentinel: SENTINEL FAILOVER; promote: the replica in \"nodes\", in groups one per group, one after the other; in a cluster coordinated, force or takeover: CLUSTER FAILOVER on a replica of the shard of \"nodes\" or of \"key\"), with \"cut_replication\" first cutting replication so the grant it waits for and \"lag\" are lost; the new roles stay"
}

func (failover) fields() []string { return []string{"via", "nodes", "cut_replication", "lag"} }

func (failover) duration() forRule { return forAny }

func (failover) needs() needs { return needs{replicated: true} }

func (failover) targets() targetKind { return targetsNone }

func (failover) sharing() sharing {
	return sharing{allowance: failoverAllowance + startAllowance}
}

// allowanceOf: a promotion by hand is done in milliseconds; Sentinel takes
// seconds to elect a primary, and a killed primary must start again.
func (failover) allowanceOf(c *compiled) time.Duration {
	if c.Via == ViaPromote {
		return startAllowance
	}
	return failoverAllowance + startAllowance
}

// placed: a promotion by hand makes its replica the primary (of its
// group) the next failover must move from; after Sentinel's failover the
// primary is not known in advance.
func (failover) placed(g *gen, st Step) {
	if st.Via == ViaPromote {
		for _, n := range st.Nodes {
			if grp, ok := g.o.Topology.PromoteGroup(n); ok {
				g.primaries[grp[0]] = n
			}
		}
		return
	}
	for _, grp := range g.o.Topology.PromoteGroups() {
		delete(g.primaries, grp[0])
	}
}

// ownsTrigger: with cut_replication the failover cuts replication first
// and waits for its grant itself, so the grant is never replicated.
func (failover) ownsTrigger(c *compiled) bool { return c.CutReplication }

func (failover) check(c *compiled, s Setup) error {
	ways := s.Topology.Traits().Failovers
	if ways.Has(cluster.ByCluster) {
		return checkShardFailover(c, s)
	}
	switch c.Via {
	case ViaCoordinated, ViaForce, ViaTakeover:
		return field.Errorf("via", "%q is a Redis Cluster's CLUSTER FAILOVER; topology %s has none", c.Via, s.Topology)
	case ViaKill, ViaSentinel:
		if !ways.Has(cluster.BySentinel) {
			return field.Errorf("via", "%q needs Sentinels (topology %s+sentinels); use via %q", c.Via, s.Topology, ViaPromote)
		}
		if len(c.Nodes) > 0 {
			return field.Errorf("nodes", "%v are for via %q; via %q lets Sentinel choose the replica", field.Self, ViaPromote, c.Via)
		}
	case ViaPromote:
		if len(s.Topology.PromoteGroups()) > 1 && len(c.Nodes) > 1 {
			seen := map[string]bool{}
			for _, n := range c.Nodes {
				grp, ok := s.Topology.PromoteGroup(n)
				if !ok {
					continue // checkNodes refused a node of no group
				}
				g := grp[0]
				if seen[g] {
					return field.Errorf("nodes", "%s names group %s twice; via %q promotes one node per group", list(c.Nodes), g, c.Via)
				}
				seen[g] = true
			}
		} else if len(c.Nodes) != 1 {
			return field.Errorf("nodes", "via %q needs the one replica to promote in %v (groups: one per group)", c.Via, field.Self)
		}
	case "":
		return field.Errorf("via", "%v is missing: %q, %q or %q", field.Self, ViaKill, ViaSentinel, ViaPromote)
	default:
		return field.Errorf("via", "%q unknown (%s, %s or %s)", c.Via, ViaKill, ViaSentinel, ViaPromote)
	}
	return checkKillAndLag(c, s)
}

// checkKillAndLag are the rules every failover shares: a kill needs a
// provider that kills, a lag needs a cut.
func checkKillAndLag(c *compiled, s Setup) error {
	if c.Via == ViaKill {
		if err := s.provides(cluster.CanKill); err != nil {
			return field.Errorf("via", "%q: %w", ViaKill, err)
		}
	}
	if !c.Lag.IsZero() && !c.CutReplication {
		return field.Errorf("lag", "is how long replication stays cut before the failover; it needs %v", field.Ref("cut_replication"))
	}
	return nil
}

func (failover) apply(r *runner, i int, _ target) error {
	st := r.steps[i]
	c := st.c
	if r.failover >= 0 {
		return fmt.Errorf("%s is still failing over", r.steps[r.failover].c.name())
	}
	tr := r.setup.Topology.Traits()
	if tr.Failovers.Has(cluster.ByCluster) {
		return applyShardFailover(r, i)
	}
	w, err := r.world(tr.OnePrimary)
	if err != nil {
		return err
	}
	// olds[k] is the primary targets[k] takes over from: the primary, or
	// in groups the primary of its group.
	var olds, targets, candidates []string
	if c.Via == ViaPromote {
		targets, candidates = c.Nodes, c.Nodes
		for _, n := range targets {
			old := w.primary
			if g, ok := r.env.Cluster.(primaryFinder); ok && !tr.OnePrimary {
				if old, err = g.PrimaryOf(r.ctx, n); err != nil {
					return err
				}
			}
			if n == old {
				// Sentinel (or an earlier step) promoted it since the
				// plan was written: nothing to do, as a trigger that
				// finds no target. A generated schedule cannot foresee
				// a spontaneous failover, so this is not a harness error.
				return errSkip{fmt.Sprintf("%s is the primary already", n)}
			}
			olds = append(olds, old)
		}
	} else {
		olds, candidates = []string{w.primary}, w.replicas()
	}
	var cut []string
	if c.CutReplication {
		for k, n := range candidates {
			cut = append(cut, cluster.ReplicationLink(n, olds[min(k, len(olds)-1)]))
		}
	}
	cl := r.env.Cluster
	m := move{olds: olds, candidates: candidates, cut: cut, desc: describeFailover(c, olds, cut), kills: c.Via == ViaKill,
		how: map[Via]string{ViaKill: "kill", ViaSentinel: "request"}[c.Via]}
	m.start = func(ctx context.Context) (string, error) {
		switch c.Via {
		case ViaPromote:
			// One group after the other, as an operator would.
			t0 := time.Now()
			for _, n := range targets {
				if err := cl.Promote(ctx, n); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("%s promoted by hand in %v", list(targets), time.Since(t0).Round(time.Millisecond)), nil
		case ViaKill:
			return "", cl.Kill(olds[0])
		}
		return "", cl.SentinelFailover(ctx)
	}
	return r.startMove(i, m)
}

// move is a failover as resolved at apply time, whatever moves the
// primary: Sentinel, a promotion by hand, or a Redis Cluster.
type move struct {
	olds       []string // the primaries it moves from; a kill or a wait is of the first
	candidates []string // the nodes that may take over
	cut        []string // replication links cut first (cut_replication)
	desc       string
	kills      bool   // start kills olds[0]: the heal starts it again
	how        string // what start did, for the note ("kill")
	// start moves the primary; a non-empty note means the move is complete
	// (a promotion by hand), else WaitFailover waits for it.
	start func(ctx context.Context) (note string, err error)
}

// startMove applies failover step i: it marks the nodes busy, cuts
// replication, and in the background waits for the step's grant and lag,
// starts the move and waits for the new primary.
func (r *runner) startMove(i int, m move) error {
	st := r.steps[i]
	c := st.c
	old := m.olds[0]
	for _, n := range append(slices.Clone(m.olds), m.candidates...) {
		if err := r.busy(n); err != nil {
			return err
		}
	}
	st.fault.Desc = m.desc
	st.fault.Targets = append(slices.Clone(m.olds), m.candidates...)
	r.failover = i
	if m.kills {
		r.owner[old] = i
		st.slow = r.bringUp([]string{old}, "")
	}
	if len(m.cut) > 0 {
		st.undo = append(st.undo, func() error { return r.links.remove(i, m.cut) })
		if err := r.links.add(linkContrib{step: i, cut: cluster.Blackhole, up: true, down: true}, m.cut); err != nil {
			return err
		}
	}
	st.settling = true
	cl := r.env.Cluster
	r.async(func(ctx context.Context) event {
		if c.triggered() { // with a cut: the grant comes while replication is cut
			if _, err := r.waitGrant(ctx, c); err != nil {
				return event{kind: evApplied, step: i, err: err}
			}
		}
		if err := wait.For(ctx, c.span(c.Lag)); err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		t0 := time.Now()
		note, err := m.start(ctx)
		if err != nil || note != "" {
			return event{kind: evApplied, step: i, note: note, err: err}
		}
		wctx, cancel := context.WithTimeout(ctx, FailoverTimeout)
		defer cancel()
		p, err := cl.WaitFailover(wctx, old)
		if err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		return event{kind: evApplied, step: i, note: fmt.Sprintf("%s took over from %s %v after the %s", p, old, time.Since(t0).Round(time.Millisecond), m.how)}
	})
	return nil
}

// describeFailover is the failover's sentence, with the primaries it
// moves from and the replication links it cuts once it applied (none
// before).
func describeFailover(c *compiled, olds, links []string) string {
	primary := "the primary"
	if len(olds) > 0 {
		primary += " " + olds[0]
	}
	if c.topology.Traits().Failovers.Has(cluster.ByCluster) {
		return describeShardFailover(c, "", nil)
	}
	var how string
	switch c.Via {
	case ViaKill:
		how = "kill " + primary + " and let Sentinel fail over"
	case ViaSentinel:
		how = "ask Sentinel to fail over from " + primary
	case ViaPromote:
		how = fmt.Sprintf("promote %s by hand", list(c.Nodes))
	}
	return describeMove(c, how, links)
}

// describeMove is a failover's sentence: how it moves the primary, after
// cutting the links in cut (or replication, unnamed) and waiting for the
// grant and the lag when it does.
func describeMove(c *compiled, how string, cut []string) string {
	if !c.CutReplication {
		return how
	}
	s := "cut replication (blackhole)"
	if len(cut) > 0 {
		s = "cut replication " + list(cut) + " (blackhole)"
	}
	if c.triggered() {
		if c.OnTimeout == OnTimeoutApply {
			s += fmt.Sprintf(", wait up to %v for a grant of %q", c.timeout, c.Key)
		} else {
			s += fmt.Sprintf(", wait for a grant of %q", c.Key)
		}
	}
	if w := c.span(c.After) + c.span(c.Lag); w > 0 {
		s += fmt.Sprintf(", wait %v", w)
	}
	return s + ", then " + how
}

func (failover) describe(c *compiled, _ target) string { return describeFailover(c, nil, nil) }

// draw: at random as the topology allows (Sentinel's kill or request, or a
// promotion by hand), half the time after cutting replication; aimed at
// the lease, mostly with replication cut on the next grant and no more
// than a brief lag, so the new primary never saw the lease — in a majority
// of the groups or more, for a lock on a majority of groups. With Sentinels
// half the failovers are promotions by hand too, while the plan knows the
// primary: one takes milliseconds where Sentinel takes seconds, so the
// holder of the grant still holds when the new primary answers, and it
// cuts replication to the promoted replica only, so a lock that WAITs for
// fewer replicas than there are still gets its acknowledgement from the
// others.
func (failover) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Failover}
	ways := g.o.Topology.Traits().Failovers
	if ways.Has(cluster.ByCluster) {
		return drawShardFailover(g, a)
	}
	rs := g.replicas()
	sentinels := ways.Has(cluster.BySentinel)
	switch {
	case !sentinels && len(rs) == 0:
		return st, false
	case len(g.o.Topology.PromoteGroups()) > 1 && a == aimLease && g.o.Quorum:
		// A lock on a majority of the groups loses a lease only where a
		// majority of them fail over, or more: a lock that asks the
		// groups one after the other and waits at each (RedissonRedLock)
		// stops at the first that still holds the lease.
		m := len(rs)/2 + 1
		st.Via, st.Nodes = ViaPromote, g.pick(rs, m+g.rng.IntN(len(rs)-m+1))
	case !sentinels, len(rs) > 0 && g.rng.IntN(2) == 0:
		st.Via, st.Nodes = ViaPromote, []string{g.oneOf(rs...)}
	default:
		st.Via = Via(g.oneOf(string(ViaKill), string(ViaSentinel)))
	}
	if st.Via == ViaKill && !g.o.Controls.Has(cluster.CanKill) && g.o.Provider != "" {
		st.Via = ViaSentinel
	}
	return st, g.drawCut(&st, a)
}

// drawCut draws a failover's replication cut for its aim: aimed at the
// lease, mostly cut on the next grant with no more than a brief lag, so the
// new primary never saw the lease; at random, half the time, with a lag.
// False for an aim a failover has no shape for.
func (g *gen) drawCut(st *Step, a aim) bool {
	switch a {
	case aimLease:
		if g.rng.IntN(5) > 0 {
			st.CutReplication = true
			if g.rng.IntN(2) == 0 {
				st.Lag = TTLs(g.between(0.01, 0.05))
			}
		}
	case aimAny:
		if g.rng.IntN(2) == 0 {
			st.CutReplication, st.Lag = true, g.mag()
		}
	default:
		return false
	}
	return true
}

// replicas are the nodes a promotion by hand may pick: the replicas of
// the primary of each promote group as the plan's failovers so far leave
// it, none where Sentinel moved it.
func (g *gen) replicas() []string {
	var out []string
	for _, grp := range g.o.Topology.PromoteGroups() {
		p, ok := g.primaries[grp[0]]
		if !ok {
			continue
		}
		for _, n := range grp {
			if n != p {
				out = append(out, n)
			}
		}
	}
	return out
}

// FailoverParams are failover's parameters, embedded in Step.
type FailoverParams struct {
	Via            Via  `json:"via,omitempty"`
	CutReplication bool `json:"cut_replication,omitempty"`
	Lag            Span `json:"lag,omitzero"`
}
