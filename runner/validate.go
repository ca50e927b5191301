package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Validate checks the plan as it will run — normalized, so a field it
// leaves out is checked with its default — as far as it can without
// starting anything. Each field is checked by its own type (the topology
// by cluster, the lock's options by variants.Spec, the workload's by
// workloads.Options, the faults by nemesis); Validate composes them and
// checks what only the plan as a whole can tell. A problem with a field
// names it by its JSON path ("lock.drift_factor: 1.5 must be in [0, 1)");
// the command line names the flag instead. Every error wraps ErrPlan.
func (p Plan) Validate() error { return p.Normalize().validate() }

// Normalized is the plan normalized (Normalize) and validated, and what is
// wrong with it: how a plan loaded or built enters use, normalized once.
// adjust, when given, changes the normalized plan before it is validated
// (the command line fills in its own defaults for what a plan's zero
// leaves out). Errors wrap ErrPlan.
func (p Plan) Normalized(adjust ...func(*Plan)) (Plan, error) {
	p = p.Normalize()
	for _, a := range adjust {
		a(&p)
	}
	return p, p.validate()
}

// validate checks a normalized plan.
func (p Plan) validate() error {
	for _, check := range []func() error{p.validateWhere, p.validateLock, p.validateKind, p.validateWork} {
		if err := check(); err != nil {
			return fmt.Errorf("%w: %w", ErrPlan, err)
		}
	}
	return nil
}

// validateWhere checks where the plan runs: topology, provider, server,
// access, what the topology's kind cannot run, persistence and the nodes'
// settings.
func (p Plan) validateWhere() error {
	if err := p.Topology.Validate(); err != nil {
		return field.Errorf("topology", "%w", err)
	}
	k, err := cluster.LookupProvider(p.Provider)
	if err != nil {
		return field.Errorf("provider", "%w", err)
	}
	if k.External && p.External == "" {
		return field.Errorf("external", "provider %s needs %v: the path of the deployment's configuration", k.Name, field.Self)
	}
	if err := p.Server.Validate(); err != nil {
		return field.Errorf("server", "%w", err)
	}
	if err := p.Access.Validate(); err != nil {
		return field.Errorf("access", "%w", err)
	}
	// The topology kind's own rules on the rest of the run (no TLS to a
	// Redis Cluster), which cluster.Start asks too; its errors name the
	// field.
	if err := p.clusterSpec(p.Access).CheckTopology(); err != nil {
		return err
	}
	if p.Persistence != "" {
		if err := p.Persistence.Validate(); err != nil {
			return field.Errorf("persistence", "%w", err)
		}
	}
	if !p.SentinelDownAfter.IsZero() {
		if d := p.span(p.SentinelDownAfter); !p.Topology.Sentinels || d < 100*time.Millisecond {
			return field.Errorf("sentinel_down_after", "%v %q needs a topology with Sentinels and at least 100ms", field.Self, p.SentinelDownAfter)
		}
	}
	for _, k := range sortedKeys(p.NodeConfig) {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\n") || strings.HasPrefix(k, "-") {
			return field.Errorf("node_config", "%q is not a directive name", k)
		}
		if contains(harnessDirectives, strings.ToLower(k)) {
			return field.Errorf("node_config", "%s is set by the harness (or the plan's own fields: persistence, access), not here", k)
		}
	}
	return nil
}

// validateLock checks the TTL, the lock's options (variants.Spec), the
// run's own lock settings, and whether the topology suits the lock.
func (p Plan) validateLock() error {
	if p.TTL.IsZero() || p.TTL.Relative() || p.ttl() < time.Millisecond {
		return field.Errorf("ttl", "%v %q must be an absolute duration of at least 1ms", field.Self, p.TTL)
	}
	spec := p.lockSpec()
	if err := spec.Validate(); err != nil {
		if ttl := specTTL(err, "ttl"); ttl != nil {
			return ttl
		}
		return field.Within("lock", err)
	}
	if err := p.Lock.validate(p); err != nil {
		return field.Within("lock", err)
	}
	// The topology's verdict on the lock, as an error of the topology
	// (the lock is valid on its own by now).
	if err := p.Topology.CheckLock(cluster.LockUse{Lock: spec.Variant, EveryMaster: spec.AllNodes(), WaitReplicas: spec.WaitReplicas,
		CrossSlot: spec.CrossSlot(), EveryMasterLocks: variants.With(func(i variants.Info) bool { return i.AllNodes })}); err != nil {
		return field.Errorf("topology", "%w", err)
	}
	return nil
}

// validate checks what only the run uses of the lock section; paths are
// within it.
func (l LockPlan) validate(p Plan) error {
	if d := p.span(l.ReadTimeout); d < 0 {
		return field.Errorf("read_timeout", "%v is negative", l.ReadTimeout)
	}
	switch l.Discovery {
	case "", DiscoveryFixed:
	case DiscoverySentinel:
		if !p.Topology.Sentinels {
			return field.Errorf("discovery", "%v sentinel needs a topology with Sentinels (replicated:R+sentinels), not %s", field.Self, p.Topology)
		}
	default:
		return field.Errorf("discovery", "%v %q unknown (valid: sentinel, fixed)", field.Self, l.Discovery)
	}
	if n := len(l.ClientTTL); n > 0 && n != p.Workload.Clients {
		return field.Errorf("client_ttl", "%v lists %d leases for %d clients", field.Self, n, p.Workload.Clients)
	}
	if n := len(l.Tokens); n > 0 && n != p.Workload.Clients {
		return field.Errorf("tokens", "%v lists %d tokens for %d clients", field.Self, n, p.Workload.Clients)
	}
	for i, t := range l.Tokens {
		if t == "" {
			return field.Errorf(fmt.Sprintf("tokens[%d]", i), "%v is empty: a client's token is the value it owns the key by", field.Self)
		}
	}
	for i, t := range l.ClientTTL {
		if d := p.span(t); d < time.Millisecond {
			return field.Errorf(fmt.Sprintf("client_ttl[%d]", i), "%v %q must be at least 1ms", field.Self, t)
		}
		// What the lock asks of its TTL (whole seconds, say) holds for
		// each client's own lease too.
		if err := p.clientLockSpec(i).Validate(); err != nil {
			if ttl := specTTL(err, fmt.Sprintf("client_ttl[%d]", i)); ttl != nil {
				return ttl
			}
			return err
		}
	}
	return nil
}

// specTTL is an error of a lock's variants.Spec about its TTL, named by
// the field of the plan the TTL comes from (path: the plan's ttl, or a
// client's client_ttl[i] within the lock section); nil for any other
// error.
func specTTL(err error, path string) error {
	fe, ok := err.(*field.Error)
	if !ok || fe.Path != "ttl" {
		return nil
	}
	named := *fe
	named.Path = path
	return &named
}

// validateKind checks what the lock's kind and declared traits ask of the
// plan: a latch goes with the latch workload and nothing else does, a read
// fraction with a read-write lock, nested holds with a reentrant lock, a
// lock that needs an odd number of masters with such a topology.
func (p Plan) validateKind() error {
	kind, w, v := p.lockKind(), p.Workload, p.Lock.Variant
	info, _ := p.Lock.Info() // validateLock checked the lock first
	switch {
	case kind == lock.KindLatch && w.Kind != workloads.Latch:
		return field.Errorf("workload.kind", "lock %s is a latch: it needs %v %q, not %q", v, field.Self, workloads.Latch, w.Kind)
	case kind != lock.KindLatch && w.Kind == workloads.Latch:
		return field.Errorf("workload.kind", "%v latch needs the latch lock, not %s", field.Self, v)
	case kind != lock.KindReadWrite && (w.ReadFraction != nil || w.ClientReadFraction != nil):
		return field.Errorf("workload.read_fraction", "%v and client_read_fraction apply only to a read-write lock, not %s", field.Self, v)
	case w.Latch != nil && w.Kind != workloads.Latch:
		return field.Errorf("workload.latch", "%v settings apply only to workload kind %q", field.Self, workloads.Latch)
	case w.InitEachCycle && kind != lock.KindSemaphore:
		return field.Errorf("workload.init_each_cycle", "%v applies only to a semaphore, not %s", field.Self, v)
	case w.Nest > 1 && !info.Reentrant:
		return field.Errorf("workload.nest", "%v %d needs a reentrant lock (%s), not %s", field.Self, w.Nest, strings.Join(variants.With(func(i variants.Info) bool { return i.Reentrant }), ", "), p.Lock.Label())
	case info.OddMasters && len(p.Topology.Masters())%2 == 0:
		return field.Errorf("topology", "%s has %d masters: lock %s needs an odd number of them", p.Topology, len(p.Topology.Masters()), p.Lock.Label())
	}
	return nil
}

// validateWork checks the time limit, the workload, the faults and the
// checkers' settings.
func (p Plan) validateWork() error {
	if tl := p.span(p.TimeLimit); tl <= 0 {
		return field.Errorf("time_limit", "%v %q must be positive", field.Self, p.TimeLimit)
	}
	if err := p.Workload.Validate(p.ttl(), p.span(p.TimeLimit)); err != nil {
		return field.Within("workload", err)
	}
	// No provider is built here (a docker one may build an image): the
	// faults are checked for every control, and Run checks them again
	// against the provider it builds before it starts anything.
	if err := p.nemesisPlan().Validate(p.nemesisSetup(nil)); err != nil {
		return faultsError(err)
	}
	if err := p.validateSteps(); err != nil {
		return err
	}
	return field.Within("check", p.Check.validate(p))
}

// workloadSteps are the steps the workload reports, whatever the lock.
var workloadSteps = []string{workloads.StepAfterAcquire, workloads.StepBeforeRelease, workloads.StepBeforeWrite, workloads.StepBeforeCountDown}

// validateSteps checks that every step the plan's faults arm, and the one
// its workload crashes at, is one the lock declares (Info.Steps: a
// variant's registration, a client's manifest) or one of the workload's:
// a step nobody reports would never stop a client.
func (p Plan) validateSteps() error {
	info, err := p.Lock.Info()
	if err != nil {
		return nil // validateLock said why
	}
	check := func(path, step string) error {
		if step == "" || slices.Contains(workloadSteps, step) || slices.ContainsFunc(info.Steps, func(s lock.Step) bool { return s.Name == step }) {
			return nil
		}
		if strings.HasPrefix(step, "workload:") {
			return field.Errorf(path, "%q is no step of the workload (its steps: %s)", step, strings.Join(workloadSteps, ", "))
		}
		declared := "its variant's registration"
		if p.Lock.Client != nil {
			declared = "lock.client's steps"
			if m, err := p.Lock.Client.Manifest(); err == nil && m.File() != "" {
				declared = m.File() + "'s field \"steps\""
			}
		}
		has := "none"
		if len(info.Steps) > 0 {
			has = strings.Join(lock.StepNames(info.Steps), ", ")
		}
		return field.Errorf(path, "%q is not a step lock %s reports (%s lists: %s; the workload's: %s)", step, p.Lock.Label(), declared, has, strings.Join(workloadSteps, ", "))
	}
	for i, st := range p.Faults {
		if err := check(fmt.Sprintf("faults[%d].step", i), st.LockStep); err != nil {
			return err
		}
	}
	if c := p.Workload.Crash; c != nil {
		return check("workload.crash.step", c.Step)
	}
	return nil
}

// faultsError is an error of the nemesis's validation (nemesis.Plan.Validate)
// as the plan's: its steps' paths are within "faults" ("faults[2].offset").
func faultsError(err error) error {
	return field.Within("faults", err)
}

// validate checks the checkers' settings; paths are within the section.
func (c CheckPlan) validate(p Plan) error {
	if c.LivenessK < 0 {
		return field.Errorf("liveness_k", "%v is negative", c.LivenessK)
	}
	if s := p.span(c.Linearizability.Timeout); s < 0 {
		return field.Errorf("linearizability.timeout", "%q is negative", c.Linearizability.Timeout)
	}
	if m := c.Linearizability.Memory; m < 0 {
		return field.Errorf("linearizability.memory", "%d is negative", m)
	}
	for _, name := range c.Skip {
		if !checker.IsName(name) {
			return field.Errorf("skip", "unknown checker %q", name)
		}
	}
	return nil
}
