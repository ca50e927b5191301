package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind is the shape of a topology.
type Kind string

const (
	// Independent is N standalone masters n1..nN (Redlock's setting).
	Independent Kind = "independent"
	// Replicated is one primary p and R replicas r1..rR, optionally watched
	// by three Sentinels s1..s3.
	Replicated Kind = "replicated"
	// Groups is G independent groups of a primary and a replica, n<i> and
	// n<i>r (i = 1..G): Redlock's masters as they run in practice, each
	// with a replica that can be promoted in its place (blog posts on Redlock in production note).
	Groups Kind = "groups"
	// RedisCluster is a Redis Cluster of N shards, each a primary n<i> and
	// Replicas replicas n<i>r<j>, slots split evenly between the shards;
	// the cluster fails a shard over by itself (cluster-node-timeout).
	RedisCluster Kind = "cluster"
)

// Limits on topology sizes: beyond them a test machine runs out of cores
// long before the harness learns anything new.
const (
	MaxIndependent = 15
	MaxReplicas    = 8
	MaxGroups      = 7
	MaxShards      = 5
	MaxShardRepl   = 2
)

// Topology says which Redis processes a cluster runs. Its text form, used on
// the command line and in plans, is
//
//	independent:N               N standalone masters n1..nN, 1 ≤ N ≤ 15
//	replicated:R                primary p and replicas r1..rR, 1 ≤ R ≤ 8
//	replicated:R+sentinels      the same, watched by Sentinels s1, s2, s3
//	groups:G                    G independent groups n<i> (primary) + n<i>r
//	                            (its replica), 1 ≤ G ≤ 7
//	cluster:S, cluster:S+R      a Redis Cluster of S shards, primaries n1..nS,
//	                            each with R replicas n<i>r1..n<i>rR;
//	                            1 ≤ S ≤ 5, 0 ≤ R ≤ 2
//
// Spaces around ':' and '+' are ignored ("replicated:1 + sentinels").
type Topology struct {
	Kind Kind
	// N is the number of masters (independent), replicas (replicated) or
	// groups (groups).
	N int
	// Sentinels adds three redis-sentinel processes (replicated only).
	Sentinels bool
	// Replicas is each shard's number of replicas (cluster only).
	Replicas int
}

// SentinelCount is how many Sentinels a topology with Sentinels runs: three,
// the smallest number that still has a majority with one of them down.
const SentinelCount = 3

// ParseTopology parses the text form described on Topology.
func ParseTopology(s string) (Topology, error) {
	text := strings.Join(strings.Fields(s), "")
	kind, rest, ok := strings.Cut(text, ":")
	if !ok {
		return Topology{}, fmt.Errorf("topology %q: want independent:N, replicated:R, replicated:R+sentinels, groups:G or cluster:S+R", s)
	}
	var t Topology
	switch Kind(strings.ToLower(kind)) {
	case Independent:
		t.Kind = Independent
	case Replicated:
		t.Kind = Replicated
	case Groups:
		t.Kind = Groups
	case RedisCluster:
		t.Kind = RedisCluster
	default:
		return Topology{}, fmt.Errorf("topology %q: unknown kind %q, want independent, replicated, groups or cluster", s, kind)
	}
	if n, extra, ok := strings.Cut(rest, "+"); ok && t.Kind == RedisCluster {
		r, err := strconv.Atoi(extra)
		if err != nil {
			return Topology{}, fmt.Errorf("topology %q: %q after '+' is not a number of replicas per shard", s, extra)
		}
		t.Replicas = r
		rest = n
	} else if ok {
		if strings.ToLower(extra) != "sentinels" {
			return Topology{}, fmt.Errorf("topology %q: unknown addition %q after '+', want \"sentinels\"", s, extra)
		}
		t.Sentinels = true
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
	switch t.Kind {
	case Independent:
		if t.N < 1 || t.N > MaxIndependent {
			return fmt.Errorf("independent needs 1 to %d masters, got %d", MaxIndependent, t.N)
		}
		if t.Sentinels {
			return fmt.Errorf("sentinels watch a replicated topology, not independent masters")
		}
	case Replicated:
		if t.N < 1 || t.N > MaxReplicas {
			return fmt.Errorf("replicated needs 1 to %d replicas, got %d", MaxReplicas, t.N)
		}
	case Groups:
		if t.N < 1 || t.N > MaxGroups {
			return fmt.Errorf("groups needs 1 to %d groups, got %d", MaxGroups, t.N)
		}
		if t.Sentinels {
			return fmt.Errorf("groups run without Sentinels: a group's replica is promoted by hand")
		}
	case RedisCluster:
		if t.N < 1 || t.N > MaxShards {
			return fmt.Errorf("cluster needs 1 to %d shards, got %d", MaxShards, t.N)
		}
		if t.Replicas < 0 || t.Replicas > MaxShardRepl {
			return fmt.Errorf("cluster needs 0 to %d replicas per shard, got %d", MaxShardRepl, t.Replicas)
		}
		if t.Sentinels {
			return fmt.Errorf("a Redis Cluster runs without Sentinels: it fails shards over itself")
		}
	case "":
		return fmt.Errorf("no topology given")
	default:
		return fmt.Errorf("unknown topology kind %q, want independent, replicated, groups or cluster", t.Kind)
	}
	if t.Replicas != 0 && t.Kind != RedisCluster {
		return fmt.Errorf("replicas per shard are for a cluster topology, not %s", t.Kind)
	}
	return nil
}

// String is the text form ParseTopology reads ("" for the zero Topology,
// which is none).
func (t Topology) String() string {
	if t == (Topology{}) {
		return ""
	}
	s := fmt.Sprintf("%s:%d", t.Kind, t.N)
	if t.Kind == RedisCluster && t.Replicas > 0 {
		s += "+" + strconv.Itoa(t.Replicas)
	}
	if t.Sentinels {
		s += "+sentinels"
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

// Nodes are the data nodes' names in order: n1..nN, or p, r1..rR, or
// n1, n1r, …, nG, nGr, or n1, n1r1, …, n1rR, …, nS, nSrR.
func (t Topology) Nodes() []string {
	var out []string
	switch t.Kind {
	case RedisCluster:
		for i := 1; i <= t.N; i++ {
			out = append(out, t.shardNodes(i)...)
		}
	case Independent:
		for i := 1; i <= t.N; i++ {
			out = append(out, "n"+strconv.Itoa(i))
		}
	case Groups:
		for i := 1; i <= t.N; i++ {
			out = append(out, "n"+strconv.Itoa(i), "n"+strconv.Itoa(i)+"r")
		}
	case Replicated:
		out = append(out, "p")
		for i := 1; i <= t.N; i++ {
			out = append(out, "r"+strconv.Itoa(i))
		}
	}
	return out
}

// Masters are the nodes a client takes as its servers: the independent
// masters, the primary p, or each group's first node — whose client proxies
// lead to the group's primary of the moment (Cluster.Promote).
func (t Topology) Masters() []string {
	switch t.Kind {
	case Groups, RedisCluster:
		out := make([]string, t.N)
		for i := range out {
			out[i] = "n" + strconv.Itoa(i+1)
		}
		return out
	case Replicated:
		return []string{"p"}
	}
	return t.Nodes()
}

// GroupOf is the other node of node's group (groups only), and whether
// node is in one.
func (t Topology) GroupOf(node string) (group, other string, ok bool) {
	if t.Kind != Groups {
		return "", "", false
	}
	for i := 1; i <= t.N; i++ {
		a := "n" + strconv.Itoa(i)
		switch node {
		case a:
			return a, a + "r", true
		case a + "r":
			return a, a, true
		}
	}
	return "", "", false
}

// shardNodes are shard i's nodes (from 1): its first primary, then its
// replicas.
func (t Topology) shardNodes(i int) []string {
	p := "n" + strconv.Itoa(i)
	out := []string{p}
	for j := 1; j <= t.Replicas; j++ {
		out = append(out, p+"r"+strconv.Itoa(j))
	}
	return out
}

// Shard is the shard node belongs to (cluster only): its nodes, the first
// primary first, and whether node is a data node of the cluster. Which of
// them is the primary now is the cluster's to say (Cluster.ShardPrimary).
func (t Topology) Shard(node string) (nodes []string, ok bool) {
	if t.Kind != RedisCluster {
		return nil, false
	}
	for i := 1; i <= t.N; i++ {
		ns := t.shardNodes(i)
		if slices.Contains(ns, node) {
			return ns, true
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
// node, then to every Sentinel; the replication links of every ordered
// pair of data nodes; the peer links. See Link for what each carries.
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
	if t.Kind == RedisCluster {
		// Replicas replicate from, and the cluster bus reaches, the
		// addresses a node announces: one proxy of each per node.
		for _, x := range t.Nodes() {
			out = append(out, Link{From: "peer", To: x})
		}
		for _, x := range t.Nodes() {
			out = append(out, Link{From: "bus", To: x})
		}
		return out
	}
	if t.Kind == Groups {
		// Each group's replica replicates from its primary, and back after
		// a promotion.
		for _, g := range t.Masters() {
			out = append(out, Link{From: g + "r", To: g}, Link{From: g, To: g + "r"})
		}
		return out
	}
	if t.Kind != Replicated {
		return out
	}
	for _, a := range t.Nodes() {
		for _, b := range t.Nodes() {
			if a != b {
				out = append(out, Link{From: a, To: b})
			}
		}
	}
	for _, x := range t.Nodes() {
		out = append(out, Link{From: "peer", To: x})
	}
	return out
}

// CheckLink reports whether name is a link of the topology with clients
// c0..c(clients-1), and if not, which links there are.
func (t Topology) CheckLink(clients int, name string) error {
	l, err := ParseLink(name)
	if err != nil {
		return err
	}
	for _, x := range t.Links(clients) {
		if x == l {
			return nil
		}
	}
	what := "c<i>->node for clients c0..c" + strconv.Itoa(clients-1)
	if t.Sentinels {
		what += ", c<i>->s1..s3"
	}
	switch t.Kind {
	case Replicated:
		what += ", replica->node and peer->node"
	case Groups:
		what += ", replica->node and node->replica within a group (n1r->n1, n1->n1r)"
	case RedisCluster:
		what += ", peer->node (replication from the node) and bus->node (the cluster bus into it)"
	}
	return fmt.Errorf("no link %q in %s: links are %s", name, t, what)
}

// Persistence is how a data node keeps its data across a restart.
type Persistence string

const (
	// PersistNone keeps nothing: the node starts empty every time.
	PersistNone Persistence = "none"
	// AOFEverySec is appendonly with appendfsync everysec. Redis writes
	// the AOF before it replies and only fsyncs once a second, so a
	// process kill (what Kill does) loses no acknowledged write; a machine
	// crash would lose up to about a second.
	AOFEverySec Persistence = "aof-everysec"
	// AOFAlways is appendonly with appendfsync always: every acknowledged
	// write is on disk.
	AOFAlways Persistence = "aof-always"
)

// ParsePersistence accepts none, aof-everysec and aof-always.
func ParsePersistence(s string) (Persistence, error) {
	p := Persistence(strings.ToLower(strings.TrimSpace(s)))
	if err := p.Validate(); err != nil {
		return "", err
	}
	return p, nil
}

// String is the mode's name.
func (p Persistence) String() string { return string(p) }

// Set parses a command-line flag's value into p (p is a pflag.Value).
func (p *Persistence) Set(s string) error {
	v, err := ParsePersistence(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Type names a persistence flag's value in help.
func (*Persistence) Type() string { return "string" }

// Validate reports an unknown mode.
func (p Persistence) Validate() error {
	switch p {
	case PersistNone, AOFEverySec, AOFAlways:
		return nil
	}
	return fmt.Errorf("unknown persistence %q, want none, aof-everysec or aof-always", string(p))
}

// args are the redis-server directives for p.
func (p Persistence) args() []string {
	switch p {
	case AOFEverySec:
		return []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	case AOFAlways:
		return []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	return []string{"--appendonly", "no"}
}
