package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// Memory puts nodes under memory pressure for For: a maxmemory just above
// what they use, under maxmemory-policy Policy, filled with keys of the
// harness's own; under an evicting policy they are pushed over the limit
// every Strobe (DefaultPush when none is given).
const Memory Kind = "memory"

// DefaultPush is how often a memory fault under an evicting policy pushes
// its nodes over their limit, as a multiple of the TTL (100 ms in a plan
// without one).
const DefaultPush = 0.25

// settingsTimeout bounds the calls that change or restore a node's
// settings.
const settingsTimeout = 10 * time.Second

type memory struct{ kindBase }

func init() { register(160, memory{}) }

func (memory) kind() Kind { return Memory }

// traits: it fills primaries: under noeviction writes are refused, under an evicting policy keys (a lock's among them) are evicted.
func (memory) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.FillsMemory, history.RefusesWrites, history.LosesKey}
}

func (memory) doc() string {
	return "fills primaries up to a memory limit just above what they used (CONFIG SET maxmemory) under maxmemory-policy \"policy\", with keys outside the locks' key space, for \"for\": under noeviction every write that needs memory is refused (OOM); under an evicting policy the node is pushed over the limit at once and every \"strobe\" (a quarter TTL by default) and evicts by the policy — volatile-ttl a lock key first; the heal restores the settings and deletes the fillers"
}

func (memory) fields() []string { return []string{"nodes", "node", "policy", "strobe"} }

func (memory) targets() targetKind { return targetsNodes }

func (memory) needs() needs { return needs{controls: cluster.CanConfig} }

func (memory) changesSettings() {}

func (memory) check(c *compiled, _ Setup) error {
	if c.Policy == "" {
		return field.Errorf("policy", "%v is missing (a maxmemory-policy: volatile-ttl, allkeys-lru, noeviction, …)", field.Self)
	}
	if err := cluster.ValidMemoryPolicy(c.Policy); err != nil {
		return field.Errorf("policy", "%w", err)
	}
	switch {
	case c.Strobe.IsZero():
	case c.Policy == cluster.NoEviction:
		return field.Errorf("strobe", "pushes an evicting policy's node over its limit; under noeviction the node is full already")
	case c.span(c.Strobe) <= 0 || c.span(c.Strobe) >= c.dur:
		return field.Errorf("strobe", "%q must be positive and shorter than %v %q", c.Strobe, field.Ref("for"), c.For)
	}
	return nil
}

// push is how often the step pushes its nodes over their limit; 0 under
// noeviction.
func (memory) push(c *compiled) time.Duration {
	switch {
	case c.Policy == cluster.NoEviction:
		return 0
	case !c.Strobe.IsZero():
		return c.span(c.Strobe)
	case c.ttl == 0:
		return 100 * time.Millisecond
	}
	return max(time.Duration(float64(c.ttl)*DefaultPush), 10*time.Millisecond)
}

func (m memory) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	c := st.c
	st.nodes = t.nodes
	for _, n := range t.nodes {
		st.undo = append(st.undo, func() error {
			return withTimeout(func(ctx context.Context) error { return r.env.Cluster.Unsqueeze(ctx, n) })
		})
		if err := r.env.Cluster.Squeeze(r.ctx, n, c.Policy); err != nil {
			return err
		}
	}
	if m.push(c) > 0 {
		m.pushAll(r, i)
	}
	return nil
}

// tick pushes the nodes of an active step over their limit again.
func (m memory) tick(r *runner, i int) {
	if r.steps[i].phase == active {
		m.pushAll(r, i)
	}
}

// pushAll pushes the nodes over their limit and schedules the next push.
func (m memory) pushAll(r *runner, i int) {
	st := r.steps[i]
	for _, n := range st.nodes {
		if err := r.env.Cluster.PushMemory(r.ctx, n); err != nil {
			st.errs = append(st.errs, err)
		}
	}
	st.toggles++
	if next := st.base + int64(st.toggles)*int64(m.push(st.c)); next < st.base+int64(st.c.dur) {
		r.push(event{at: next, kind: evTick, step: i})
	}
}

func (m memory) describe(c *compiled, t target) string {
	nodes := nodesText(c, t)
	if d := m.push(c); d > 0 {
		return fmt.Sprintf("fill %s's memory under %s for %v, pushing it over the limit every %v", nodes, c.Policy, c.dur, d)
	}
	return fmt.Sprintf("fill %s's memory under noeviction for %v: writes that need memory are refused (OOM)", nodes, c.dur)
}

// draw: aimed at the lease, the node it rests on (the primary,
// replicated), mostly under volatile-ttl, which evicts the lock key
// first, for about a hold or two; at random, a primary under any policy
// for a magnitude of the TTL.
func (memory) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Memory}
	switch a {
	case aimLease:
		st.Node, st.For = g.leaseNode(), TTLs(g.between(0.5, 2))
		switch x := g.rng.IntN(10); {
		case x < 6:
			st.Policy = "volatile-ttl"
		case x < 8:
			st.Policy = "allkeys-lru"
		default:
			st.Policy = cluster.NoEviction
		}
	case aimAny:
		if !g.aimPrimary(&st) {
			return st, false
		}
		st.For, st.Policy = g.mag(), g.oneOf(cluster.MemoryPolicies...)
	default:
		return st, false
	}
	return st, true
}

// aimPrimary aims a node fault at a primary drawn at random: of a
// topology whose primaries move, one the plan's failovers so far leave a
// primary (none where Sentinel moved it: false); else one of its masters.
func (g *gen) aimPrimary(st *Step) bool {
	var cands []string
	if groups := g.o.Topology.PromoteGroups(); len(groups) > 0 {
		for _, grp := range groups {
			if p, ok := g.primaries[grp[0]]; ok {
				cands = append(cands, p)
			}
		}
	} else {
		cands = g.o.Topology.Masters()
	}
	if len(cands) == 0 {
		return false
	}
	st.Nodes = g.pick(cands, 1)
	return true
}

// withTimeout runs a heal's call to the cluster with a bounded context of
// its own: a heal may run after the run's context ended.
func withTimeout(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), settingsTimeout)
	defer cancel()
	return f(ctx)
}

// MemoryParams are memory's parameter, embedded in Step: the
// maxmemory-policy a node is squeezed under (cluster.MemoryPolicies;
// ClockParams.Strobe is how often it is pushed over).
type MemoryParams struct {
	Policy string `json:"policy,omitempty"`
}
