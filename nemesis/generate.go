package nemesis

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/spans"
)

// Magnitudes are the multiples of the TTL generated faults mostly use:
// well inside a lease, half of it, all of it, and past it.
var Magnitudes = []float64{0.1, 0.5, 1, 2}

// Time the generator leaves, past a step's planned end, for what takes as
// long as it takes: a node starting again, Sentinel electing a primary
// (about 3 s on these machines). A fault that outlasts the run anyway is
// healed when the run ends.
const (
	startAllowance    = time.Second
	failoverAllowance = 5 * time.Second
)

// GenOptions describe the run a generated plan is for.
type GenOptions struct {
	// Setup is what the plan must be valid for. A clock kind in the mix
	// needs NodeClock: the cluster must start with the clock shim.
	Setup
	// TTL is the lock TTL; magnitudes are multiples of it. Required.
	TTL time.Duration
	// TimeLimit is the run's length: every fault is healed before it,
	// with room for nodes to start and failovers to finish. Required.
	TimeLimit time.Duration
	// Quiet, when positive, is how long before the time limit half the
	// plans (the seed says which) heal their last fault: damage that
	// outlasts every fault — a lock that never expires, permits that
	// leaked — then shows as a key nobody can take, which the liveness
	// checker judges only away from faults. Less than the time limit.
	Quiet time.Duration
	// QuietAlways makes every plan leave the quiet end, not half of them:
	// for a lock whose damage shows only as a key nobody can take (a
	// latch whose waiters never pass). The seed still draws as before.
	QuietAlways bool
	// Interval is the mean time between the starts of two scenes (drawn
	// between half and one and a half of it), and half of it passes before
	// the first unless that waits for a grant (default: the TTL). A scene that would exceed Concurrency
	// or collide with what runs waits until it fits.
	Interval time.Duration
	// Concurrency is how many faults may be active at once, at least 1
	// (a draw's default is runner.DefaultConcurrency). A fault counts
	// from its start until its planned end plus the time a start or a
	// failover may take; a step waiting for a grant counts while it waits.
	// With 1, faults come one at a time and no compound scene is drawn.
	Concurrency int
	// Key is the contended lock key. With a key, most faults aim at the
	// lock: the holder of the next grant of Key (client faults) or a node
	// its lease rests on (node faults: "node": "lease", or the primary of
	// a replicated topology), and the compound scenes are drawn. Without
	// one, targets are drawn at random.
	Key string
	// LockSteps are the lock steps step-pause and step-crash may arm (those
	// the lock variant under test reports, and the workload's own).
	LockSteps []string
	// GrantSteps are those of LockSteps a client reaches on its way to a
	// grant or as it returns with one (inside Acquire, or right after it):
	// aimed at the lock, an arming of one of them takes every client for
	// about a hold, so the next client granted stops there. The holder of
	// a grant the nemesis saw is past them already.
	GrantSteps []string
	// Hold is how long a holder keeps the lock, absolute spans (zero: half a
	// TTL): lock-aware scenes time their heals by it.
	Hold spans.Range
	// Quorum: the lock takes its lease on a majority of independent
	// masters (Redlock, redsync), so a partition of N/2 nodes leaves the
	// next lease on a bare majority, which one more fault can undo; in a
	// groups topology, on a majority of the groups' primaries, so a
	// failover loses a lease only in a majority of the groups.
	Quorum bool
	// Prefer, when set, weighs scenes (a guided hunt: toward the windows
	// it reached least so far): each scene is then chosen among
	// PreferCandidates drawn one after another, with a chance in
	// proportion to the square of its weight (a scene that does not fit
	// weighs nothing). The same seed, options and weights give the same
	// plan.
	Prefer func(scene []Step) float64
	// Persistence, when the run fixes the nodes' persistence, is that
	// mode: kills and restarts then keep each node's mode rather than
	// draw one. Empty: they draw none, aof-everysec or aof-always (or keep
	// the node's).
	Persistence cluster.Persistence
}

// aim is what a scene asks of a kind's draw.
type aim int

const (
	// aimAny: targets drawn at random from the setup.
	aimAny aim = iota
	// aimLease: the holder of the next grant, or a node its lease rests
	// on; the scene triggers the step on that grant.
	aimLease
	// aimCut: prepare a bare majority — cut N/2 nodes from the clients, so
	// the next lease rests on exactly a majority (partition only).
	aimCut
)

// placer is a kind whose drawn steps change what the generator must know
// once placed (a promotion moves the primary).
type placer interface{ placed(g *gen, st Step) }

// Generate makes a plan from seed: scenes drawn from mix (kinds may repeat
// to weigh them) and placed one after another in time, overlapping up to
// Concurrency faults, every fault healed before the time limit. A scene is
// one fault — aimed at the lock (the holder of the next grant, a node its
// lease rests on) or at targets drawn at random — or, for a lock on a
// majority of independent masters with partition in the mix, a compound
// one: N/2 nodes cut from the clients so the next lease rests on a bare
// majority, then, on that grant, a fault of another kind in the mix on a
// node of that lease (restart, kill, a clock jump, a pause), the cut
// lasting about a hold so it mostly heals while that holder still holds.
// Aimed at the lock, each kind draws the shape the lock's failures need
// (see each kind's draw): every client armed at a step on the way to a
// grant; with Sentinels, the primary and the holder split from the rest,
// and promotions by hand of one replica; in groups, promotions of a
// majority of the groups. Half the plans leave a quiet end (Quiet).
// Magnitudes are written relative to the TTL ("0.5ttl"). The same seed,
// mix and options give the same plan; an empty mix gives a plan without
// faults.
func Generate(seed int64, mix []Kind, o GenOptions) (Plan, error) {
	if err := o.check(mix); err != nil {
		return Plan{}, fmt.Errorf("generate: %w", err)
	}
	if o.Interval == 0 {
		o.Interval = o.TTL
	}
	if o.Hold[0].IsZero() && o.Hold[1].IsZero() {
		o.Hold = spans.Range{Fixed(o.TTL / 2), Fixed(o.TTL / 2)}
	}
	g := &gen{o: o, rng: rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973)), primaries: map[string]string{}}
	for _, grp := range o.Topology.PromoteGroups() {
		g.primaries[grp[0]] = grp[0]
	}
	p := Plan{Seed: seed, TTL: Fixed(o.TTL), Steps: []Step{}}
	if len(mix) == 0 {
		return p, nil
	}
	g.end = o.TimeLimit
	if o.Quiet > 0 && (g.rng.IntN(2) == 0 || o.QuietAlways) {
		g.end -= o.Quiet
	}
	t := o.Interval / 2
	for misses := 0; t < g.end && misses < 8; {
		sc := g.scene(mix)
		from := t
		if len(p.Steps) == 0 && len(sc) > 0 && sc[0].Trigger != "" {
			// A first scene that waits for a grant needs no lead-in: the
			// wait is one. And a failover's replication cut then comes
			// before the first grant: the replica never saw what the
			// lock's first user set up (a semaphore's permits).
			from = 0
		}
		at, cs, ok := g.place(sc, from)
		if !ok {
			misses++
			continue
		}
		misses = 0
		for k := range sc {
			sc[k].At = Fixed(at + sc[k].At.Resolve(o.TTL))
			if pl, ok := cs[k].kind.(placer); ok {
				pl.placed(g, sc[k])
			}
		}
		p.Steps = append(p.Steps, sc...)
		g.placed = append(g.placed, cs...)
		t = at + time.Duration(float64(o.Interval)*(0.5+g.rng.Float64())).Round(time.Millisecond)
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
	if o.Quiet < 0 || o.TimeLimit > 0 && o.Quiet >= o.TimeLimit {
		errs = append(errs, fmt.Errorf("quiet end %v must not be negative and must be shorter than the time limit %v", o.Quiet, o.TimeLimit))
	}
	if o.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval must not be negative, got %v", o.Interval))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d: at least one fault must be able to run at a time", o.Concurrency))
	}
	if lo, hi := o.Hold.Durations(); o.Hold.Relative() || lo < 0 || hi < lo {
		errs = append(errs, fmt.Errorf("hold %v is not a range of absolute durations", o.Hold))
	}
	if o.Persistence != "" {
		if err := o.Persistence.Validate(); err != nil {
			errs = append(errs, err)
		}
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
		if err := k.Available(o.Setup); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		if k.ArmsStep() && len(o.LockSteps) == 0 {
			errs = append(errs, fmt.Errorf("%s: needs GenOptions.LockSteps, the lock steps clients report", k))
		}
	}
	return errors.Join(errs...)
}

type gen struct {
	o   GenOptions
	rng *rand.Rand
	// primaries: the primary of each group (groups) or of the topology
	// (replicated, key ""), as the plan's failovers so far leave it;
	// absent once Sentinel moved it.
	primaries map[string]string
	placed    []*compiled   // the plan so far
	end       time.Duration // every fault heals by then: the time limit, less a quiet end
}

// drawScene draws one scene.
func (g *gen) drawScene(mix []Kind) []Step {
	k := mix[g.rng.IntN(len(mix))]
	fk, _ := lookup(k)
	if cut, ok := g.bareMajorityScene(mix, fk); ok {
		return cut
	}
	a := aimAny
	if g.o.Key != "" && g.rng.IntN(10) < 8 {
		a = aimLease
	}
	st, ok := fk.draw(g, a)
	if !ok && a == aimLease {
		a = aimAny
		st, ok = fk.draw(g, a)
	}
	if !ok {
		return nil
	}
	// A step aimed at named clients (every client armed for the next
	// grant) starts at once; the others wait for the grant they aim at.
	if a == aimLease && len(st.Clients) == 0 {
		g.onGrant(&st)
	}
	return []Step{st}
}

// bareMajorityScene is the compound scene of a lock on a majority: N/2
// nodes cut from the clients, then, on the next grant, fk (or, when fk is
// the partition, another kind of the mix) on a node of the lease, which
// rests on exactly a majority; the cut heals while that holder holds, so
// another client can take the freed nodes and the ones the cut kept from
// the lease.
func (g *gen) bareMajorityScene(mix []Kind, fk faultKind) ([]Step, bool) {
	if g.o.Concurrency < 2 || g.o.Key == "" || !g.bareMajority() || !slices.Contains(mix, Partition) || g.rng.IntN(10) >= 7 {
		return nil, false
	}
	follows := func(k faultKind) bool { return k.sharing().forgets }
	if !follows(fk) {
		var cands []faultKind
		for _, k := range mix {
			if fk, _ := lookup(k); fk != nil && follows(fk) {
				cands = append(cands, fk)
			}
		}
		if len(cands) == 0 {
			return nil, false
		}
		fk = cands[g.rng.IntN(len(cands))]
	}
	cut, _ := partition{}.draw(g, aimCut)
	hit, _ := fk.draw(g, aimLease)
	// Late enough that a grant whose acquire began before the cut does
	// not count: that lease rests on every node.
	hit.At = Fixed(max(50*time.Millisecond, g.o.TTL/20).Round(time.Millisecond))
	g.onGrant(&hit)
	return []Step{cut, hit}, true
}

// onGrant makes st wait for the next grant of the key, for as long as a
// holder may keep the lock and a little more.
func (g *gen) onGrant(st *Step) {
	st.Trigger, st.Key = TriggerGrant, g.o.Key
	st.Timeout = g.nextGrant()
}

// nextGrant is how long the next grant of the key may take to come: as
// long as a holder may keep the lock, and a little more.
func (g *gen) nextGrant() Span {
	return TTLs(round2(float64(g.o.Hold.Max().Resolve(0))/float64(g.o.TTL) + 0.25))
}

// allClients are the run's clients, 0..Clients-1.
func (g *gen) allClients() []int {
	out := make([]int, g.o.Clients)
	for i := range out {
		out[i] = i
	}
	return out
}

// place finds the earliest start at or after from where the scene fits:
// no collision the overlap rules forbid and at most Concurrency faults at
// once, with each fault's window stretched by its allowance (a start, a
// failover), and everything healed before the time limit. It returns the
// start and the scene's steps compiled there.
func (g *gen) place(sc []Step, from time.Duration) (time.Duration, []*compiled, bool) {
	if len(sc) == 0 {
		return 0, nil, false
	}
	starts := []time.Duration{from}
	for _, c := range g.placed {
		if _, to := g.window(c); to > from {
			starts = append(starts, to)
		}
	}
	slices.Sort(starts)
	n := len(g.placed)
	for _, s := range slices.Compact(starts) {
		trial := slices.Clone(g.placed)
		for k, st := range sc {
			st.At = Fixed(s + st.At.Resolve(g.o.TTL))
			c, err := compileStep(n+k, st, g.o.TTL, g.o.Setup)
			if err != nil {
				return 0, nil, false // the scene itself is invalid: a bug Generate's last check reports
			}
			if _, to := g.window(c); to > g.end {
				return 0, nil, false // later starts end later still
			}
			trial = append(trial, c)
		}
		if len(conflicts(trial, n, g.o.Setup, g.window)) == 0 && maxActive(trial, g.window) <= g.o.Concurrency && !g.splitsOverlap(trial, n) {
			return s, trial[n:], true
		}
	}
	return 0, nil, false
}

// splitsOverlap reports whether a split of the steps from index from on
// overlaps another: a plan may do that, but a second split over a first
// cuts the side the first kept whole, and neither is the split drawn.
func (g *gen) splitsOverlap(cs []*compiled, from int) bool {
	for i := from; i < len(cs); i++ {
		if cs[i].Shape != ShapeSplit {
			continue
		}
		af, at := g.window(cs[i])
		for j, b := range cs {
			if j == i || b.Shape != ShapeSplit {
				continue
			}
			if bf, bt := g.window(b); af < bt && bf < at {
				return true
			}
		}
	}
	return false
}

// window is how long the generator reckons a step may be active: its
// planned window and its allowance.
func (g *gen) window(c *compiled) (from, to time.Duration) {
	from, to = c.window()
	if a, ok := c.kind.(allowancer); ok {
		return from, to + a.allowanceOf(c)
	}
	return from, to + c.kind.sharing().allowance
}

// allowancer is a kind whose allowance depends on the step (a failover's
// on how it moves the primary).
type allowancer interface {
	allowanceOf(c *compiled) time.Duration
}

// maxActive is the most steps whose windows overlap at one instant.
func maxActive(cs []*compiled, window func(*compiled) (time.Duration, time.Duration)) int {
	type edge struct {
		at time.Duration
		d  int
	}
	var edges []edge
	for _, c := range cs {
		from, to := window(c)
		edges = append(edges, edge{from, +1}, edge{to, -1})
	}
	// Ends first at a tie: a fault healed as another starts does not
	// overlap it.
	slices.SortFunc(edges, func(a, b edge) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.d - b.d
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.d
		most = max(most, n)
	}
	return most
}

// Draw helpers for the kinds.

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// between draws a multiple of the TTL in [lo, hi], to two decimals.
func (g *gen) between(lo, hi float64) float64 { return round2(lo + g.rng.Float64()*(hi-lo)) }

func (g *gen) mag() Span { return TTLs(Magnitudes[g.rng.IntN(len(Magnitudes))]) }

func (g *gen) signedMag() Span {
	x := Magnitudes[g.rng.IntN(len(Magnitudes))]
	if g.rng.IntN(2) == 0 {
		x = -x
	}
	return TTLs(x)
}

func (g *gen) oneOf(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

// holdTTLs is the shortest hold in TTLs.
func (g *gen) holdTTLs() float64 { return float64(g.o.Hold.Min().Resolve(0)) / float64(g.o.TTL) }

// brief is a span well inside the shortest hold: a node down this long is
// back while its holder still holds.
func (g *gen) brief() Span { return TTLs(max(0.02, round2(g.holdTTLs()*(0.05+0.25*g.rng.Float64())))) }

// cutFor is how long a bare-majority cut lasts: between the shortest and
// the longest hold. The grant it waits for comes within a hold of the cut
// (when the holder of the moment releases), so the cut mostly heals after
// that grant and before its holder releases in turn.
func (g *gen) cutFor() Span {
	lo, hi := g.holdTTLs(), float64(g.o.Hold.Max().Resolve(0))/float64(g.o.TTL)
	return TTLs(max(0.05, g.between(lo, hi)))
}

// bareMajority reports whether a cut of N/2 nodes leaves a lease on a bare
// majority: a lock on a majority of at least 3 independent masters.
func (g *gen) bareMajority() bool {
	return g.o.Quorum && g.o.Topology.Traits().IndependentNodes && len(g.o.Topology.Nodes()) >= 3 && g.o.Clients > 0
}

// leaseNode is the selector of the node a lease-aimed node fault hits.
func (g *gen) leaseNode() string {
	if g.o.Topology.Traits().OnePrimary {
		return NodePrimary
	}
	return NodeLease
}

// nodes draws k distinct nodes, in topology order.
func (g *gen) nodes(k int) []string { return g.pick(g.o.Topology.Nodes(), k) }

// pick draws k distinct elements of xs, in their order.
func (g *gen) pick(xs []string, k int) []string {
	idx := g.rng.Perm(len(xs))[:k]
	slices.Sort(idx)
	out := make([]string, k)
	for j, i := range idx {
		out[j] = xs[i]
	}
	return out
}

// someNodes draws the nodes of a node fault aimed at random: one, or for a
// lock on a majority up to a majority (a whole one a third of the time).
func (g *gen) someNodes() []string {
	if !g.o.Quorum || !g.o.Topology.Traits().IndependentNodes {
		return g.nodes(1)
	}
	m := len(g.o.Topology.Nodes())/2 + 1
	if g.rng.IntN(3) == 0 {
		return g.nodes(m)
	}
	return g.nodes(1 + g.rng.IntN(m))
}

// persistence is the persistence of a kill's or restart's start: kept when
// the run fixes it, otherwise drawn from keep, none, aof-everysec and
// aof-always, as far as the provider can start a node so. Aimed at a
// lease, half the draws are none: a start in an AOF mode makes the node
// keep that mode, and keep what it holds, from then on.
func (g *gen) persistence(a aim) cluster.Persistence {
	if g.o.Persistence != "" {
		return ""
	}
	wipe := g.o.provides(cluster.CanWipe) == nil
	if wipe && a == aimLease && g.rng.IntN(2) == 0 {
		return cluster.PersistNone
	}
	modes := []string{""}
	if wipe {
		modes = append(modes, string(cluster.PersistNone))
	}
	if g.o.provides(cluster.CanPersist) == nil {
		modes = append(modes, string(cluster.AOFEverySec), string(cluster.AOFAlways))
	}
	return cluster.Persistence(g.oneOf(modes...))
}

// shapes are the link shapes a setup offers the generator.
func (g *gen) shapes(k Kind) []string {
	n := len(g.o.Topology.Nodes())
	tr := g.o.Topology.Traits()
	var out []string
	if g.o.Clients > 0 {
		out = append(out, "one", "client")
		if k == Partition && n >= 3 && tr.IndependentNodes {
			out = append(out, "minority", "majority")
			if g.o.Clients >= 2 {
				out = append(out, "bridge")
			}
		}
	}
	if tr.ReplicaLinks {
		out = append(out, "replication")
	}
	if tr.NodeLinks && k == Partition {
		out = append(out, "isolate")
	}
	return out
}

// shape sets st's targets for a shape of shapes.
func (g *gen) shape(st *Step, name string) {
	n := len(g.o.Topology.Nodes())
	switch name {
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
}

// cut draws a cut's mode, and a quarter of the time one direction.
func (g *gen) cut(st *Step) {
	if st.Mode == "" {
		st.Mode = cluster.CutMode(g.oneOf(string(cluster.Reset), string(cluster.Blackhole)))
	}
	if g.rng.IntN(4) == 0 {
		st.Direction = cluster.Direction(g.oneOf(string(cluster.Upstream), string(cluster.Downstream)))
	}
}
