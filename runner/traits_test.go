package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/workloads"
)

// registeredPrefix names the variants tests register at run time (the
// registry is global; TestCheckersRun pins the built-in ones only).
const registeredPrefix = "test-runtime-"

// TestPlanAsksTheLockTraits: what a plan may ask of its lock follows the
// traits the variant declares, a wrapper's servers those of the lock it
// wraps: nested holds need a reentrant lock, a lock that needs an odd
// number of masters refuses an even topology (a watchdog around Redlock
// too), and the messages list the variants that have the trait (built-in
// ones first; a test may have registered more).
func TestPlanAsksTheLockTraits(t *testing.T) {
	for _, c := range []struct {
		lock  variants.Options
		topo  string
		nest  int
		wants string // "" valid
	}{
		{variants.Options{Variant: "reentrant"}, "independent:1", 2, ""},
		{variants.Options{Variant: "single"}, "independent:1", 2, "workload.nest 2 needs a reentrant lock (reentrant"},
		{variants.Options{Variant: "watchdog", Inner: "reentrant"}, "independent:1", 2, "needs a reentrant lock (reentrant"},
		{variants.Options{Variant: "redlock"}, "independent:3", 1, ""},
		{variants.Options{Variant: "redlock"}, "independent:4", 1, "topology: independent:4 has 4 masters: lock redlock needs an odd number of them"},
		{variants.Options{Variant: "watchdog", Inner: "redlock"}, "independent:4", 1, "topology: independent:4 has 4 masters: lock watchdog(redlock) needs an odd number of them"},
		{variants.Options{Variant: "redsync"}, "independent:4", 1, ""},
		{variants.Options{Variant: "single"}, "groups:3", 1, "topology: topology groups:3 is for locks over independent masters (redlock, redsync, multi, redisson-redlock"},
	} {
		p := basePlan(t, "traits")
		p.Lock.Options, p.Workload.Nest = c.lock, c.nest
		p.Topology, _ = cluster.ParseTopology(c.topo)
		err := p.Validate()
		if (c.wants == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.wants) {
			t.Errorf("%s on %s, nest %d: %v, want %q", c.lock.Label(), c.topo, c.nest, err, c.wants)
		}
	}
}

// TestRegisteredTraitsChooseTheCheckers: a lock registered at run time
// (its traits read from a manifest, say) is planned and checked by what it
// declares, through the same code as the built-in ones: tokens enable the
// fencing checker under a fenced workload, nesting is allowed and read as
// nesting, a lock on all nodes needs independent masters.
func TestRegisteredTraitsChooseTheCheckers(t *testing.T) {
	name := fmt.Sprintf("%s%d", registeredPrefix, time.Now().UnixNano())
	build := func(variants.Spec, []redis.UniversalClient, string, []lock.Option) (lock.Locker, error) {
		return nil, nil
	}
	info := variants.Info{Name: name, Traits: lock.Traits{Grants: lock.Grants{Tokens: true, Reentrant: true}, Servers: lock.Servers{AllNodes: true}}}
	if err := variants.Register(info, build); err != nil {
		t.Fatal(err)
	}
	p := basePlan(t, "registered")
	p.Lock.Variant, p.Workload.Kind, p.Workload.Nest = name, workloads.FencedWrite, 2
	p.Topology, _ = cluster.ParseTopology("replicated:1")
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "topology: lock "+name+" needs independent masters") {
		t.Fatalf("a lock on all nodes on a replicated primary: %v", err)
	}
	p.Topology, _ = cluster.ParseTopology("independent:3")
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg := p.checkConfig()
	if !cfg.Fenced || !cfg.Reentrant || cfg.Shape != lock.KindLock {
		t.Errorf("subject %+v, want fenced and reentrant", cfg.Subject)
	}
	if run := checkersOf(t, p).Run; !slices.Contains(run, checker.Fencing) {
		t.Errorf("checkers run %v, want fencing", run)
	}
	p.Workload.Kind = workloads.Mutex
	if run := checkersOf(t, p).Run; slices.Contains(run, checker.Fencing) {
		t.Errorf("checkers run %v under a mutex workload, want no fencing", run)
	}
}
