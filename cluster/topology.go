package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind is the shape of a topology. Each kind lives in its own file
// (topo_<name>.go) and is listed in topoKinds (topokind.go).
type Kind string

// Topology says which Redis processes a cluster runs. Its text form, used on
// the command line and in plans, is the kind's name, ':', its size, and
// optionally '+' and an addition: "independent:5", "replicated:1+sentinels",
// "cluster:3+1". Syntax lists every kind's form, and the kind's file
// (topo_<name>.go) says what it runs and its limits. Spaces around ':' and
// '+' are ignored ("replicated:1 + sentinels"). What a topology means to
// the rest of tumbler — its nodes, links, traits, what it asks of a lock —
// is the kind's to say; nothing outside this package compares kinds.
type Topology struct {
	Kind Kind
	// N is the kind's size: masters (independent), replicas (replicated),
	// groups (groups) or shards (cluster).
	N int
	// Sentinels adds three redis-sentinel processes (replicated only).
	Sentinels bool
	// Replicas is each shard's number of replicas (cluster only).
	Replicas int
}

// SentinelCount is how many Sentinels a topology with Sentinels runs: three,
// the smallest number that still has a majority with one of them down.
const SentinelCount = 3

// Syntax is every kind's text form, as the command line's help gives it:
// "independent:N, replicated:R[+sentinels], groups:G or cluster:S[+R]".
func Syntax() string {
	forms := make([]string, len(topoKinds))
	for i, k := range topoKinds {
		forms[i] = k.form()
	}
	return orList(forms)
}

// kindNames is "independent, replicated, groups or cluster".
func kindNames() string {
	names := make([]string, len(topoKinds))
	for i, k := range topoKinds {
		names[i] = string(k.kind())
	}
	return orList(names)
}

// orList is "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// ParseTopology parses the text form described on Topology.
func ParseTopology(s string) (Topology, error) {
	text := strings.Join(strings.Fields(s), "")
	name, rest, ok := strings.Cut(text, ":")
	if !ok {
		return Topology{}, fmt.Errorf("topology %q: want %s", s, Syntax())
	}
	k := lookupKind(Kind(strings.ToLower(name)))
	if k == nil {
		return Topology{}, fmt.Errorf("topology %q: unknown kind %q, want %s", s, name, kindNames())
	}
	t := Topology{Kind: k.kind()}
	if n, extra, ok := strings.Cut(rest, "+"); ok {
		if err := k.addition(&t, extra); err != nil {
			return Topology{}, fmt.Errorf("topology %q: %w", s, err)
		}
		rest = n
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return Topology{}, fmt.Errorf("topology %q: %q is not a number of nodes", s, rest)
	}
	t.N = n
	if err := t.Validate(); err != nil {
		return Topology{}, fmt.Errorf("topology %q: %w", s, err)
	}
	return t, nil
}

// Validate reports what is wrong with t, if anything.
func (t Topology) Validate() error {
	if t.Kind == "" {
		return fmt.Errorf("no topology given")
	}
	k := lookupKind(t.Kind)
	if k == nil {
		return fmt.Errorf("unknown topology kind %q, want %s", t.Kind, kindNames())
	}
	return k.check(t)
}

// String is the text form ParseTopology reads ("" for the zero Topology,
// which is none).
func (t Topology) String() string {
	if t == (Topology{}) {
		return ""
	}
	s := fmt.Sprintf("%s:%d", t.Kind, t.N)
	if k := lookupKind(t.Kind); k != nil {
		s += k.suffix(t)
	}
	return s
}

// MarshalText makes a Topology a JSON string in plans.
func (t Topology) MarshalText() ([]byte, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return []byte(t.String()), nil
}

// UnmarshalText parses the text form.
func (t *Topology) UnmarshalText(b []byte) error {
	p, err := ParseTopology(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// Set parses a command-line flag's value into t (t is a pflag.Value).
func (t *Topology) Set(s string) error {
	p, err := ParseTopology(s)
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// Type names a topology flag's value in help.
func (*Topology) Type() string { return "string" }

// kindOf is t's kind; a topology that does not validate has the kind of
// none, which has no nodes.
func (t Topology) kindOf() topoKind {
	if k := lookupKind(t.Kind); k != nil {
		return k
	}
	return topoBase{}
}

// Nodes are the data nodes' names in order: n1..nN, or p, r1..rR, or
// n1, n1r, …, nG, nGr, or n1, n1r1, …, n1rR, …, nS, nSrR.
func (t Topology) Nodes() []string { return t.kindOf().nodes(t) }

// Masters are the nodes a client takes as its servers: the independent
// masters, the primary p, each group's first node — whose client proxies
// lead to the group's primary of the moment (Cluster.Promote) — or each
// shard's first primary.
func (t Topology) Masters() []string { return t.kindOf().masters(t) }

// Traits are what the topology offers locks and faults.
func (t Topology) Traits() Traits { return t.kindOf().traits(t) }

// PromoteGroups are the sets of data nodes among which a primary moves by
// hand (Cluster.Promote), each its primary at start first: a replicated
// topology's nodes, each group of a groups topology; none for the others.
func (t Topology) PromoteGroups() [][]string { return t.kindOf().promoteGroups(t) }

// PromoteGroup is the promote group node is in (PromoteGroups), and
// whether it is in one.
func (t Topology) PromoteGroup(node string) ([]string, bool) {
	for _, g := range t.PromoteGroups() {
		if slices.Contains(g, node) {
			return g, true
		}
	}
	return nil, false
}

// SentinelNames are s1..s3 when t has Sentinels, else nil.
func (t Topology) SentinelNames() []string {
	if !t.Sentinels {
		return nil
	}
	out := make([]string, SentinelCount)
	for i := range out {
		out[i] = "s" + strconv.Itoa(i+1)
	}
	return out
}

// Links are every link of the topology with clients c0..c(clients-1), in
// the order Cluster.Links lists them: each client's links to every data
// node, then to every Sentinel; then the links between the nodes the kind
// has (replication, peer, bus). See Link for what each carries.
func (t Topology) Links(clients int) []Link {
	var out []Link
	for i := 0; i < clients; i++ {
		c := "c" + strconv.Itoa(i)
		for _, x := range t.Nodes() {
			out = append(out, Link{From: c, To: x})
		}
		for _, s := range t.SentinelNames() {
			out = append(out, Link{From: c, To: s})
		}
	}
	return append(out, t.kindOf().nodeLinks(t)...)
}

// LinksBetween are the links between data nodes (none of a client's) that
// a partition separating the nodes near from the nodes far cuts: for each
// near node, what reaches it at its announced address and the replication
// both ways between it and each far node. Isolating one node from all the
// others is exact; see Link for what a shared peer or bus link cannot
// separate.
func (t Topology) LinksBetween(near, far []string) []string {
	return t.kindOf().linksBetween(t, near, far)
}

// CheckLink reports whether name is a link of the topology with clients
// c0..c(clients-1), and if not, which links there are.
func (t Topology) CheckLink(clients int, name string) error {
	l, err := ParseLink(name)
	if err != nil {
		return err
	}
	if slices.Contains(t.Links(clients), l) {
		return nil
	}
	return fmt.Errorf("no link %q in %s: links are %s", name, t, t.LinkForms(clients))
}

// LinkForms says which links the topology has with clients
// c0..c(clients-1), as patterns: "c<i>->node for clients c0..c2, …".
func (t Topology) LinkForms(clients int) string {
	what := "c<i>->node for clients c0..c" + strconv.Itoa(clients-1)
	if t.Sentinels {
		what += ", c<i>->s1..s3"
	}
	if f := t.kindOf().linkForms(); f != "" {
		what += ", " + f
	}
	return what
}

// Adoptable says why a deployment of this topology that tumbler does not
// run (ExternalConfig) cannot be adopted, or nil when it can.
func (t Topology) Adoptable() error {
	if err := t.kindOf().adoptable(t); err != nil {
		return fmt.Errorf("topology %s: %w", t, err)
	}
	return nil
}
