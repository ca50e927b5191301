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
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
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
	// Provider runs the servers: a provider registered in package cluster
	// (cluster.ProviderNames: "process", the default, "docker",
	// "external"); External names the configuration file of the one that
	// takes it (cluster.ProviderKind.External).
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

// lockKind is the kind of the plan's lock (KindLock when it is unknown:
// Validate says so).
func (p Plan) lockKind() lock.Kind { return p.Lock.Kind() }

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

// clusterSpec is the cluster the plan runs, as far as the plan says:
// Run adds where its files go, the provider, the toxiproxy API and the
// clients' rights, and logs in with acc (the plan's access, or an external
// deployment's). Validation asks its topology's rules of it
// (cluster.Spec.CheckTopology) with the plan's own access.
func (p Plan) clusterSpec(acc *access.Config) cluster.Spec {
	return cluster.Spec{
		Topology: p.Topology, Clients: p.Workload.Clients, Persistence: p.Persistence,
		Clock: p.nemesisPlan().NeedsNodeClock(), Access: acc,
		Server: p.Server, NodeArgs: p.nodeArgs(), DownAfter: p.span(p.SentinelDownAfter),
	}
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
// lease when ClientTTL gives one (the other durations stay the plan's) and
// its own token when Tokens gives one.
func (p Plan) clientLockSpec(i int) variants.Spec {
	s := p.lockSpec()
	if i < len(p.Lock.ClientTTL) {
		s.TTL = p.span(p.Lock.ClientTTL[i])
	}
	if i < len(p.Lock.Tokens) {
		s.Token = p.Lock.Tokens[i]
	}
	return s
}

func (p Plan) readTimeout() time.Duration { return p.span(p.Lock.ReadTimeout) }

// workloadConfig is the plan's workload for the workloads package; specs
// are the clients' lock specs (nil when only validating).
func (p Plan) workloadConfig(specs []json.RawMessage) (workloads.Config, error) {
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
	if p.lockKind() != lock.KindSemaphore {
		return 0
	}
	return p.Lock.Permits
}
