package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// topoKind is everything the package knows about one kind of topology,
// kept in the kind's own file (topo_<name>.go), as the nemesis keeps its
// fault kinds: its text form and rules, its nodes and their names, its
// links, its traits (what it offers locks and faults), and how a Cluster
// runs it — its roles at start, its nodes' directives, its wiring, the
// clients' view of it, how its primary moves. What every kind shares —
// proxies, processes, node controls, Sentinels — stays in the shared
// files. topoBase gives the defaults of a kind with none of these.
type topoKind interface {
	kind() Kind
	// form is the text form's pattern for help and errors:
	// "replicated:R[+sentinels]".
	form() string
	// addition reads what follows '+' in the text form into t.
	addition(t *Topology, extra string) error
	// check is the kind's rules on a topology of it.
	check(t Topology) error
	// suffix is what String writes after "<kind>:<N>".
	suffix(t Topology) string

	nodes(t Topology) []string
	masters(t Topology) []string
	// nodeLinks are the links between nodes, after the clients' (see
	// Topology.Links); linkForms says what they are, for errors.
	nodeLinks(t Topology) []Link
	linkForms() string
	// linksBetween: see Topology.LinksBetween.
	linksBetween(t Topology, near, far []string) []string
	traits(t Topology) Traits
	promoteGroups(t Topology) [][]string
	// adoptable says why an adopted deployment of t cannot run (nil: it
	// can).
	adoptable(t Topology) error

	// checkSpec refuses, before anything starts, what the kind cannot
	// run: TLS, say. Spec.CheckTopology is how it is asked.
	checkSpec(s Spec) error
	// clientRights are the ACL rights its clients need beyond a plan's
	// own (a Redis Cluster's CLUSTER SLOTS).
	clientRights() []string
	// prepare sets the roles a cluster of the kind starts with, once its
	// nodes exist and before any starts; it may refuse the provider.
	prepare(c *Cluster) error
	// proc completes a data node's ProcSpec with what the kind asks of
	// it: its mode and its directives, which come before the plan's own.
	// The proxies may not exist yet (the first start).
	proc(c *Cluster, n *node, s *ProcSpec)
	// wire makes the nodes, started as plain masters with their proxies
	// made, into the topology; adopted learns the roles of an adopted
	// deployment.
	wire(ctx context.Context, c *Cluster) error
	adopted(ctx context.Context, c *Cluster) error
	// view completes a client's view: which nodes it takes as its
	// servers, which announced addresses it routes, a Redis Cluster.
	view(c *Cluster, v *ClientView)
	// promote, primaryOf and waitFailover move and find the primary
	// (Cluster.Promote, PrimaryOf, WaitFailover).
	promote(ctx context.Context, c *Cluster, name string) error
	primaryOf(ctx context.Context, c *Cluster, node string) (string, error)
	waitFailover(ctx context.Context, c *Cluster, from string) (string, error)
}

// topoKinds lists every kind, in the order the documentation gives them.
var topoKinds = []topoKind{independent{}, replicated{}, groups{}, redisCluster{}}

func lookupKind(k Kind) topoKind {
	for _, tk := range topoKinds {
		if tk.kind() == k {
			return tk
		}
	}
	return nil
}

// Traits are what a topology offers locks and faults: the rest of tumbler
// asks them instead of comparing kinds.
type Traits struct {
	// IndependentMasters: its masters share nothing, so a lock over every
	// master (Redlock) takes a quorum of them.
	IndependentMasters bool
	// IndependentNodes: every data node is such a master (no replicas),
	// so a partition of a minority or a majority of them, or a bridge,
	// decides a quorum lock.
	IndependentNodes bool
	// EveryNodeLocksOnly: it is for locks over every master only.
	EveryNodeLocksOnly bool
	// WaitReplicas is how many replicas a WAIT on a primary can count.
	WaitReplicas int
	// Slots: keys live in hash slots, and a script that touches keys in
	// several slots is refused (CROSSSLOT).
	Slots bool
	// OnePrimary: one node is the primary of all the others (the node
	// selector "primary" names it).
	OnePrimary bool
	// Failovers are the ways its primary moves; none: it has no replica.
	Failovers Failovers
	// NodeLinks: links between data nodes a fault can act on without
	// naming them (replication and peer links, a Redis Cluster's peer and
	// bus links); false where there are none, or only the ones a plan
	// names (a group's).
	NodeLinks bool
	// ReplicaLinks: each replica replicates from the primary through a
	// link of its own, <replica>-><primary>, which a fault cuts replica by
	// replica.
	ReplicaLinks bool
	// Splittable: a split (some nodes and clients on one side, the rest
	// on the other) cuts every path between the sides.
	Splittable bool
}

// Failovers is a set of the ways a topology's primary moves.
type Failovers uint8

const (
	// ByHand: Cluster.Promote makes a replica the primary, REPLICAOF NO
	// ONE on it and the other nodes re-pointed.
	ByHand Failovers = 1 << iota
	// BySentinel: the Sentinels elect a replica when the primary dies or
	// when asked (Cluster.SentinelFailover).
	BySentinel
	// ByCluster: a Redis Cluster promotes a shard's replica when its
	// primary dies or when asked (Cluster.ClusterFailover).
	ByCluster
)

// Has reports whether every way in x is in f.
func (f Failovers) Has(x Failovers) bool { return f&x == x }

// LockUse is how a lock uses the servers, as far as a topology cares.
type LockUse struct {
	// Lock names it in errors.
	Lock string
	// EveryMaster: it takes every master (Redlock and its kin).
	EveryMaster bool
	// WaitReplicas is its WAIT's count of replicas (0: no WAIT).
	WaitReplicas int
	// CrossSlot: one of its scripts touches keys in different hash slots.
	CrossSlot bool
	// EveryMasterLocks name the locks that take every master, for the
	// error that says which would fit.
	EveryMasterLocks []string
}

// CheckLock says why the topology does not suit a lock used as u, or nil.
func (t Topology) CheckLock(u LockUse) error {
	tr := t.Traits()
	switch {
	case u.EveryMaster && !tr.IndependentMasters:
		return fmt.Errorf("lock %s needs independent masters (topology %s), not %s", u.Lock, FormsWith(func(tr Traits) bool { return tr.IndependentMasters }), t)
	case tr.EveryNodeLocksOnly && !u.EveryMaster:
		return fmt.Errorf("topology %s is for locks over independent masters (%s), not %s", t, strings.Join(u.EveryMasterLocks, ", "), u.Lock)
	case u.WaitReplicas > tr.WaitReplicas:
		return fmt.Errorf("lock wait_replicas %d needs a replicated topology, or a cluster with shards, with at least that many replicas, not %s", u.WaitReplicas, t)
	case tr.Slots && u.CrossSlot:
		return fmt.Errorf("lock %s touches keys in different hash slots in one script, which a Redis Cluster (topology %s) refuses with CROSSSLOT", u.Lock, t)
	}
	return nil
}

// FormsWith lists the forms of the kinds whose largest topology has a
// trait: "independent:N or groups:G".
func FormsWith(has func(Traits) bool) string {
	var out []string
	for _, k := range topoKinds {
		if has(k.traits(Topology{Kind: k.kind(), N: 1, Replicas: 1, Sentinels: true})) {
			out = append(out, k.form())
		}
	}
	return orList(out)
}

// numbered is prefix1..prefixN.
func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i+1)
	}
	return out
}

// topoBase is the defaults of a kind: no nodes, no links between them, no
// traits, nothing to wire, no primary to move. The kinds embed it.
type topoBase struct{}

func (topoBase) kind() Kind   { return "" }
func (topoBase) form() string { return "" }

// addition: the '+' of every kind but a Redis Cluster adds Sentinels,
// which a kind's check refuses where they do not belong.
func (topoBase) addition(t *Topology, extra string) error {
	if strings.ToLower(extra) != "sentinels" {
		return fmt.Errorf("unknown addition %q after '+', want \"sentinels\"", extra)
	}
	t.Sentinels = true
	return nil
}

func (topoBase) check(Topology) error { return fmt.Errorf("no topology given") }

// suffix: "+sentinels" with Sentinels.
func (topoBase) suffix(t Topology) string {
	if t.Sentinels {
		return "+sentinels"
	}
	return ""
}

func (topoBase) nodes(Topology) []string                            { return nil }
func (topoBase) masters(Topology) []string                          { return nil }
func (topoBase) nodeLinks(Topology) []Link                          { return nil }
func (topoBase) linkForms() string                                  { return "" }
func (topoBase) linksBetween(Topology, []string, []string) []string { return nil }
func (topoBase) traits(Topology) Traits                             { return Traits{} }
func (topoBase) promoteGroups(Topology) [][]string                  { return nil }
func (topoBase) adoptable(Topology) error                           { return nil }
func (topoBase) checkSpec(Spec) error                               { return nil }
func (topoBase) clientRights() []string                             { return nil }
func (topoBase) prepare(*Cluster) error                             { return nil }
func (topoBase) proc(*Cluster, *node, *ProcSpec)                    {}
func (topoBase) wire(context.Context, *Cluster) error               { return nil }
func (topoBase) adopted(context.Context, *Cluster) error            { return nil }
func (topoBase) view(*Cluster, *ClientView)                         {}

func (topoBase) promote(_ context.Context, c *Cluster, name string) error {
	return fmt.Errorf("promote %s: %s has no replicas", name, c.topo)
}

func (topoBase) primaryOf(_ context.Context, c *Cluster, _ string) (string, error) {
	return "", fmt.Errorf("primary: %s has no primary", c.topo)
}

// waitFailover: only Sentinels and a Redis Cluster fail over by
// themselves.
func (topoBase) waitFailover(_ context.Context, c *Cluster, _ string) (string, error) {
	return "", fmt.Errorf("wait for failover: topology %s has no sentinels (use replicated:R+sentinels)", c.topo)
}

// checkSize refuses a size outside 1..most, naming what the size counts:
// "independent needs 1 to 15 masters, got 0".
func checkSize(t Topology, most int, counts string) error {
	if t.N < 1 || t.N > most {
		return fmt.Errorf("%s needs 1 to %d %s, got %d", t.Kind, most, counts, t.N)
	}
	return nil
}

// checkShardReplicas refuses replicas per shard outside a Redis Cluster.
func checkShardReplicas(t Topology) error {
	if t.Replicas != 0 {
		return fmt.Errorf("replicas per shard are for a cluster topology, not %s", t.Kind)
	}
	return nil
}
