package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Adhoc is a run described by settings rather than by a plan file: what
// `tumbler run` and `tumbler plan` take as flags. Plan turns it into the
// Plan a run executes, generating the fault schedule from Seed. A zero
// field takes the default its comment gives. Errors name the command-line
// flag of the setting at fault, so a person can fix it.
type Adhoc struct {
	// Name of the plan (the run's directory under the store); default
	// "adhoc-<lock>".
	Name string
	Seed int64

	// Topology in its text form ("independent:5", "replicated:1+sentinels").
	// Nodes > 0 is shorthand for independent:Nodes; the two conflict.
	// Default: independent:5 for a lock that talks to every node (redlock,
	// redsync), otherwise independent:1.
	Topology string
	Nodes    int
	// Provider: process (default), docker or external; External is the
	// external deployment's configuration file (it implies provider
	// external).
	Provider, External string
	// Persistence of the data nodes: none (default), aof-everysec, aof-always.
	Persistence string

	// Lock is one of variants.Names() (default single); Inner the variant a
	// watchdog wraps.
	Lock          string
	Inner         string
	WaitReplicas  int
	WaitTimeout   time.Duration
	NodeTimeout   time.Duration
	DriftFactor   *float64
	SetNXOnExtend bool
	// ReadTimeout of the clients' Redis connections (default 1 s).
	ReadTimeout time.Duration
	// TTL of the lock (default 1 s).
	TTL time.Duration

	// Workload: mutex, fenced-write (default) or counter.
	Workload string
	// ClientMode: process (default) or in-process ("inprocess" too).
	ClientMode string
	Clients    int // default 4
	Keys       int // default 1
	// Hold and Think are "MIN,MAX" or one span for both, each a duration
	// or a multiple of the TTL ("0.5ttl"). Defaults: hold 0.1ttl,0.4ttl;
	// think 0,0.05ttl.
	Hold, Think string
	// Retry: wait (default: retry until the acquire timeout) or try (one
	// attempt per cycle).
	Retry         string
	CheckValidity bool
	ObeyLost      bool
	// TimeLimit: how long clients start new operations (default 10 s).
	TimeLimit time.Duration

	// Nemesis lists fault kinds (nemesis.Kinds) to draw the schedule from;
	// a kind may repeat to weigh it. Empty: no faults.
	Nemesis []string
	// NemesisInterval is the quiet time before the first fault and between
	// two faults (default 3×TTL).
	NemesisInterval time.Duration
}

// Adhoc defaults.
const (
	adhocClients   = 4
	adhocTTL       = time.Second
	adhocTimeLimit = 10 * time.Second
	adhocHold      = "0.1ttl,0.4ttl"
	adhocThink     = "0,0.05ttl"
)

// adhocWorkloads are the workloads a flag can name, in the order help lists them.
var adhocWorkloads = []workloads.Kind{workloads.Mutex, workloads.FencedWrite, workloads.Counter}

// Plan builds the plan the settings describe, with every default filled in
// as the run's plan.json will hold it, and validates it. Every error wraps
// ErrPlan.
func (a Adhoc) Plan() (Plan, error) {
	bad := func(flag, format string, args ...any) error {
		return fmt.Errorf("%w: --%s: %s", ErrPlan, flag, fmt.Sprintf(format, args...))
	}
	p := Plan{Name: a.Name, Seed: a.Seed}

	if a.Lock == "" {
		a.Lock = "single"
	}
	info, err := variants.Lookup(a.Lock)
	if err != nil {
		return Plan{}, bad("lock", "%v", err)
	}
	if a.Inner != "" {
		if a.Lock != "watchdog" {
			return Plan{}, bad("inner", "only a watchdog wraps another lock, not --lock %s", a.Lock)
		}
		if _, err := variants.Lookup(a.Inner); err != nil {
			return Plan{}, bad("inner", "%v", err)
		}
	}
	if a.WaitReplicas < 0 {
		return Plan{}, bad("wait-replicas", "%d is negative", a.WaitReplicas)
	}
	if a.WaitTimeout != 0 && a.WaitReplicas == 0 {
		return Plan{}, bad("wait-timeout", "needs --wait-replicas")
	}
	if a.DriftFactor != nil && (*a.DriftFactor < 0 || *a.DriftFactor >= 1) {
		return Plan{}, bad("drift-factor", "%g must be in [0, 1)", *a.DriftFactor)
	}
	for flag, d := range map[string]time.Duration{"wait-timeout": a.WaitTimeout, "node-timeout": a.NodeTimeout, "read-timeout": a.ReadTimeout} {
		if d < 0 {
			return Plan{}, bad(flag, "%v is negative", d)
		}
	}
	p.Lock = LockPlan{
		Variant: a.Lock, Inner: a.Inner, WaitReplicas: a.WaitReplicas,
		WaitTimeout: nemesis.Fixed(a.WaitTimeout), NodeTimeout: nemesis.Fixed(a.NodeTimeout),
		DriftFactor: a.DriftFactor, SetNXOnExtend: a.SetNXOnExtend,
		ReadTimeout: nemesis.Fixed(a.ReadTimeout),
	}
	if p.Name == "" {
		p.Name = "adhoc-" + a.Lock
	}

	switch {
	case a.Nodes < 0:
		return Plan{}, bad("nodes", "%d is negative", a.Nodes)
	case a.Nodes > 0 && a.Topology != "":
		return Plan{}, bad("nodes", "conflicts with --topology (--nodes %d is short for --topology independent:%d): give one", a.Nodes, a.Nodes)
	case a.Nodes > 0:
		a.Topology = fmt.Sprintf("independent:%d", a.Nodes)
	case a.Topology == "" && info.AllNodes:
		a.Topology = "independent:5"
	case a.Topology == "":
		a.Topology = "independent:1"
	}
	if p.Topology, err = cluster.ParseTopology(a.Topology); err != nil {
		flag := "topology"
		if a.Nodes > 0 {
			flag = "nodes"
		}
		return Plan{}, bad(flag, "%v", err)
	}

	switch {
	case a.External != "" && a.Provider == "":
		a.Provider = "external"
	case a.External != "" && a.Provider != "external":
		return Plan{}, bad("external", "names an external deployment, but --provider is %s", a.Provider)
	case a.Provider == "external" && a.External == "":
		return Plan{}, bad("provider", "external needs --external FILE, the deployment's configuration")
	case a.Provider == "":
		a.Provider = "process"
	}
	switch a.Provider {
	case "process", "docker", "external":
	default:
		return Plan{}, bad("provider", "%q unknown (valid: process, docker, external)", a.Provider)
	}
	p.Provider, p.External = a.Provider, a.External
	if a.Persistence != "" {
		if p.Persistence, err = cluster.ParsePersistence(a.Persistence); err != nil {
			return Plan{}, bad("persistence", "%v", err)
		}
	}

	if a.TTL == 0 {
		a.TTL = adhocTTL
	}
	if a.TTL < time.Millisecond {
		return Plan{}, bad("ttl", "%v must be at least 1ms", a.TTL)
	}
	p.TTL = nemesis.Fixed(a.TTL)
	if a.TimeLimit == 0 {
		a.TimeLimit = adhocTimeLimit
	}
	if a.TimeLimit < 0 {
		return Plan{}, bad("time-limit", "%v is negative", a.TimeLimit)
	}
	p.TimeLimit = nemesis.Fixed(a.TimeLimit)

	w := &p.Workload
	if a.Workload == "" {
		a.Workload = string(workloads.FencedWrite)
	}
	if !slices.Contains(adhocWorkloads, workloads.Kind(a.Workload)) {
		return Plan{}, bad("workload", "%q unknown (valid: %s)", a.Workload, joinKinds(adhocWorkloads))
	}
	w.Kind = workloads.Kind(a.Workload)
	switch a.ClientMode {
	case "", string(workloads.Processes):
		w.Mode = workloads.Processes
	case string(workloads.InProcess), "inprocess":
		w.Mode = workloads.InProcess
	default:
		return Plan{}, bad("client-mode", "%q unknown (valid: process, inprocess)", a.ClientMode)
	}
	switch {
	case a.Clients < 0:
		return Plan{}, bad("clients", "%d is negative", a.Clients)
	case a.Clients == 0:
		a.Clients = adhocClients
	}
	if a.Keys < 0 {
		return Plan{}, bad("keys", "%d is negative", a.Keys)
	}
	w.Clients, w.Keys = a.Clients, a.Keys
	if a.Hold == "" {
		a.Hold = adhocHold
	}
	if w.Hold, err = parseRange(a.Hold); err != nil {
		return Plan{}, bad("hold", "%v", err)
	}
	if a.Think == "" {
		a.Think = adhocThink
	}
	if w.Think, err = parseRange(a.Think); err != nil {
		return Plan{}, bad("think", "%v", err)
	}
	switch a.Retry {
	case "", "wait", "try":
		w.Retry = a.Retry
	default:
		return Plan{}, bad("retry", "%q unknown (valid: wait, try)", a.Retry)
	}
	w.CheckValidity, w.ObeyLost = a.CheckValidity, a.ObeyLost

	if p.Faults, err = a.faults(p); err != nil {
		return Plan{}, err
	}
	p = p.withDefaults()
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// faults generates the schedule from the fault kinds and the seed.
func (a Adhoc) faults(p Plan) ([]nemesis.Step, error) {
	if a.NemesisInterval < 0 {
		return nil, fmt.Errorf("%w: --nemesis-interval: %v is negative", ErrPlan, a.NemesisInterval)
	}
	if len(a.Nemesis) == 0 {
		if a.NemesisInterval != 0 {
			return nil, fmt.Errorf("%w: --nemesis-interval: needs --nemesis", ErrPlan)
		}
		return nil, nil
	}
	mix := make([]nemesis.Kind, 0, len(a.Nemesis))
	for _, k := range a.Nemesis {
		k = strings.TrimSpace(k)
		if !slices.Contains(nemesis.Kinds, nemesis.Kind(k)) {
			return nil, fmt.Errorf("%w: --nemesis: unknown fault %q (valid: %s)", ErrPlan, k, joinKinds(nemesis.Kinds))
		}
		mix = append(mix, nemesis.Kind(k))
	}
	setup := p.nemesisSetup()
	setup.NodeClock = slices.Contains(mix, nemesis.Clock)
	cfg, err := p.workloadConfig(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: workload: %w", ErrPlan, err)
	}
	np, err := nemesis.Generate(p.Seed, mix, nemesis.GenOptions{
		Setup: setup, TTL: a.TTL, TimeLimit: a.TimeLimit, Interval: a.NemesisInterval,
		// Stopping or cutting off the holder of a contended key is the
		// client fault that matters.
		Key: cfg.Key(0),
		// The workload's own steps exist whatever the lock; the variants
		// do not list theirs (a plan file can name one).
		LockSteps: []string{workloads.StepAfterAcquire, workloads.StepBeforeRelease},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: --nemesis: %w", ErrPlan, err)
	}
	if len(np.Steps) == 0 {
		interval := a.NemesisInterval
		if interval == 0 {
			interval = 3 * a.TTL
		}
		return nil, fmt.Errorf("%w: --nemesis: no fault fits in --time-limit %v after the quiet --nemesis-interval %v: lengthen the one or shorten the other", ErrPlan, a.TimeLimit, interval)
	}
	return np.Steps, nil
}

// parseRange reads "MIN,MAX" or a single span for both.
func parseRange(s string) (Range, error) {
	lo, hi, two := strings.Cut(s, ",")
	if !two {
		hi = lo
	}
	var r Range
	for i, part := range []string{lo, hi} {
		sp, err := nemesis.ParseSpan(strings.TrimSpace(part))
		if err != nil {
			return Range{}, fmt.Errorf("%q: want MIN,MAX or one span, each like 250ms or 0.5ttl: %w", s, err)
		}
		r[i] = sp
	}
	return r, nil
}

func joinKinds[K ~string](ks []K) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
