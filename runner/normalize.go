package runner

import (
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// The plan's defaults: what Normalize fills in where a plan leaves a field
// out. The command line's help quotes them.
const (
	DefaultName = "run"
	DefaultLock = "single"
	// DefaultMasters is the default topology's independent masters:
	// DefaultAllNodesMasters for a lock that talks to every node.
	DefaultMasters         = 1
	DefaultAllNodesMasters = 5
	DefaultTTL             = time.Second
	DefaultTimeLimit       = 10 * time.Second
	DefaultReadTimeout     = time.Second
	DefaultPermits         = 2
	DefaultClients         = 4
	DefaultKeys            = 1
	DefaultReadFraction    = 0.75
	// DefaultConcurrency is how many faults a drawn schedule may have
	// active at once unless told (Draw.Normalize; --concurrency).
	DefaultConcurrency = 2
)

// Normalize is the plan with every default filled in: the one place a
// plan's defaults are declared. A field whose zero is a value of its own
// (a think time of 0, a hold of [0, 0]) has none; the command line gives
// those of its own (cmd/tumbler's workloadDefaults says why). The defaults
// are, by section:
//
//   - the plan: name "run", provider process, topology independent:1
//     (independent:5 for a lock on every node), ttl 1s, time_limit 10s;
//   - lock: variant single, read_timeout 1s, discovery sentinel on a
//     topology with Sentinels, permits 2 for a semaphore; what the lock
//     library decides itself (drift, node timeout, threadWaitTime) is
//     left to it;
//   - workload: kind fenced-write (latch for the latch lock), mode process,
//     clients 4, keys 1, retry wait, nest 1, acquire and op timeouts 1s
//     (workloads.Config's), read_fraction 0.75 for a read-write lock, and
//     for the latch workload rounds of 4 TTLs in which half the clients
//     count down;
//   - check: liveness_k, linearizability.memory and .timeout, checker's
//     defaults.
//
// It is applied once where a plan enters the engine — Run, Analyze,
// Runnable, a hunt's template, a shrink's plan, a plan loaded or built
// from flags by the command line —, with its validation through
// Normalized where both are wanted; Validate checks a normalized copy of
// a plan kept as written. The engine's own code then reads the plan as it
// is (WithDrawnFaults, say, takes a normalized plan). A normalized plan is a fixed point: its JSON, read
// back and normalized, is the same, so the plan.json of a run holds every
// value the run used. ParsePlan does not normalize: a plan file reads back
// as written.
func (p Plan) Normalize() Plan {
	if p.Name == "" {
		p.Name = DefaultName
	}
	if p.Provider == "" {
		p.Provider = cluster.DefaultProvider().Name
	}
	if p.Lock.Variant == "" {
		p.Lock.Variant = DefaultLock
	}
	if p.Topology == (cluster.Topology{}) {
		p.Topology = cluster.Topology{Kind: cluster.Independent, N: DefaultMasters}
		if p.Lock.AllNodes() {
			p.Topology.N = DefaultAllNodesMasters
		}
	}
	if p.TTL.IsZero() {
		p.TTL = spans.Fixed(DefaultTTL)
	}
	if p.TimeLimit.IsZero() {
		p.TimeLimit = spans.Fixed(DefaultTimeLimit)
	}
	p.Lock = p.normalLock()
	p.Workload = p.normalWorkload()
	p.Check = p.normalCheck()
	return p
}

func (p Plan) normalLock() LockPlan {
	l := p.Lock
	if l.Kind() == lock.KindSemaphore && l.Permits == 0 {
		l.Permits = DefaultPermits
	}
	if l.ReadTimeout.IsZero() {
		l.ReadTimeout = spans.Fixed(DefaultReadTimeout)
	}
	if l.Client != nil { // a client directory's manifest, as the run reads it
		c := l.Client.Normalize()
		l.Client = &c
	}
	if l.Discovery == "" && p.Topology.Sentinels {
		l.Discovery = DiscoverySentinel
	}
	return l
}

func (p Plan) normalWorkload() workloads.Options {
	w := p.Workload
	kind := p.lockKind()
	if w.Kind == "" {
		w.Kind = workloads.FencedWrite
		if kind == lock.KindLatch {
			w.Kind = workloads.Latch
		}
	}
	w.Mode = w.Mode.OrDefault()
	if w.Clients == 0 {
		w.Clients = DefaultClients
	}
	if w.Keys == 0 {
		w.Keys = DefaultKeys
	}
	if w.Retry == "" {
		w.Retry = workloads.RetryWait
	}
	if w.Nest == 0 {
		w.Nest = 1
	}
	if w.AcquireTimeout.IsZero() {
		w.AcquireTimeout = spans.Fixed(workloads.DefaultAcquireTimeout)
	}
	if w.OpTimeout.IsZero() {
		w.OpTimeout = spans.Fixed(workloads.DefaultOpTimeout)
	}
	if kind == lock.KindReadWrite && w.ReadFraction == nil {
		f := DefaultReadFraction
		w.ReadFraction = &f
	}
	if w.Kind == workloads.Latch && w.Latch == nil {
		// Half the clients count down, the others wait; rounds of 4 TTLs.
		n := max(1, w.Clients/2)
		w.Latch = &workloads.LatchSpec{Count: n, Counters: n, Round: spans.Fixed(4 * p.ttl())}
	}
	return w
}

func (p Plan) normalCheck() CheckPlan {
	c := p.Check
	if c.LivenessK == 0 {
		c.LivenessK = checker.DefaultLivenessK
	}
	if c.Linearizability.Memory == 0 {
		c.Linearizability.Memory = checker.DefaultLinearizabilityMemory
	}
	if c.Linearizability.Timeout.IsZero() {
		c.Linearizability.Timeout = spans.Fixed(checker.DefaultLinearizabilityTimeout)
	}
	return c
}
