package cluster

import (
	"fmt"
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
)

// Limits on topology sizes: beyond them a test machine runs out of cores
// long before the harness learns anything new.
const (
	MaxIndependent = 15
	MaxReplicas    = 8
)

// Topology says which Redis processes a cluster runs. Its text form, used on
// the command line and in plans, is
//
//	independent:N               N standalone masters n1..nN, 1 ≤ N ≤ 15
//	replicated:R                primary p and replicas r1..rR, 1 ≤ R ≤ 8
//	replicated:R+sentinels      the same, watched by Sentinels s1, s2, s3
//
// Spaces around ':' and '+' are ignored ("replicated:1 + sentinels").
type Topology struct {
	Kind Kind
	// N is the number of masters (independent) or replicas (replicated).
	N int
	// Sentinels adds three redis-sentinel processes (replicated only).
	Sentinels bool
}

// SentinelCount is how many Sentinels a topology with Sentinels runs: three,
// the smallest number that still has a majority with one of them down.
const SentinelCount = 3

// ParseTopology parses the text form described on Topology.
func ParseTopology(s string) (Topology, error) {
	text := strings.Join(strings.Fields(s), "")
	kind, rest, ok := strings.Cut(text, ":")
	if !ok {
		return Topology{}, fmt.Errorf("topology %q: want independent:N, replicated:R or replicated:R+sentinels", s)
	}
	var t Topology
	switch Kind(strings.ToLower(kind)) {
	case Independent:
		t.Kind = Independent
	case Replicated:
		t.Kind = Replicated
	default:
		return Topology{}, fmt.Errorf("topology %q: unknown kind %q, want independent or replicated", s, kind)
	}
	if n, extra, ok := strings.Cut(rest, "+"); ok {
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
	case "":
		return fmt.Errorf("no topology given")
	default:
		return fmt.Errorf("unknown topology kind %q, want independent or replicated", t.Kind)
	}
	return nil
}

// String is the text form ParseTopology reads.
func (t Topology) String() string {
	s := fmt.Sprintf("%s:%d", t.Kind, t.N)
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

// Nodes are the data nodes' names in order: n1..nN, or p, r1..rR.
func (t Topology) Nodes() []string {
	var out []string
	switch t.Kind {
	case Independent:
		for i := 1; i <= t.N; i++ {
			out = append(out, "n"+strconv.Itoa(i))
		}
	case Replicated:
		out = append(out, "p")
		for i := 1; i <= t.N; i++ {
			out = append(out, "r"+strconv.Itoa(i))
		}
	}
	return out
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
