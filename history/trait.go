package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Trait is one thing a fault does, named as a person reads it in a report:
// a fault's meaning, declared by its kind (nemesis: each kind_<name>.go
// says which traits its faults have) and recorded on the fault's start and
// stop records (Fault.Traits). The dangerous windows (coverage), the
// checkers and a hunt's guidance ask a fault what it does by its traits,
// never by its kind's name, so a new kind that declares the right traits
// reaches the windows and the rules they stand for with no edit elsewhere.
//
// A trait is a capability: "loses-key" says the fault can lose a key (a
// kill without persistence can), not that this one did; what a fault saw
// as it applied (a node back empty, the offset it set) is in Fault's other
// fields.
type Trait string

// The traits, in the order Traits lists them.
const (
	// TouchesNode: it acts on the data nodes it targets — kills, freezes,
	// cuts off, slows, fills, makes refuse writes, moves the clock of, or
	// demotes them, or loses their replies.
	TouchesNode Trait = "touches-node"
	// StopsNode: it stops data nodes for a while (kills or freezes them):
	// a node takes one such fault at a time, and Sentinel may answer one
	// with a failover.
	StopsNode Trait = "stops-node"
	// RestartsNode: it kills data nodes and starts them again, with the
	// persistence the step or the node has; one without persistence comes
	// back empty.
	RestartsNode Trait = "restarts-node"
	// FreezesNode: it freezes data nodes (SIGSTOP): their connections stay
	// open and nothing is answered until it ends, so requests are answered
	// late.
	FreezesNode Trait = "freezes-node"
	// IsolatesNode: it cuts data nodes off, from the clients or from each
	// other (replication).
	IsolatesNode Trait = "isolates-node"
	// IsolatesClient: it cuts a client off from the data nodes.
	IsolatesClient Trait = "isolates-client"
	// SlowsLinks: it delays the packets on links.
	SlowsLinks Trait = "slows-links"
	// LosesReplies: the commands run and their replies are lost (or
	// delayed): their clients do not hear.
	LosesReplies Trait = "loses-replies"
	// StopsClient: it stops or starves a client's process, so that what
	// falls due meanwhile — a renewal, the reply to its own acquire — is
	// handled late.
	StopsClient Trait = "stops-client"
	// CrashesClient: it crashes a client (at a lock step): its holds end
	// without a release.
	CrashesClient Trait = "crashes-client"
	// ArmsStep: it arms a lock step and acts only if a target client
	// reaches that step while it is armed (an idle one did nothing).
	ArmsStep Trait = "arms-step"
	// MovesNodeClock: it steps or drifts a data node's wall clock, by which
	// the node expires keys.
	MovesNodeClock Trait = "moves-node-clock"
	// MovesClientClock: it steps or drifts a client's wall clock, by which
	// the timestamp recipes and some libraries judge a lease's validity.
	MovesClientClock Trait = "moves-client-clock"
	// LosesKey: it can lose a held key: a node back empty, a replica
	// promoted without it, an eviction.
	LosesKey Trait = "loses-key"
	// RefusesWrites: it makes data nodes refuse writes (MISCONF, READONLY,
	// OOM).
	RefusesWrites Trait = "refuses-writes"
	// FillsMemory: it fills a node's memory to its limit, so that writes
	// are refused or keys evicted.
	FillsMemory Trait = "fills-memory"
	// PromotesReplica: it moves the primary role to a replica.
	PromotesReplica Trait = "promotes-replica"
)

// traitDocs are the traits in order, each with its line.
var traitDocs = []struct {
	t   Trait
	doc string
}{
	{TouchesNode, "acts on the data nodes it targets: kills, freezes, cuts off, slows, fills, moves the clock of or demotes them, or loses their replies"},
	{StopsNode, "stops data nodes for a while (kills or freezes them)"},
	{RestartsNode, "kills data nodes and starts them again with the persistence the step or the node has (none: back empty)"},
	{FreezesNode, "freezes data nodes: connections stay open and nothing is answered until it ends"},
	{IsolatesNode, "cuts data nodes off, from the clients or from each other"},
	{IsolatesClient, "cuts a client off from the data nodes"},
	{SlowsLinks, "delays the packets on links"},
	{LosesReplies, "loses (or delays) the replies of commands that ran"},
	{StopsClient, "stops or starves a client's process: what falls due meanwhile runs late"},
	{CrashesClient, "crashes a client: its holds end without a release"},
	{ArmsStep, "arms a lock step: acts only if a target client reaches it while armed"},
	{MovesNodeClock, "steps or drifts a data node's wall clock, by which it expires keys"},
	{MovesClientClock, "steps or drifts a client's wall clock, by which some libraries judge validity"},
	{LosesKey, "can lose a held key: a node back empty, a replica promoted without it, an eviction"},
	{RefusesWrites, "makes data nodes refuse writes"},
	{FillsMemory, "fills a node's memory to its limit: writes refused or keys evicted"},
	{PromotesReplica, "moves the primary role to a replica"},
}

// Traits lists every trait, in order.
func Traits() []Trait {
	out := make([]Trait, len(traitDocs))
	for i, d := range traitDocs {
		out[i] = d.t
	}
	return out
}

// Doc is the trait's one line, "" for a trait that is not one.
func (t Trait) Doc() string {
	for _, d := range traitDocs {
		if d.t == t {
			return d.doc
		}
	}
	return ""
}

// Valid reports whether t is one of Traits.
func (t Trait) Valid() bool { return t.Doc() != "" }

// TraitSet is the traits of a fault (or of what a window is reached by),
// each once, in the order they were added.
type TraitSet []Trait

// Has reports whether the set holds any of ts.
func (s TraitSet) Has(ts ...Trait) bool {
	for _, t := range ts {
		if slices.Contains(s, t) {
			return true
		}
	}
	return false
}

// With is s with those of ts it lacks appended (s itself is not changed).
func (s TraitSet) With(ts ...Trait) TraitSet {
	out := slices.Clip(s)
	for _, t := range ts {
		if !out.Has(t) {
			out = append(out, t)
		}
	}
	return out
}

// String is the traits comma separated.
func (s TraitSet) String() string {
	xs := make([]string, len(s))
	for i, t := range s {
		xs[i] = string(t)
	}
	return strings.Join(xs, ", ")
}

// Or is the traits joined by "or", as a sentence says which ones reach
// something: "stops-client or isolates-client".
func (s TraitSet) Or() string {
	xs := make([]string, len(s))
	for i, t := range s {
		xs[i] = string(t)
	}
	return strings.Join(xs, " or ")
}

// validate refuses a trait that is not one, or one given twice.
func (s TraitSet) validate() error {
	for i, t := range s {
		if !t.Valid() {
			return fmt.Errorf("fault trait %q unknown (known: %s)", t, TraitSet(Traits()))
		}
		if slices.Contains(s[:i], t) {
			return fmt.Errorf("fault trait %q given twice", t)
		}
	}
	return nil
}

// UnmarshalJSON reads a fault as written, and as histories written before
// fault traits were recorded wrote it: their "arms" flag (the fault arms a
// lock step) is the trait ArmsStep. Their other traits are their kind's,
// which package history does not know: the runner fills them in when it
// reads a stored history (runner.ReadHistory).
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plain Fault
	var v struct {
		plain
		Arms bool `json:"arms"`
	}
	if err := strictUnmarshal(b, &v); err != nil {
		return err
	}
	*f = Fault(v.plain)
	if v.Arms {
		f.Traits = f.Traits.With(ArmsStep)
	}
	return nil
}

// strictUnmarshal is json.Unmarshal refusing unknown fields, as the
// history reader does for the op around it.
func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
