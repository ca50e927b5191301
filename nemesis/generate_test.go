package nemesis

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
)

func genSetups(t *testing.T) []GenOptions {
	var out []GenOptions
	for _, topo := range []string{"independent:1", "independent:3", "independent:5", "replicated:1", "replicated:2", "replicated:2+sentinels"} {
		tp, err := cluster.ParseTopology(topo)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"", "tumbler:0"} {
			out = append(out, GenOptions{
				Setup:     Setup{Topology: tp, Clients: 4, NodeClock: true, ClientMode: ProcessClients},
				TTL:       500 * time.Millisecond,
				TimeLimit: 30 * time.Second,
				Key:       key,
				LockSteps: []string{"workload:after-acquire", "redlock:after-send"},
			})
		}
	}
	return out
}

func mixFor(s Setup) []Kind {
	var mix []Kind
	for _, k := range Kinds {
		if supports(k, s) == nil {
			mix = append(mix, k)
		}
	}
	return mix
}

func TestGenerateDeterministicValidRoundTrips(t *testing.T) {
	kinds := map[Kind]int{}
	for _, o := range genSetups(t) {
		mix := mixFor(o.Setup)
		for seed := int64(0); seed < 40; seed++ {
			p, err := Generate(seed, mix, o)
			if err != nil {
				t.Fatalf("%s seed %d: %v", o.Topology, seed, err)
			}
			again, _ := Generate(seed, mix, o)
			a, _ := json.Marshal(p)
			b, _ := json.Marshal(again)
			if string(a) != string(b) {
				t.Fatalf("%s seed %d: two plans from one seed:\n%s\n%s", o.Topology, seed, a, b)
			}
			if err := p.Validate(o.Setup); err != nil {
				t.Fatalf("%s seed %d: generated plan invalid: %v\n%s", o.Topology, seed, err, a)
			}
			back, err := ParsePlan(a)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := json.Marshal(back)
			if string(c) != string(a) {
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
				t.Fatalf("%s seed %d: no steps in 30 s", o.Topology, seed)
			}
			// One fault at a time, each healed (with its allowance) before
			// the time limit, after a quiet interval.
			prevEnd := time.Duration(0)
			for i, c := range pc {
				kinds[c.Fault]++
				from, to := c.window()
				if from < prevEnd+o.TTL*3 {
					t.Errorf("%s seed %d: step %d starts at %v, %v after the previous fault", o.Topology, seed, i+1, from, from-prevEnd)
				}
				if to > o.TimeLimit {
					t.Errorf("%s seed %d: step %d ends at %v, past the time limit", o.Topology, seed, i+1, to)
				}
				for _, sp := range []Span{c.For, c.Latency, c.Offset, c.Pause, c.Delay, c.Lag} {
					if !sp.IsZero() && !sp.Relative() {
						t.Errorf("magnitude %s is not relative to the TTL", sp)
					}
				}
				prevEnd = to
			}
		}
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("no %s fault generated across all setups and seeds", k)
		}
	}
	o := genSetups(t)[4]
	p1, _ := Generate(1, mixFor(o.Setup), o)
	p2, _ := Generate(2, mixFor(o.Setup), o)
	if reflect.DeepEqual(p1.Steps, p2.Steps) {
		t.Error("seeds 1 and 2 gave the same plan")
	}
	if p1.Seed != 1 || p1.TTL.Resolve(0) != o.TTL {
		t.Errorf("plan seed %d ttl %v", p1.Seed, p1.TTL)
	}
}

func TestGenerateRefusesWhatTheSetupCannotTake(t *testing.T) {
	o := genSetups(t)[4] // independent:5
	for _, tc := range []struct {
		mix  []Kind
		o    func(*GenOptions)
		want string
	}{
		{[]Kind{Failover}, nil, "failover: topology independent:5 has no replicas"},
		{[]Kind{"meteor"}, nil, `unknown fault "meteor"`},
		{[]Kind{Clock}, func(o *GenOptions) { o.NodeClock = false }, "without the clock shim"},
		{[]Kind{StepCrash}, func(o *GenOptions) { o.LockSteps = nil }, "needs GenOptions.LockSteps"},
		{[]Kind{ClientPause}, func(o *GenOptions) { o.ClientMode = InProcessClients }, "process mode"},
		{[]Kind{Partition}, func(o *GenOptions) { o.TTL = 0 }, "TTL must be positive"},
		{[]Kind{Partition}, func(o *GenOptions) { o.TimeLimit = -time.Second }, "time limit must be positive"},
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
