package nemesis

import (
	"context"
	"fmt"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// RefuseWrites makes nodes refuse every write for For, as Refusal says.
const RefuseWrites Kind = "refuse-writes"

type refuseWrites struct{ kindBase }

func init() { register(170, refuseWrites{}) }

func (refuseWrites) kind() Kind { return RefuseWrites }

// traits: it makes primaries refuse writes.
func (refuseWrites) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.RefusesWrites}
}

func (refuseWrites) doc() string {
	return "makes primaries refuse every write for \"for\", as \"refusal\" says: misconf — a save fails (\"dir\" moved where it cannot write) while stop-writes-on-bgsave-error is yes, so writes get MISCONF; readonly — the node is demoted to a replica of an address nobody answers at, so writes get READONLY, as a demoted primary answers a client still talking to it; the heal restores the settings"
}

func (refuseWrites) fields() []string { return []string{"nodes", "node", "refusal"} }

func (refuseWrites) targets() targetKind { return targetsNodes }

func (refuseWrites) needs() needs { return needs{controls: cluster.CanConfig} }

func (refuseWrites) changesSettings() {}

func (refuseWrites) check(c *compiled, s Setup) error {
	if c.Refusal == "" {
		return field.Errorf("refusal", "%v is missing: %s or %s", field.Self, cluster.RefuseMisconf, cluster.RefuseReadonly)
	}
	if err := c.Refusal.Validate(); err != nil {
		return field.Errorf("refusal", "%w", err)
	}
	if c.Refusal == cluster.RefuseReadonly {
		if err := demotable(s.Topology); err != nil {
			return field.Errorf("refusal", "%w", err)
		}
	}
	return nil
}

// demotable says why a node of t cannot be demoted to a replica for a
// while, if it cannot: Sentinels would take a primary reporting itself a
// replica for a failover of theirs, and a Redis Cluster refuses REPLICAOF.
func demotable(t cluster.Topology) error {
	tr := t.Traits()
	switch {
	case tr.Failovers.Has(cluster.BySentinel):
		return fmt.Errorf("%q demotes a primary, which the Sentinels of %s would act on; use %q, or a failover", cluster.RefuseReadonly, t, cluster.RefuseMisconf)
	case tr.Slots:
		return fmt.Errorf("%q demotes a primary, which a Redis Cluster (%s) refuses (REPLICAOF); use %q, or a failover", cluster.RefuseReadonly, t, cluster.RefuseMisconf)
	}
	return nil
}

func (refuseWrites) apply(r *runner, i int, t target) error {
	st := r.steps[i]
	for _, n := range t.nodes {
		st.undo = append(st.undo, func() error {
			return withTimeout(func(ctx context.Context) error { return r.env.Cluster.AcceptWrites(ctx, n) })
		})
		if err := r.env.Cluster.RefuseWrites(r.ctx, n, st.c.Refusal); err != nil {
			return err
		}
	}
	return nil
}

func (refuseWrites) describe(c *compiled, t target) string {
	how := "MISCONF (a save failed)"
	if c.Refusal == cluster.RefuseReadonly {
		how = "READONLY (demoted to a replica)"
	}
	return fmt.Sprintf("make %s refuse every write with %s for %v", nodesText(c, t), how, c.dur)
}

// draw: aimed at the lease, the node it rests on (the primary,
// replicated) on the next grant, for about a hold or a little more, so
// that the holder's release is refused; at random, a primary for a
// magnitude of the TTL. Half the time readonly, where the topology can
// demote a node.
func (refuseWrites) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: RefuseWrites, RefusalParams: RefusalParams{Refusal: cluster.RefuseMisconf}}
	switch a {
	case aimLease:
		st.Node = g.leaseNode()
		st.For = TTLs(g.between(g.holdTTLs(), float64(g.o.Hold.Max().Resolve(0))/float64(g.o.TTL)+0.5))
	case aimAny:
		if !g.aimPrimary(&st) {
			return st, false
		}
		st.For = g.mag()
	default:
		return st, false
	}
	if demotable(g.o.Topology) == nil && g.rng.IntN(2) == 0 {
		st.Refusal = cluster.RefuseReadonly
	}
	return st, true
}

// RefusalParams are refuse-writes' parameter, embedded in Step: how the
// node refuses writes (misconf, readonly).
type RefusalParams struct {
	Refusal cluster.Refusal `json:"refusal,omitempty"`
}
