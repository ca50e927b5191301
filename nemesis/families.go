package nemesis

import (
	"slices"

	"github.com/tumbler-dev/tumbler/history"
)

// Family is a group of fault kinds that break a lock the same way —
// through the network, the data nodes' processes, clocks, persistence,
// memory, lost replies, the clients, the lock's own steps, a failover —
// hunted together by a campaign (package campaign), one hunt per topology
// and family. A family is declared by the traits its kinds share, never
// by kind names: a new kind joins every family one of whose traits it
// declares, with no edit here.
type Family struct {
	// Name is the family's stable name (campaign.json, --families).
	Name string
	// Doc says in one line what its faults do.
	Doc string
	// Traits: a kind with any of them belongs to the family, unless it
	// has one of Unless (a step-pause stops a client, but at the lock's
	// steps: it is the steps family's).
	Traits history.TraitSet
	Unless history.TraitSet
	// Kinds are the kinds that belong, in the registry's order; a
	// campaign draws from those a run can take.
	Kinds []Kind
}

// families are the families in order, as declared.
var families = []Family{
	{Name: "network", Doc: "links cut between clients and nodes, and slow ones",
		Traits: history.TraitSet{history.IsolatesNode, history.IsolatesClient, history.SlowsLinks}},
	{Name: "process", Doc: "data nodes killed, restarted and paused",
		Traits: history.TraitSet{history.StopsNode}},
	{Name: "clock", Doc: "node and client clocks stepped and drifting",
		Traits: history.TraitSet{history.MovesNodeClock, history.MovesClientClock}},
	{Name: "persistence", Doc: "nodes back from a restart with what their persistence kept, or empty",
		Traits: history.TraitSet{history.RestartsNode}},
	{Name: "memory", Doc: "memory pressure, eviction and refused writes",
		Traits: history.TraitSet{history.FillsMemory, history.RefusesWrites}},
	{Name: "replies", Doc: "replies lost or late, with the library's own retries",
		Traits: history.TraitSet{history.LosesReplies, history.SlowsLinks}},
	{Name: "clients", Doc: "clients paused and starved of CPU",
		Traits: history.TraitSet{history.StopsClient}, Unless: history.TraitSet{history.ArmsStep}},
	{Name: "steps", Doc: "clients stopped or crashed at the lock's own steps",
		Traits: history.TraitSet{history.ArmsStep}},
	{Name: "failover", Doc: "a replica promoted, and the partitions Sentinel answers with one",
		Traits: history.TraitSet{history.PromotesReplica, history.IsolatesNode}},
}

// Families lists the families, in the order campaigns list them, each
// with its kinds. Every kind belongs to at least one (a test holds it to
// that).
func Families() []Family {
	out := make([]Family, len(families))
	for i, f := range families {
		f.Traits, f.Unless = slices.Clone(f.Traits), slices.Clone(f.Unless)
		f.Kinds = slices.DeleteFunc(KindsWith(f.Traits...), func(k Kind) bool { return k.Traits().Has(f.Unless...) })
		out[i] = f
	}
	return out
}

// FamilyNamed returns the family called name.
func FamilyNamed(name string) (Family, bool) {
	for _, f := range Families() {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}
