package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
)

// Shape says which links a partition or latency step acts on.
type Shape string

// Link shapes. A step without a shape gets one from its targets: Nodes →
// ShapeNodes, Clients or Client → ShapeClient, Links → ShapeLinks.
const (
	// ShapeNodes: every client's link to each of Nodes. One node, a
	// minority or a majority is a matter of how many are named.
	ShapeNodes Shape = "nodes"
	// ShapeIsolate: every link of each of Nodes — from clients, from peers
	// (Sentinels), and replication in and out.
	ShapeIsolate Shape = "isolate"
	// ShapeClient: the links of Clients (or the holder) to every node.
	ShapeClient Shape = "client"
	// ShapeReplication: the replication links of the replicas in Nodes (all
	// replicas if none are named) to the primary of the moment.
	ShapeReplication Shape = "replication"
	// ShapeBridge: clients split into two halves that see overlapping
	// majorities of the nodes. With N nodes and m = N/2+1, the first half of
	// the clients (0..⌈C/2⌉−1) reaches only the first m nodes and the
	// second half only the last m: for independent:5, n1..n3 and n3..n5,
	// bridged by n3. Each half can still form a majority, and any two
	// majorities share a node, so Redlock must stay safe.
	ShapeBridge Shape = "bridge"
	// ShapeLinks: the named cluster links (cluster.Link names such as
	// "c0->n1"; c<i> is client i).
	ShapeLinks Shape = "links"
	// ShapeSplit: Nodes and Clients (or the primary and the holder) on one
	// side, everything else — the other nodes, the other clients and the
	// Sentinels — on the other: the clients named reach only the nodes
	// named, the others only the rest, and replication and Sentinels'
	// links between the sides are cut. With Sentinels on the far side of
	// the primary, they promote a replica there while the clients kept
	// with the old primary go on using it (Jepsen's Redis split brain).
	ShapeSplit Shape = "split"
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

// resolveLinks turns a link step into link names, for its targets as
// resolved (the holder in the place of "client", the node a selector chose
// in the place of "node").
func (w world) resolveLinks(c *compiled, t target) ([]string, error) {
	var out []string
	switch c.shape {
	case ShapeNodes:
		for _, n := range t.nodes {
			out = append(out, w.fromEveryClient(n)...)
		}
	case ShapeIsolate:
		for _, n := range t.nodes {
			out = append(out, w.fromEveryClient(n)...)
			out = append(out, w.topo.LinksBetween([]string{n}, without(w.topo.Nodes(), []string{n}))...)
		}
	case ShapeClient:
		for _, i := range t.clients {
			if i >= w.proxies {
				return nil, fmt.Errorf("client %d has no proxies in the cluster (it has c0..c%d)", i, w.proxies-1)
			}
			out = append(out, w.clientLinks(i, w.topo.Nodes())...)
		}
	case ShapeReplication:
		rs := t.nodes
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
	case ShapeSplit:
		if w.clients > w.proxies {
			return nil, fmt.Errorf("the run has %d clients but the cluster has proxies for %d", w.clients, w.proxies)
		}
		out = w.splitLinks(t.nodes, t.clients)
	}
	if len(out) == 0 {
		return nil, errors.New("no links to act on")
	}
	return out, nil
}

// applyLinks puts step i's link fault (partition, latency,
// client-partition) on the links its targets resolve to.
func (r *runner) applyLinks(i int, t target) error {
	st := r.steps[i]
	c := st.c
	w, err := r.world(c.shape == ShapeReplication)
	if err != nil {
		return err
	}
	links, err := w.resolveLinks(c, t)
	if err != nil {
		return err
	}
	st.fault.Desc = describeLinks(c, w, t, links)
	st.fault.Targets = linkTargets(c, w, t, links)
	lc := linkContrib{step: i, latency: c.span(c.Latency), jitter: c.span(c.Jitter)}
	if !delays(c) {
		lc.cut = c.mode
	}
	lc.up, lc.down = streamsOf(c.dir)
	st.undo = append(st.undo, func() error { return r.links.remove(i, links) })
	if err := r.links.add(lc, links); err != nil {
		return err
	}
	return nil
}

// splitLinks are the links ShapeSplit cuts between nodes and clients on
// one side and everything else on the other.
func (w world) splitLinks(nodes []string, clients []int) []string {
	var out []string
	far := without(w.topo.Nodes(), nodes)
	for i := 0; i < w.clients; i++ {
		if slices.Contains(clients, i) {
			out = append(out, w.clientLinks(i, far)...)
			out = append(out, w.clientLinks(i, w.topo.SentinelNames())...)
		} else {
			out = append(out, w.clientLinks(i, nodes)...)
		}
	}
	return append(out, w.topo.LinksBetween(nodes, far)...)
}

// describeLinks is the sentence of a link fault; w and links are empty
// before the step is resolved.
func describeLinks(c *compiled, w world, t target, links []string) string {
	delay := delays(c)
	nodes := nodesText(c, t)
	var what string
	switch c.shape {
	case ShapeNodes:
		what = fmt.Sprintf("%s from every client", nodes)
		if delay {
			what = fmt.Sprintf("every client's link to %s", nodes)
		}
	case ShapeIsolate:
		what = fmt.Sprintf("%s from everything (clients, peers, replication)", nodes)
		if delay {
			what = fmt.Sprintf("every link of %s", nodes)
		}
	case ShapeClient:
		what = fmt.Sprintf("%s from every node", clientsText(c, t.clients))
		if c.kind.sharing().gates {
			what += " and from the resource"
		}
		if delay {
			what = fmt.Sprintf("the links of %s to every node", clientsText(c, t.clients))
		}
	case ShapeReplication:
		what = "replication"
		if len(links) > 0 && w.primary != "" {
			what += " " + list(links)
		} else if len(c.Nodes) > 0 {
			what += " of " + nodes
		}
	case ShapeBridge:
		n := w.topo.Nodes()
		if len(n) == 0 {
			return fmt.Sprintf("bridge: two halves of the clients see overlapping majorities of the nodes for %v (%s)", c.dur, cutText(c))
		}
		a, b, an, bn := bridgeGroups(n, w.clients)
		return fmt.Sprintf("bridge: clients %s reach only %s, clients %s only %s, for %v (%s)",
			intRange(a), list(an), intRange(b), list(bn), c.dur, cutText(c))
	case ShapeLinks:
		what = "links " + list(links)
	case ShapeSplit:
		return fmt.Sprintf("split: %s and %s on one side, the other nodes, clients and Sentinels on the other, for %v (%s)",
			nodes, clientsText(c, t.clients), c.dur, cutText(c))
	}
	if delay {
		return fmt.Sprintf("delay %s by %v ± %v for %v%s", what, c.span(c.Latency), c.span(c.Jitter), c.dur, dirText(c.dir))
	}
	return fmt.Sprintf("cut %s for %v (%s)", what, c.dur, cutText(c))
}

// delays reports whether a link step delays rather than cuts: its kind
// always does (latency), or it gives a "latency" (reply-loss).
func delays(c *compiled) bool { return c.kind.traits().Has(history.SlowsLinks) || !c.Latency.IsZero() }

func dirText(d cluster.Direction) string {
	switch d {
	case cluster.Upstream:
		return " (requests only)"
	case cluster.Downstream:
		return " (replies only)"
	}
	return ""
}
func intRange(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	if len(xs) == 1 {
		return strconv.Itoa(xs[0])
	}
	return fmt.Sprintf("%d–%d", xs[0], xs[len(xs)-1])
}
func linkTargets(c *compiled, w world, t target, links []string) []string {
	switch c.shape {
	case ShapeNodes, ShapeIsolate:
		return slices.Clone(t.nodes)
	case ShapeClient:
		return clientNames(t.clients)
	case ShapeBridge:
		return w.topo.Nodes()
	case ShapeSplit:
		return append(slices.Clone(t.nodes), clientNames(t.clients)...)
	}
	return slices.Clone(links)
}

// compileShape finds a link step's shape, from "shape" or from its
// targets, and checks its targets against it.
func (c *compiled) compileShape(s Setup) error {
	hasNodes, hasClients, hasLinks := len(c.Nodes) > 0 || c.Node != "", len(c.Clients) > 0 || c.Client != "", len(c.Links) > 0
	c.shape = c.Shape
	if c.shape == "" {
		switch {
		case hasNodes && !hasClients && !hasLinks:
			c.shape = ShapeNodes
		case hasClients && !hasNodes && !hasLinks:
			c.shape = ShapeClient
		case hasLinks && !hasNodes && !hasClients:
			c.shape = ShapeLinks
		case !hasNodes && !hasClients && !hasLinks:
			return errors.New("needs targets: \"nodes\", \"node\", \"clients\", \"client\": \"holder\", \"links\", or a \"shape\"")
		default:
			return errors.New("targets of different kinds need a \"shape\" saying what to cut")
		}
	}
	only := func(what string, ok bool) error {
		if !ok {
			return fmt.Errorf("shape %q takes only %s", c.shape, what)
		}
		return nil
	}
	switch c.shape {
	case ShapeNodes, ShapeIsolate:
		if !hasNodes {
			return fmt.Errorf("shape %q needs \"nodes\"", c.shape)
		}
		return only("\"nodes\"", !hasClients && !hasLinks)
	case ShapeClient:
		if !hasClients {
			return fmt.Errorf("shape %q needs \"clients\" or \"client\": %q", c.shape, Holder)
		}
		return only("\"clients\" or \"client\"", !hasNodes && !hasLinks)
	case ShapeReplication:
		if !s.Topology.Traits().ReplicaLinks {
			return noReplicaLinks(s.Topology)
		}
		return only("\"nodes\" (replicas; all if none)", !hasClients && !hasLinks)
	case ShapeBridge:
		if n := len(s.Topology.Nodes()); n < 3 || s.Clients < 2 {
			return fmt.Errorf("a bridge needs at least 3 nodes and 2 clients, the setup has %d and %d", n, s.Clients)
		}
		return only("no targets (it splits all clients and nodes)", !hasNodes && !hasClients && !hasLinks)
	case ShapeSplit:
		if !s.Topology.Traits().Splittable {
			return fmt.Errorf("shape %q splits %s, not %s", c.shape, cluster.FormsWith(func(t cluster.Traits) bool { return t.Splittable }), s.Topology)
		}
		if !hasNodes || !hasClients {
			return fmt.Errorf("shape %q needs the nodes (\"nodes\" or \"node\") and the clients (\"clients\" or \"client\") of one side", c.shape)
		}
		if len(c.Nodes) >= len(s.Topology.Nodes()) || len(c.Clients) >= s.Clients {
			return fmt.Errorf("shape %q needs nodes and clients on both sides", c.shape)
		}
		return only("\"nodes\" or \"node\", and \"clients\" or \"client\"", !hasLinks)
	case ShapeLinks:
		if !hasLinks {
			return fmt.Errorf("shape %q needs \"links\"", c.shape)
		}
		if err := only("\"links\"", !hasNodes && !hasClients); err != nil {
			return err
		}
		return checkLinks(c.Links, s)
	}
	return field.Errorf("shape", "%q unknown (nodes, isolate, client, replication, bridge, split or links)", c.shape)
}

// checkLinks checks explicit link names against the links the setup's
// cluster has (cluster.Topology.Links).
func checkLinks(links []string, s Setup) error {
	for j, name := range links {
		if err := s.Topology.CheckLink(s.Clients, name); err != nil {
			return field.Errorf(fmt.Sprintf("links[%d]", j), "%w", err)
		}
	}
	return nil
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

// noReplicaLinks is the error of shape replication in a topology whose
// replicas have no replication links of their own, with the links that
// carry replication there, if any.
func noReplicaLinks(t cluster.Topology) error {
	err := fmt.Errorf("topology %s has no replication links of one replica", t)
	if m := t.Masters(); len(m) > 0 {
		if ls := t.LinksBetween(m[:1], without(t.Nodes(), m[:1])); len(ls) > 0 {
			err = fmt.Errorf("%w: replication goes through its primaries' links (%s); name them (shape links), or fail over with \"cut_replication\"", err, list(ls))
		}
	}
	return err
}

// LinkParams are the link faults' parameters (partition, latency,
// client-partition, reply-loss), embedded in Step.
type LinkParams struct {
	Shape     Shape             `json:"shape,omitempty"`
	Mode      cluster.CutMode   `json:"mode,omitempty"`      // default blackhole
	Direction cluster.Direction `json:"direction,omitempty"` // default both
	Latency   Span              `json:"latency,omitzero"`
	Jitter    Span              `json:"jitter,omitzero"`
}
