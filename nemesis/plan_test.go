package nemesis

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/workloads"
)

func TestPlanJSONRoundTrip(t *testing.T) {
	in := `{
  "seed": 7,
  "ttl": "1s",
  "steps": [
    {
      "at": "2s",
      "fault": "partition",
      "for": "2ttl",
      "nodes": [
        "n4",
        "n5"
      ],
      "mode": "blackhole"
    },
    {
      "at": "6s",
      "trigger": "grant",
      "key": "tumbler:0",
      "timeout": "3ttl",
      "fault": "client-pause",
      "for": "0.5ttl",
      "client": "holder"
    }
  ]
}`
	p := mustPlan(t, in)
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("round trip changed the plan:\n%s", out)
	}
	if err := p.Validate(Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 5}, Clients: 3, ClientMode: workloads.Processes}); err != nil {
		t.Error(err)
	}
	if _, err := ParsePlan([]byte(`{"steps":[{"at":"1s","fault":"kill","nodes":["n1"],"duration":"1s"}]}`)); err == nil || !strings.Contains(err.Error(), `unknown field "duration"`) {
		t.Errorf("a misspelt field: %v", err)
	}
	if _, err := ParsePlan([]byte(`{"steps":[]} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
	if _, err := DecodePlan(bytes.NewReader([]byte(`{"steps":[{"at":5}]}`))); err == nil {
		t.Error("a numeric at accepted")
	}
}

func TestValidateNamesTheStep(t *testing.T) {
	ind5 := Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 5}, Clients: 3, NodeClock: true, ClientMode: workloads.Processes}
	rep1 := Setup{Topology: cluster.Topology{Kind: cluster.Replicated, N: 1}, Clients: 2}
	noClock := ind5
	noClock.NodeClock = false
	inproc := ind5
	inproc.ClientMode = workloads.InProcess
	external := ind5
	external.Provider, external.Controls = "external", cluster.CanClock
	extKill := ind5
	extKill.Provider, extKill.Controls = "external", cluster.CanKill
	for _, tc := range []struct {
		name  string
		setup Setup
		plan  string
		want  string
	}{
		{"unknown kind", ind5, `{"steps":[{"at":"1s","fault":"meteor"}]}`, `[0].fault: unknown fault "meteor"`},
		{"no fault", ind5, `{"steps":[{"at":"1s"}]}`, `[0].fault is missing`},
		{"failover on independent", ind5, `{"steps":[{"at":"1s","fault":"kill","nodes":["n1"],"for":"1s"},{"at":"1s","fault":"failover","via":"kill"}]}`,
			"[1] (failover): topology independent:5 has no replicas"},
		{"failover on groups needs a replica named", Setup{Topology: cluster.Topology{Kind: cluster.Groups, N: 5}, Clients: 2},
			`{"steps":[{"at":"1s","fault":"failover","via":"kill"}]}`, `[0].via: "kill" needs Sentinels`},
		{"replication on independent", ind5, `{"steps":[{"at":"1s","fault":"partition","shape":"replication","for":"1s"}]}`,
			"[0] (partition): topology independent:5 has no replication links"},
		{"no such node", ind5, `{"steps":[{"at":"1s","fault":"pause","nodes":["n6"],"for":"1s"}]}`, `[0].nodes[0]: no node "n6" in independent:5`},
		{"no such client", ind5, `{"steps":[{"at":"1s","fault":"client-clock","clients":[3],"offset":"1s","for":"1s"}]}`, "[0].clients[0]: no client 3: clients are 0..2"},
		{"clock without shim", noClock, `{"steps":[{"at":"1s","fault":"clock","nodes":["n1"],"offset":"1s","for":"1s"}]}`, "[0] (clock): the data nodes run without the clock shim"},
		{"client pause in process", inproc, `{"steps":[{"at":"1s","fault":"client-pause","clients":[0],"for":"1s"}]}`, "[0] (client-pause): needs clients in process mode"},
		{"provider refuses", external, `{"steps":[{"at":"1s","fault":"pause","nodes":["n1"],"for":"1s"}]}`, "[0] (pause): needs a provider that can pause/resume nodes; the external provider can clock"},
		{"provider cannot kill", external, `{"steps":[{"at":"1s","fault":"kill","nodes":["n1"],"for":"1s"}]}`, "[0] (kill): needs a provider that can kill/start nodes"},
		{"provider cannot wipe", extKill, `{"steps":[{"at":"1s","fault":"restart","nodes":["n1"],"persistence":"none"}]}`, `[0].persistence: "none": needs a provider that can wipe nodes; the external provider can kill/start`},
		{"zero for", ind5, `{"steps":[{"at":"1s","fault":"partition","nodes":["n1"]}]}`, `[0].for: must be positive for partition`},
		{"negative for", ind5, `{"ttl":"1s","steps":[{"at":"1s","fault":"pause","nodes":["n1"],"for":"-1ttl"}]}`, `[0].for: must be positive for pause (how long until the heal), got "-1ttl"`},
		{"negative at", ind5, `{"steps":[{"at":"-1s","fault":"pause","nodes":["n1"],"for":"1s"}]}`, `[0].at: "-1s" is negative`},
		{"restart with for", ind5, `{"steps":[{"at":"1s","fault":"restart","nodes":["n1"],"for":"1s"}]}`, `[0].for: restart takes none`},
		{"field of another kind", ind5, `{"steps":[{"at":"1s","fault":"kill","nodes":["n1"],"for":"1s","latency":"5ms"}]}`, `[0].latency: does not apply to kill`},
		{"relative without ttl", ind5, `{"steps":[{"at":"1s","fault":"pause","nodes":["n1"],"for":"2ttl"}]}`, `no "ttl"`},
		{"relative ttl", ind5, `{"ttl":"1ttl","steps":[]}`, "cannot be relative to itself"},
		{"holder without key", ind5, `{"steps":[{"at":"1s","fault":"client-pause","client":"holder","for":"1s"}]}`, `[0].key is missing: client "holder"`},
		{"trigger without key", ind5, `{"steps":[{"at":"1s","trigger":"grant","fault":"client-pause","clients":[0],"for":"1s"}]}`, `[0].key is missing: trigger "grant"`},
		{"unknown trigger", ind5, `{"steps":[{"at":"1s","trigger":"release","key":"k","fault":"client-pause","clients":[0],"for":"1s"}]}`, `[0].trigger: "release" unknown`},
		{"timeout without trigger", ind5, `{"steps":[{"at":"1s","timeout":"1s","fault":"client-pause","clients":[0],"for":"1s"}]}`, `[0].timeout: is for a triggered step; there is no [0].trigger`},
		{"latency too small", ind5, `{"steps":[{"at":"1s","fault":"latency","nodes":["n1"],"latency":"100us","for":"1s"}]}`, "[0].latency: must be at least 1ms (toxiproxy works in milliseconds)"},
		{"jitter above latency", ind5, `{"steps":[{"at":"1s","fault":"latency","nodes":["n1"],"latency":"10ms","jitter":"20ms","for":"1s"}]}`, `[0].jitter: "20ms" must be between 0`},
		{"bad mode", ind5, `{"steps":[{"at":"1s","fault":"partition","nodes":["n1"],"mode":"drop","for":"1s"}]}`, `[0].mode: "drop" unknown`},
		{"bad direction", ind5, `{"steps":[{"at":"1s","fault":"partition","nodes":["n1"],"direction":"up","for":"1s"}]}`, `[0].direction: "up" unknown`},
		{"mixed targets", ind5, `{"steps":[{"at":"1s","fault":"partition","nodes":["n1"],"clients":[0],"for":"1s"}]}`, `need a "shape"`},
		{"bad link", ind5, `{"steps":[{"at":"1s","fault":"partition","links":["c3->n1"],"for":"1s"}]}`, `[0].links[0]: no link "c3->n1"`},
		{"bridge too small", Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 2}, Clients: 2}, `{"steps":[{"at":"1s","fault":"partition","shape":"bridge","for":"1s"}]}`, "a bridge needs at least 3 nodes"},
		{"promote needs node", rep1, `{"steps":[{"at":"1s","fault":"failover","via":"promote"}]}`, `via "promote" needs the one replica to promote in [0].nodes (groups`},
		{"sentinel via needs sentinels", rep1, `{"steps":[{"at":"1s","fault":"failover","via":"kill"}]}`, `[0].via: "kill" needs Sentinels`},
		{"lag needs cut", rep1, `{"steps":[{"at":"1s","fault":"failover","via":"promote","nodes":["r1"],"lag":"1s"}]}`, `[0].lag: is how long replication stays cut before the failover; it needs [0].cut_replication`},
		{"strobe too long", ind5, `{"steps":[{"at":"1s","fault":"clock","nodes":["n1"],"offset":"1s","strobe":"2s","for":"1s"}]}`, `[0].strobe: "2s" must be positive and shorter than [0].for "1s"`},
		{"clock zero offset", ind5, `{"steps":[{"at":"1s","fault":"clock","nodes":["n1"],"for":"1s"}]}`, `[0].offset: must be non-zero`},
		{"step-pause without pause", ind5, `{"steps":[{"at":"1s","fault":"step-pause","clients":[0],"step":"s","for":"1s"}]}`, `[0].pause: must be positive`},
		{"no clients", Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 1}}, `{"steps":[{"at":"1s","fault":"client-clock","clients":[0],"offset":"1s","for":"1s"}]}`, "[0] (client-clock): the run has no clients"},
		{"duplicate node", ind5, `{"steps":[{"at":"1s","fault":"pause","nodes":["n1","n1"],"for":"1s"}]}`, `[0].nodes[1]: node "n1" named twice`},
		{"kill and pause overlap", ind5, `{"steps":[{"at":"1s","fault":"kill","nodes":["n1","n2"],"for":"2s"},{"at":"2s","fault":"pause","nodes":["n2"],"for":"1s"}]}`,
			"[1] (pause) overlaps [0] (kill) between 2s and 3s: both hit n2"},
		{"restart delay overlaps", ind5, `{"steps":[{"at":"1s","fault":"restart","nodes":["n1"],"delay":"2s"},{"at":"2s","fault":"kill","nodes":["n1"],"for":"1s"}]}`,
			"[1] (kill) overlaps [0] (restart)"},
		{"two failovers", Setup{Topology: cluster.Topology{Kind: cluster.Replicated, N: 2}}, `{"steps":[{"at":"1s","fault":"failover","via":"promote","nodes":["r1"],"cut_replication":true,"lag":"2s"},{"at":"2s","fault":"failover","via":"promote","nodes":["r2"]}]}`,
			"[1] (failover) overlaps [0] (failover)"},
		{"unknown node selector", ind5, `{"steps":[{"at":"1s","fault":"pause","node":"n3","for":"1s"}]}`, `[0].node: unknown selector "n3" (known: lease, primary; name nodes in [0].nodes)`},
		{"lease without key", ind5, `{"steps":[{"at":"1s","fault":"pause","node":"lease","for":"1s"}]}`, `[0].key is missing: node "lease"`},
		{"primary on independent", ind5, `{"steps":[{"at":"1s","fault":"pause","node":"primary","for":"1s"}]}`, `[0].node: "primary": topology independent:5 has no primary`},
		{"node and nodes", ind5, `{"steps":[{"at":"1s","key":"k","fault":"pause","node":"lease","nodes":["n1"],"for":"1s"}]}`, `give [0].nodes or [0].node "lease", not both`},
		{"no node target", ind5, `{"steps":[{"at":"1s","fault":"pause","for":"1s"}]}`, `[0] (pause): needs "nodes", or "node": "lease" or "primary"`},
		{"node on a client fault", ind5, `{"steps":[{"at":"1s","key":"k","fault":"client-pause","node":"lease","clients":[0],"for":"1s"}]}`, `[0].node: does not apply to client-pause`},
		{"selected node may be any", ind5, `{"steps":[{"at":"1s","fault":"kill","nodes":["n2"],"for":"2s"},{"at":"2s","trigger":"grant","key":"k","fault":"restart","node":"lease"}]}`,
			"[1] (restart) overlaps [0] (kill) between 2s and 3s: both may hit one node"},
		{"step armed twice", ind5, `{"steps":[{"at":"1s","fault":"step-crash","clients":[0,1],"step":"s","for":"2s"},{"at":"2s","fault":"step-pause","clients":[1],"step":"s","pause":"1s","for":"1s"}]}`,
			`[1] (step-pause) overlaps [0] (step-crash) between 2s and 3s: both arm lock step "s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mustPlan(t, tc.plan).Validate(tc.setup)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}

	// What composes is accepted: overlapping link faults, clocks, pauses of
	// one client, a kill right after a pause.
	ok := `{"ttl":"500ms","steps":[
		{"at":"1s","fault":"latency","nodes":["n1","n2"],"latency":"0.1ttl","for":"4s"},
		{"at":"2s","fault":"partition","nodes":["n2"],"for":"1s"},
		{"at":"2s","fault":"clock","nodes":["n2"],"offset":"1ttl","for":"1s"},
		{"at":"2s","fault":"clock","nodes":["n2"],"offset":"-1ttl","strobe":"0.1ttl","for":"1s"},
		{"at":"2s","fault":"client-pause","clients":[0],"for":"1s"},
		{"at":"2.5s","fault":"client-partition","clients":[0],"for":"1s"},
		{"at":"1s","fault":"pause","nodes":["n3"],"for":"1s"},
		{"at":"2s","fault":"kill","nodes":["n3"],"for":"1s","persistence":"aof-always"},
		{"at":"3s","fault":"partition","shape":"bridge","for":"1s","mode":"reset","direction":"upstream"},
		{"at":"3s","fault":"partition","links":["c0->n1","c2->n5"],"for":"1s"},
		{"at":"3s","trigger":"grant","key":"k","fault":"clock","node":"lease","offset":"2ttl","for":"1s"},
		{"at":"3s","trigger":"grant","key":"k","fault":"partition","node":"lease","for":"1s"},
		{"at":"5s","trigger":"grant","key":"k","fault":"restart","node":"lease","persistence":"none"}
	]}`
	if err := mustPlan(t, ok).Validate(ind5); err != nil {
		t.Errorf("a plan of composable faults: %v", err)
	}
	// Every problem is reported, not only the first.
	err := mustPlan(t, `{"steps":[{"at":"1s","fault":"meteor"},{"at":"1s","fault":"pause","nodes":["x"],"for":"1s"}]}`).Validate(ind5)
	if err == nil || !strings.Contains(err.Error(), "[0].fault: unknown fault \"meteor\"") || !strings.Contains(err.Error(), "[1].nodes[0]: no node \"x\"") {
		t.Errorf("both problems: %v", err)
	}
}

func TestBridgeGroups(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	a, b, an, bn := bridgeGroups(nodes, 5)
	if len(a) != 3 || len(b) != 2 || strings.Join(an, ",") != "n1,n2,n3" || strings.Join(bn, ",") != "n3,n4,n5" {
		t.Errorf("bridge of 5 nodes, 5 clients: %v %v %v %v", a, b, an, bn)
	}
	w := world{topo: cluster.Topology{Kind: cluster.Independent, N: 5}, proxies: 5, clients: 5}
	c := &compiled{shape: ShapeBridge}
	links, err := w.resolveLinks(c, target{})
	if err != nil {
		t.Fatal(err)
	}
	// Clients 0..2 lose n4, n5; clients 3, 4 lose n1, n2: 10 links.
	want := "c0->n4,c0->n5,c1->n4,c1->n5,c2->n4,c2->n5,c3->n1,c3->n2,c4->n1,c4->n2"
	if strings.Join(links, ",") != want {
		t.Errorf("bridge links %v, want %s", links, want)
	}
}

func TestResolveLinks(t *testing.T) {
	w := world{topo: cluster.Topology{Kind: cluster.Replicated, N: 2}, proxies: 2, clients: 2, primary: "r1"}
	for _, tc := range []struct {
		c       compiled
		clients []int
		want    string
	}{
		{compiled{shape: ShapeNodes, Step: Step{Nodes: []string{"p"}}}, nil, "c0->p,c1->p"},
		{compiled{shape: ShapeIsolate, Step: Step{Nodes: []string{"r2"}}}, nil, "c0->r2,c1->r2,peer->r2,p->r2,r2->p,r1->r2,r2->r1"},
		{compiled{shape: ShapeClient}, []int{1}, "c1->p,c1->r1,c1->r2"},
		{compiled{shape: ShapeReplication}, nil, "p->r1,r2->r1"},
		{compiled{shape: ShapeReplication, Step: Step{Nodes: []string{"r2"}}}, nil, "r2->r1"},
		{compiled{shape: ShapeLinks, Step: Step{Links: []string{"peer->p"}}}, nil, "peer->p"},
	} {
		links, err := w.resolveLinks(&tc.c, target{nodes: tc.c.Nodes, clients: tc.clients})
		if err != nil || strings.Join(links, ",") != tc.want {
			t.Errorf("%s %v: %v, %v; want %s", tc.c.shape, tc.c.Nodes, links, err, tc.want)
		}
	}
	if _, err := w.resolveLinks(&compiled{shape: ShapeReplication}, target{nodes: []string{"r1"}}); err == nil || !strings.Contains(err.Error(), "r1 is the primary now") {
		t.Errorf("cutting the primary's replication: %v", err)
	}
	if _, err := w.resolveLinks(&compiled{shape: ShapeClient}, target{clients: []int{2}}); err == nil || !strings.Contains(err.Error(), "client 2 has no proxies") {
		t.Errorf("a client without proxies: %v", err)
	}
}

// TestSplitLinks: a split keeps the primary and the holder on one side and
// cuts them from the replicas, the Sentinels and the other clients.
func TestSplitLinks(t *testing.T) {
	w := world{topo: cluster.Topology{Kind: cluster.Replicated, N: 2, Sentinels: true}, proxies: 3, clients: 3, primary: "p"}
	c := &compiled{shape: ShapeSplit, Step: Step{Node: NodePrimary, Client: Holder}}
	links, err := w.resolveLinks(c, target{nodes: []string{"p"}, clients: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	want := "c0->p,c1->r1,c1->r2,c1->s1,c1->s2,c1->s3,c2->p,peer->p,r1->p,p->r1,r2->p,p->r2"
	if strings.Join(links, ",") != want {
		t.Errorf("split links %v, want %s", links, want)
	}
	s := Setup{Topology: w.topo, Clients: 3}
	for js, want := range map[string]string{
		`{"at":"0s","fault":"partition","shape":"split","node":"primary","client":"holder","key":"k","trigger":"grant","for":"1s"}`: "",
		`{"at":"0s","fault":"partition","shape":"split","nodes":["p"],"clients":[0],"for":"1s"}`:                                    "",
		`{"at":"0s","fault":"partition","shape":"split","nodes":["p"],"for":"1s"}`:                                                  "needs the nodes",
		`{"at":"0s","fault":"partition","shape":"split","nodes":["p","r1","r2"],"clients":[0],"for":"1s"}`:                          "on both sides",
		`{"at":"0s","fault":"latency","shape":"split","nodes":["p"],"clients":[0],"latency":"5ms","for":"1s"}`:                      "a split is a partition shape",
	} {
		err := mustPlan(t, `{"steps":[`+js+`]}`).Validate(s)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", js, err, want)
		}
	}
}

// TestGroupsFailover: a groups topology takes a promotion per group and
// explicit cuts of its replication links.
func TestGroupsFailover(t *testing.T) {
	s := Setup{Topology: cluster.Topology{Kind: cluster.Groups, N: 5}, Clients: 2}
	p, err := ParsePlan([]byte(`{"steps":[
		{"at":"0s","fault":"partition","links":["n1r->n1","n2r->n2"],"for":"5s"},
		{"at":"1s","fault":"failover","via":"promote","nodes":["n1r"]},
		{"at":"1.1s","fault":"failover","via":"promote","nodes":["n2r"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(s); err != nil {
		t.Fatalf("a groups failover plan: %v", err)
	}
}

// TestClusterFailoverRules: a Redis Cluster fails a shard over by kill or
// CLUSTER FAILOVER, never by Sentinel or by hand, and needs to know which
// shard.
func TestClusterFailoverRules(t *testing.T) {
	c31 := Setup{Topology: cluster.Topology{Kind: cluster.RedisCluster, N: 3, Replicas: 1}, Clients: 2}
	c3 := Setup{Topology: cluster.Topology{Kind: cluster.RedisCluster, N: 3}, Clients: 2}
	for _, tc := range []struct {
		setup Setup
		plan  string
		want  string // "" valid
	}{
		{c31, `{"steps":[{"at":"0s","trigger":"grant","key":"tumbler:0","fault":"failover","via":"kill","cut_replication":true}]}`, ""},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"takeover","nodes":["n2r1"]}]}`, ""},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"force","nodes":["n1"]}]}`, ""},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"coordinated","nodes":["n3"]}]}`, ""},
		{c31, `{"steps":[{"at":"1s","fault":"partition","links":["peer->n1","bus->n1"],"for":"1s"}]}`, ""},
		{c31, `{"steps":[{"at":"1s","fault":"partition","shape":"isolate","nodes":["n1"],"for":"1s"}]}`, ""},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"sentinel","nodes":["n1"]}]}`, `[0].via: "sentinel" is not for a Redis Cluster`},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"promote","nodes":["n1r1"]}]}`, `[0].via: "promote" is not for a Redis Cluster`},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"kill"}]}`, `[0] (failover): needs the shard to fail over`},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"kill","nodes":["n1","n2"]}]}`, `[0].nodes: names 2 nodes`},
		{c31, `{"steps":[{"at":"1s","fault":"failover","via":"kill","nodes":["n9"]}]}`, `[0].nodes[0]: no node "n9"`},
		{c31, `{"steps":[{"at":"1s","fault":"partition","shape":"replication","for":"1s"}]}`, `peer->n1`},
		{c3, `{"steps":[{"at":"1s","fault":"failover","via":"kill","nodes":["n1"]}]}`, `has no replicas`},
		{Setup{Topology: cluster.Topology{Kind: cluster.Replicated, N: 1, Sentinels: true}, Clients: 1},
			`{"steps":[{"at":"1s","fault":"failover","via":"takeover"}]}`, `[0].via: "takeover" is a Redis Cluster's CLUSTER FAILOVER`},
	} {
		p, err := ParsePlan([]byte(tc.plan))
		if err == nil {
			err = p.Validate(tc.setup)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.plan, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.plan, err, tc.want)
		}
	}
	w := world{topo: c31.Topology, proxies: 2, clients: 2}
	links, err := w.resolveLinks(&compiled{shape: ShapeIsolate}, target{nodes: []string{"n2"}})
	if err != nil || strings.Join(links, ",") != "c0->n2,c1->n2,peer->n2,bus->n2" {
		t.Errorf("isolate n2 in a cluster: %v, %v", links, err)
	}
}

// TestFailoverPlannedSentence: before a failover applies (or when it is
// skipped) its sentence says who promotes the replica in that topology.
func TestFailoverPlannedSentence(t *testing.T) {
	c31 := Setup{Topology: cluster.Topology{Kind: cluster.RedisCluster, N: 3, Replicas: 1}, Clients: 2}
	sen := Setup{Topology: cluster.Topology{Kind: cluster.Replicated, N: 1, Sentinels: true}, Clients: 2}
	for _, tc := range []struct {
		setup Setup
		step  Step
		want  string
	}{
		{c31, Step{Fault: Failover, Nodes: []string{"n2"}, FailoverParams: FailoverParams{Via: ViaKill}},
			"kill the shard's primary and let the cluster promote a replica"},
		{c31, Step{Fault: Failover, Nodes: []string{"n2"}, FailoverParams: FailoverParams{Via: ViaTakeover}},
			"CLUSTER FAILOVER TAKEOVER on a replica, replica of the shard's primary"},
		{sen, Step{Fault: Failover, FailoverParams: FailoverParams{Via: ViaKill}},
			"kill the primary and let Sentinel fail over"},
	} {
		tc.step.At = Fixed(time.Second)
		c, err := compileStep(0, tc.step, time.Second, tc.setup)
		if err != nil {
			t.Fatalf("%+v: %v", tc.step, err)
		}
		if got := c.kind.describe(c, target{nodes: c.Nodes}); got != tc.want {
			t.Errorf("%s via %s: %q, want %q", tc.setup.Topology, tc.step.Via, got, tc.want)
		}
	}
}
