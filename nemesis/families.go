package nemesis

// Family is a group of fault kinds that break a lock the same way —
// through the network, the data nodes' processes, clocks, persistence,
// memory, lost replies, the clients, the lock's own steps, a failover —
// hunted together by a campaign (package campaign), one hunt per topology
// and family.
type Family struct {
	// Name is the family's stable name (campaign.json, --families).
	Name string
	// Doc says in one line what its faults do.
	Doc string
	// Kinds are its fault kinds; a campaign draws from those a run can
	// take.
	Kinds []Kind
}

// Families lists the families, in the order campaigns list them. Every
// kind belongs to at least one (a test holds it to that).
func Families() []Family {
	return []Family{
		{Name: "network", Doc: "links cut between clients and nodes, and slow ones", Kinds: []Kind{Partition, ClientPartition, Latency}},
		{Name: "process", Doc: "data nodes killed, restarted and paused", Kinds: []Kind{Kill, Restart, Pause}},
		{Name: "clock", Doc: "node and client clocks stepped and drifting", Kinds: []Kind{Clock, ClockDrift, ClientClock, ClientDrift}},
		{Name: "persistence", Doc: "nodes back from a restart with what their persistence kept, or empty", Kinds: []Kind{Restart, Kill}},
		{Name: "memory", Doc: "memory pressure, eviction and refused writes", Kinds: []Kind{Memory, RefuseWrites}},
		{Name: "replies", Doc: "replies lost or late, with the library's own retries", Kinds: []Kind{ReplyLoss, Latency}},
		{Name: "clients", Doc: "clients paused and starved of CPU", Kinds: []Kind{ClientPause, ClientStarve}},
		{Name: "steps", Doc: "clients stopped or crashed at the lock's own steps", Kinds: []Kind{StepPause, StepCrash}},
		{Name: "failover", Doc: "a replica promoted, and the partitions Sentinel answers with one", Kinds: []Kind{Failover, Partition}},
	}
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
