package nemesis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tumbler-dev/tumbler/spans"
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

// Kind names a fault. Each kind has one home, its kind_*.go file: its
// fields and their rules, what it needs of the setup, how it is applied,
// healed and described, and how Generate draws it; Kinds lists them.
type Kind string

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

// Node selectors: a step's "node" names a role, and the node that has it
// is found when the step applies (and recorded in the step's fault
// record). Validation takes a selected node to be possibly any node.
const (
	// NodeLease is a node the lease of the holder of Key rests on: a data
	// node whose Key holds the holder's value, as the harness reads it on
	// every node directly when the step applies (for a step triggered by a
	// grant, the lease just granted). When several do, the plan's seed and
	// the step's number pick one, the same on every replay of the same
	// lease. Nobody holding Key, or no node holding the lease, skips the
	// step.
	NodeLease = "lease"
	// NodePrimary is the primary of a replicated topology when the step
	// applies.
	NodePrimary = "primary"
)

// Step is one fault in a plan: one flat JSON object whatever its kind.
// Which fields a kind takes is listed in the package documentation (the
// table is rendered from the kinds themselves); Validate refuses the
// others.
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
	// After is how long after its event a triggered step applies: a
	// grant's holder is then past its next few lock calls (a nested
	// acquire), which a fault applied at once would hit instead.
	After Span `json:"after,omitzero"`

	Fault Kind `json:"fault"`
	// For is how long the fault lasts before it is healed.
	For Span `json:"for,omitzero"`

	// Targets.
	Nodes   []string `json:"nodes,omitempty"`
	Node    string   `json:"node,omitempty"`    // "lease" or "primary"
	Clients []int    `json:"clients,omitempty"` // history client numbers, from 0
	Client  string   `json:"client,omitempty"`  // "holder"
	Links   []string `json:"links,omitempty"`

	// The kinds' own parameters, each group declared in the file of the
	// kinds that take it and embedded here, so the JSON stays one flat
	// object (and s.Latency reads as before). A new kind with a new field
	// declares it in its own file and adds one line here.
	LinkParams     // partition, latency, client-partition, reply-loss (links.go)
	RestartParams  // kill, restart (kind_restart.go)
	ClockParams    // clock, client-clock, memory (kind_clock.go)
	FailoverParams // failover (kind_failover.go)
	StepParams     // step-pause, step-crash (kind_step_pause.go)
	DriftParams    // drift, client-drift (kind_drift.go)
	StarveParams   // client-starve (kind_client_starve.go)
	MemoryParams   // memory (kind_memory.go)
	RefusalParams  // refuse-writes (kind_refuse_writes.go)
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

// Spans are the step's spans with their JSON names, in field order
// (spans.Fields): the one walk over them that compiling a plan (which ones
// are relative) and a shrink (halving durations and magnitudes) go
// through. A span field added to Step is in it without further listing.
func (st *Step) Spans() []spans.Field { return spans.Fields(st) }
