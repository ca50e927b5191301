package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// planFlags bind the flags that shape a run directly onto a runner.Plan:
// each flag sets the plan field at its JSON path, and the plan's own
// validation, whose errors name that path, names the flag instead. The
// plan's defaults are runner.Plan.Normalize's; the flags add what only
// they do: a zero given explicitly is refused (--clients 0 is no request
// for the default), --nodes N is short for --topology independent:N, the
// seed is drawn when not given, the name is adhoc-<lock>, hold and think
// times are given where a plan's zero is a value of its own
// (workloadDefaults), and --nemesis draws the fault schedule (runner.Draw)
// from the seed.
type planFlags struct {
	plan   runner.Plan
	draw   runner.Draw
	nodes  int
	client protocol.Program // --lock client:NAME|DIR, --client, --client-cmd, --client-option
	target targetFlags
	fields []*planFlag
	// shaping names the flags that say what the run does: they conflict
	// with --plan. The target flags (--provider, --external, --auth-*,
	// --tls-*) only say where it runs.
	shaping []string
}

// planFlag is one flag bound to the plan field at path.
type planFlag struct {
	name, path string
	isZero     func() bool
	// zero, when set, is what an explicit zero is refused with: the range
	// the value must be in.
	zero string
}

// The workload's hold and think times when their flags are not given
// (workloadDefaults).
const (
	flagHold  = "0.1ttl,0.4ttl"
	flagThink = "0,0.05ttl"
)

// workloadDefaults fills in, on the normalized plan p, the hold and think
// times whose flags are not given: flagHold and flagThink, and for the
// latch workload a hold of 0 to 1.5 TTLs, so that its count-downs come
// within the first TTL and a half of each round (an absolute range, as
// such plans have always held it). It is the one place the flags'
// defaults differ from a plan file's, on purpose. In a plan a hold of
// [0, 0] and no think time are values of their own (a client that releases
// at once, one that never pauses): Normalize keeps them, since a zero
// range read from a file cannot be told from one left out. Defaults there
// would change what plans that leave the think time out run — two catalog
// rows (latch-baseline, latch-failover) and five plans of runner/testdata
// /plans, whose plans-derived records then differ — and a plan could no
// longer ask for a zero. At the command line a contended lock is the
// useful default. The latch's hold needs the normalized workload kind and
// TTL, so this comes after Normalize; validation follows it.
func (f *planFlags) workloadDefaults(fs *pflag.FlagSet, p *runner.Plan) {
	w := &p.Workload
	if !fs.Changed("hold") {
		w.Hold, _ = spans.ParseRange(flagHold)
		if w.Kind == workloads.Latch {
			w.Hold = spans.Between(0, p.TTL.Resolve(0)*3/2)
		}
	}
	if !fs.Changed("think") {
		w.Think, _ = spans.ParseRange(flagThink)
	}
}

func (f *planFlags) bind(fs *pflag.FlagSet) {
	p, l, w, d := &f.plan, &f.plan.Lock, &f.plan.Workload, &f.draw
	span := func(s *spans.Span) spans.SpanFlag { return spans.SpanFlag{S: s} }
	before := map[string]bool{}
	fs.VisitAll(func(fl *pflag.Flag) { before[fl.Name] = true })

	f.str(fs, &p.Name, "name", "name", "", "name of the run (its directory under the store; default adhoc-<lock>)")
	fs.Int64Var(&p.Seed, "seed", 0, "seed of the fault schedule and the clients' draws (default: a random one, printed)")
	f.str(fs, &l.Variant, "lock", "lock.variant", runner.DefaultLock, "lock under test: "+strings.Join(variants.Names(), ", ")+
		"; client:NAME for a shipped lock client ("+strings.Join(protocol.Shipped(), ", ")+"), client:DIR for a client directory of your own")
	f.value(fs, protocol.ClientFlag{P: &f.client}, "client", "lock.client.dir", "a lock client: a shipped one's name or the path of a client directory (client.json and the program: clients/PROTOCOL.md); implies --lock client")
	f.value(fs, protocol.CommandFlag{C: &f.client.Command}, "client-cmd", "lock.client.command", "a bare lock client program, with no manifest, as a command line: it speaks the lock client protocol (clients/PROTOCOL.md); implies --lock client")
	f.value(fs, protocol.OptionsFlag{O: &f.client.Options}, "client-option", "lock.client.options", "an option of the lock client's library, key=value (the value JSON, or a string); repeat it for more")
	f.str(fs, &l.Inner, "inner", "lock.inner", "", "the lock a watchdog wraps (--lock watchdog; default single)")
	f.int(fs, &l.WaitReplicas, "wait-replicas", "lock.wait_replicas", "after acquiring, WAIT for this many replicas or release and fail (single, fenced)")
	f.value(fs, span(&l.WaitTimeout), "wait-timeout", "lock.wait_timeout", "how long WAIT waits for the replicas").zero = "a positive duration (WAIT with 0 blocks forever)"
	f.value(fs, span(&l.NodeTimeout), "node-timeout", "lock.node_timeout", "bound of one request to one node (redlock, redsync)").zero = "a positive duration (omit it for the lock's default)"
	f.value(fs, optFloat{&l.DriftFactor, lock.DefaultOptions().DriftFactor}, "drift-factor", "lock.drift_factor", "clock drift allowance as a fraction of the TTL (redlock, redsync)")
	f.bool(fs, &l.SetNXOnExtend, "setnx-on-extend", "lock.setnx_on_extend", "redsync's WithSetNXOnExtend: extend retakes a lapsed lock (redsync #147)")
	f.int(fs, &l.RedisRetries, "redis-retries", "lock.redis_retries", "times the lock's Redis clients send a command again after a timeout or a network error (go-redis's MaxRetries; users' default is 3; default 0: a lost reply is an unknown outcome)")
	f.value(fs, span(&l.ReadTimeout), "read-timeout", "lock.read_timeout", fmt.Sprintf("read timeout of the clients' Redis connections: a slower reply is an unknown outcome (default %v)", runner.DefaultReadTimeout)).zero = fmt.Sprintf("a positive duration (omit it for %v)", runner.DefaultReadTimeout)
	f.str(fs, &l.Discovery, "discovery", "lock.discovery", "", "how clients of a topology with Sentinels find the primary: sentinel (ask the Sentinels, through the client's proxies) or fixed (the address of p) (default sentinel)")
	f.value(fs, span(&p.TTL), "ttl", "ttl", fmt.Sprintf("lock TTL (default %v)", runner.DefaultTTL)).zero = fmt.Sprintf("at least 1ms (omit it for %v)", runner.DefaultTTL)
	f.int(fs, &l.Permits, "permits", "lock.permits", fmt.Sprintf("permits of a semaphore (semaphore, permit-expirable-semaphore; default %d)", runner.DefaultPermits)).zero = fmt.Sprintf("at least 1 permit (omit it for %d)", runner.DefaultPermits)
	f.value(fs, span(&l.ThreadWaitTime), "thread-wait-time", "lock.thread_wait_time", "how long past its turn a fair lock's waiter keeps its place without polling (fair; default 5s)").zero = "a positive duration (omit it for Redisson's 5s)"
	f.value(fs, optFloat{&w.ReadFraction, runner.DefaultReadFraction}, "read-fraction", "workload.read_fraction", "share of a read-write lock's cycles that take the read lock (rwlock)")
	f.int(fs, &f.nodes, "nodes", "topology", "N standalone masters: short for --topology independent:N").zero = fmt.Sprintf("1 to %d masters (omit it for %d, or %d for a lock on every node)", cluster.MaxIndependent, runner.DefaultMasters, runner.DefaultAllNodesMasters)
	f.value(fs, &p.Topology, "topology", "topology", cluster.Syntax()+" (default independent:1, independent:5 for redlock and redsync)")
	f.value(fs, &p.Persistence, "persistence", "persistence", "data nodes' persistence: none, aof-everysec or aof-always (default none)")
	f.str(fs, (*string)(&w.Kind), "workload", "workload.kind", "", "mutex, fenced-write, counter or latch (default fenced-write; latch for --lock latch)")
	f.value(fs, &w.Mode, "client-mode", "workload.mode", "process (each client its own process: client pauses are real) or inprocess (default process)")
	f.int(fs, &w.Clients, "clients", "workload.clients", fmt.Sprintf("number of clients (default %d)", runner.DefaultClients)).zero = fmt.Sprintf("1 to %d clients (omit it for %d)", workloads.MaxClients, runner.DefaultClients)
	f.int(fs, &w.Keys, "keys", "workload.keys", fmt.Sprintf("number of keys contended for (default %d)", runner.DefaultKeys)).zero = fmt.Sprintf("at least 1 key (omit it for %d)", runner.DefaultKeys)
	f.value(fs, spans.RangeFlag{R: &w.Hold}, "hold", "workload.hold", fmt.Sprintf("how long a client holds the lock: MIN,MAX or one span; spans like 250ms or 0.5ttl (default %s; the latch workload's count-downs: 0 to 1.5 TTLs)", flagHold))
	f.value(fs, spans.RangeFlag{R: &w.Think}, "think", "workload.think", fmt.Sprintf("pause between two cycles of a client: MIN,MAX or one span (default %s)", flagThink))
	f.str(fs, &w.Retry, "retry", "workload.retry", "", "wait (retry until the acquire timeout) or try (one attempt per cycle) (default wait)")
	f.value(fs, span(&w.AcquireTimeout), "acquire-timeout", "workload.acquire_timeout", fmt.Sprintf("how long one acquire may take, retries included (default %v)", workloads.DefaultAcquireTimeout)).zero = fmt.Sprintf("a positive duration (omit it for %v)", workloads.DefaultAcquireTimeout)
	f.bool(fs, &w.CheckValidity, "check-validity", "workload.check_validity", "clients check the lease's validity before acting on the resource")
	f.bool(fs, &w.ObeyLost, "obey-lost", "workload.obey_lost", "clients stop their critical section when the lock signals it is lost (watchdog)")
	f.value(fs, span(&p.TimeLimit), "time-limit", "time_limit", fmt.Sprintf("how long clients start new operations (default %v)", runner.DefaultTimeLimit)).zero = fmt.Sprintf("a positive duration (omit it for %v)", runner.DefaultTimeLimit)
	f.value(fs, (*nemesis.KindList)(&d.Kinds), "nemesis", "draw.kinds", "fault kinds to draw the schedule from, comma separated (repeat a kind to weigh it): "+kindList())
	f.value(fs, span(&d.Interval), "nemesis-interval", "draw.interval", "mean time between the starts of two fault scenes, half of it before the first, like 2s or 1.5ttl (default: the TTL)").zero = "a positive duration (omit it for the TTL)"
	f.int(fs, &d.Concurrency, "concurrency", "draw.concurrency", fmt.Sprintf("at most this many faults active at once (at least 1; 1: one at a time, no compound scenes) (default %d)", runner.DefaultConcurrency)).zero = fmt.Sprintf("at least one fault at a time (omit it for %d)", runner.DefaultConcurrency)

	fs.VisitAll(func(fl *pflag.Flag) {
		if !before[fl.Name] {
			f.shaping = append(f.shaping, fl.Name)
		}
	})
	f.target.bind(fs)
}

func (f *planFlags) add(name, path string, isZero func() bool) *planFlag {
	pf := &planFlag{name: name, path: path, isZero: isZero}
	f.fields = append(f.fields, pf)
	return pf
}

func (f *planFlags) str(fs *pflag.FlagSet, p *string, name, path, def, usage string) *planFlag {
	fs.StringVar(p, name, def, usage)
	return f.add(name, path, func() bool { return *p == "" })
}

func (f *planFlags) int(fs *pflag.FlagSet, p *int, name, path, usage string) *planFlag {
	fs.IntVar(p, name, *p, usage)
	return f.add(name, path, func() bool { return *p == 0 })
}

func (f *planFlags) bool(fs *pflag.FlagSet, p *bool, name, path, usage string) *planFlag {
	fs.BoolVar(p, name, false, usage)
	return f.add(name, path, func() bool { return !*p })
}

// value binds a flag whose value type parses its field (spans.SpanFlag,
// cluster.Topology, workloads.Mode, …).
func (f *planFlags) value(fs *pflag.FlagSet, v pflag.Value, name, path, usage string) *planFlag {
	fs.Var(v, name, usage)
	isZero := func() bool { return v.String() == "" }
	if z, ok := v.(interface{ IsZero() bool }); ok {
		isZero = z.IsZero
	}
	return f.add(name, path, isZero)
}

// template is the plan the flags describe without its faults, normalized
// and valid: what a hunt draws its schedules into.
func (f *planFlags) template(fs *pflag.FlagSet) (runner.Plan, error) {
	if err := f.refuseZeros(fs); err != nil {
		return runner.Plan{}, err
	}
	p := f.plan
	if fs.Changed("nodes") {
		if fs.Changed("topology") {
			return runner.Plan{}, fmt.Errorf("%w: --nodes: conflicts with --topology (--nodes %d is short for --topology independent:%d): give one", runner.ErrPlan, f.nodes, f.nodes)
		}
		p.Topology = cluster.Topology{Kind: cluster.Independent, N: f.nodes}
	}
	if err := f.clientLock(fs, &p); err != nil {
		return runner.Plan{}, err
	}
	if !fs.Changed("name") {
		p.Name = "adhoc-" + strings.ReplaceAll(p.Lock.Label(), ":", "-")
	}
	t, err := f.target.target()
	if err != nil {
		return runner.Plan{}, fmt.Errorf("%w: %w", runner.ErrPlan, err)
	}
	if p, err = t.Apply(p); err != nil {
		return runner.Plan{}, err
	}
	if p, err = p.Normalized(func(p *runner.Plan) { f.workloadDefaults(fs, p) }); err != nil {
		return runner.Plan{}, f.explain(fs, err)
	}
	return p, f.explain(fs, f.draw.Validate())
}

// clientLock puts the lock client the flags name into the plan: --lock
// client:NAME|DIR or --client (a shipped client or a client directory),
// --client-cmd (a bare program; --lock client implied) and --client-option.
func (f *planFlags) clientLock(fs *pflag.FlagSet, p *runner.Plan) error {
	if which, ok := strings.CutPrefix(p.Lock.Variant, variants.ClientVariant+":"); ok {
		if fs.Changed("client") {
			return fmt.Errorf("%w: --lock %s and --client %s: give the client once", runner.ErrPlan, p.Lock.Variant, protocol.ClientFlag{P: &f.client})
		}
		if err := (protocol.ClientFlag{P: &f.client}).Set(which); err != nil {
			return fmt.Errorf("%w: --lock: %w", runner.ErrPlan, err)
		}
		p.Lock.Variant = variants.ClientVariant
	}
	given := fs.Changed("client") || fs.Changed("client-cmd") || fs.Changed("client-option")
	if (fs.Changed("client") || fs.Changed("client-cmd")) && !fs.Changed("lock") {
		p.Lock.Variant = variants.ClientVariant
	}
	if p.Lock.Variant != variants.ClientVariant {
		if given {
			return fmt.Errorf("%w: --client, --client-cmd and --client-option are for a lock client (--lock client:NAME|DIR, --client or --client-cmd), not --lock %s", runner.ErrPlan, p.Lock.Variant)
		}
		return nil
	}
	c := f.client
	p.Lock.Client = &c
	return nil
}

// build is the template with its seed (drawn when --seed is not given:
// drawn says so) and the fault schedule drawn from --nemesis.
func (f *planFlags) build(fs *pflag.FlagSet) (p runner.Plan, drawn bool, err error) {
	if p, err = f.template(fs); err != nil {
		return runner.Plan{}, false, err
	}
	if drawn = !fs.Changed("seed"); drawn {
		p.Seed = rand.Int64N(1_000_000) + 1
	}
	if len(f.draw.Kinds) > 0 {
		if p, err = p.WithDrawnFaults(p.Seed, f.draw); err != nil {
			return runner.Plan{}, false, f.explain(fs, err)
		}
	}
	return p, drawn, nil
}

// refuseZeros refuses a zero given explicitly for a flag whose zero means
// "the default": the range it must be in, and how to get the default.
func (f *planFlags) refuseZeros(fs *pflag.FlagSet) error {
	for _, pf := range f.fields {
		if pf.zero != "" && fs.Changed(pf.name) && pf.isZero() {
			return fmt.Errorf("%w: --%s: 0: want %s", runner.ErrPlan, pf.name, pf.zero)
		}
	}
	return nil
}

// explain names, in err, the flag that sets each field it names: of the
// flags bound to a path, the one given (--nodes or --topology), else the
// last; a field the target flags set, theirs (access.tls: --tls). Several
// problems go on one line.
func (f *planFlags) explain(fs *pflag.FlagSet, err error) error {
	if err == nil {
		return nil
	}
	err = field.Rename(err, func(path string) (string, bool) {
		name, given := targetPaths[path], false
		for _, pf := range f.fields {
			if pf.path == path && !given {
				name, given = pf.name, fs.Changed(pf.name)
			}
		}
		return "--" + name, name != ""
	})
	return oneLine{err}
}

// oneLine is an error on one line: its lines joined with "; ".
type oneLine struct{ error }

func (e oneLine) Error() string { return strings.ReplaceAll(e.error.Error(), "\n", "; ") }
func (e oneLine) Unwrap() error { return e.error }

// optFloat is a flag's value (pflag.Value) that sets an optional number:
// nil until given, def shown as the default.
type optFloat struct {
	p   **float64
	def float64
}

func (o optFloat) String() string {
	if *o.p != nil {
		return fmt.Sprint(**o.p)
	}
	return fmt.Sprint(o.def)
}

func (o optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*o.p = &v
	return nil
}

func (optFloat) Type() string { return "float64" }
