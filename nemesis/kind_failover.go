package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
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
)

type failover struct{ kindBase }

func (failover) kind() Kind { return Failover }

func (failover) doc() string {
	return "moves the primary (\"via\" kill: SIGKILL it, Sentinel promotes a replica; sentinel: SENTINEL FAILOVER; promote: the replica in \"nodes\"), with \"cut_replication\" first cutting replication so the grant it waits for and \"lag\" are lost; the new roles stay"
}

func (failover) fields() []string { return []string{"via", "nodes", "cut_replication", "lag"} }

func (failover) duration() forRule { return forAny }

func (failover) needs() needs { return needs{replicated: true} }

func (failover) targets() targetKind { return targetsNone }

func (failover) traits() traits {
	return traits{failover: true, allowance: failoverAllowance + startAllowance}
}

// placed: a promotion by hand makes its replica the primary the next
// failover must move from.
func (failover) placed(g *gen, st Step) {
	if st.Via == ViaPromote {
		g.primary = st.Nodes[0]
	}
}

// ownsTrigger: with cut_replication the failover cuts replication first
// and waits for its grant itself, so the grant is never replicated.
func (failover) ownsTrigger(c *compiled) bool { return c.CutReplication }

func (failover) check(c *compiled, s Setup) error {
	switch c.Via {
	case ViaKill, ViaSentinel:
		if !s.Topology.Sentinels {
			return fmt.Errorf("via %q needs Sentinels (topology %s+sentinels); use via %q", c.Via, s.Topology, ViaPromote)
		}
		if len(c.Nodes) > 0 {
			return fmt.Errorf("via %q lets Sentinel choose the replica; \"nodes\" is for via %q", c.Via, ViaPromote)
		}
	case ViaPromote:
		if len(c.Nodes) != 1 {
			return fmt.Errorf("via %q needs the one replica to promote in \"nodes\"", c.Via)
		}
	case "":
		return fmt.Errorf("needs \"via\": %q, %q or %q", ViaKill, ViaSentinel, ViaPromote)
	default:
		return fmt.Errorf("unknown via %q (%s, %s or %s)", c.Via, ViaKill, ViaSentinel, ViaPromote)
	}
	if c.Via == ViaKill {
		if err := s.provides(cluster.CanKill); err != nil {
			return fmt.Errorf("via %q: %w", ViaKill, err)
		}
	}
	if !c.Lag.IsZero() && !c.CutReplication {
		return errors.New("\"lag\" is how long replication stays cut before the failover; it needs \"cut_replication\"")
	}
	return nil
}

func (failover) apply(r *runner, i int, _ target) error {
	st := r.steps[i]
	c := st.c
	if r.failover >= 0 {
		return fmt.Errorf("%s is still failing over", r.steps[r.failover].c.name())
	}
	groups := r.setup.Topology.Kind == cluster.Groups
	w, err := r.world(!groups)
	if err != nil {
		return err
	}
	if g, ok := r.env.Cluster.(interface {
		PrimaryOf(context.Context, string) (string, error)
	}); ok && groups {
		// A group's failover: the primary of the promoted node's group.
		if w.primary, err = g.PrimaryOf(r.ctx, c.Nodes[0]); err != nil {
			return err
		}
	}
	old := w.primary
	var target string
	candidates := w.replicas()
	if c.Via == ViaPromote {
		target = c.Nodes[0]
		if target == old {
			return fmt.Errorf("%s is the primary already", target)
		}
		candidates = []string{target}
	}
	for _, n := range append([]string{old}, candidates...) {
		if err := r.busy(n); err != nil {
			return err
		}
	}
	st.fault.Desc = describeFailover(c, old, candidates)
	st.fault.Targets = append([]string{old}, candidates...)
	r.failover = i
	if c.Via == ViaKill {
		r.owner[old] = i
		st.slow = r.bringUp([]string{old}, "")
	}
	if c.CutReplication {
		var links []string
		for _, n := range candidates {
			links = append(links, cluster.ReplicationLink(n, old))
		}
		st.undo = append(st.undo, func() error { return r.links.remove(i, links) })
		if err := r.links.add(linkContrib{step: i, cut: cluster.Blackhole, up: true, down: true}, links); err != nil {
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
		if err := wait.For(ctx, c.lag); err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		t0 := time.Now()
		var err error
		switch c.Via {
		case ViaPromote:
			if err = cl.Promote(ctx, target); err == nil {
				return event{kind: evApplied, step: i, note: fmt.Sprintf("%s promoted by hand in %v", target, time.Since(t0).Round(time.Millisecond))}
			}
			return event{kind: evApplied, step: i, err: err}
		case ViaKill:
			err = cl.Kill(old)
		case ViaSentinel:
			err = cl.SentinelFailover(ctx)
		}
		if err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		wctx, cancel := context.WithTimeout(ctx, FailoverTimeout)
		defer cancel()
		p, err := cl.WaitFailover(wctx, old)
		if err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		return event{kind: evApplied, step: i, note: fmt.Sprintf("%s took over from %s %v after the %s", p, old, time.Since(t0).Round(time.Millisecond), map[Via]string{ViaKill: "kill", ViaSentinel: "request"}[c.Via])}
	})
	return nil
}
func describeFailover(c *compiled, old string, candidates []string) string {
	primary := "the primary"
	if old != "" {
		primary += " " + old
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
	if !c.CutReplication {
		return how
	}
	cut := "cut replication (blackhole)"
	if len(candidates) > 0 {
		links := make([]string, len(candidates))
		for k, n := range candidates {
			links[k] = cluster.ReplicationLink(n, old)
		}
		cut = "cut replication " + list(links) + " (blackhole)"
	}
	if c.triggered() {
		if c.OnTimeout == OnTimeoutApply {
			cut += fmt.Sprintf(", wait up to %v for a grant of %q", c.timeout, c.Key)
		} else {
			cut += fmt.Sprintf(", wait for a grant of %q", c.Key)
		}
	}
	if c.lag > 0 {
		cut += fmt.Sprintf(", wait %v", c.lag)
	}
	return cut + ", then " + how
}

func (failover) describe(c *compiled, _ target) string { return describeFailover(c, "", nil) }

// draw: at random as the topology allows (Sentinel's kill or request, or a
// promotion by hand), half the time after cutting replication; aimed at
// the lease, mostly with replication cut on the next grant and no more
// than a brief lag, so the new primary never saw the lease.
func (failover) draw(g *gen, a aim) (Step, bool) {
	st := Step{Fault: Failover}
	if g.o.Topology.Sentinels {
		st.Via = Via(g.oneOf(string(ViaKill), string(ViaSentinel)))
	} else {
		st.Via = ViaPromote
		var rs []string
		for _, x := range g.o.Topology.Nodes() {
			if x != g.primary {
				rs = append(rs, x)
			}
		}
		st.Nodes = []string{g.oneOf(rs...)}
	}
	if st.Via == ViaKill && !g.o.Controls.Has(cluster.CanKill) && g.o.Provider != "" {
		st.Via = ViaSentinel
	}
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
		return st, false
	}
	return st, true
}
