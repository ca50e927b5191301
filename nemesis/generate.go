package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
)

// Magnitudes are the multiples of the TTL generated faults use (DESIGN.md
// §5): well inside a lease, half of it, all of it, and past it.
var Magnitudes = []float64{0.1, 0.5, 1, 2}

// Time the generator leaves, past a step's planned end, for what takes as
// long as it takes: a node starting again, Sentinel electing a primary
// (about 3 s on these machines, DESIGN.md §10).
const (
	startAllowance    = time.Second
	failoverAllowance = 10 * time.Second
)

// GenOptions describe the run a generated plan is for.
type GenOptions struct {
	// Setup is what the plan must be valid for.
	Setup
	// TTL is the lock TTL; magnitudes are multiples of it. Required.
	TTL time.Duration
	// TimeLimit is the run's length: every fault is healed before it,
	// with room for nodes to start and failovers to finish. Required.
	TimeLimit time.Duration
	// Interval is the quiet time before the first fault and between the end
	// of one fault and the start of the next, so liveness can recover
	// (default 3×TTL).
	Interval time.Duration
	// Key, when set, makes client pauses and client partitions hit the
	// client that next acquires Key (trigger "grant", client "holder"):
	// stopping a holder is the fault that matters.
	Key string
	// LockSteps are the lock steps step-pause and step-crash may arm (those
	// the lock variant under test reports, and the workload's own).
	LockSteps []string
}

// Generate makes a plan from seed: faults drawn from mix (kinds may repeat
// to weigh them), one at a time, each after a quiet Interval, with
// magnitudes drawn from Magnitudes×TTL and written relative to the TTL
// ("0.5ttl"), targets drawn from the setup. The same seed, mix and options
// give the same plan. An empty mix gives a plan without faults.
func Generate(seed int64, mix []Kind, o GenOptions) (Plan, error) {
	if err := o.check(mix); err != nil {
		return Plan{}, fmt.Errorf("generate: %w", err)
	}
	if o.Interval == 0 {
		o.Interval = 3 * o.TTL
	}
	g := &gen{o: o, rng: rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973)), primary: "p"}
	p := Plan{Seed: seed, TTL: Fixed(o.TTL), Steps: []Step{}}
	if len(mix) == 0 {
		return p, nil
	}
	t := o.Interval
	for {
		st := g.step(mix[g.rng.IntN(len(mix))], t)
		c, err := compileStep(len(p.Steps), st, o.TTL, o.Setup)
		if err != nil {
			return Plan{}, fmt.Errorf("generate: made an invalid step (a bug): %w", err)
		}
		_, end := c.window()
		switch c.Fault {
		case Kill, Restart:
			end += startAllowance
		case Failover:
			end += failoverAllowance + startAllowance
		}
		if end > o.TimeLimit {
			break
		}
		if c.Fault == Failover && c.Via == ViaPromote {
			g.primary = c.Nodes[0]
		}
		p.Steps = append(p.Steps, st)
		t = end + o.Interval
	}
	if err := p.Validate(o.Setup); err != nil {
		return Plan{}, fmt.Errorf("generate: made an invalid plan (a bug): %w", err)
	}
	return p, nil
}

func (o GenOptions) check(mix []Kind) error {
	var errs []error
	if o.TTL <= 0 {
		errs = append(errs, fmt.Errorf("TTL must be positive, got %v", o.TTL))
	}
	if o.TimeLimit <= 0 {
		errs = append(errs, fmt.Errorf("time limit must be positive, got %v", o.TimeLimit))
	}
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval must not be negative, got %v", o.Interval))
	}
	if err := o.Topology.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.Clients < 0 {
		errs = append(errs, fmt.Errorf("negative client count %d", o.Clients))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, k := range mix {
		if err := supports(k, o.Setup); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		switch {
		case k.ArmsStep() && len(o.LockSteps) == 0:
			errs = append(errs, fmt.Errorf("%s: needs GenOptions.LockSteps, the lock steps clients report", k))
		case k == Partition && len(o.shapes(Partition)) == 0, k == Latency && len(o.shapes(Latency)) == 0:
			errs = append(errs, fmt.Errorf("%s: %s with %d clients has no links to act on", k, o.Topology, o.Clients))
		}
	}
	return errors.Join(errs...)
}

// shapes are the link shapes a setup offers the generator.
func (o GenOptions) shapes(k Kind) []string {
	n := len(o.Topology.Nodes())
	var out []string
	if o.Clients > 0 {
		out = append(out, "one", "client")
		if k == Partition && n >= 3 && o.Topology.Kind == cluster.Independent {
			out = append(out, "minority", "majority")
			if o.Clients >= 2 {
				out = append(out, "bridge")
			}
		}
	}
	if o.Topology.Kind == cluster.Replicated {
		out = append(out, "replication")
		if k == Partition {
			out = append(out, "isolate")
		}
	}
	return out
}

type gen struct {
	o       GenOptions
	rng     *rand.Rand
	primary string // replicated without Sentinels: the primary promotions made
}

func (g *gen) mag() Span { return TTLs(Magnitudes[g.rng.IntN(len(Magnitudes))]) }

func (g *gen) node() string {
	n := g.o.Topology.Nodes()
	return n[g.rng.IntN(len(n))]
}

// nodes draws k distinct nodes, in topology order.
func (g *gen) nodes(k int) []string {
	all := g.o.Topology.Nodes()
	idx := g.rng.Perm(len(all))[:k]
	slices.Sort(idx)
	out := make([]string, k)
	for j, i := range idx {
		out[j] = all[i]
	}
	return out
}

func (g *gen) oneOf(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

func (g *gen) signedMag() Span {
	x := Magnitudes[g.rng.IntN(len(Magnitudes))]
	if g.rng.IntN(2) == 0 {
		x = -x
	}
	return TTLs(x)
}

// target picks the client a client fault hits: the next holder of Key when
// there is a Key, else a random client.
func (g *gen) target(st *Step) {
	if g.o.Key != "" {
		st.Trigger, st.Key, st.Client, st.Timeout = TriggerGrant, g.o.Key, Holder, Fixed(g.o.Interval)
		return
	}
	st.Clients = []int{g.rng.IntN(g.o.Clients)}
}

func (g *gen) cut(st *Step) {
	st.Mode = cluster.CutMode(g.oneOf(string(cluster.Reset), string(cluster.Blackhole)))
	if g.rng.IntN(4) == 0 {
		st.Direction = cluster.Direction(g.oneOf(string(cluster.Upstream), string(cluster.Downstream)))
	}
}

func (g *gen) step(k Kind, at time.Duration) Step {
	st := Step{At: Fixed(at.Round(time.Millisecond)), Fault: k}
	n := len(g.o.Topology.Nodes())
	switch k {
	case Partition, Latency:
		st.For = g.mag()
		switch g.oneOf(g.o.shapes(k)...) {
		case "one":
			st.Nodes = g.nodes(1)
		case "minority":
			st.Nodes = g.nodes(1 + g.rng.IntN((n-1)/2))
		case "majority":
			st.Nodes = g.nodes(n/2 + 1 + g.rng.IntN(n-1-n/2))
		case "client":
			st.Shape = ShapeClient
			st.Clients = []int{g.rng.IntN(g.o.Clients)}
		case "bridge":
			st.Shape = ShapeBridge
		case "replication":
			st.Shape = ShapeReplication
		case "isolate":
			st.Shape, st.Nodes = ShapeIsolate, g.nodes(1)
		}
		if k == Partition {
			g.cut(&st)
		} else {
			x := Magnitudes[g.rng.IntN(len(Magnitudes))]
			st.Latency = TTLs(x)
			if g.rng.IntN(2) == 0 {
				st.Jitter = TTLs(x / 2)
			}
		}
	case Kill:
		st.Nodes, st.For = []string{g.node()}, g.mag()
		st.Persistence = g.persistence()
	case Restart:
		st.Nodes = []string{g.node()}
		st.Persistence = g.persistence()
		if g.rng.IntN(2) == 0 {
			st.Delay = g.mag()
		}
	case Pause:
		st.Nodes, st.For = []string{g.node()}, g.mag()
	case Clock:
		st.Nodes, st.Offset = []string{g.node()}, g.signedMag()
		st.For = g.mag()
		if g.rng.IntN(3) == 0 {
			st.For, st.Strobe = TTLs(float64(1+g.rng.IntN(2))), TTLs(0.1)
		}
	case Failover:
		if g.o.Topology.Sentinels {
			st.Via = Via(g.oneOf(string(ViaKill), string(ViaSentinel)))
		} else {
			st.Via = ViaPromote
			var rs []string
			for _, x := range g.o.Topology.Nodes() {
				if x != g.primary {
					rs = append(rs, x)
				}
			}
			st.Nodes = []string{g.oneOf(rs...)}
		}
		if g.rng.IntN(2) == 0 {
			st.CutReplication, st.Lag = true, g.mag()
		}
	case ClientPause:
		g.target(&st)
		st.For = g.mag()
	case ClientClock:
		st.Clients = []int{g.rng.IntN(g.o.Clients)}
		st.Offset, st.For = g.signedMag(), g.mag()
	case StepPause, StepCrash:
		st.Clients = []int{g.rng.IntN(g.o.Clients)}
		st.LockStep = g.oneOf(g.o.LockSteps...)
		st.For = TTLs(float64(1 + g.rng.IntN(2)))
		if k == StepPause {
			st.Pause = g.mag()
		}
	case ClientPartition:
		g.target(&st)
		st.For = g.mag()
		g.cut(&st)
	}
	return st
}

func (g *gen) persistence() cluster.Persistence {
	return cluster.Persistence(g.oneOf("", string(cluster.PersistNone), string(cluster.AOFEverySec), string(cluster.AOFAlways)))
}
