package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

// ErrPlan wraps every error about the plan itself: bad input, not a
// failure of the harness (exit code 254 rather than 255).
var ErrPlan = errors.New("invalid plan")

// Span is a duration in a plan: "750ms", "1.5s" or relative to the lock
// TTL, "0.5ttl".
type Span = nemesis.Span

// Plan is everything a run does, as a JSON document a person can read,
// edit and replay: topology, lock, workload, fault schedule and seed.
// Durations are Spans; relative ones resolve against TTL.
type Plan struct {
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Seed        int64  `json:"seed"`

	Topology cluster.Topology `json:"topology"`
	// Provider runs the servers: "process" (default), "docker" or
	// "external" (External then names its configuration file).
	Provider    string              `json:"provider,omitempty"`
	External    string              `json:"external,omitempty"`
	Persistence cluster.Persistence `json:"persistence,omitempty"`

	// TTL of the lock: an absolute span.
	TTL      Span         `json:"ttl"`
	Lock     LockPlan     `json:"lock"`
	Workload WorkloadPlan `json:"workload"`
	// TimeLimit: how long clients start new operations.
	TimeLimit Span `json:"time_limit"`
	// Faults is the nemesis schedule, times from the start of the workload.
	Faults []nemesis.Step `json:"faults,omitempty"`
	Check  CheckPlan      `json:"check,omitzero"`
}

// LockPlan is the lock under test.
type LockPlan struct {
	// Variant is one of variants.Names().
	Variant string `json:"variant"`
	// Inner is the variant a watchdog wraps (default single).
	Inner         string   `json:"inner,omitempty"`
	WaitReplicas  int      `json:"wait_replicas,omitempty"`
	WaitTimeout   Span     `json:"wait_timeout,omitzero"`
	NodeTimeout   Span     `json:"node_timeout,omitzero"`
	DriftFactor   *float64 `json:"drift_factor,omitempty"`
	SetNXOnExtend bool     `json:"setnx_on_extend,omitempty"`
	// ReadTimeout of every client's Redis connections (default 1 s): a
	// reply slower than this is an unknown outcome.
	ReadTimeout Span `json:"read_timeout,omitzero"`
}

// Range is [min, max] in JSON.
type Range [2]Span

// WorkloadPlan is what the clients do.
type WorkloadPlan struct {
	Kind    workloads.Kind `json:"kind"`
	Mode    workloads.Mode `json:"mode,omitempty"` // default process
	Clients int            `json:"clients"`
	Keys    int            `json:"keys,omitempty"` // default 1
	Hold    Range          `json:"hold"`
	Think   Range          `json:"think,omitzero"`
	// Retry: "try" (one attempt per cycle) or "wait" (retry every
	// RetryDelay plus up to RetryJitter until AcquireTimeout; by default
	// 5 ms plus up to 20 ms).
	Retry          string `json:"retry,omitempty"`
	RetryDelay     Span   `json:"retry_delay,omitzero"`
	RetryJitter    Span   `json:"retry_jitter,omitzero"`
	AcquireTimeout Span   `json:"acquire_timeout,omitzero"`
	OpTimeout      Span   `json:"op_timeout,omitzero"`
	CheckValidity  bool   `json:"check_validity,omitempty"`
	ObeyLost       bool   `json:"obey_lost,omitempty"`
	ExtendEvery    Span   `json:"extend_every,omitzero"`
	Nest           int    `json:"nest,omitempty"`
	// Crash makes clients crash at a lock step with a probability.
	Crash        *workloads.CrashSpec `json:"crash,omitempty"`
	RestartDelay Span                 `json:"restart_delay,omitzero"`
	ClockOffset  Span                 `json:"clock_offset,omitzero"`
	Rate         float64              `json:"rate,omitempty"`
	MaxOps       int                  `json:"max_ops,omitempty"`
}

// CheckPlan tunes the checkers.
type CheckPlan struct {
	LivenessK              float64  `json:"liveness_k,omitempty"`
	LinearizabilityTimeout Span     `json:"linearizability_timeout,omitzero"`
	Skip                   []string `json:"skip,omitempty"`
}

// LoadPlan reads a plan file, refusing unknown fields so a typo is an error.
func LoadPlan(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, fmt.Errorf("%w: %w", ErrPlan, err)
	}
	return ParsePlan(b, path)
}

// ParsePlan decodes a plan; name says where it came from in errors.
func ParsePlan(b []byte, name string) (Plan, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return Plan{}, fmt.Errorf("%w: %s: %w", ErrPlan, name, err)
	}
	if dec.More() {
		return Plan{}, fmt.Errorf("%w: %s: trailing data after the plan", ErrPlan, name)
	}
	return p, nil
}

// JSON renders the plan indented, as plan.json holds it.
func (p Plan) JSON() []byte {
	b, _ := json.MarshalIndent(p, "", "  ") // a Plan always marshals
	return append(b, '\n')
}

// ttl is the plan's TTL as a duration (0 if the plan is invalid).
func (p Plan) ttl() time.Duration {
	if p.TTL.Relative() {
		return 0
	}
	return p.TTL.Resolve(0)
}

func (p Plan) span(s Span) time.Duration { return s.Resolve(p.ttl()) }

// withDefaults fills what a plan may leave out.
func (p Plan) withDefaults() Plan {
	if p.Provider == "" {
		p.Provider = "process"
	}
	if p.Name == "" {
		p.Name = "run"
	}
	if p.Workload.Mode == "" {
		p.Workload.Mode = workloads.Processes
	}
	if p.Workload.Keys == 0 {
		p.Workload.Keys = 1
	}
	if p.Workload.Retry == "" {
		p.Workload.Retry = "wait"
	}
	if p.Workload.Nest == 0 {
		p.Workload.Nest = 1
	}
	return p
}

// Validate checks the plan as far as it can without starting anything.
func (p Plan) Validate() error {
	p = p.withDefaults()
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrPlan, fmt.Sprintf(format, a...))
	}
	if err := p.Topology.Validate(); err != nil {
		return bad("topology: %v", err)
	}
	switch p.Provider {
	case "process", "docker":
	case "external":
		if p.External == "" {
			return bad("provider external needs \"external\": the path of the deployment's configuration")
		}
	default:
		return bad("provider %q unknown (valid: process, docker, external)", p.Provider)
	}
	if p.TTL.IsZero() || p.TTL.Relative() || p.ttl() < time.Millisecond {
		return bad("ttl %q must be an absolute duration of at least 1ms", p.TTL)
	}
	if tl := p.span(p.TimeLimit); tl <= 0 {
		return bad("time_limit %q must be positive", p.TimeLimit)
	}
	spec := p.lockSpec()
	if err := spec.Validate(); err != nil {
		return bad("%v", err)
	}
	if spec.AllNodes() && p.Topology.Kind != cluster.Independent {
		return bad("lock %s needs independent masters (topology independent:N), not %s", spec.Variant, p.Topology)
	}
	if spec.WaitReplicas > 0 && (p.Topology.Kind != cluster.Replicated || spec.WaitReplicas > p.Topology.N) {
		return bad("lock wait_replicas %d needs a replicated topology with at least that many replicas, not %s", spec.WaitReplicas, p.Topology)
	}
	if spec.Variant == "redlock" && len(p.Topology.Nodes())%2 == 0 {
		return bad("lock redlock needs an odd number of masters, topology %s has %d", p.Topology, len(p.Topology.Nodes()))
	}
	w := p.Workload
	if w.Retry != "try" && w.Retry != "wait" {
		return bad("workload retry %q unknown (valid: try, wait)", w.Retry)
	}
	if w.Nest > 1 && spec.Variant != "reentrant" {
		return bad("workload nest %d needs the reentrant lock, not %s", w.Nest, spec.Variant)
	}
	if _, err := p.workloadConfig(nil); err != nil {
		return bad("workload: %v", err)
	}
	np := p.nemesisPlan()
	if err := np.Validate(p.nemesisSetup()); err != nil {
		return bad("faults: %v", err)
	}
	if s := p.span(p.Check.LinearizabilityTimeout); s < 0 {
		return bad("check linearizability_timeout %q is negative", p.Check.LinearizabilityTimeout)
	}
	for _, name := range p.Check.Skip {
		switch name {
		case checker.MutualExclusion, checker.Linearizability, checker.Fencing, checker.StaleWrites, checker.LostUpdates, checker.Liveness:
		default:
			return bad("check skip: unknown checker %q", name)
		}
	}
	return nil
}

// lockSpec is the plan's lock as variants build it.
func (p Plan) lockSpec() variants.Spec {
	l := p.Lock
	return variants.Spec{
		Variant: l.Variant, TTL: p.ttl(), Inner: l.Inner,
		WaitReplicas: l.WaitReplicas, WaitTimeout: p.span(l.WaitTimeout),
		NodeTimeout: p.span(l.NodeTimeout), DriftFactor: l.DriftFactor,
		SetNXOnExtend: l.SetNXOnExtend,
	}
}

func (p Plan) readTimeout() time.Duration {
	if d := p.span(p.Lock.ReadTimeout); d > 0 {
		return d
	}
	return time.Second
}

// workloadConfig is the plan's workload for the workloads package; specs
// are the clients' lock specs (nil when only validating).
func (p Plan) workloadConfig(specs []json.RawMessage) (workloads.Config, error) {
	p = p.withDefaults()
	w := p.Workload
	c := workloads.Config{
		Kind: w.Kind, Mode: w.Mode, Clients: w.Clients, Keys: w.Keys,
		Lock:           workloads.LockSpec{Builder: BuilderName, PerClient: specs},
		AcquireTimeout: p.span(w.AcquireTimeout), OpTimeout: p.span(w.OpTimeout),
		Hold:          workloads.Range{Min: p.span(w.Hold[0]), Max: p.span(w.Hold[1])},
		Think:         workloads.Range{Min: p.span(w.Think[0]), Max: p.span(w.Think[1])},
		CheckValidity: w.CheckValidity, ObeyLost: w.ObeyLost, Crash: w.Crash,
		ExtendEvery: p.span(w.ExtendEvery), Nest: w.Nest,
		RestartDelay: p.span(w.RestartDelay), ClockOffset: p.span(w.ClockOffset),
		Rate: w.Rate, TimeLimit: p.span(p.TimeLimit), MaxOps: w.MaxOps,
		Seed: uint64(p.Seed),
	}
	if w.Retry == "try" {
		s := lock.TryOnce()
		c.Retry = &s
	} else {
		// Redlock's advice: retry after a random delay, or clients that
		// split the free nodes between them retry in lockstep and split
		// them again (seen: a second majority delayed by 1.3 s).
		delay, jitter := p.span(w.RetryDelay), p.span(w.RetryJitter)
		if delay == 0 && jitter == 0 {
			delay, jitter = 5*time.Millisecond, 20*time.Millisecond
		}
		s := lock.Wait(delay, jitter)
		c.Retry = &s
	}
	if specs == nil {
		c.Lock.Spec = json.RawMessage(`{}`)
	}
	return c, c.Validate()
}

func (p Plan) nemesisPlan() nemesis.Plan {
	return nemesis.Plan{Seed: p.Seed, TTL: p.TTL, Steps: p.Faults}
}

func (p Plan) needsNodeClock() bool {
	for _, s := range p.Faults {
		if s.Fault == nemesis.Clock {
			return true
		}
	}
	return false
}

// nemesisSetup describes the run's environment to the fault validator.
func (p Plan) nemesisSetup() nemesis.Setup {
	p = p.withDefaults()
	mode := nemesis.ProcessClients
	if p.Workload.Mode == workloads.InProcess {
		mode = nemesis.InProcessClients
	}
	return nemesis.Setup{
		Topology: p.Topology, Clients: p.Workload.Clients,
		NodeClock: p.needsNodeClock(), ClientMode: mode,
		Refuses: providerRefuses(p),
	}
}

// checkConfig is the checkers' configuration for this plan.
func (p Plan) checkConfig() checker.Config {
	return checker.Config{
		TTL: p.ttl(), LivenessK: p.Check.LivenessK,
		LinearizabilityTimeout: p.span(p.Check.LinearizabilityTimeout),
		Fenced:                 p.Workload.Kind == workloads.FencedWrite && p.Lock.Variant == "fenced",
		Counter:                p.Workload.Kind == workloads.Counter,
		Reentrant:              p.Lock.Variant == "reentrant",
		Skip:                   p.Check.Skip,
	}
}
