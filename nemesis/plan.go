package nemesis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tumbler-dev/tumbler/cluster"
)

// Plan is a timed fault schedule: what Run executes and what Generate makes.
// It is plain JSON (see the package documentation for the format), saved
// with a run and replayed exactly.
type Plan struct {
	// Seed is the seed Generate made the plan from (informational for a
	// hand-written plan).
	Seed int64 `json:"seed"`
	// TTL is the lock TTL that spans like "0.5ttl" are relative to. It must
	// be absolute, and is required when any step uses a relative span.
	TTL   Span   `json:"ttl,omitzero"`
	Steps []Step `json:"steps"`
}

// Kind names a fault.
type Kind string

// The faults of DESIGN.md §5.
const (
	// Partition cuts links (see Shape) for For.
	Partition Kind = "partition"
	// Latency delays links by Latency ± Jitter for For.
	Latency Kind = "latency"
	// Kill SIGKILLs the Nodes, keeps them down for For, then starts them
	// with Persistence ("" keeps each node's mode).
	Kill Kind = "kill"
	// Restart kills the Nodes and starts them again after Delay with
	// Persistence. It takes no For: it ends when the nodes answer again.
	Restart Kind = "restart"
	// Pause freezes the Nodes (SIGSTOP) for For.
	Pause Kind = "pause"
	// Clock shifts the Nodes' wall clocks by Offset for For (heal: back to
	// 0); with Strobe, the offset alternates with 0 every Strobe interval.
	Clock Kind = "clock"
	// Failover moves the primary of a replicated topology (see Via),
	// optionally after cutting replication so the last writes are lost.
	Failover Kind = "failover"
	// ClientPause stops a client process (SIGSTOP) for For.
	ClientPause Kind = "client-pause"
	// ClientClock shifts a client's wall clock by Offset for For.
	ClientClock Kind = "client-clock"
	// StepPause arms a client to stop for Pause when it next reaches the
	// lock step Step; the arming lasts For.
	StepPause Kind = "step-pause"
	// StepCrash arms a client to crash when it next reaches the lock step
	// Step; the arming lasts For.
	StepCrash Kind = "step-crash"
	// ClientPartition cuts a client from every node and closes its gate to
	// the protected resource for For.
	ClientPartition Kind = "client-partition"
)

// Kinds lists every fault kind.
var Kinds = []Kind{Partition, Latency, Kill, Restart, Pause, Clock, Failover,
	ClientPause, ClientClock, StepPause, StepCrash, ClientPartition}

// Shape says which links a partition or latency step acts on.
type Shape string

// Link shapes. A step without a shape gets one from its targets: Nodes →
// ShapeNodes, Clients or Client → ShapeClient, Links → ShapeLinks.
const (
	// ShapeNodes: every client's link to each of Nodes. One node, a
	// minority or a majority is a matter of how many are named.
	ShapeNodes Shape = "nodes"
	// ShapeIsolate: every link of each of Nodes — from clients, from peers
	// (Sentinels), and replication in and out.
	ShapeIsolate Shape = "isolate"
	// ShapeClient: the links of Clients (or the holder) to every node.
	ShapeClient Shape = "client"
	// ShapeReplication: the replication links of the replicas in Nodes (all
	// replicas if none are named) to the primary of the moment.
	ShapeReplication Shape = "replication"
	// ShapeBridge: clients split into two halves that see overlapping
	// majorities of the nodes. With N nodes and m = N/2+1, the first half of
	// the clients (0..⌈C/2⌉−1) reaches only the first m nodes and the
	// second half only the last m: for independent:5, n1..n3 and n3..n5,
	// bridged by n3. Each half can still form a majority, and any two
	// majorities share a node, so Redlock must stay safe.
	ShapeBridge Shape = "bridge"
	// ShapeLinks: the named cluster links (cluster.Link names such as
	// "c0->n1"; c<i> is client i).
	ShapeLinks Shape = "links"
)

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

// Trigger makes a step wait for an event after At before it applies.
type Trigger string

// TriggerGrant waits for the next successful acquire of Key by any client
// (see Oracle.WaitGrant). With Client "holder" the step then targets that
// client. A step whose grant does not come within Timeout is skipped, or
// applied anyway with OnTimeout "apply".
const TriggerGrant Trigger = "grant"

// OnTimeoutApply applies a triggered step when its event does not come in
// time. It lets two rows share one schedule when only one of them can
// grant the lock (a failover row with and without WAIT).
const OnTimeoutApply = "apply"

// Holder is the Client selector for the client holding Key when the step
// applies (the client granted it, for a step triggered by a grant).
const Holder = "holder"

// ArmsStep reports whether the kind arms a lock step (step-pause,
// step-crash): it acts only if a target client reaches that step while armed.
func (k Kind) ArmsStep() bool { return k == StepPause || k == StepCrash }

// Step is one fault in a plan. Which parameters a kind takes is listed in
// the package documentation; Validate refuses the others.
type Step struct {
	// At is when the step applies, from the start of the run.
	At Span `json:"at"`
	// Trigger, Key and Timeout (default DefaultTriggerTimeout): wait after
	// At for an event on Key.
	Trigger Trigger `json:"trigger,omitempty"`
	Key     string  `json:"key,omitempty"`
	Timeout Span    `json:"timeout,omitzero"`
	// OnTimeout: "skip" (default) or "apply" when the event does not come.
	OnTimeout string `json:"on_timeout,omitempty"`

	Fault Kind `json:"fault"`
	// For is how long the fault lasts before it is healed.
	For Span `json:"for,omitzero"`

	// Targets.
	Nodes   []string `json:"nodes,omitempty"`
	Clients []int    `json:"clients,omitempty"` // history client numbers, from 0
	Client  string   `json:"client,omitempty"`  // "holder"
	Links   []string `json:"links,omitempty"`

	// Links: partition, latency, client-partition.
	Shape     Shape             `json:"shape,omitempty"`
	Mode      cluster.CutMode   `json:"mode,omitempty"`      // default blackhole
	Direction cluster.Direction `json:"direction,omitempty"` // default both
	Latency   Span              `json:"latency,omitzero"`
	Jitter    Span              `json:"jitter,omitzero"`

	// Nodes: kill, restart, clock.
	Persistence cluster.Persistence `json:"persistence,omitempty"`
	Delay       Span                `json:"delay,omitzero"`
	Offset      Span                `json:"offset,omitzero"` // also client-clock
	Strobe      Span                `json:"strobe,omitzero"`

	// Failover.
	Via            Via  `json:"via,omitempty"`
	CutReplication bool `json:"cut_replication,omitempty"`
	Lag            Span `json:"lag,omitzero"`

	// Client steps: the lock step's name, and how long step-pause stops.
	LockStep string `json:"step,omitempty"`
	Pause    Span   `json:"pause,omitzero"`
}

// DecodePlan reads a plan from JSON, refusing unknown fields (a misspelt
// parameter would otherwise be silently ignored) and trailing data. It does
// not validate the plan against a setup; see Plan.Validate.
func DecodePlan(r io.Reader) (Plan, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("plan: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Plan{}, errors.New("plan: trailing data after the plan object")
	}
	return p, nil
}

// ParsePlan is DecodePlan of a byte slice.
func ParsePlan(b []byte) (Plan, error) { return DecodePlan(bytes.NewReader(b)) }
