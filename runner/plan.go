package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Span is a duration in a plan: "750ms", "1.5s" or relative to the lock
// TTL, "0.5ttl" (package spans).
type Span = spans.Span

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
	// Server is the software the nodes run: "redis" (default) or "valkey".
	// An external deployment runs what it runs; a run refuses one that
	// does not run the plan's server, when the plan names one.
	Server cluster.Server `json:"server,omitempty"`
	// NodeConfig are configuration directives for every data node tumbler
	// starts ({"min-replicas-to-write": "1"}), on top of the harness's own.
	// An external deployment is configured by its owner: a plan with
	// NodeConfig cannot run there.
	NodeConfig map[string]string `json:"node_config,omitempty"`
	// SentinelDownAfter is the Sentinels' down-after-milliseconds (default
	// 1 s): how long a node must be silent before a Sentinel calls it down.
	// Tumbler starts the Sentinels; an external deployment has its own.
	SentinelDownAfter Span `json:"sentinel_down_after,omitzero"`
	// Access is how the harness and the clients authenticate and speak TLS
	// (default: plain, no AUTH; for an external deployment, its config's
	// "access"). It names where secrets are, never what they are.
	Access *access.Config `json:"access,omitempty"`

	// TTL of the lock: an absolute span.
	TTL  Span     `json:"ttl"`
	Lock LockPlan `json:"lock"`
	// Workload is what the clients do (declared in package workloads).
	Workload workloads.Options `json:"workload"`
	// TimeLimit: how long clients start new operations.
	TimeLimit Span `json:"time_limit"`
	// Faults is the nemesis schedule, times from the start of the workload.
	Faults []nemesis.Step `json:"faults,omitempty"`
	Check  CheckPlan      `json:"check,omitzero"`
}

// LockPlan is the lock under test: the lock's own options
// (variants.Options, declared there once and embedded here, so their JSON
// names are the plan's) and what only the run uses.
type LockPlan struct {
	variants.Options
	// ReadTimeout of every client's Redis connections (default 1 s): a
	// reply slower than this is an unknown outcome.
	ReadTimeout Span `json:"read_timeout,omitzero"`
	// ClientTTL, when set, is each client's own lease, by client number,
	// instead of ttl (Redisson callers pass a lease per call: a read-write
	// lock's readers with different leases are Redisson #2144). The
	// checkers' TTL stays ttl.
	ClientTTL []Span `json:"client_ttl,omitempty"`
	// Discovery is how a one-node lock finds the primary of a topology
	// with Sentinels: "sentinel" (default there) asks the Sentinels, as
	// production clients do (go-redis's failover client, through the
	// client's own proxies to the Sentinels and to the primary they name);
	// "fixed" keeps to the address of the first primary, p.
	Discovery string `json:"discovery,omitempty"`
}

// defaultPermits is a semaphore's permits when the plan names none.
const defaultPermits = 2

// Discovery modes (LockPlan.Discovery).
const (
	DiscoverySentinel = "sentinel"
	DiscoveryFixed    = "fixed"
)

// harnessDirectives are the data nodes' directives the harness sets itself
// (or a plan sets through its own fields): NodeConfig may not name them.
var harnessDirectives = []string{"port", "tls-port", "bind", "dir", "logfile", "daemonize", "protected-mode",
	"replicaof", "slaveof", "replica-announce-ip", "replica-announce-port", "slave-announce-ip", "slave-announce-port",
	"requirepass", "masterauth", "masteruser", "user", "aclfile", "appendonly", "appendfsync", "save",
	"repl-diskless-load", "include"}

// Range is a range of spans, [min, max] in JSON (package spans).
type Range = spans.Range

// defaultReadFraction is a read-write lock's share of read cycles.
const defaultReadFraction = 0.75

// CheckPlan tunes the checkers.
type CheckPlan struct {
	LivenessK       float64             `json:"liveness_k,omitempty"`
	Linearizability LinearizabilityPlan `json:"linearizability,omitzero"`
	Skip            []string            `json:"skip,omitempty"`
}

// LinearizabilityPlan bounds the linearizability checker, which checks
// each key's history in pieces (checker.Config.LinearizabilityMemory and
// LinearizabilityTimeout); a piece it cannot decide within them makes the
// verdict unknown and is named.
type LinearizabilityPlan struct {
	// Memory porcupine may use for the pieces it checks at once: "1GiB"
	// (the default), "512MiB", or a number of bytes.
	Memory ByteSize `json:"memory,omitzero"`
	// Timeout of each piece (default 30s).
	Timeout Span `json:"timeout,omitzero"`
}

// UnmarshalJSON reads check settings, refusing unknown fields. The
// "linearizability_timeout" of plans written before "linearizability" had
// a memory bound is migrated to linearizability.timeout (plan.json written
// since has only the new field).
func (c *CheckPlan) UnmarshalJSON(b []byte) error {
	type plain CheckPlan
	var aux struct {
		plain
		OldTimeout Span `json:"linearizability_timeout,omitzero"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	*c = CheckPlan(aux.plain)
	if old := aux.OldTimeout; !old.IsZero() {
		if now := c.Linearizability.Timeout; !now.IsZero() && now != old {
			return fmt.Errorf("check: linearizability_timeout %q (the old name of linearizability.timeout) and linearizability.timeout %q disagree: keep only linearizability.timeout", old, now)
		}
		c.Linearizability.Timeout = old
	}
	return nil
}

// ByteSize is an amount of memory in a plan: a number of bytes, or a number
// with a unit, "512MiB", "1.5GiB" (B, KiB, MiB, GiB, TiB; KB, MB, GB, TB
// are powers of 1000).
type ByteSize int64

var byteUnits = []struct {
	name string
	size float64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}

// ParseByteSize reads "512MiB", "1.5GiB", "2GB" or "1048576".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	num, unit := t, "B"
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(t, u.name); ok {
			num, unit = strings.TrimSpace(rest), u.name
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("size %q: want a non-negative number of bytes or a number with a unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), e.g. 512MiB", s)
	}
	for _, u := range byteUnits {
		if u.name == unit {
			v *= u.size
		}
	}
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return ByteSize(v), nil
}

// String renders the size with the largest binary unit that divides it.
func (b ByteSize) String() string {
	for _, u := range byteUnits[:4] {
		if n := int64(u.size); b != 0 && int64(b)%n == 0 {
			return fmt.Sprintf("%d%s", int64(b)/n, u.name)
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// MarshalJSON writes the size as String does.
func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON reads a string (see ParseByteSize) or a number of bytes.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf("size: want a string like \"512MiB\" or a number of bytes, got %s", data)
		}
		s = n.String()
	}
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
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
		return Plan{}, fmt.Errorf("%w: %s: %w", ErrPlan, name, fieldError(err))
	}
	if dec.More() {
		return Plan{}, fmt.Errorf("%w: %s: trailing data after the plan", ErrPlan, name)
	}
	return p, nil
}

// fieldError names the plan field of a JSON type error by its path in the
// plan ("lock.permits"), without the Go types the plan is made of: the
// lock's and the workload's options are embedded structs, whose Go names
// encoding/json would put in the path.
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return err
	}
	var path []string
	for _, seg := range strings.Split(te.Field, ".") {
		if r, _ := utf8.DecodeRuneInString(seg); !unicode.IsUpper(r) {
			path = append(path, seg)
		}
	}
	return fmt.Errorf("json: cannot unmarshal %s into plan field %s of type %s", te.Value, strings.Join(path, "."), te.Type)
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
	p.Workload.Mode = p.Workload.Mode.OrDefault()
	if p.Workload.Keys == 0 {
		p.Workload.Keys = 1
	}
	if p.Workload.Retry == "" {
		p.Workload.Retry = workloads.RetryWait
	}
	if p.Workload.Nest == 0 {
		p.Workload.Nest = 1
	}
	switch p.lockKind() {
	case variants.KindSemaphore:
		if p.Lock.Permits == 0 {
			p.Lock.Permits = defaultPermits
		}
	case variants.KindReadWrite:
		if p.Workload.ReadFraction == nil {
			f := defaultReadFraction
			p.Workload.ReadFraction = &f
		}
	}
	return p
}

// lockKind is the kind of the plan's lock (KindLock when it is unknown:
// Validate says so).
func (p Plan) lockKind() variants.Kind { return p.Lock.Kind() }

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
	if err := p.Server.Validate(); err != nil {
		return bad("server: %v", err)
	}
	if err := p.Access.Validate(); err != nil {
		return bad("access: %v", err)
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
	switch p.Lock.Discovery {
	case "", DiscoveryFixed:
	case DiscoverySentinel:
		if !p.Topology.Sentinels {
			return bad("lock discovery sentinel needs a topology with Sentinels (replicated:R+sentinels), not %s", p.Topology)
		}
	default:
		return bad("lock discovery %q unknown (valid: sentinel, fixed)", p.Lock.Discovery)
	}
	if !p.SentinelDownAfter.IsZero() {
		if d := p.span(p.SentinelDownAfter); !p.Topology.Sentinels || d < 100*time.Millisecond {
			return bad("sentinel_down_after %q needs a topology with Sentinels and at least 100ms", p.SentinelDownAfter)
		}
	}
	for _, k := range sortedKeys(p.NodeConfig) {
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t\n") || strings.HasPrefix(k, "-") {
			return bad("node_config: %q is not a directive name", k)
		}
		if contains(harnessDirectives, strings.ToLower(k)) {
			return bad("node_config: %s is set by the harness (or the plan's own fields: persistence, access), not here", k)
		}
	}
	if spec.AllNodes() && p.Topology.Kind != cluster.Independent && p.Topology.Kind != cluster.Groups {
		return bad("lock %s needs independent masters (topology independent:N or groups:G), not %s", spec.Variant, p.Topology)
	}
	if p.Topology.Kind == cluster.Groups && !spec.AllNodes() {
		return bad("topology %s is for locks over independent masters (%s), not %s", p.Topology, strings.Join(variants.With(func(i variants.Info) bool { return i.AllNodes }), ", "), spec.Variant)
	}
	if spec.WaitReplicas > 0 && !(p.Topology.Kind == cluster.Replicated && spec.WaitReplicas <= p.Topology.N) &&
		!(p.Topology.Kind == cluster.RedisCluster && spec.WaitReplicas <= p.Topology.Replicas) {
		return bad("lock wait_replicas %d needs a replicated topology, or a cluster with shards, with at least that many replicas, not %s", spec.WaitReplicas, p.Topology)
	}
	if p.Topology.Kind == cluster.RedisCluster && spec.CrossSlot() {
		return bad("lock %s touches keys in different hash slots in one script, which a Redis Cluster (topology %s) refuses with CROSSSLOT", spec.Variant, p.Topology)
	}
	if err := p.validateKind(); err != nil {
		return bad("%v", err)
	}
	if _, err := p.workloadConfig(nil); err != nil {
		return bad("workload: %v", err)
	}
	// No provider is built here (a docker one may build an image): the
	// faults are checked for every control, and Run checks them again
	// against the provider it builds before it starts anything.
	np := p.nemesisPlan()
	if err := np.Validate(p.nemesisSetup(nil)); err != nil {
		return bad("faults: %v", err)
	}
	if s := p.span(p.Check.Linearizability.Timeout); s < 0 {
		return bad("check linearizability.timeout %q is negative", p.Check.Linearizability.Timeout)
	}
	if m := p.Check.Linearizability.Memory; m < 0 {
		return bad("check linearizability.memory %d is negative", m)
	}
	for _, name := range p.Check.Skip {
		if !checker.IsName(name) {
			return bad("check skip: unknown checker %q", name)
		}
	}
	return nil
}

// validateKind checks what the lock's kind and declared traits ask of the
// plan: a latch goes with the latch workload and nothing else does, a read
// fraction with a read-write lock, nested holds with a reentrant lock, a
// lock that needs an odd number of masters with such a topology, client
// leases one per client.
func (p Plan) validateKind() error {
	kind, w := p.lockKind(), p.Workload
	info, _ := p.Lock.Info() // Validate checked the lock first
	switch {
	case kind == variants.KindLatch && w.Kind != workloads.Latch:
		return fmt.Errorf("lock %s is a latch: it needs workload kind %q, not %q", p.Lock.Variant, workloads.Latch, w.Kind)
	case kind != variants.KindLatch && w.Kind == workloads.Latch:
		return fmt.Errorf("workload latch needs the latch lock, not %s", p.Lock.Variant)
	case kind != variants.KindReadWrite && (w.ReadFraction != nil || w.ClientReadFraction != nil):
		return fmt.Errorf("workload read_fraction and client_read_fraction apply only to a read-write lock, not %s", p.Lock.Variant)
	case w.Latch != nil && w.Kind != workloads.Latch:
		return fmt.Errorf("workload latch settings apply only to workload kind %q", workloads.Latch)
	case w.InitEachCycle && kind != variants.KindSemaphore:
		return fmt.Errorf("workload init_each_cycle applies only to a semaphore, not %s", p.Lock.Variant)
	case w.Nest > 1 && !info.Reentrant:
		return fmt.Errorf("workload nest %d needs a reentrant lock (%s), not %s", w.Nest, strings.Join(variants.With(func(i variants.Info) bool { return i.Reentrant }), ", "), p.Lock.Label())
	case info.OddMasters && len(p.Topology.Masters())%2 == 0:
		return fmt.Errorf("lock %s needs an odd number of masters, topology %s has %d", p.Lock.Label(), p.Topology, len(p.Topology.Masters()))
	}
	if n := len(p.Lock.ClientTTL); n > 0 {
		if n != w.Clients {
			return fmt.Errorf("lock client_ttl lists %d leases for %d clients", n, w.Clients)
		}
		for i, t := range p.Lock.ClientTTL {
			if d := p.span(t); d < time.Millisecond {
				return fmt.Errorf("lock client_ttl[%d] %q must be at least 1ms", i, t)
			}
		}
	}
	return nil
}

// overrideLinearizability replaces the plan's linearizability bounds by
// the ones set in o.
func (p *Plan) overrideLinearizability(o LinearizabilityPlan) error {
	if o.Memory < 0 {
		return fmt.Errorf("%w: linearizability memory %d is negative", ErrPlan, o.Memory)
	}
	if o.Memory != 0 {
		p.Check.Linearizability.Memory = o.Memory
	}
	if !o.Timeout.IsZero() {
		if p.span(o.Timeout) <= 0 {
			return fmt.Errorf("%w: linearizability timeout %q must be positive", ErrPlan, o.Timeout)
		}
		p.Check.Linearizability.Timeout = o.Timeout
	}
	return nil
}

// LockDesc is the plan's lock in a few words, for listings and reports:
// "watchdog(single)", "single, WAIT 1", "single, fixed address".
func (p Plan) LockDesc() string {
	l := p.Lock
	d := l.Label()
	if l.WaitReplicas > 0 {
		d += fmt.Sprintf(", WAIT %d", l.WaitReplicas)
	}
	if l.SetNXOnExtend {
		d += ", SetNXOnExtend"
	}
	if n := p.permits(); n > 0 {
		d += fmt.Sprintf(", %d permits", n)
	}
	if !l.ThreadWaitTime.IsZero() {
		d += ", threadWaitTime " + l.ThreadWaitTime.String()
	}
	if len(l.ClientTTL) > 0 {
		ttls := make([]string, len(l.ClientTTL))
		for i, t := range l.ClientTTL {
			ttls[i] = t.String()
		}
		d += ", client leases " + strings.Join(ttls, " / ")
	}
	if p.Topology.Sentinels && l.Discovery == DiscoveryFixed {
		d += ", fixed address of p"
	}
	return d
}

// nodeArgs are NodeConfig as redis-server arguments, in a stable order.
func (p Plan) nodeArgs() []string {
	var out []string
	for _, k := range sortedKeys(p.NodeConfig) {
		out = append(out, "--"+k, p.NodeConfig[k])
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lockSpec is the plan's lock as variants build it, its spans resolved
// against the plan's TTL.
func (p Plan) lockSpec() variants.Spec {
	return variants.Spec{Options: p.Lock.Options.Resolve(p.ttl()), TTL: p.ttl()}
}

// clientLockSpec is client i's lock: the plan's, with the client's own
// lease when ClientTTL gives one (the other durations stay the plan's).
func (p Plan) clientLockSpec(i int) variants.Spec {
	s := p.lockSpec()
	if i < len(p.Lock.ClientTTL) {
		s.TTL = p.span(p.Lock.ClientTTL[i])
	}
	return s
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
	c := workloads.Config{
		Options: p.Workload, TTL: p.ttl(),
		Lock:      workloads.LockSpec{Builder: BuilderName, PerClient: specs},
		TimeLimit: p.span(p.TimeLimit), Seed: uint64(p.Seed),
	}
	if specs == nil {
		c.Lock.Spec = json.RawMessage(`{}`)
	}
	return c, c.Validate()
}

func (p Plan) nemesisPlan() nemesis.Plan {
	return nemesis.Plan{Seed: p.Seed, TTL: p.TTL, Steps: p.Faults}
}

// nemesisSetup describes the run's environment to the fault validator;
// prov is the provider it runs on, nil when none is built yet (every
// control is then assumed).
func (p Plan) nemesisSetup(prov cluster.Provider) nemesis.Setup {
	p = p.withDefaults()
	s := nemesis.Setup{
		Topology: p.Topology, Clients: p.Workload.Clients,
		NodeClock: p.nemesisPlan().NeedsNodeClock(), ClientMode: p.Workload.Mode,
	}
	if prov != nil {
		s.Provider, s.Controls = prov.Name(), prov.Controls()
	}
	return s
}

// permits is the semaphore's permits, 0 for any other lock.
func (p Plan) permits() int {
	if p.lockKind() != variants.KindSemaphore {
		return 0
	}
	return p.withDefaults().Lock.Permits
}
