package nemesis

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/workloads"
)

// TestValidateTimeKinds: the rules of drift, client-drift and
// client-starve, and the setups that cannot take them.
func TestValidateTimeKinds(t *testing.T) {
	ind3 := Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 3}, Clients: 2, NodeClock: true, ClientMode: workloads.Processes}
	external := ind3
	external.Provider, external.Controls = "external", cluster.CanClock|cluster.CanKill
	inproc := ind3
	inproc.ClientMode = workloads.InProcess
	noClock := ind3
	noClock.NodeClock = false
	for _, tc := range []struct {
		name  string
		setup Setup
		step  string
		want  string
	}{
		{"no rate", ind3, `"fault":"drift","nodes":["n1"],"for":"1s"`, `[0].rate is missing: give one other than 1 in (0, 10]`},
		{"rate 1", ind3, `"fault":"drift","nodes":["n1"],"rate":1,"for":"1s"`, `[0].rate: 1 is the host's pace`},
		{"negative rate", ind3, `"fault":"client-drift","clients":[0],"rate":-0.5,"for":"1s"`, `[0].rate: -0.5 is not in (0, 10]`},
		{"rate past 10", ind3, `"fault":"drift","nodes":["n1"],"rate":11,"for":"1s"`, `[0].rate: 11 is not in (0, 10]`},
		{"rate on clock", ind3, `"fault":"clock","nodes":["n1"],"offset":"1s","rate":2,"for":"1s"`, `[0].rate: does not apply to clock`},
		{"offset on drift", ind3, `"fault":"drift","nodes":["n1"],"offset":"1s","rate":2,"for":"1s"`, `[0].offset: does not apply to drift`},
		{"external cannot drift", external, `"fault":"drift","nodes":["n1"],"rate":2,"for":"1s"`, "[0] (drift): needs a provider that can clock rate nodes; the external provider can kill/start, clock"},
		{"drift without shim", noClock, `"fault":"drift","nodes":["n1"],"rate":2,"for":"1s"`, "[0] (drift): the data nodes run without the clock shim"},
		{"no share", ind3, `"fault":"client-starve","clients":[0],"period":"100ms","for":"1s"`, `[0].share: 0 must be in (0, 1)`},
		{"share 1", ind3, `"fault":"client-starve","clients":[0],"share":1,"period":"100ms","for":"1s"`, `[0].share: 1 must be in (0, 1)`},
		{"no period", ind3, `"fault":"client-starve","clients":[0],"share":0.2,"for":"1s"`, `[0].period is missing`},
		{"period past for", ind3, `"fault":"client-starve","clients":[0],"share":0.2,"period":"2s","for":"1s"`, `[0].period: "2s" is longer than [0].for "1s"`},
		{"phase too short", ind3, `"fault":"client-starve","clients":[0],"share":0.001,"period":"100ms","for":"1s"`, "[0].share: 0.001 of [0].period \"100ms\" leaves a running or a stopped part under 1ms"},
		{"starve in process", inproc, `"fault":"client-starve","clients":[0],"share":0.2,"period":"100ms","for":"1s"`, "[0] (client-starve): needs clients in process mode"},
		{"starve without clients", Setup{Topology: ind3.Topology, NodeClock: true}, `"fault":"client-starve","nodes":["n1"],"share":0.2,"period":"100ms","for":"1s"`, "[0] (client-starve): the run has no clients"},
	} {
		err := mustPlan(t, `{"steps":[{"at":"1s",`+tc.step+`}]}`).Validate(tc.setup)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	ok := mustPlan(t, `{"ttl":"1s","steps":[
		{"at":"1s","fault":"drift","nodes":["n1","n2"],"rate":1.5,"for":"3ttl"},
		{"at":"1s","fault":"drift","node":"lease","key":"k","trigger":"grant","rate":0.5,"for":"1ttl"},
		{"at":"1s","fault":"client-drift","client":"holder","key":"k","rate":2,"for":"1ttl"},
		{"at":"1s","fault":"client-starve","clients":[0,1],"share":0.1,"period":"1.2ttl","for":"4ttl"}]}`)
	if err := ok.Validate(ind3); err != nil {
		t.Error(err)
	}
}

// TestRunDriftShares: drifts on one target add up and each heal takes its
// own share away; the sentences say the rate and what it gains.
func TestRunDriftShares(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:2", 2)
	cl := &fakeClients{n: 2}
	s := newSink()
	plan := mustPlan(t, `{"ttl":"100ms","steps":[
		{"at":"0s","fault":"drift","nodes":["n1"],"rate":1.5,"for":"2ttl"},
		{"at":"100ms","fault":"drift","nodes":["n1","n2"],"rate":0.75,"for":"2ttl"},
		{"at":"0s","fault":"client-drift","clients":[1],"rate":2,"for":"1ttl"}
	]}`)
	if err := Run(context.Background(), plan, fakeEnv(f, cl, nil), s); err != nil {
		t.Fatal(err)
	}
	var drifts []string
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "drift ") {
			drifts = append(drifts, c)
		}
	}
	// n1: 1.5, then 1.5 and 0.75 (slopes 0.5 − 0.25: 1.25), then 0.75;
	// a heal undoes its nodes last first.
	want := []string{"drift n1 1.5", "drift n1 1.25", "drift n2 0.75", "drift n1 0.75", "drift n2 1", "drift n1 1"}
	if !slices.Equal(drifts, want) {
		t.Errorf("node drifts:\n got %q\nwant %q", drifts, want)
	}
	if got, want := cl.Calls(), []string{"drift 1 2", "drift 1 1"}; !slices.Equal(got, want) {
		t.Errorf("client drifts: got %q, want %q", got, want)
	}
	descs := map[string]string{}
	for _, op := range s.Ops() {
		descs[op.Fault.ID] = op.Fault.Desc
	}
	if d := descs["f1"]; d != "run n1's clock at 1.5× the host's pace (+100ms by the heal, then stepped back) for 200ms" {
		t.Errorf("drift sentence: %q", d)
	}
	if d := descs["f3"]; d != "run the clock of client 1 at 2× the host's pace (+100ms by the heal, then stepped back) for 100ms" {
		t.Errorf("client-drift sentence: %q", d)
	}
}

// TestDriftSharesAddUp: the sum of drift shares is displaced by the sum of
// their displacements at every instant, and removing one takes exactly its
// displacement away.
func TestDriftSharesAddUp(t *testing.T) {
	shares := map[string]map[int]clockshim.Drift{}
	a, b := clockshim.Rate(1.5, 1000), clockshim.Rate(0.25, 3000)
	setDriftShare(shares, "n1", 1, a, 1000)
	sum := setDriftShare(shares, "n1", 2, b, 3000)
	for _, m := range []int64{3000, 5000, 11000} {
		if got, want := sum.At(m), a.At(m)+b.At(m); got != want {
			t.Errorf("at %d: the sum is displaced by %v, the shares by %v", m, got, want)
		}
	}
	left := setDriftShare(shares, "n1", 1, clockshim.Drift{}, 7000)
	if got, want := left.At(9000), b.At(9000); got != want {
		t.Errorf("after removing a share: %v, want %v", got, want)
	}
	if none := setDriftShare(shares, "n1", 2, clockshim.Drift{}, 9000); !none.IsZero() {
		t.Errorf("no share left, yet a drift of %v", none)
	}
}

// TestRunStarveDutyCycle: a starved client is stopped for the stopped part
// of every period and let go for the running part, in that order, and its
// stops are counted with a client-pause's: it runs only when neither
// holds it.
func TestRunStarveDutyCycle(t *testing.T) {
	noLeak(t)
	f := newFakeCluster(t, "independent:1", 2)
	cl := &fakeClients{n: 2}
	s := newSink()
	// Client 0: stopped 40 ms, running 10 ms, every 50 ms for 200 ms.
	// Client 1 likewise, and paused from 30 to 120 ms besides: it runs at
	// 140–150 and 190 on only.
	plan := mustPlan(t, `{"steps":[
		{"at":"0s","fault":"client-starve","clients":[0],"share":0.2,"period":"50ms","for":"200ms"},
		{"at":"0s","fault":"client-starve","clients":[1],"share":0.2,"period":"50ms","for":"200ms"},
		{"at":"30ms","fault":"client-pause","clients":[1],"for":"90ms"}
	]}`)
	if err := Run(context.Background(), plan, fakeEnv(f, cl, nil), s); err != nil {
		t.Fatal(err)
	}
	var c0, c1 []string
	for _, c := range cl.Calls() {
		switch {
		case strings.HasSuffix(c, " 0"):
			c0 = append(c0, c)
		case strings.HasSuffix(c, " 1"):
			c1 = append(c1, c)
		}
	}
	cycle := []string{"pause 0", "resume 0"}
	if want := slices.Concat(cycle, cycle, cycle, cycle); !slices.Equal(c0, want) {
		t.Errorf("client 0:\n got %q\nwant %q", c0, want)
	}
	if want := []string{"pause 1", "resume 1", "pause 1", "resume 1"}; !slices.Equal(c1, want) {
		t.Errorf("client 1 (counted with the pause):\n got %q\nwant %q", c1, want)
	}
	for _, op := range s.Ops() {
		if op.Fault.ID == "f1" && op.F == history.Start && op.Fault.Desc != "starve client 0 for 200ms: running 10ms of every 50ms, stopped (SIGSTOP) for the rest" {
			t.Errorf("starve sentence: %q", op.Fault.Desc)
		}
	}
}

// TestGenerateTimeKinds: drawn drifts and starvations are what their
// draws promise: rates fast and slow off 1, a drift aimed at a lock on a
// majority runs a majority's clocks, a starved holder runs a share of
// 5–30 % of its periods.
func TestGenerateTimeKinds(t *testing.T) {
	o := genOptions(t, "independent:5", "tumbler:0", 2)
	var fast, slow, majority, holders int
	for seed := range int64(20) {
		p, err := Generate(seed, []Kind{ClockDrift, ClientDrift, ClientStarve}, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range p.Steps {
			switch st.Fault {
			case ClockDrift, ClientDrift:
				if st.Rate <= 0 || st.Rate == 1 || st.Rate > 2 {
					t.Errorf("seed %d: drawn rate %g", seed, st.Rate)
				}
				if st.Rate > 1 {
					fast++
				} else {
					slow++
				}
				if st.Fault == ClockDrift && st.Trigger != "" && len(st.Nodes) == 3 {
					majority++
				}
			case ClientStarve:
				if st.Share < 0.05 || st.Share > 0.3 || st.Period.IsZero() {
					t.Errorf("seed %d: drawn share %g of %v", seed, st.Share, st.Period)
				}
				if st.Client == Holder {
					holders++
				}
			}
		}
	}
	if fast == 0 || slow == 0 || majority == 0 || holders == 0 {
		t.Errorf("fast %d, slow %d rates; %d majority drifts on a grant; %d starved holders", fast, slow, majority, holders)
	}
}
