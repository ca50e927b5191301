package runner

import (
	"context"
	"errors"
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
// field takes the default its comment gives, unless Given says it was given
// explicitly: then it is refused with the valid range. Errors name the
// command-line flag of the setting at fault, so a person can fix it.
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
	// Target: where the servers run (provider process by default) and how
	// to log in to them.
	Target Target
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
	// Permits of a semaphore (default 2); ThreadWaitTime of the fair lock
	// (default 5 s).
	Permits        int
	ThreadWaitTime time.Duration
	// ReadFraction: a read-write lock's share of read cycles (nil: 0.75).
	ReadFraction *float64
	// Discovery: sentinel or fixed (LockPlan.Discovery).
	Discovery string
	// TTL of the lock (default 1 s).
	TTL time.Duration

	// Workload: mutex, fenced-write (default) or counter; latch (the
	// default for the latch lock, and only for it).
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
	Retry string
	// AcquireTimeout bounds one acquire, retries included (default 1 s).
	AcquireTimeout time.Duration
	CheckValidity  bool
	ObeyLost       bool
	// TimeLimit: how long clients start new operations (default 10 s).
	TimeLimit time.Duration

	// Nemesis lists fault kinds (nemesis.Kinds) to draw the schedule from;
	// a kind may repeat to weigh it. Empty: no faults.
	Nemesis []string
	// NemesisInterval is the mean time between the starts of two fault
	// scenes, half of it before the first (default: the TTL); see
	// nemesis.GenOptions.Interval.
	NemesisInterval time.Duration

	// Given names the settings given explicitly, by their flag's name
	// ("clients", "ttl"): a zero among them is refused with the valid range,
	// where an omitted one takes the default ("--clients 0" is no request
	// for the default 4 clients).
	Given map[string]bool
	// Concurrency is how many faults may be active at once (nil:
	// nemesis.DefaultConcurrency); less than 1 is refused.
	Concurrency *int
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
var adhocWorkloads = []workloads.Kind{workloads.Mutex, workloads.FencedWrite, workloads.Counter, workloads.Latch}

// Plan builds the plan the settings describe, with every default filled in
// as the run's plan.json will hold it, and validates it. Every error wraps
// ErrPlan.
func (a Adhoc) Plan() (Plan, error) {
	bad := func(flag, format string, args ...any) error {
		return fmt.Errorf("%w: --%s: %s", ErrPlan, flag, fmt.Sprintf(format, args...))
	}
	if err := a.givenZero(); err != nil {
		return Plan{}, err
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
	if a.Permits < 0 {
		return Plan{}, bad("permits", "%d is negative", a.Permits)
	}
	if a.ThreadWaitTime < 0 {
		return Plan{}, bad("thread-wait-time", "%v is negative", a.ThreadWaitTime)
	}
	p.Lock = LockPlan{
		Options: variants.Options{
			Variant: a.Lock, Inner: a.Inner, WaitReplicas: a.WaitReplicas,
			WaitTimeout: nemesis.Fixed(a.WaitTimeout), NodeTimeout: nemesis.Fixed(a.NodeTimeout),
			DriftFactor: a.DriftFactor, SetNXOnExtend: a.SetNXOnExtend, Permits: a.Permits,
			ThreadWaitTime: nemesis.Fixed(a.ThreadWaitTime),
		},
		ReadTimeout: nemesis.Fixed(a.ReadTimeout), Discovery: a.Discovery,
	}
	if p.Name == "" {
		p.Name = "adhoc-" + a.Lock
	}

	switch {
	case a.Nodes < 0:
		return Plan{}, bad("nodes", "%d: want 1 to %d masters", a.Nodes, cluster.MaxIndependent)
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

	if p, err = a.Target.Apply(p); err != nil {
		return Plan{}, err
	}
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
	switch {
	case a.Workload == "" && info.Kind == variants.KindLatch:
		a.Workload = string(workloads.Latch)
	case a.Workload == "":
		a.Workload = string(workloads.FencedWrite)
	}
	if !slices.Contains(adhocWorkloads, workloads.Kind(a.Workload)) {
		return Plan{}, bad("workload", "%q unknown (valid: %s)", a.Workload, joinKinds(adhocWorkloads))
	}
	w.Kind = workloads.Kind(a.Workload)
	switch a.ClientMode {
	case "":
		w.Mode = workloads.DefaultMode
	case string(workloads.Processes):
		w.Mode = workloads.Processes
	case string(workloads.InProcess), "inprocess":
		w.Mode = workloads.InProcess
	default:
		return Plan{}, bad("client-mode", "%q unknown (valid: process, inprocess)", a.ClientMode)
	}
	if a.Clients == 0 {
		a.Clients = adhocClients
	}
	if a.Clients < 1 || a.Clients > workloads.MaxClients {
		return Plan{}, bad("clients", "%d: want 1 to %d clients", a.Clients, workloads.MaxClients)
	}
	if a.Keys < 0 {
		return Plan{}, bad("keys", "%d: want at least 1 key", a.Keys)
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
	w.ReadFraction = a.ReadFraction
	if w.Kind == workloads.Latch {
		// Half the clients count down, the others wait; rounds of 4 TTLs,
		// count-downs within the first TTL and a half of each.
		n := max(1, a.Clients/2)
		w.Latch = &workloads.LatchSpec{Count: n, Counters: n, Round: nemesis.Fixed(4 * a.TTL)}
		if a.Hold == adhocHold {
			w.Hold = Range{nemesis.Fixed(0), nemesis.Fixed(a.TTL * 3 / 2)}
		}
	}
	if a.AcquireTimeout < 0 {
		return Plan{}, bad("acquire-timeout", "%v is negative", a.AcquireTimeout)
	}
	w.AcquireTimeout = nemesis.Fixed(a.AcquireTimeout)

	if p.Faults, err = a.faults(p); err != nil {
		return Plan{}, err
	}
	p = p.withDefaults()
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// givenZero refuses a zero that was given explicitly for a setting whose
// zero means "the default": the range it must be in, and how to get the
// default.
func (a Adhoc) givenZero() error {
	for _, z := range []struct {
		flag  string
		zero  bool
		valid string
	}{
		{"clients", a.Clients == 0, fmt.Sprintf("1 to %d clients (omit it for %d)", workloads.MaxClients, adhocClients)},
		{"keys", a.Keys == 0, "at least 1 key (omit it for 1)"},
		{"nodes", a.Nodes == 0, fmt.Sprintf("1 to %d masters (omit it for 1, or 5 for a lock on every node)", cluster.MaxIndependent)},
		{"ttl", a.TTL == 0, fmt.Sprintf("at least 1ms (omit it for %v)", adhocTTL)},
		{"time-limit", a.TimeLimit == 0, fmt.Sprintf("a positive duration (omit it for %v)", adhocTimeLimit)},
		{"nemesis-interval", a.NemesisInterval == 0, "a positive duration (omit it for 3×TTL)"},
		{"read-timeout", a.ReadTimeout == 0, "a positive duration (omit it for 1s)"},
		{"node-timeout", a.NodeTimeout == 0, "a positive duration (omit it for the lock's default)"},
		{"wait-timeout", a.WaitTimeout == 0, "a positive duration (WAIT with 0 blocks forever)"},
		{"permits", a.Permits == 0, "at least 1 permit (omit it for 2)"},
		{"thread-wait-time", a.ThreadWaitTime == 0, "a positive duration (omit it for Redisson's 5s)"},
		{"acquire-timeout", a.AcquireTimeout == 0, "a positive duration (omit it for 1s)"},
	} {
		if z.zero && a.Given[z.flag] {
			return fmt.Errorf("%w: --%s: 0: want %s", ErrPlan, z.flag, z.valid)
		}
	}
	return nil
}

// faults generates the schedule from the fault kinds and the seed.
func (a Adhoc) faults(p Plan) ([]nemesis.Step, error) {
	if a.NemesisInterval < 0 {
		return nil, fmt.Errorf("%w: --nemesis-interval: %v is negative", ErrPlan, a.NemesisInterval)
	}
	concurrency := nemesis.DefaultConcurrency
	if a.Concurrency != nil {
		if concurrency = *a.Concurrency; concurrency < 1 {
			return nil, fmt.Errorf("%w: --concurrency: %d: at least one fault must be able to run at a time", ErrPlan, concurrency)
		}
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
	steps, err := p.drawFaults(Draw{Kinds: mix, Interval: a.NemesisInterval, Concurrency: concurrency})
	if err != nil {
		var empty errNoFaultFits
		if errors.As(err, &empty) {
			return nil, fmt.Errorf("%w: --nemesis: no fault fits in --time-limit %v after the lead-in of half the --nemesis-interval: lengthen the one or shorten the other", ErrPlan, a.TimeLimit)
		}
		return nil, fmt.Errorf("%w: --nemesis: %w", ErrPlan, err)
	}
	return steps, nil
}

// probeSetup is the nemesis setup with the answer of the plan's provider
// where building it is cheap and starts nothing: the process provider, and
// the external one (it reads its configuration; it contacts the deployment
// only when the cluster starts). The docker provider is asked by Run, which
// checks the faults again before it starts anything: building it may
// build an image.
func (p Plan) probeSetup() (nemesis.Setup, error) {
	if p.Provider == "docker" {
		return p.nemesisSetup(nil), nil
	}
	prov, _, err := newProvider(context.Background(), p)
	if err != nil {
		return nemesis.Setup{}, err
	}
	defer prov.Close()
	return p.nemesisSetup(prov), nil
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
