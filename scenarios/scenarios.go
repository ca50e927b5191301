// Package scenarios is tumbler's catalog of documented failure modes
// (ARCHITECTURE.md, "The failure modes and their sources"): each row is data — a run plan plus what the run must show
// and where the failure mode is documented — embedded from catalog/*.json.
// The same run engine executes every row; a user adds a row by writing the
// same JSON to a file (Load). A row's expectation is an outcome.Expectation,
// which the run engine judges the run against.
//
// The matrix — every row on several seeds, in shards — runs here
// (RunMatrix); its model is the subpackage scenarios/matrix, which sits
// low so that reports can render it.
package scenarios

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

// Scenario is one catalog row.
type Scenario struct {
	Name string `json:"name"`
	// What happens, in the catalog's words.
	What string `json:"what"`
	// Source is where the failure mode is documented.
	Source string `json:"source"`
	// Expect is the verdict (and anomaly kind) the row must give.
	Expect outcome.Expectation `json:"expect"`
	// NotReproduced, when set, says why this row does not (yet) give its
	// expected verdict on every seed. Such a row is still listed and run,
	// never hidden and never forced.
	NotReproduced string `json:"not_reproduced,omitempty"`
	// Plan is the run; its seed is replaced by the seed of each run.
	Plan runner.Plan `json:"plan"`
	// Deployment: the row shows a failure of the deployment, not of its
	// lock — a node restarted without persistence, a node's clock moved, a
	// failover to a replica without the key —, which any lock whose lease
	// lives there suffers the same way: a campaign takes another lock's
	// find of the same shape as known by this row.
	Deployment bool `json:"deployment,omitempty"`
}

//go:embed catalog/*.json
var catalog embed.FS

var all = mustLoadCatalog()

func mustLoadCatalog() []Scenario {
	entries, err := catalog.ReadDir("catalog")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	var out []Scenario
	for _, e := range entries {
		b, err := catalog.ReadFile(path.Join("catalog", e.Name()))
		if err != nil {
			panic(err)
		}
		s, err := Parse(b, e.Name())
		if err != nil {
			// The catalog is part of the program; TestCatalogValid keeps it
			// valid, so this is a build defect, not bad input.
			panic(fmt.Sprintf("catalog row %s: %v", e.Name(), err))
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return order(out[i].Name) < order(out[j].Name) })
	return out
}

// order keeps the catalog in tableOrder's order (the README's catalog
// table lists the rows so); rows not in it sort last.
func order(name string) string {
	for i, n := range tableOrder {
		if n == name {
			return fmt.Sprintf("%03d", i)
		}
	}
	return "999" + name
}

var tableOrder = []string{
	"single-baseline", "single-failover", "single-failover-wait", "single-failover-wait-lagging",
	"single-restart-empty", "single-gc-pause", "fenced-gc-pause", "fenced-failover-token-reuse",
	"single-client-partition", "redlock-minority-partition", "redlock-restart-empty",
	"redlock-restart-delayed", "redlock-restart-aof-always", "redlock-clock-jump", "redlock-drift-within-factor",
	"redlock-drift-beyond-factor", "redlock-gc-pause",
	"redlock-pause-during-acquire", "redislock-pause-during-acquire", "single-clock-jump", "rueidislock-node-clock-ahead",
	"watchdog-long-section", "watchdog-gc-pause", "watchdog-starved-renewal", "watchdog-starved-renewal-checked",
	"watchdog-renewal-blip", "reentrant-contention", "recipe-setnx-expire-crash", "recipe-setnx-del-slow",
	"recipe-check-then-del", "recipe-getset-skew", "recipe-lua-timestamp-skew", "recipe-timer-renew",
	"recipe-give-up-renew", "redsync-restart-empty", "redsync-setnx-on-extend", "redsync-extend-minority-stall",
	"rwlock-baseline", "rwlock-failover", "rwlock-reader-lease-cut", "fairlock-baseline", "fairlock-waiter-pause",
	"fairlock-failover", "multilock-node-down", "redisson-redlock-pause-during-acquire",
	"redisson-redlock-replicated-failover", "semaphore-baseline", "semaphore-failover",
	"permit-expirable-semaphore-gc-pause", "latch-baseline", "latch-failover",
	"single-failover-fixed", "single-failover-wait-fixed", "sentinel-split-brain", "sentinel-split-brain-min-replicas",
	"cluster-failover", "cluster-failover-wait",
	"redis-py-failover", "redis-py-gc-pause", "redis-py-no-timeout-crash", "redis-py-release-reply-lost",
	"symfony-redisstore-failover", "symfony-combined-restart-empty", "laravel-lock-failover", "php-lock-quorum-wall-clock",
	"lock-key-evicted", "noeviction-oom", "refused-writes-release", "retried-commands-reply-loss", "retried-setnx-reply-loss", "reentrant-retried-release",
	// Found by tumbler (docs/analyses): failures no tracker reported.
	"redislock-token-prefix", "rueidislock-late-cancel",
}

// All returns every catalog row in the catalog's order.
func All() []Scenario { return append([]Scenario(nil), all...) }

// Names lists the rows' names in order.
func Names() []string {
	out := make([]string, len(all))
	for i, s := range all {
		out[i] = s.Name
	}
	return out
}

// Get returns the row called name, or an error listing the valid names.
func Get(name string) (Scenario, error) {
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// Missing returns those of names that are no row of the catalog, in the
// order given: code that names catalog rows (the audit's findings, the
// catalog's table order, a script's list) checks its names with it, so a
// renamed or misspelt row fails a test instead of dangling.
func Missing(names ...string) []string {
	var out []string
	for _, n := range names {
		if _, err := Get(n); err != nil {
			out = append(out, n)
		}
	}
	return out
}

// Load reads a row written by a user: the same JSON as the catalog's.
func Load(file string) (Scenario, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return Scenario{}, err
	}
	return Parse(b, file)
}

// Parse decodes and validates a row; name says where it came from.
func Parse(b []byte, name string) (Scenario, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Scenario
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", name, err)
	}
	if s.Name == "" {
		return Scenario{}, fmt.Errorf("%s: the row has no name", name)
	}
	if err := s.Expect.Validate(); err != nil {
		return Scenario{}, fmt.Errorf("%s: expect: %w", name, err)
	}
	s.Plan = s.Plan.FromRepository()
	p := s.PlanFor(s.Plan.Seed)
	if err := p.Validate(); err != nil {
		if c := s.Plan.Lock.Client; c != nil && c.Dir != "" && !filepath.IsAbs(c.Dir) {
			// A client directory of the repository's (contrib/clients/)
			// that is not here: tumbler runs outside a checkout. The row
			// stays listed; running it names the missing directory.
			return s, nil
		}
		return Scenario{}, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// PlanFor is the row's plan with the given seed (and the row's name and
// description), ready for runner.Run.
func (s Scenario) PlanFor(seed int64) runner.Plan {
	p := s.Plan
	p.Seed = seed
	p.Name = s.Name
	if p.Description == "" {
		p.Description = s.What
	}
	return p
}

// Expected is the row's expectation with the catalog's words.
func (s Scenario) Expected() *outcome.Expectation {
	e := s.Expect
	return &e
}

// ErrRefused is wrapped by On's error for a row its target cannot run (as
// opposed to a target that is wrong whatever the row).
var ErrRefused = errors.New("refused")

// On is the row moved onto a target — another provider, an external
// deployment, Valkey, credentials — or an error saying why not: a bad
// target (runner.Target.Apply), or a row the target cannot run
// (runner.Runnable), which wraps ErrRefused. Both wrap runner.ErrPlan.
func (s Scenario) On(t runner.Target) (Scenario, error) {
	p, err := t.Apply(s.Plan)
	if err != nil {
		return Scenario{}, err
	}
	if err := runner.Runnable(s.with(p).PlanFor(s.Plan.Seed)); err != nil {
		return Scenario{}, fmt.Errorf("%w: %s cannot run on the %s provider: %w", ErrRefused, s.Name, p.Normalize().Provider, err)
	}
	return s.with(p), nil
}

func (s Scenario) with(p runner.Plan) Scenario {
	s.Plan = p
	return s
}

// Plans are the rows' plans, in order.
func Plans(rows []Scenario) []runner.Plan {
	out := make([]runner.Plan, len(rows))
	for i, r := range rows {
		out[i] = r.Plan
	}
	return out
}
