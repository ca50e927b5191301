package nemesis

import (
	"context"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Cluster is what the nemesis needs of a cluster: *cluster.Cluster
// implements it. It is an interface so the runtime can be timed against a
// recording fake.
type Cluster interface {
	Topology() cluster.Topology
	// Clients is how many clients have their own proxies (c0..c(K-1)).
	Clients() int
	Cut(mode cluster.CutMode, dir cluster.Direction, links ...string) error
	Delay(latency, jitter time.Duration, dir cluster.Direction, links ...string) error
	Heal(links ...string) error
	Kill(name string) error
	StartNode(ctx context.Context, name string) error
	Restart(ctx context.Context, name string, o cluster.RestartOptions) error
	Up(name string) bool
	// Persistence is the mode data node name runs with now, and whether
	// that is known (see cluster.Cluster.Persistence).
	Persistence(name string) (cluster.Persistence, bool)
	Pause(name string) error
	Resume(name string) error
	SetClock(name string, offset time.Duration) error
	// SetClockDrift makes a node's clock drift by d besides its offset
	// (clockshim.Drift: a clock at a rate; the zero Drift: none).
	SetClockDrift(name string, d clockshim.Drift) error
	Primary(ctx context.Context) (string, error)
	// ProviderName and Controls name the cluster's provider and list the
	// node controls it can carry out.
	ProviderName() string
	Controls() cluster.Controls
	// Values reads key on every data node directly (no proxy), each read
	// bounded by timeout: node → value ("" for a key that is not a
	// string); nodes without the key or not answering are left out.
	Values(ctx context.Context, key string, timeout time.Duration) map[string]string
	Promote(ctx context.Context, name string) error
	SentinelFailover(ctx context.Context) error
	WaitFailover(ctx context.Context, from string) (string, error)
	// Squeeze, PushMemory and Unsqueeze put a data node under memory
	// pressure, push it over its limit once more and undo it;
	// RefuseWrites and AcceptWrites make it refuse writes and undo that
	// (cluster.CanConfig).
	Squeeze(ctx context.Context, name, policy string) error
	PushMemory(ctx context.Context, name string) error
	Unsqueeze(ctx context.Context, name string) error
	RefuseWrites(ctx context.Context, name string, r cluster.Refusal) error
	AcceptWrites(ctx context.Context, name string) error
}

var _ Cluster = (*cluster.Cluster)(nil)

// Clients controls the workload's clients, numbered from 0 as in the
// history (Op.Client). The run engine implements it over its client
// processes. Client i reaches the cluster through the proxies c<i>->X.
type Clients interface {
	Count() int
	// Pause stops client i completely (SIGSTOP); Resume continues it.
	Pause(i int) error
	Resume(i int) error
	// SetClockOffset sets client i's wall clock to host time + d.
	SetClockOffset(i int, d time.Duration) error
	// SetClockDrift makes client i's wall clock drift by d besides its
	// offset.
	SetClockDrift(i int, d clockshim.Drift) error
	// ArmStep makes client i perform action when it next reaches the named
	// lock step; the zero action disarms it.
	ArmStep(i int, step string, action workloads.StepAction) error
	// GateResource closes (or opens) client i's path to the protected
	// resource: while closed its resource requests are held back, as a
	// partitioned client's would be.
	GateResource(i int, closed bool) error
}

// Grant is a lease a client was granted: who holds it, and the owner
// value the lock stored (what a node holding the lease has under the key).
type Grant struct {
	Client int
	Value  string
}

// Oracle answers questions about the live history, for triggers and the
// "holder" and "lease" targets. The run engine implements it from a
// history.Tracker.
type Oracle interface {
	// Holder is the lease on key held now, as clients were told.
	Holder(key string) (g Grant, ok bool)
	// WaitGrant waits for the next successful acquire of key after the
	// call and returns it. It must return when ctx ends: Run waits for it
	// before returning.
	WaitGrant(ctx context.Context, key string) (Grant, error)
}

// Sink receives the nemesis's start and stop records. *history.Recorder
// is one. Run calls it from one goroutine at a time.
type Sink interface {
	Record(history.Op) (history.Op, error)
}

// Setup is what a plan is validated against: the shape of the run it will
// hit.
type Setup struct {
	Topology cluster.Topology
	// Clients is the number of workload clients (0..Clients-1).
	Clients int
	// NodeClock: the data nodes run with the clock shim (cluster.Spec.Clock).
	NodeClock bool
	// ClientMode is where the clients run: client-pause and step-pause
	// need workloads.Processes; "" is workloads.DefaultMode.
	ClientMode workloads.Mode
	// Provider names the provider that runs the nodes and Controls lists
	// what it can do to them (cluster.Provider.Controls): a kind that needs
	// a control the provider lacks is refused. An empty Provider means no
	// provider is at hand yet (a plan checked before the run builds one):
	// every control is assumed, and the provider still refuses at run time
	// what it cannot do.
	Provider string
	Controls cluster.Controls
}

// Env is what Run acts on.
type Env struct {
	Cluster Cluster
	// Clients is required by plans with client faults, Oracle by plans
	// with triggers or "holder" targets.
	Clients Clients
	Oracle  Oracle
	// Clock is the run's history clock: step times count from its start,
	// and records carry its time.
	Clock *history.Clock
	// NodeClock and ClientMode complete the Setup (the cluster gives the
	// topology and its provider, Clients the client count, or without
	// Clients the cluster's).
	NodeClock  bool
	ClientMode workloads.Mode
	// Settled, if set, is called once, as soon as every step due at the
	// start has been applied (a cut at 0 s is in place; a trigger may
	// still be waiting): the runner begins the clients then, so a plan's
	// faults at time zero come before the first operation, not in a race
	// with it.
	Settled func()
}

// Setup describes the env for Plan.Validate.
func (e Env) Setup() Setup {
	s := Setup{NodeClock: e.NodeClock, ClientMode: e.ClientMode}
	if e.Cluster != nil {
		s.Topology = e.Cluster.Topology()
		s.Provider, s.Controls = e.Cluster.ProviderName(), e.Cluster.Controls()
	}
	switch {
	case e.Clients != nil:
		s.Clients = e.Clients.Count()
	case e.Cluster != nil:
		s.Clients = e.Cluster.Clients() // link faults can still name them
	}
	return s
}
