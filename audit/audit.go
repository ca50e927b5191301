// Package audit reads a Redis or Valkey deployment's settings — CONFIG GET,
// INFO, ROLE, TIME, SENTINEL MASTERS/REPLICAS, CLUSTER INFO and the server
// version — and names each setting that exposes a lock to one of the
// failure modes tumbler's catalog demonstrates, next to the catalog rows
// that demonstrate it, so an SRE can reproduce them against their own
// deployment (tumbler reproduce ROW --external FILE).
//
// It only reads: every command it sends is a read (CONFIG GET, never SET).
package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster"
)

// Deployment is what to audit.
type Deployment struct {
	// Nodes are the data nodes: name → host:port.
	Nodes map[string]string
	// Sentinels are the Sentinels: name → host:port (none: no Sentinel).
	Sentinels map[string]string
	// Login is how to log in to every node and Sentinel. CONFIG GET needs
	// the admin's rights.
	Login access.Login
	// TTL is the lease time of the locks the deployment serves, which
	// Sentinel's timings are weighed against (default DefaultTTL).
	TTL time.Duration
}

// DefaultTTL is the lock TTL the audit assumes when none is given: the
// common 10–30 s of Redisson's watchdog and most Redlock clients' configs,
// at its short end.
const DefaultTTL = 10 * time.Second

// Finding is one setting read and what it means for a lock.
type Finding struct {
	// Check names what was looked at: persistence, failover-writes,
	// sentinel-timing, eviction, refused-writes, replica-persistence,
	// clock, clock-rate, cluster, sentinel-quorum.
	Check string `json:"check"`
	// Node is where it was read ("" for the deployment as a whole).
	Node string `json:"node,omitempty"`
	// Risky: the setting exposes a lock to the failure mode.
	Risky bool `json:"risky"`
	// Setting is what was read, as the server says it.
	Setting string `json:"setting"`
	// Why says what can happen to a lock.
	Why string `json:"why"`
	// Rows are the catalog rows that demonstrate it.
	Rows []string `json:"rows,omitempty"`
}

// Report is the audit of a deployment.
type Report struct {
	// Server is "redis 7.0.15" or "valkey 8.0.1" (of the first node).
	Server string `json:"server"`
	// Shape is standalone, replicated, sentinel or cluster.
	Shape    string        `json:"shape"`
	TTL      time.Duration `json:"ttl_ns"`
	Findings []Finding     `json:"findings"`
}

// Risky reports whether any finding is a risk.
func (r Report) Risky() bool {
	return slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Risky })
}

// ErrUnreachable wraps the error for a node that could not be read: not
// the deployment's settings but the audit's own failure.
var ErrUnreachable = errors.New("cannot read the node")

// Run audits d. An error wrapping cluster.ErrAccess means a node refused
// the login; one wrapping ErrUnreachable, that a node did not answer.
func Run(ctx context.Context, d Deployment) (Report, error) {
	if len(d.Nodes) == 0 {
		return Report{}, errors.New("audit: no data node to audit")
	}
	if d.TTL <= 0 {
		d.TTL = DefaultTTL
	}
	a := &auditor{d: d, rep: Report{TTL: d.TTL}}
	defer a.close()
	names := sortedKeys(d.Nodes)
	for _, name := range names {
		n, err := a.read(ctx, name, d.Nodes[name])
		if err != nil {
			return Report{}, err
		}
		a.nodes = append(a.nodes, n)
	}
	for _, name := range sortedKeys(d.Sentinels) {
		s, err := a.readSentinel(ctx, name, d.Sentinels[name])
		if err != nil {
			return Report{}, err
		}
		a.sentinels = append(a.sentinels, s)
	}
	if err := a.readRates(ctx); err != nil {
		return Report{}, err
	}
	a.judge()
	return a.rep, nil
}

type auditor struct {
	d         Deployment
	rep       Report
	clients   []*redis.Client
	nodes     []nodeState
	sentinels []sentinelState
}

func (a *auditor) close() {
	for _, c := range a.clients {
		_ = c.Close()
	}
}

// nodeState is what was read of one data node.
type nodeState struct {
	name, addr string
	server     cluster.Server
	version    string
	role       string // master or slave
	config     map[string]string
	info       map[string]string
	skew       time.Duration // the node's wall clock minus ours (at the midpoint of TIME)
	rtt        time.Duration
	at         time.Time // our clock at the midpoint of TIME
	rate       clockRate // its pace against ours, from a second TIME
}

type sentinelState struct {
	name, addr string
	masters    []map[string]string
}

func (a *auditor) client(addr string) *redis.Client {
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, PoolSize: 1, DisableIdentity: true, Protocol: 2}
	a.d.Login.Apply(o)
	c := redis.NewClient(o)
	a.clients = append(a.clients, c)
	return c
}

func (a *auditor) fail(name, addr string, err error) error {
	msg := a.d.Login.Redact(err.Error())
	for _, m := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "tls: ", "x509: "} {
		if strings.Contains(msg, m) {
			return fmt.Errorf("%w: %s at %s (%s): %s", cluster.ErrAccess, name, addr, a.d.Login, msg)
		}
	}
	return fmt.Errorf("%w %s at %s: %s", ErrUnreachable, name, addr, msg)
}

// configKeys are read with CONFIG GET on every data node.
var configKeys = []string{"appendonly", "appendfsync", "save", "maxmemory", "maxmemory-policy",
	"min-replicas-to-write", "min-replicas-max-lag", "cluster-enabled", "stop-writes-on-bgsave-error"}

func (a *auditor) read(ctx context.Context, name, addr string) (nodeState, error) {
	c := a.client(addr)
	n := nodeState{name: name, addr: addr, config: map[string]string{}}
	info, err := c.Info(ctx, "server", "replication", "persistence", "cluster").Result()
	if err != nil {
		return n, a.fail(name, addr, err)
	}
	n.info = cluster.InfoFields(info)
	n.server, n.version = cluster.ServerVersion(info)
	n.role = n.info["role"]
	for _, k := range configKeys {
		m, err := c.ConfigGet(ctx, k).Result()
		if err != nil {
			return n, a.fail(name, addr, fmt.Errorf("CONFIG GET %s: %w", k, err))
		}
		if v, ok := m[k]; ok {
			n.config[k] = v
		}
	}
	before := time.Now()
	t, err := c.Time(ctx).Result()
	after := time.Now()
	if err != nil {
		return n, a.fail(name, addr, err)
	}
	n.rtt = after.Sub(before)
	n.at = before.Add(n.rtt / 2)
	n.skew = t.Sub(n.at)
	return n, nil
}

func (a *auditor) readSentinel(ctx context.Context, name, addr string) (sentinelState, error) {
	c := a.client(addr)
	s := sentinelState{name: name, addr: addr}
	v, err := c.Do(ctx, "SENTINEL", "MASTERS").Slice()
	if err != nil {
		return s, a.fail(name, addr, err)
	}
	for _, m := range v {
		fields, ok := m.([]any)
		if !ok {
			continue
		}
		mm := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			mm[fmt.Sprint(fields[i])] = fmt.Sprint(fields[i+1])
		}
		s.masters = append(s.masters, mm)
	}
	return s, nil
}

func (a *auditor) add(f Finding) { a.rep.Findings = append(a.rep.Findings, f) }

// judge turns what was read into findings.
func (a *auditor) judge() {
	first := a.nodes[0]
	a.rep.Server = first.server.Name() + " " + first.version
	replicated := slices.ContainsFunc(a.nodes, func(n nodeState) bool { return n.role == "slave" || atoi(n.info["connected_slaves"]) > 0 })
	clustered := slices.ContainsFunc(a.nodes, func(n nodeState) bool { return n.config["cluster-enabled"] == "yes" })
	switch {
	case clustered:
		a.rep.Shape = "cluster"
	case len(a.sentinels) > 0:
		a.rep.Shape = "sentinel"
	case replicated:
		a.rep.Shape = "replicated"
	default:
		a.rep.Shape = "standalone"
	}
	ttl := a.d.TTL
	for _, n := range a.nodes {
		a.persistence(n)
		a.eviction(n)
		a.refusedWrites(n)
		a.clock(n, ttl)
		a.clockRate(n, ttl)
		if n.role == "master" && (replicated || clustered) {
			a.failoverWrites(n)
		}
		if clustered {
			a.add(Finding{Check: "cluster", Node: n.name, Risky: true,
				Setting: "cluster-enabled yes (" + n.info["cluster_enabled"] + ")",
				Why:     "a sharded deployment: each lock key lives on one shard, whose primary fails over to an asynchronously replicated replica like a Sentinel primary does; a lock granted just before it is lost with it",
				Rows:    rows(clusterFailover, singleFailover, fencedFailoverTokenReuse)})
		}
	}
	if replicated {
		a.replicaPersistence()
	}
	a.sentinelTiming(ttl)
}

func (a *auditor) persistence(n nodeState) {
	aof, fsync := n.config["appendonly"], n.config["appendfsync"]
	setting := fmt.Sprintf("appendonly %s, appendfsync %s, save %q", aof, fsync, n.config["save"])
	switch {
	case aof != "yes":
		a.add(Finding{Check: "persistence", Node: n.name, Risky: true, Setting: setting,
			Why:  "without an AOF a restarted node comes back without the locks it granted (RDB snapshots, if any, are seconds to minutes old), and another client takes a lock its holder still believes it holds",
			Rows: rows(singleRestartEmpty, redlockRestartEmpty, redsyncRestartEmpty, symfonyCombinedRestartEmpty)})
	case fsync != "always":
		a.add(Finding{Check: "persistence", Node: n.name, Risky: true, Setting: setting,
			Why:  "appendfsync " + fsync + " acknowledges a write before it is on disk: a process crash loses nothing, but a machine crash or power loss loses up to a second of grants, which a restarted node then hands out again (the restart rows show the same with everything lost; with always, nothing is)",
			Rows: rows(redlockRestartEmpty, redlockRestartAOFAlways)})
	default:
		a.add(Finding{Check: "persistence", Node: n.name, Setting: setting,
			Why:  "every acknowledged grant is on disk before the reply: a restarted node keeps its locks",
			Rows: rows(redlockRestartAOFAlways)})
	}
}

func (a *auditor) eviction(n nodeState) {
	policy, max := n.config["maxmemory-policy"], n.config["maxmemory"]
	f := Finding{Check: "eviction", Node: n.name, Setting: fmt.Sprintf("maxmemory %s, maxmemory-policy %s", max, policy)}
	switch {
	case max == "0" || max == "":
		f.Why = "no memory limit: lock keys are never evicted, and writes are never refused for memory"
	case policy == "noeviction" || policy == "":
		f.Why = "a memory limit with noeviction: lock keys are never evicted, but a full node refuses every SET (OOM), so nobody can take a lock until memory is freed; a compare-and-delete release still runs"
		f.Rows = rows(noevictionOOM)
	default:
		f.Risky = true
		f.Why = "a memory limit with " + policy + " can evict a lock key under its holder (volatile-* policies pick among keys with a TTL, which every lock key has, volatile-ttl the nearest expiry first), and the next client takes the lock at once"
		f.Rows = rows(lockKeyEvicted)
	}
	a.add(f)
}

// refusedWrites: a node that stops writes when a save fails refuses every
// lock command that writes — acquires and releases — while its saves fail.
func (a *auditor) refusedWrites(n nodeState) {
	stop, save, status := n.config["stop-writes-on-bgsave-error"], n.config["save"], n.info["rdb_last_bgsave_status"]
	if stop != "yes" || save == "" {
		return
	}
	f := Finding{Check: "refused-writes", Node: n.name, Rows: rows(refusedWritesRelease),
		Setting: fmt.Sprintf("stop-writes-on-bgsave-error yes, save %q, last save %s", save, cmpOr(status, "unknown")),
		Why:     "a failing save (a full or read-only disk) makes the node refuse every write with MISCONF, lock releases included: a lock whose client takes that error reply for success tells its holder the lock is free while the key holds it until its TTL"}
	if status == "err" {
		f.Risky = true
		f.Why = "the last save failed, so the node refuses every write now (MISCONF), lock acquires and releases included: " + f.Why[strings.Index(f.Why, "a lock whose"):]
	}
	a.add(f)
}

func (a *auditor) failoverWrites(n nodeState) {
	min, lag := atoi(n.config["min-replicas-to-write"]), n.config["min-replicas-max-lag"]
	setting := fmt.Sprintf("min-replicas-to-write %d, min-replicas-max-lag %s, %s connected replicas", min, lag, n.info["connected_slaves"])
	if min == 0 {
		a.add(Finding{Check: "failover-writes", Node: n.name, Risky: true, Setting: setting,
			Why: "replication is asynchronous and the primary takes writes with no replica: a lock granted on it can be missing on the replica promoted after a failover, and on a partitioned primary for as long as the partition lasts. A lock that WAITs for a replica closes the first window only while every promotable replica has acknowledged",
			Rows: rows(singleFailover, fencedFailoverTokenReuse, singleFailoverWaitLagging, sentinelSplitBrain,
				redisPyFailover, symfonyRedisStoreFailover, laravelLockFailover)})
		return
	}
	a.add(Finding{Check: "failover-writes", Node: n.name, Risky: true, Setting: setting,
		Why:  fmt.Sprintf("a partitioned primary stops taking writes once its replicas have been silent for min-replicas-max-lag (%ss, plus up to about 2 s of acknowledgement and recount granularity), which bounds the split-brain window without closing it; a failover still loses a grant no replica acknowledged yet", lag),
		Rows: rows(sentinelSplitBrainMinReplicas, singleFailover)})
}

func (a *auditor) replicaPersistence() {
	var primaries []nodeState
	for _, n := range a.nodes {
		if n.role == "master" {
			primaries = append(primaries, n)
		}
	}
	for _, p := range primaries {
		if p.config["appendonly"] == "yes" {
			continue
		}
		a.add(Finding{Check: "replica-persistence", Node: p.name, Risky: true,
			Setting: "a primary with appendonly " + p.config["appendonly"] + " and " + p.info["connected_slaves"] + " replicas",
			Why:     "a primary without persistence that restarts quickly (a supervisor, a container restart) comes back empty before any failover, and its replicas resync from it: every lock is gone everywhere",
			Rows:    rows(singleRestartEmpty)})
	}
	for _, n := range a.nodes {
		if n.role == "slave" && n.config["appendonly"] != "yes" {
			a.add(Finding{Check: "replica-persistence", Node: n.name, Risky: true,
				Setting: "a replica with appendonly " + n.config["appendonly"],
				Why:     "a replica without persistence that restarts and is then promoted has only what it resynced: a restart and a failover together lose the locks",
				Rows:    rows(singleRestartEmpty, singleFailover)})
		}
	}
}

func (a *auditor) clock(n nodeState, ttl time.Duration) {
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	skew := n.skew
	setting := fmt.Sprintf("wall clock %+.1f ms from the auditor's (±%.1f ms round trip); monotonic clock: %s", float64(skew)/1e6, float64(n.rtt)/1e6, cmpOr(n.info["monotonic_clock"], "not reported"))
	risky := math.Abs(float64(skew)) > float64(drift+n.rtt)
	why := "Redis expires a key by its own wall clock: a clock that jumps forward expires every lock early, and one ahead of a client's by more than the TTL makes a lock that sets an absolute expiry from the client's clock (rueidislock's SET NX PXAT) grant without storing anything. This clock agrees with the auditor's within the drift a lock allows (TTL×1% + 2 ms); keep it on NTP slewing, not stepping"
	if risky {
		why = fmt.Sprintf("this clock is %v off the auditor's, more than the drift a lock with TTL %v allows (%v): either clock is wrong, and Redis expires keys by its own wall clock, so a jump forward expires every lock early, and a clock ahead of a client's by more than the TTL makes SET NX PXAT from the client's clock grant without storing anything", skew.Round(time.Millisecond), ttl, drift)
	}
	a.add(Finding{Check: "clock", Node: n.name, Risky: risky, Setting: setting, Why: why,
		Rows: rows(redlockClockJump, rueidislockNodeClockAhead, recipeGetSetSkew)})
}

func (a *auditor) sentinelTiming(ttl time.Duration) {
	seen := map[string]bool{}
	for _, s := range a.sentinels {
		for _, m := range s.masters {
			name := m["name"]
			if seen[name] {
				continue
			}
			seen[name] = true
			down := time.Duration(atoi(m["down-after-milliseconds"])) * time.Millisecond
			fot := time.Duration(atoi(m["failover-timeout"])) * time.Millisecond
			setting := fmt.Sprintf("master %s: down-after-milliseconds %d, failover-timeout %d, quorum %s, %s other Sentinels", name, down.Milliseconds(), fot.Milliseconds(), m["quorum"], m["num-other-sentinels"])
			risky := down < ttl
			why := fmt.Sprintf("Sentinel declares the primary down only after %v, longer than a lock's TTL (%v): a lock granted just before a crash has expired by the time a replica is promoted, unless its holder renews it", down, ttl)
			if risky {
				why = fmt.Sprintf("Sentinel declares the primary down after %v and promotes a replica a few seconds later, within a lock's TTL (%v): a lock granted on the old primary and not yet replicated is still valid, and missing, on the new one. failover-timeout %v bounds how long a failover may take and when a failed one is retried", down, ttl, fot)
			}
			a.add(Finding{Check: "sentinel-timing", Node: s.name, Risky: risky, Setting: setting, Why: why,
				Rows: rows(singleFailover, singleFailoverWait, sentinelSplitBrain, redisPyFailover, symfonyRedisStoreFailover, laravelLockFailover)})
			total := atoi(m["num-other-sentinels"]) + 1
			if total < 3 {
				a.add(Finding{Check: "sentinel-quorum", Node: s.name, Risky: true, Setting: setting,
					Why:  fmt.Sprintf("%d Sentinels: with fewer than three, one Sentinel down (or cut off with the primary) leaves no majority to fail over, or lets one side of a partition decide alone", total),
					Rows: rows(sentinelSplitBrain)})
			}
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// FromExternal is the deployment an external configuration describes.
func FromExternal(cfg cluster.ExternalConfig) Deployment {
	d := Deployment{Nodes: map[string]string{}, Sentinels: map[string]string{}}
	for _, n := range cfg.Topology.Nodes() {
		d.Nodes[n] = cfg.Nodes[n].Addr
	}
	for _, s := range cfg.Topology.SentinelNames() {
		d.Sentinels[s] = cfg.Nodes[s].Addr
	}
	return d
}
