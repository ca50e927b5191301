package cluster

import (
	"slices"
	"strings"
	"testing"
)

// Every registered kind parses its own form, prints back what it read,
// and is named in Syntax.
func TestKindsRoundTrip(t *testing.T) {
	for _, k := range topoKinds {
		text := string(k.kind()) + ":1"
		tp, err := ParseTopology(text)
		if err != nil || tp.String() != text || tp.Kind != k.kind() {
			t.Errorf("%s: %+v, %v", text, tp, err)
		}
		if !strings.Contains(Syntax(), k.form()) {
			t.Errorf("Syntax() %q lacks %s", Syntax(), k.form())
		}
		if len(tp.Nodes()) == 0 || len(tp.Masters()) == 0 {
			t.Errorf("%s has nodes %v, masters %v", text, tp.Nodes(), tp.Masters())
		}
	}
}

// CheckLock says which locks a topology suits, as the kinds' traits say.
func TestCheckLock(t *testing.T) {
	every := []string{"redlock", "redsync"}
	for _, tc := range []struct {
		topo string
		use  LockUse
		want string // "" for none
	}{
		{"independent:3", LockUse{Lock: "redlock", EveryMaster: true}, ""},
		{"groups:3", LockUse{Lock: "redlock", EveryMaster: true}, ""},
		{"replicated:1", LockUse{Lock: "redlock", EveryMaster: true}, "needs independent masters (topology independent:N or groups:G), not replicated:1"},
		{"cluster:3", LockUse{Lock: "redlock", EveryMaster: true}, "needs independent masters"},
		{"groups:3", LockUse{Lock: "single", EveryMasterLocks: every}, "is for locks over independent masters (redlock, redsync), not single"},
		{"replicated:2", LockUse{Lock: "single", WaitReplicas: 2}, ""},
		{"replicated:1", LockUse{Lock: "single", WaitReplicas: 2}, "wait_replicas 2 needs"},
		{"independent:1", LockUse{Lock: "single", WaitReplicas: 1}, "wait_replicas 1 needs"},
		{"cluster:2+1", LockUse{Lock: "single", WaitReplicas: 1}, ""},
		{"cluster:2", LockUse{Lock: "single", WaitReplicas: 1}, "wait_replicas 1 needs"},
		{"cluster:2+1", LockUse{Lock: "fenced", CrossSlot: true}, "CROSSSLOT"},
		{"replicated:1", LockUse{Lock: "fenced", CrossSlot: true}, ""},
	} {
		err := topo(t, tc.topo).CheckLock(tc.use)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s, %+v: %v, want %q", tc.topo, tc.use, err, tc.want)
		}
	}
}

// What each kind offers faults: replicas to fail over to and how, links
// between nodes, one primary.
func TestTraits(t *testing.T) {
	for text, want := range map[string]Traits{
		"independent:3":          {IndependentMasters: true, IndependentNodes: true, Splittable: true},
		"replicated:2":           {WaitReplicas: 2, OnePrimary: true, Failovers: ByHand, NodeLinks: true, ReplicaLinks: true, Splittable: true},
		"replicated:1+sentinels": {WaitReplicas: 1, OnePrimary: true, Failovers: ByHand | BySentinel, NodeLinks: true, ReplicaLinks: true, Splittable: true},
		"groups:2":               {IndependentMasters: true, EveryNodeLocksOnly: true, Failovers: ByHand},
		"cluster:2":              {Slots: true, NodeLinks: true},
		"cluster:2+1":            {WaitReplicas: 1, Slots: true, Failovers: ByCluster, NodeLinks: true},
	} {
		if got := topo(t, text).Traits(); got != want {
			t.Errorf("%s: traits %+v, want %+v", text, got, want)
		}
	}
	if got := topo(t, "groups:2").PromoteGroups(); !slices.EqualFunc(got, [][]string{{"n1", "n1r"}, {"n2", "n2r"}}, slices.Equal) {
		t.Errorf("groups:2 promote groups %v", got)
	}
	if got := topo(t, "replicated:2").PromoteGroups(); len(got) != 1 || strings.Join(got[0], ",") != "p,r1,r2" {
		t.Errorf("replicated:2 promote groups %v", got)
	}
	if got := topo(t, "cluster:2+1").PromoteGroups(); got != nil {
		t.Errorf("a Redis Cluster promotes by hand: %v", got)
	}
}

// Isolating a node cuts the links between it and the others that the
// kind has: none for independent masters and groups.
func TestLinksBetween(t *testing.T) {
	for text, want := range map[string]string{
		"independent:3": "",
		"groups:2":      "",
		"replicated:2":  "peer->p,r1->p,p->r1,r2->p,p->r2",
		"cluster:2+1":   "peer->n1,bus->n1",
	} {
		tp := topo(t, text)
		n := tp.Nodes()[0]
		got := strings.Join(tp.LinksBetween([]string{n}, tp.Nodes()[1:]), ",")
		if got != want {
			t.Errorf("%s: isolating %s cuts %s, want %s", text, n, got, want)
		}
		for _, l := range tp.LinksBetween([]string{n}, tp.Nodes()[1:]) {
			if err := tp.CheckLink(1, l); err != nil {
				t.Errorf("%s: %v", text, err)
			}
		}
	}
}

// A deployment tumbler does not run is adopted only in topologies whose
// wiring it does not need to own, and its config says why not otherwise.
func TestAdoptable(t *testing.T) {
	for text, want := range map[string]string{
		"independent:3":          "",
		"replicated:1+sentinels": "",
		"groups:2":               "re-points",
		"cluster:2+1":            "cannot adopt a Redis Cluster",
	} {
		err := topo(t, text).Adoptable()
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
		cfg := ExternalConfig{Topology: topo(t, text), Toxiproxy: "http://127.0.0.1:8474"}
		if err := cfg.Validate(); want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("external config of %s: %v, want %q", text, err, want)
		}
	}
}
