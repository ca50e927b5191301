package nemesis

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/internal/racebuild"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

var genTopologies = []string{"independent:1", "independent:3", "independent:5", "replicated:1", "replicated:2", "replicated:2+sentinels", "groups:3"}

func genOptions(t *testing.T, topo, key string, k int) GenOptions {
	tp, err := cluster.ParseTopology(topo)
	if err != nil {
		t.Fatal(err)
	}
	return GenOptions{
		Setup:       Setup{Topology: tp, Clients: 4, NodeClock: true, ClientMode: workloads.Processes},
		TTL:         500 * time.Millisecond,
		TimeLimit:   30 * time.Second,
		Concurrency: k,
		Key:         key,
		LockSteps:   []string{"workload:after-acquire", "redlock:after-send", "workload:before-release"},
		GrantSteps:  []string{"workload:after-acquire", "redlock:after-send"},
		Hold:        spans.Range{Fixed(400 * time.Millisecond), Fixed(450 * time.Millisecond)},
		Quorum:      tp.Kind == cluster.Independent && tp.N >= 3 || tp.Kind == cluster.Groups,
	}
}

func mixFor(s Setup) []Kind {
	var mix []Kind
	for _, k := range Kinds {
		if k.Available(s) == nil {
			mix = append(mix, k)
		}
	}
	return mix
}

// genCase is one setup and mix the properties are checked on, with so
// many seeds.
type genCase struct {
	name  string
	o     GenOptions
	mix   []Kind
	seeds int64
}

func genCases(t *testing.T) []genCase {
	var out []genCase
	for _, topo := range genTopologies {
		for _, key := range []string{"", "tumbler:0"} {
			for _, k := range []int{1, 2, 3} {
				o := genOptions(t, topo, key, k)
				all := mixFor(o.Setup)
				name := fmt.Sprintf("%s key=%q K=%d", topo, key, k)
				out = append(out, genCase{name + " all", o, all, 8})
				if k == 3 {
					continue // the mixes below with K = 1 and 2
				}
				for _, kind := range all {
					out = append(out, genCase{name + " " + string(kind), o, []Kind{kind}, 3})
				}
				if slices.Contains(all, Partition) {
					for _, f := range []Kind{Restart, Kill, Clock, Pause} {
						out = append(out, genCase{name + " partition," + string(f), o, []Kind{Partition, f}, 4})
					}
				}
			}
		}
	}
	return out
}

// TestGenerateProperties: for every topology and mix, generated plans are
// valid, the same for the same seed, survive a JSON round trip, never
// have more than K faults active at once, and heal every fault (with the
// time a start or a failover may take) before the time limit. Under -race
// it checks a quarter of the seeds (internal/racebuild).
func TestGenerateProperties(t *testing.T) {
	t.Parallel()
	kinds := map[Kind]int{}
	var leaseSteps, bareMajority, overlapping, holderSteps int
	for _, tc := range genCases(t) {
		o := tc.o
		for seed := range racebuild.Sample(tc.seeds, 4) {
			p, err := Generate(seed, tc.mix, o)
			if err != nil {
				t.Fatalf("%s seed %d: %v", tc.name, seed, err)
			}
			again, _ := Generate(seed, tc.mix, o)
			a, _ := json.Marshal(p)
			b, _ := json.Marshal(again)
			if string(a) != string(b) {
				t.Fatalf("%s seed %d: two plans from one seed:\n%s\n%s", tc.name, seed, a, b)
			}
			if err := p.Validate(o.Setup); err != nil {
				t.Fatalf("%s seed %d: generated plan invalid: %v\n%s", tc.name, seed, err, a)
			}
			back, err := ParsePlan(a)
			if err != nil {
				t.Fatal(err)
			}
			if c, _ := json.Marshal(back); string(c) != string(a) {
				t.Fatalf("JSON round trip changed the plan:\n%s\n%s", a, c)
			}
			pc, _ := p.compile(o.Setup)
			bc, _ := back.compile(o.Setup)
			for i := range pc {
				x, y := *pc[i], *bc[i]
				x.Step, y.Step = Step{}, Step{}
				if !reflect.DeepEqual(x, y) {
					t.Fatalf("step %d of the round-tripped plan resolves differently:\n%+v\n%+v", i+1, x, y)
				}
			}
			if len(p.Steps) == 0 {
				t.Fatalf("%s seed %d: no steps in 30 s", tc.name, seed)
			}
			g := &gen{o: o}
			if n := maxActive(pc, (*compiled).window); n > o.Concurrency {
				t.Errorf("%s seed %d: %d faults active at once, K = %d\n%s", tc.name, seed, n, o.Concurrency, a)
			}
			if n := maxActive(pc, g.window); n > o.Concurrency {
				t.Errorf("%s seed %d: %d faults active at once counting starts and failovers, K = %d\n%s", tc.name, seed, n, o.Concurrency, a)
			}
			if maxActive(pc, (*compiled).window) > 1 {
				overlapping++
			}
			for i, c := range pc {
				if !slices.Contains(tc.mix, c.Fault) {
					t.Errorf("%s seed %d: step %d is a %s, not in the mix", tc.name, seed, i+1, c.Fault)
				}
				kinds[c.Fault]++
				if _, to := g.window(c); to > o.TimeLimit {
					t.Errorf("%s seed %d: step %d may last until %v, past the time limit", tc.name, seed, i+1, to)
				}
				for _, sp := range []Span{c.For, c.Latency, c.Offset, c.Pause, c.Delay, c.Lag} {
					if !sp.IsZero() && !sp.Relative() {
						t.Errorf("magnitude %s is not relative to the TTL", sp)
					}
				}
				if (c.Node != "" || c.holder()) && c.Trigger != TriggerGrant {
					t.Errorf("%s seed %d: step %d aims at the lock without waiting for a grant", tc.name, seed, i+1)
				}
				if c.Node == NodeLease {
					leaseSteps++
				}
				if c.holder() {
					holderSteps++
				}
				// A bare-majority scene: N/2 nodes cut, then a step on the
				// lease, triggered by a grant, while the cut lasts.
				if c.Fault == Partition && len(o.Topology.Nodes()) >= 3 && len(c.Nodes) == len(o.Topology.Nodes())/2 && i+1 < len(pc) && pc[i+1].Node == NodeLease && pc[i+1].at > c.at && pc[i+1].at < c.at+c.dur {
					bareMajority++
					if o.Key == "" || !o.Quorum {
						t.Errorf("%s seed %d: a bare-majority scene without a key or a quorum lock", tc.name, seed)
					}
				}
			}
			if o.Concurrency == 1 {
				for i := 1; i < len(pc); i++ {
					if _, to := g.window(pc[i-1]); pc[i].at < to {
						t.Errorf("%s seed %d: with K = 1 step %d starts at %v, before step %d may end at %v", tc.name, seed, i+1, pc[i].at, i, to)
					}
				}
			}
		}
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("no %s fault generated across all setups and seeds", k)
		}
	}
	t.Logf("kinds %v; %d lease steps, %d holder steps, %d bare-majority scenes, %d plans with overlapping faults", kinds, leaseSteps, holderSteps, bareMajority, overlapping)
	if leaseSteps == 0 || holderSteps == 0 || bareMajority == 0 || overlapping == 0 {
		t.Error("the generator drew no lease steps, holder steps, bare-majority scenes or overlaps")
	}
	o := genOptions(t, "independent:5", "tumbler:0", 2)
	p1, _ := Generate(1, mixFor(o.Setup), o)
	p2, _ := Generate(2, mixFor(o.Setup), o)
	if reflect.DeepEqual(p1.Steps, p2.Steps) {
		t.Error("seeds 1 and 2 gave the same plan")
	}
	if p1.Seed != 1 || p1.TTL.Resolve(0) != o.TTL {
		t.Errorf("plan seed %d ttl %v", p1.Seed, p1.TTL)
	}
}

// TestGenerateLockAwareShapes: what the lock-aware draws look like in
// numbers: clock jumps mostly forward and past the TTL, on one node or
// several; a fixed persistence is never overridden; failovers aimed at a
// grant mostly cut replication first, with little lag.
func TestGenerateLockAwareShapes(t *testing.T) {
	t.Parallel()
	o := genOptions(t, "independent:5", "tumbler:0", 2)
	var clocks, forwardPast, backward, several int
	for seed := int64(0); seed < 200; seed++ {
		p, err := Generate(seed, []Kind{Clock}, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range p.Steps {
			clocks++
			switch off := st.Offset.Resolve(o.TTL); {
			case off > o.TTL:
				forwardPast++
			case off < 0:
				backward++
			}
			if len(st.Nodes) > 1 {
				several++
			}
		}
	}
	t.Logf("%d clock steps: %d forward past the TTL, %d backward, %d on several nodes", clocks, forwardPast, backward, several)
	if forwardPast*2 < clocks || backward == 0 || several == 0 {
		t.Errorf("clock jumps: %d of %d forward past the TTL (want at least half), %d backward, %d on several nodes", forwardPast, clocks, backward, several)
	}

	o.Persistence = cluster.AOFAlways
	for seed := int64(0); seed < 100; seed++ {
		p, _ := Generate(seed, []Kind{Partition, Restart, Kill}, o)
		for _, st := range p.Steps {
			if st.Persistence != "" {
				t.Fatalf("seed %d: the run fixed aof-always, the plan sets %q on a %s", seed, st.Persistence, st.Fault)
			}
		}
	}
	o.Persistence = ""
	modes := map[cluster.Persistence]int{}
	for seed := int64(0); seed < 100; seed++ {
		p, _ := Generate(seed, []Kind{Restart}, o)
		for _, st := range p.Steps {
			modes[st.Persistence]++
		}
	}
	if len(modes) != 4 {
		t.Errorf("restart persistence modes drawn: %v, want all of keep, none, aof-everysec, aof-always", modes)
	}

	o = genOptions(t, "replicated:1+sentinels", "tumbler:0", 2)
	o.TTL, o.Hold, o.TimeLimit = 6*time.Second, spans.Range{Fixed(4200 * time.Millisecond), Fixed(5400 * time.Millisecond)}, 20*time.Second
	var aimed, cut, fits int
	for seed := int64(0); seed < 50; seed++ {
		p, err := Generate(seed, []Kind{Failover}, o)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(p.Steps) > 0 {
			fits++
		}
		for _, st := range p.Steps {
			if st.Trigger == TriggerGrant {
				aimed++
				if st.CutReplication && st.Lag.Resolve(o.TTL) <= o.TTL/10 {
					cut++
				}
			}
		}
	}
	if fits < 50 || aimed == 0 || cut*2 < aimed {
		t.Errorf("failover in 20 s with a 6 s TTL: %d of 50 plans have one; %d aimed at a grant, %d of them with replication cut and lag ≤ 0.1 TTL", fits, aimed, cut)
	}
}

// TestGenerateLockAwareScenes: the shapes a lock's failure modes need.
// An arming of a step on the way to a grant takes every client at once,
// without waiting for a grant (its holder is past the step), one of a later
// step the holder of the next grant; with Sentinels, partitions aimed at
// the lock split the primary and the holder from the rest (never two
// splits at once) and failovers promote one replica by hand, its
// replication alone cut; in groups, a failover aimed at the lock promotes
// a majority of the groups; and a quiet end leaves half the plans without
// faults at the end; a first scene that waits for a grant needs no lead-in.
func TestGenerateLockAwareScenes(t *testing.T) {
	o := genOptions(t, "independent:3", "tumbler:0", 2)
	var allArmed, holderArmed int
	for seed := int64(0); seed < 50; seed++ {
		p, err := Generate(seed, []Kind{StepPause, StepCrash}, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range p.Steps {
			switch {
			case st.Client == Holder:
				holderArmed++
				if slices.Contains(o.GrantSteps, st.LockStep) {
					t.Errorf("seed %d: the holder of a grant armed at %q, a step it is past", seed, st.LockStep)
				}
			case len(st.Clients) == o.Clients:
				allArmed++
				if st.Trigger != "" || !slices.Contains(o.GrantSteps, st.LockStep) {
					t.Errorf("seed %d: every client armed at %q, trigger %q", seed, st.LockStep, st.Trigger)
				}
			}
		}
	}
	if allArmed == 0 || holderArmed == 0 {
		t.Errorf("%d armings of every client, %d of the holder: want both", allArmed, holderArmed)
	}

	o = genOptions(t, "replicated:2+sentinels", "tumbler:0", 2)
	var splits, promotes int
	for seed := int64(0); seed < 50; seed++ {
		p, err := Generate(seed, []Kind{Partition, Failover}, o)
		if err != nil {
			t.Fatal(err)
		}
		pc, _ := p.compile(o.Setup)
		g := &gen{o: o}
		for i, c := range pc {
			if c.Shape == ShapeSplit {
				splits++
				if c.Node != NodePrimary || c.Client != Holder || c.Trigger != TriggerGrant || c.dur < failoverAllowance {
					t.Errorf("seed %d: split %+v", seed, c.Step)
				}
				if g.splitsOverlap(pc[:i+1], i) {
					t.Errorf("seed %d: step %d is a split over another", seed, i+1)
				}
			}
			if c.Via == ViaPromote && c.Trigger == TriggerGrant && c.CutReplication {
				promotes++
				if len(c.Nodes) != 1 {
					t.Errorf("seed %d: promote %v", seed, c.Nodes)
				}
			}
		}
	}
	if splits == 0 || promotes == 0 {
		t.Errorf("with Sentinels: %d splits, %d promotions by hand with replication cut on a grant", splits, promotes)
	}

	o = genOptions(t, "groups:5", "tumbler:0", 2)
	var majorities int
	for seed := int64(0); seed < 30; seed++ {
		p, err := Generate(seed, []Kind{Failover}, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range p.Steps {
			if st.Trigger == TriggerGrant {
				if len(st.Nodes) < 3 {
					t.Errorf("seed %d: a failover aimed at a lock on a majority of 5 groups promotes %v", seed, st.Nodes)
				}
				majorities++
			}
		}
	}
	if majorities == 0 {
		t.Error("groups: no failover aimed at the lock")
	}

	// A first scene waiting for a grant starts at once; any other after
	// the lead-in of half an interval.
	o = genOptions(t, "replicated:1", "tumbler:0", 2)
	var atOnce, leadIn int
	for seed := int64(0); seed < 40; seed++ {
		p, err := Generate(seed, []Kind{Failover, Partition}, o)
		if err != nil {
			t.Fatal(err)
		}
		first := p.Steps[0]
		switch at := first.At.Resolve(o.TTL); {
		case first.Trigger != "" && at == 0:
			atOnce++
		case first.Trigger == "" && at >= o.TTL/2:
			leadIn++
		default:
			t.Errorf("seed %d: the first step, trigger %q, starts at %v", seed, first.Trigger, at)
		}
	}
	if atOnce == 0 || leadIn == 0 {
		t.Errorf("first scenes: %d waiting for a grant from 0, %d after the lead-in", atOnce, leadIn)
	}

	o = genOptions(t, "independent:3", "tumbler:0", 2)
	o.Quiet = 5 * time.Second
	var quiet, busy int
	for seed := int64(0); seed < 40; seed++ {
		p, err := Generate(seed, []Kind{Partition, Kill}, o)
		if err != nil {
			t.Fatal(err)
		}
		pc, _ := p.compile(o.Setup)
		end := time.Duration(0)
		g := &gen{o: o}
		for _, c := range pc {
			_, to := g.window(c)
			end = max(end, to)
		}
		if end <= o.TimeLimit-o.Quiet {
			quiet++
		} else {
			busy++
		}
	}
	if quiet == 0 || busy == 0 {
		t.Errorf("quiet end %v: %d plans end their faults before it, %d after; want both", o.Quiet, quiet, busy)
	}

	// QuietAlways: every plan ends its faults before the quiet end.
	o.QuietAlways = true
	for seed := int64(0); seed < 40; seed++ {
		p, err := Generate(seed, []Kind{Partition, Kill}, o)
		if err != nil {
			t.Fatal(err)
		}
		pc, _ := p.compile(o.Setup)
		g := &gen{o: o}
		for _, c := range pc {
			if _, to := g.window(c); to > o.TimeLimit-o.Quiet {
				t.Fatalf("seed %d: QuietAlways, but a fault runs until %v, after the quiet end starts at %v", seed, to, o.TimeLimit-o.Quiet)
			}
		}
	}
}

func TestGenerateRefusesWhatTheSetupCannotTake(t *testing.T) {
	o := genOptions(t, "independent:5", "tumbler:0", 2)
	for _, tc := range []struct {
		mix  []Kind
		o    func(*GenOptions)
		want string
	}{
		{[]Kind{Failover}, nil, "failover: topology independent:5 has no replicas"},
		{[]Kind{"meteor"}, nil, `unknown fault "meteor"`},
		{[]Kind{Clock}, func(o *GenOptions) { o.NodeClock = false }, "clock: the data nodes run without the clock shim"},
		{[]Kind{StepCrash}, func(o *GenOptions) { o.LockSteps = nil }, "needs GenOptions.LockSteps"},
		{[]Kind{ClientPause}, func(o *GenOptions) { o.ClientMode = workloads.InProcess }, "process mode"},
		{[]Kind{Partition, Pause}, func(o *GenOptions) { o.Provider, o.Controls = "external", cluster.CanKill },
			"pause: needs a provider that can pause/resume nodes; the external provider can kill/start"},
		{[]Kind{Clock}, func(o *GenOptions) { o.Provider, o.Controls = "docker", cluster.AllControls&^cluster.CanClock },
			"clock: needs a provider that can clock nodes; the docker provider can kill/start, wipe, pause/resume"},
		{[]Kind{Partition}, func(o *GenOptions) { o.Concurrency = 0 }, "concurrency 0: at least one fault"},
		{[]Kind{Partition}, func(o *GenOptions) { o.Concurrency = -2 }, "concurrency -2"},
		{[]Kind{Partition}, func(o *GenOptions) { o.TTL = 0 }, "TTL must be positive"},
		{[]Kind{Partition}, func(o *GenOptions) { o.TimeLimit = -time.Second }, "time limit must be positive"},
		{[]Kind{Partition}, func(o *GenOptions) { o.Hold = spans.Range{Fixed(time.Second), Fixed(0)} }, "hold"},
		{[]Kind{Partition}, func(o *GenOptions) { o.Clients = 0 }, "partition: topology independent:5 without clients has no links"},
		{[]Kind{Partition}, func(o *GenOptions) { o.Quiet = o.TimeLimit }, "quiet end"},
	} {
		oo := o
		if tc.o != nil {
			tc.o(&oo)
		}
		if _, err := Generate(1, tc.mix, oo); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.mix, err, tc.want)
		}
	}
	p, err := Generate(1, nil, o)
	if err != nil || len(p.Steps) != 0 {
		t.Errorf("no kinds: %v, %d steps", err, len(p.Steps))
	}
}
