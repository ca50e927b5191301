package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// The faults that change a data node's settings while it runs (CanConfig):
// memory pressure (Squeeze, PushMemory, Unsqueeze) and refused writes
// (RefuseWrites, AcceptWrites). Each reads what it changes first and
// restores it when undone; they act through the harness's admin
// connection, so no partition hides the node from them.

// MemoryPolicies are the maxmemory-policy values Squeeze takes (Redis's
// "Key eviction" documentation): noeviction refuses writes that need
// memory (OOM), the allkeys-* policies evict among every key, the
// volatile-* ones among the keys that have a TTL — which every lock key
// has — volatile-ttl the one nearest its expiry first.
var MemoryPolicies = []string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}

// NoEviction is the policy that refuses writes instead of evicting.
const NoEviction = "noeviction"

// FillerPrefix starts the keys Squeeze fills a node with: outside the
// locks' key space ("tumbler:…"), so no lock ever reads them.
const FillerPrefix = "tumbler-filler:"

// Sizes of a squeeze: the limit is what the node uses plus
// squeezeHeadroom, filled in chunks of fillChunk.
const (
	squeezeHeadroom = 4 << 20
	fillChunk       = 64 << 10
	// fillMargin is how far under the limit an evicting policy's fill
	// stops, so that the clients' buffers do not push the node over it
	// between two pushes; pushDip how far under what the node uses a push
	// drops the limit: more than the buffers come and go by (an INFO
	// reply, a client's query buffer), so it always evicts — under a
	// volatile-* policy every key with a TTL, as the few lock keys do not
	// free that much.
	fillMargin = 4 * fillChunk
	pushDip    = fillChunk
)

// squeeze is a node's memory pressure: what to restore, and the fillers.
type squeeze struct {
	policy string
	prev   []string // CONFIG SET arguments restoring the settings
	limit  int64
	tag    string   // a Redis Cluster hash tag the node serves, or ""
	keys   []string // fillers written
	full   bool     // noeviction: a filler write was refused (OOM)
}

// ValidMemoryPolicy says what is wrong with a maxmemory-policy, if anything.
func ValidMemoryPolicy(p string) error {
	if !slices.Contains(MemoryPolicies, p) {
		return fmt.Errorf("unknown maxmemory-policy %q (known: %s)", p, strings.Join(MemoryPolicies, ", "))
	}
	return nil
}

// Squeeze puts data node name, a primary, under memory pressure: its
// maxmemory-policy becomes policy and its maxmemory what it uses now plus
// a few MiB, which Squeeze then fills with filler keys without a TTL
// (FillerPrefix) — under noeviction until a write is refused (OOM), and
// the limit then drops a little under what it uses, so every write that
// needs memory is refused from then on; under an
// evicting policy up to just under the limit, so that each PushMemory
// evicts. Unsqueeze undoes it.
func (c *Cluster) Squeeze(ctx context.Context, name, policy string) error {
	if err := ValidMemoryPolicy(policy); err != nil {
		return fmt.Errorf("squeeze %s: %w", name, err)
	}
	n, err := c.configurable("squeeze", name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.squeeze != nil {
		return fmt.Errorf("squeeze %s: it is under memory pressure already", name)
	}
	if err := primaryOnly(ctx, n, "memory pressure fills a primary"); err != nil {
		return err
	}
	sq := &squeeze{policy: policy}
	if sq.prev, err = configGet(ctx, n.admin, "maxmemory", "maxmemory-policy"); err != nil {
		return fmt.Errorf("squeeze %s: %w", name, err)
	}
	used, err := usedMemory(ctx, n.admin)
	if err != nil {
		return fmt.Errorf("squeeze %s: %w", name, err)
	}
	if sq.tag, err = fillerTag(ctx, n.admin); err != nil {
		return fmt.Errorf("squeeze %s: %w", name, err)
	}
	sq.limit = used + squeezeHeadroom
	n.squeeze = sq // from here on Unsqueeze undoes whatever took effect
	if err := n.admin.ConfigSet(ctx, "maxmemory-policy", policy).Err(); err != nil {
		return fmt.Errorf("squeeze %s: %w", name, err)
	}
	if err := n.admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(sq.limit, 10)).Err(); err != nil {
		return fmt.Errorf("squeeze %s: %w", name, err)
	}
	if err := sq.fill(ctx, n); err != nil {
		return fmt.Errorf("squeeze %s: %w", name, err)
	}
	return nil
}

// fill writes fillers until the node is full (see Squeeze).
func (sq *squeeze) fill(ctx context.Context, n *node) error {
	val := strings.Repeat("x", fillChunk)
	for i := 0; i < 2*squeezeHeadroom/fillChunk+16; i++ {
		key := fmt.Sprintf("%s%s%s:%d", FillerPrefix, sq.tag, n.name, i)
		if err := n.admin.Set(ctx, key, val, 0).Err(); err != nil {
			if isOOM(err) && sq.policy == NoEviction {
				// Full. The refused write's own buffer counted; without it
				// the node is a little under the limit again, and the
				// clients' buffers come and go: the limit drops below what
				// it uses, so it stays full whatever they do.
				sq.full = true
				used, err := usedMemory(ctx, n.admin)
				if err != nil {
					return err
				}
				return n.admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used-fillMargin, 10)).Err()
			}
			return fmt.Errorf("fill: %w", err)
		}
		sq.keys = append(sq.keys, key)
		if sq.policy == NoEviction {
			continue
		}
		used, err := usedMemory(ctx, n.admin)
		if err != nil {
			return err
		}
		if used+fillMargin >= sq.limit {
			return nil
		}
	}
	if sq.policy == NoEviction {
		return fmt.Errorf("fill: %d filler writes and no OOM yet under a limit of %d bytes", len(sq.keys), sq.limit)
	}
	return nil
}

// PushMemory pushes a squeezed node over its limit once: its maxmemory
// drops below what it uses (pushDip), a PING makes it evict by its policy
// until it is under that or nothing is left to evict (volatile-ttl: the
// keys with a TTL, nearest expiry first — the lock keys, as the fillers
// have none), and the limit comes back. Under noeviction it does nothing: the node refuses writes
// already.
func (c *Cluster) PushMemory(ctx context.Context, name string) error {
	n, err := c.configurable("push memory of", name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	sq := n.squeeze
	switch {
	case sq == nil:
		return fmt.Errorf("push memory of %s: it is not under memory pressure", name)
	case sq.policy == NoEviction:
		return nil
	}
	used, err := usedMemory(ctx, n.admin)
	if err != nil {
		return fmt.Errorf("push memory of %s: %w", name, err)
	}
	errs := []error{
		n.admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used-pushDip, 10)).Err(),
		n.admin.Ping(ctx).Err(),
		n.admin.ConfigSet(ctx, "maxmemory", strconv.FormatInt(sq.limit, 10)).Err(),
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("push memory of %s: %w", name, err)
	}
	return nil
}

// Unsqueeze undoes Squeeze: the node's maxmemory and maxmemory-policy as
// they were, and its fillers deleted. A node that is down has nothing to
// undo (it starts with its own settings; fillers a restart kept from its
// AOF are left).
func (c *Cluster) Unsqueeze(ctx context.Context, name string) error {
	return undoFault(c, "unsqueeze", name, func(n *node) **squeeze { return &n.squeeze }, func(n *node, sq *squeeze) error {
		var errs []error
		// The limit first: with the fillers still there, the old policy
		// under the squeezed limit would evict (or refuse) at once.
		for i := len(sq.prev) - 2; i >= 0; i -= 2 {
			errs = append(errs, n.admin.ConfigSet(ctx, sq.prev[i], sq.prev[i+1]).Err())
		}
		keys := sq.keys
		for len(keys) > 0 {
			k := min(len(keys), 64)
			errs = append(errs, n.admin.Unlink(ctx, keys[:k]...).Err())
			keys = keys[k:]
		}
		return errors.Join(errs...)
	})
}

// Refusal is how a node refuses writes (RefuseWrites).
type Refusal string

const (
	// RefuseMisconf: a save fails while stop-writes-on-bgsave-error is
	// yes, so the node answers every write "MISCONF …" (node-redlock #11,
	// redis #8623).
	RefuseMisconf Refusal = "misconf"
	// RefuseReadonly: the node is demoted to a replica (of an address
	// nobody answers at), so it answers every write "READONLY …", as a
	// demoted primary does to a client still talking to it after a
	// failover.
	RefuseReadonly Refusal = "readonly"
)

// Refusals lists the refusals.
var Refusals = []Refusal{RefuseMisconf, RefuseReadonly}

// Validate says what is wrong with r, if anything.
func (r Refusal) Validate() error {
	if !slices.Contains(Refusals, r) {
		return fmt.Errorf("unknown refusal %q (known: %s, %s)", string(r), RefuseMisconf, RefuseReadonly)
	}
	return nil
}

// unwritableDir is where a refused-writes fault points a node's "dir": a
// save cannot create its file there, not even as root.
const unwritableDir = "/proc"

// nowhere is the primary a node demoted by RefuseReadonly follows: an
// address on the node's own loopback where nothing listens, so it never
// syncs and keeps what it holds.
const nowhere, nowherePort = "127.0.0.1", "1"

// refusal is a node's refused writes: how to undo them.
type refusal struct {
	r    Refusal
	undo func(context.Context) error
}

// RefuseWrites makes data node name, a primary, refuse every write as r
// says (RefuseWritesOn), until AcceptWrites.
func (c *Cluster) RefuseWrites(ctx context.Context, name string, r Refusal) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("refuse writes on %s: %w", name, err)
	}
	n, err := c.configurable("refuse writes on", name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.refusal != nil {
		return fmt.Errorf("refuse writes on %s: it refuses them already (%s)", name, n.refusal.r)
	}
	if err := primaryOnly(ctx, n, "only a primary takes writes to refuse"); err != nil {
		return err
	}
	undo, err := RefuseWritesOn(ctx, n.admin, r)
	if undo != nil {
		n.refusal = &refusal{r: r, undo: undo}
	}
	if err != nil {
		return fmt.Errorf("refuse writes on %s: %w", name, err)
	}
	return nil
}

// AcceptWrites undoes RefuseWrites. A node that is down has nothing to
// undo: it starts with its own settings.
func (c *Cluster) AcceptWrites(ctx context.Context, name string) error {
	return undoFault(c, "accept writes on", name, func(n *node) **refusal { return &n.refusal }, func(_ *node, rf *refusal) error {
		return rf.undo(ctx)
	})
}

// undoFault undoes a fault on data node name (verb names the undo in
// errors) under the node's lock: held is where the node keeps what the
// fault left to undo, which undoFault clears; undo runs only when there
// was something and the node is up (a node that is down starts with its
// own settings).
func undoFault[T any](c *Cluster, verb, name string, held func(*node) **T, undo func(*node, *T) error) error {
	n, err := c.configurable(verb, name)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p := held(n)
	v := *p
	*p = nil
	if v == nil || !n.up {
		return nil
	}
	if err := undo(n, v); err != nil {
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	return nil
}

// RefuseWritesOn makes the server c talks to refuse every write as r
// says, and returns how to undo it (non-nil as soon as anything changed,
// even when a later part failed). MISCONF: "save" gets a save point,
// "dir" points where a save cannot write (the server must run with
// enable-protected-configs), stop-writes-on-bgsave-error is yes, and a
// BGSAVE fails; the undo puts "dir", "save" and
// stop-writes-on-bgsave-error back as they were and, when the server had
// save points of its own, saves again, which is what lets it take writes
// again. READONLY: REPLICAOF an address nobody answers at; the undo is
// REPLICAOF NO ONE.
func RefuseWritesOn(ctx context.Context, c *redis.Client, r Refusal) (undo func(context.Context) error, err error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r == RefuseReadonly {
		undo = func(ctx context.Context) error {
			if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
				return fmt.Errorf("REPLICAOF NO ONE: %w", err)
			}
			return nil
		}
		if err := c.Do(ctx, "REPLICAOF", nowhere, nowherePort).Err(); err != nil {
			return undo, fmt.Errorf("REPLICAOF: %w", err)
		}
		return undo, nil
	}
	prev, err := configGet(ctx, c, "stop-writes-on-bgsave-error", "save", "dir")
	if err != nil {
		return nil, err
	}
	undo = func(ctx context.Context) error {
		// dir first, so that a save from here on succeeds.
		var errs []error
		for i := len(prev) - 2; i >= 0; i -= 2 {
			errs = append(errs, c.ConfigSet(ctx, prev[i], prev[i+1]).Err())
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if save := prev[3]; save != "" {
			if status, err := bgsave(ctx, c); err != nil || status != "ok" {
				return fmt.Errorf("the save that clears MISCONF: status %q, %v", status, err)
			}
		}
		return nil
	}
	for _, kv := range [][2]string{{"stop-writes-on-bgsave-error", "yes"}, {"save", "3600 1"}, {"dir", unwritableDir}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return undo, fmt.Errorf("CONFIG SET %s: %w", kv[0], err)
		}
	}
	status, err := bgsave(ctx, c)
	if err != nil {
		return undo, err
	}
	if status != "err" {
		return undo, fmt.Errorf("a save into %s did not fail (status %q)", unwritableDir, status)
	}
	return undo, nil
}

// configurable is data node name, if the provider lets the harness change
// its settings.
func (c *Cluster) configurable(op, name string) (*node, error) {
	n, err := c.node(op, name, true)
	if err != nil {
		return nil, err
	}
	if !c.prov.Controls().Has(CanConfig) {
		return nil, fmt.Errorf("%s %s: %w", op, name, Unsupported("changing settings", c.prov.Name()))
	}
	return n, nil
}

// primaryOnly refuses a node that is down or a replica.
func primaryOnly(ctx context.Context, n *node, why string) error {
	if !n.up {
		return fmt.Errorf("%s is down", n.name)
	}
	role, err := n.admin.Do(ctx, "ROLE").Slice()
	if err != nil {
		return fmt.Errorf("%s: ROLE: %w", n.name, err)
	}
	if len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("%s is a replica: %s", n.name, why)
	}
	return nil
}

// configGet reads settings, as CONFIG SET arguments that restore them.
func configGet(ctx context.Context, c *redis.Client, keys ...string) ([]string, error) {
	var out []string
	for _, k := range keys {
		m, err := c.ConfigGet(ctx, k).Result()
		if err != nil {
			return nil, fmt.Errorf("CONFIG GET %s: %w", k, err)
		}
		v, ok := m[k]
		if !ok {
			return nil, fmt.Errorf("CONFIG GET %s: no such setting", k)
		}
		out = append(out, k, v)
	}
	return out, nil
}

func infoField(ctx context.Context, c *redis.Client, section, field string) (string, error) {
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return "", fmt.Errorf("INFO %s: %w", section, err)
	}
	v, ok := InfoFields(s)[field]
	if !ok {
		return "", fmt.Errorf("INFO %s has no %s", section, field)
	}
	return v, nil
}

func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	v, err := infoField(ctx, c, "memory", "used_memory")
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func isOOM(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(err.Error(), "OOM ")
}

// bgsaveTimeout bounds a save's wait.
const bgsaveTimeout = 10 * time.Second

// bgsave starts a save (scheduled after an AOF rewrite, if one runs),
// waits for it to end and returns its status, "ok" or "err".
func bgsave(ctx context.Context, c *redis.Client) (string, error) {
	reply, err := c.Do(ctx, "BGSAVE", "SCHEDULE").Text()
	if err != nil {
		return "", fmt.Errorf("BGSAVE: %w", err)
	}
	started := !strings.Contains(reply, "scheduled")
	deadline := time.Now().Add(bgsaveTimeout)
	for {
		s, err := c.Info(ctx, "persistence").Result()
		if err != nil {
			return "", fmt.Errorf("INFO persistence: %w", err)
		}
		f := InfoFields(s)
		running := f["rdb_bgsave_in_progress"] == "1"
		started = started || running
		if started && !running {
			return f["rdb_last_bgsave_status"], nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("BGSAVE (%s) did not end within %v", reply, bgsaveTimeout)
		}
		if err := wait.For(ctx, 5*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// fillerTag is a hash tag ("{…}") whose slot the node serves, when it is a
// Redis Cluster node (a key in another slot would be MOVED), else "".
func fillerTag(ctx context.Context, c *redis.Client) (string, error) {
	if v, err := infoField(ctx, c, "cluster", "cluster_enabled"); err != nil || v != "1" {
		return "", nil
	}
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("CLUSTER NODES: %w", err)
	}
	var ranges [][2]int64
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "myself") {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, _ := strings.Cut(r, "-")
			a, err1 := strconv.ParseInt(lo, 10, 64)
			b, err2 := strconv.ParseInt(cmpOr(hi, lo), 10, 64)
			if err1 == nil && err2 == nil {
				ranges = append(ranges, [2]int64{a, b})
			}
		}
	}
	for i := 0; i < 1<<14 && len(ranges) > 0; i++ {
		tag := fmt.Sprintf("{f%d}", i)
		slot, err := c.ClusterKeySlot(ctx, tag).Result()
		if err != nil {
			return "", fmt.Errorf("CLUSTER KEYSLOT: %w", err)
		}
		for _, r := range ranges {
			if slot >= r[0] && slot <= r[1] {
				return tag, nil
			}
		}
	}
	return "", errors.New("the node serves no hash slot")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
