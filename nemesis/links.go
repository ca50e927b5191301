package nemesis

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
)

// world is what link resolution needs to know about the cluster now.
type world struct {
	topo    cluster.Topology
	proxies int    // clients with proxies in the cluster: c0..c(K-1)
	clients int    // workload clients: 0..clients-1
	primary string // replicated: the primary of the moment
}

// clientLinks are client i's (history numbering) links to nodes.
func (w world) clientLinks(i int, nodes []string) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, cluster.ClientLink(i, n))
	}
	return out
}

// fromEveryClient are the links of every client with a proxy to node.
func (w world) fromEveryClient(node string) []string {
	out := make([]string, 0, w.proxies)
	for i := 0; i < w.proxies; i++ {
		out = append(out, cluster.ClientLink(i, node))
	}
	return out
}

// replicas are the data nodes other than the primary.
func (w world) replicas() []string {
	var out []string
	for _, n := range w.topo.Nodes() {
		if n != w.primary {
			out = append(out, n)
		}
	}
	return out
}

// bridgeGroups splits clients and nodes for ShapeBridge: group A (the
// first ⌈C/2⌉ clients) reaches the first m = N/2+1 nodes, group B the last
// m.
func bridgeGroups(nodes []string, clients int) (a, b []int, aNodes, bNodes []string) {
	n, m := len(nodes), len(nodes)/2+1
	half := (clients + 1) / 2
	for i := 0; i < clients; i++ {
		if i < half {
			a = append(a, i)
		} else {
			b = append(b, i)
		}
	}
	return a, b, nodes[:m], nodes[n-m:]
}

// resolveLinks turns a link step into link names, for the given clients
// (the holder already substituted into c.Clients' place).
func (w world) resolveLinks(c *compiled, clients []int) ([]string, error) {
	var out []string
	switch c.shape {
	case ShapeNodes:
		for _, n := range c.Nodes {
			out = append(out, w.fromEveryClient(n)...)
		}
	case ShapeIsolate:
		for _, n := range c.Nodes {
			out = append(out, w.fromEveryClient(n)...)
			if w.topo.Kind == cluster.Replicated {
				out = append(out, cluster.PeerLink(n))
				for _, x := range w.topo.Nodes() {
					if x != n {
						out = append(out, cluster.ReplicationLink(x, n), cluster.ReplicationLink(n, x))
					}
				}
			}
		}
	case ShapeClient:
		for _, i := range clients {
			if i >= w.proxies {
				return nil, fmt.Errorf("client %d has no proxies in the cluster (it has c0..c%d)", i, w.proxies-1)
			}
			out = append(out, w.clientLinks(i, w.topo.Nodes())...)
		}
	case ShapeReplication:
		rs := c.Nodes
		if len(rs) == 0 {
			rs = w.replicas()
		}
		for _, r := range rs {
			if r == w.primary {
				return nil, fmt.Errorf("%s is the primary now: it has no replication link to cut", r)
			}
			out = append(out, cluster.ReplicationLink(r, w.primary))
		}
	case ShapeBridge:
		if w.clients > w.proxies {
			return nil, fmt.Errorf("the run has %d clients but the cluster has proxies for %d", w.clients, w.proxies)
		}
		a, b, aNodes, bNodes := bridgeGroups(w.topo.Nodes(), w.clients)
		for _, i := range a {
			out = append(out, w.clientLinks(i, without(w.topo.Nodes(), aNodes))...)
		}
		for _, i := range b {
			out = append(out, w.clientLinks(i, without(w.topo.Nodes(), bNodes))...)
		}
	case ShapeLinks:
		out = slices.Clone(c.Links)
	}
	if len(out) == 0 {
		return nil, errors.New("no links to act on")
	}
	return out, nil
}

func without(all, drop []string) []string {
	var out []string
	for _, x := range all {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// A link can carry several faults at once (a partition during a latency
// fault, two partitions sharing a link), but the cluster keeps one cut and
// one delay per direction and Heal clears both. The link table keeps every
// active fault's contribution per link and sets each link to what they add
// up to: per direction, the latest cut and the latest delay.

// linkContrib is one fault's effect on one link.
type linkContrib struct {
	step            int
	cut             cluster.CutMode // "" for a delay
	latency, jitter time.Duration
	up, down        bool // the directions it acts on
}

type streamState struct {
	cut             cluster.CutMode
	delayed         bool
	latency, jitter time.Duration
}

type linkState struct{ up, down streamState }

func (s linkState) empty() bool { return s == linkState{} }

func streamsOf(dir cluster.Direction) (up, down bool) {
	return dir != cluster.Downstream, dir != cluster.Upstream
}

type linkTable struct {
	c       Cluster
	active  map[string][]linkContrib // in the order applied
	applied map[string]linkState     // what the cluster has now
	dirty   map[string]bool          // unknown after a failed call: heal first
}

func newLinkTable(c Cluster) *linkTable {
	return &linkTable{c: c, active: map[string][]linkContrib{}, applied: map[string]linkState{}, dirty: map[string]bool{}}
}

// add puts a fault's contribution on links and applies the result.
func (t *linkTable) add(lc linkContrib, links []string) error {
	for _, l := range links {
		t.active[l] = append(t.active[l], lc)
	}
	return t.reconcile(links)
}

// remove takes a fault's contributions off links and applies the result.
func (t *linkTable) remove(step int, links []string) error {
	for _, l := range links {
		t.active[l] = slices.DeleteFunc(t.active[l], func(c linkContrib) bool { return c.step == step })
		if len(t.active[l]) == 0 {
			delete(t.active, l)
		}
	}
	return t.reconcile(links)
}

func (t *linkTable) desired(link string) linkState {
	var s linkState
	for _, c := range t.active[link] {
		for _, st := range []struct {
			on bool
			s  *streamState
		}{{c.up, &s.up}, {c.down, &s.down}} {
			switch {
			case !st.on:
			case c.cut != "":
				st.s.cut = c.cut
			default:
				st.s.delayed, st.s.latency, st.s.jitter = true, c.latency, c.jitter
			}
		}
	}
	return s
}

// linkOp is one cluster call, applied to every link it collects.
type linkOp struct {
	cut             cluster.CutMode // "" for a delay
	latency, jitter time.Duration
	dir             cluster.Direction
}

// reconcile sets links to what their active contributions add up to, with
// as few cluster calls as it can: a heal only where a cut must go (a delay
// is lifted by a zero delay, which keeps a blackhole's connections held),
// and one call per distinct cut or delay.
func (t *linkTable) reconcile(links []string) error {
	var heals []string
	ops := map[linkOp][]string{}
	var order []linkOp
	addOp := func(op linkOp, l string) {
		if _, ok := ops[op]; !ok {
			order = append(order, op)
		}
		ops[op] = append(ops[op], l)
	}
	seen := map[string]bool{}
	want := map[string]linkState{}
	for _, l := range links {
		if seen[l] {
			continue
		}
		seen[l] = true
		w, have := t.desired(l), t.applied[l]
		want[l] = w
		if w == have && !t.dirty[l] {
			continue
		}
		if w.empty() {
			heals = append(heals, l)
			continue
		}
		if t.dirty[l] || have.up.cut != "" && w.up.cut == "" || have.down.cut != "" && w.down.cut == "" {
			heals = append(heals, l)
			have = linkState{}
		}
		// Cuts: one call for both directions when they agree.
		upCut := w.up.cut != "" && w.up.cut != have.up.cut
		downCut := w.down.cut != "" && w.down.cut != have.down.cut
		switch {
		case upCut && downCut && w.up.cut == w.down.cut:
			addOp(linkOp{cut: w.up.cut, dir: cluster.Both}, l)
		default:
			if upCut {
				addOp(linkOp{cut: w.up.cut, dir: cluster.Upstream}, l)
			}
			if downCut {
				addOp(linkOp{cut: w.down.cut, dir: cluster.Downstream}, l)
			}
		}
		delayOp := func(want, have streamState) (linkOp, bool) {
			switch {
			case want.delayed && (!have.delayed || want.latency != have.latency || want.jitter != have.jitter):
				return linkOp{latency: want.latency, jitter: want.jitter}, true
			case !want.delayed && have.delayed:
				return linkOp{}, true // a zero delay
			}
			return linkOp{}, false
		}
		up, upOK := delayOp(w.up, have.up)
		down, downOK := delayOp(w.down, have.down)
		switch {
		case upOK && downOK && up == down:
			up.dir = cluster.Both
			addOp(up, l)
		default:
			if upOK {
				up.dir = cluster.Upstream
				addOp(up, l)
			}
			if downOK {
				down.dir = cluster.Downstream
				addOp(down, l)
			}
		}
	}
	var errs []error
	bad := map[string]bool{}
	call := func(links []string, err error) {
		if err != nil {
			errs = append(errs, err)
			for _, l := range links {
				bad[l] = true
			}
		}
	}
	if len(heals) > 0 { // Heal with no names would heal every link
		call(heals, t.c.Heal(heals...))
	}
	// Cuts before delays, so that a link is never briefly delayed but open.
	slices.SortStableFunc(order, func(a, b linkOp) int {
		return cmp.Compare(boolInt(a.cut == ""), boolInt(b.cut == ""))
	})
	for _, op := range order {
		if op.cut != "" {
			call(ops[op], t.c.Cut(op.cut, op.dir, ops[op]...))
		} else {
			call(ops[op], t.c.Delay(op.latency, op.jitter, op.dir, ops[op]...))
		}
	}
	// A link whose call failed is in an unknown state: the next change to
	// it heals it first.
	for l, w := range want {
		switch {
		case bad[l]:
			t.dirty[l] = true
		case w.empty():
			delete(t.applied, l)
			delete(t.dirty, l)
		default:
			t.applied[l] = w
			delete(t.dirty, l)
		}
	}
	return errors.Join(errs...)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
