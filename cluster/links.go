package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Link is one toxiproxy proxy: a path from a connecting side to a data node
// or, for a client, a Sentinel. Its name, "<From>-><To>", is the proxy's
// name in toxiproxy's API too. Topology.Links lists a topology's links.
//
//	c<i>-><X>   client i to node X (clients c0..c(K-1), Spec.Clients;
//	            numbered from 0 like the history's clients)
//	c<i>->s<j>  client i to Sentinel j: how a client that discovers the
//	            primary through the Sentinels asks them
//	<a>-><b>    replication: replica a replicates from b, for every ordered
//	            pair of data nodes of a replicated topology
//	peer-><X>   everything else that reaches X at the address X announces:
//	            the Sentinels, and replicas that Sentinel re-pointed; in a
//	            Redis Cluster, X's replicas
//	bus-><X>    a Redis Cluster's bus connections of every other node to X
//
// Sentinels share the addresses they discover with each other, so they all
// reach X through the one peer-><X>: cutting it cuts every Sentinel from X
// at once; one Sentinel cannot be cut from one node alone.
type Link struct {
	From string // "c<i>", a data node, "peer" or "bus"
	To   string // a data node, or a Sentinel for a client
}

// String is the link's name.
func (l Link) String() string { return l.From + "->" + l.To }

// ParseLink splits a link name; it does not check that the link exists.
func ParseLink(s string) (Link, error) {
	from, to, ok := strings.Cut(s, "->")
	if !ok || from == "" || to == "" || strings.Contains(to, "->") {
		return Link{}, fmt.Errorf("link %q: want <from>-><to>, e.g. c0->n1, r1->p or peer->p", s)
	}
	return Link{From: from, To: to}, nil
}

// ClientLink names the link from client i (from 0) to node.
func ClientLink(client int, node string) string { return "c" + strconv.Itoa(client) + "->" + node }

// ReplicationLink names the link replica uses to replicate from primary.
func ReplicationLink(replica, primary string) string { return replica + "->" + primary }

// PeerLink names the link Sentinels (and Sentinel-configured replicas) use to
// reach node.
func PeerLink(node string) string { return "peer->" + node }

// Direction picks the half of a connection a toxic acts on, seen from the
// side that opened it (client, replica or Sentinel).
type Direction string

const (
	// Both is both halves; the empty Direction means Both too.
	Both Direction = "both"
	// Upstream is the requests: a cut loses the command before it runs.
	Upstream Direction = "upstream"
	// Downstream is the replies, and a primary's replication stream: a cut
	// lets the command run and loses its reply (an unknown outcome).
	Downstream Direction = "downstream"
)

func (d Direction) streams() ([]string, error) {
	switch d {
	case Both, "":
		return []string{"upstream", "downstream"}, nil
	case Upstream:
		return []string{"upstream"}, nil
	case Downstream:
		return []string{"downstream"}, nil
	}
	return nil, fmt.Errorf("unknown direction %q, want upstream, downstream or both", string(d))
}

// CutMode is how a cut link fails.
type CutMode string

const (
	// Reset fails fast: the first bytes sent on a connection (old or new)
	// close it, failing the command as a peer answering with RST would
	// (the close is a FIN: the embedded proxy's toxics are fixed per proxy,
	// so it cannot set SO_LINGER on connections it already holds; a client
	// sees a closed connection either way). Connecting still
	// succeeds: the proxy accepts; the failure comes with the first
	// command. A replica notices within a second (its REPLCONF ACK).
	Reset CutMode = "reset"
	// Blackhole drops every byte and keeps connections open, so a request
	// hangs until the client's own timeout. As in a real partition, a side
	// that closes its connection meanwhile is not seen to close by the
	// other (its FIN is lost too): a replica re-pointed away from a
	// partitioned primary stays connected to it as far as the primary can
	// tell, which is what min-replicas-max-lag is about. Healing closes the
	// connections it held. (In an external deployment's toxiproxy, which
	// has only toxiproxy's own timeout toxic, a close does cross.)
	Blackhole CutMode = "blackhole"
)

// partitionToxic is Blackhole in the cluster's own toxiproxy: toxiproxy's
// timeout toxic with timeout 0 drops data but passes on the end of the
// stream, so the far side sees a close that a partition would have lost.
type partitionToxic struct{}

// partitionToxicType is partitionToxic's name in toxiproxy's registry.
const partitionToxicType = "tumbler_partition"

func init() { toxics.Register(partitionToxicType, new(partitionToxic)) }

func (partitionToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				// The near side closed. Keep the far side's connection
				// until the heal (Cleanup), as a partition would.
				<-stub.Interrupt
				return
			}
			// Dropped.
		}
	}
}

// Cleanup closes the connection at the heal, as the timeout toxic does.
func (partitionToxic) Cleanup(stub *toxics.ToxicStub) { stub.Close() }

// Names of the toxics the cluster adds, per stream: one cut and one delay
// at most, so applying a fault again replaces it.
func cutToxic(stream string) string   { return "cut-" + stream }
func delayToxic(stream string) string { return "delay-" + stream }

type toxicSpec struct {
	name, typ, stream string
	attrs             toxics.Toxic
}

// Cut cuts the named links in direction dir (Both if empty).
func (c *Cluster) Cut(mode CutMode, dir Direction, links ...string) error {
	var typ string
	var attrs toxics.Toxic
	switch mode {
	case Reset:
		typ, attrs = "reset_peer", &toxics.ResetToxic{Timeout: 0}
	case Blackhole:
		typ, attrs = partitionToxicType, &partitionToxic{}
	default:
		return fmt.Errorf("cut: unknown mode %q, want reset or blackhole", string(mode))
	}
	return c.addToxics("cut", dir, links, func(stream string) toxicSpec {
		return toxicSpec{name: cutToxic(stream), typ: typ, stream: stream, attrs: attrs}
	})
}

// Delay adds latency ± jitter (uniform) to every chunk of data on the named
// links in direction dir (Both if empty). Toxiproxy works in milliseconds.
func (c *Cluster) Delay(latency, jitter time.Duration, dir Direction, links ...string) error {
	if latency < 0 || jitter < 0 || jitter > latency {
		return fmt.Errorf("delay: want 0 ≤ jitter ≤ latency, got latency %v, jitter %v", latency, jitter)
	}
	attrs := &toxics.LatencyToxic{Latency: latency.Milliseconds(), Jitter: jitter.Milliseconds()}
	return c.addToxics("delay", dir, links, func(stream string) toxicSpec {
		return toxicSpec{name: delayToxic(stream), typ: "latency", stream: stream, attrs: attrs}
	})
}

// Heal removes every toxic from the named links, or from all links when
// none are named. Healing a blackhole closes the connections it held.
func (c *Cluster) Heal(links ...string) error {
	proxies, err := c.proxiesFor("heal", links, true)
	if err != nil {
		return err
	}
	return healEach(proxies)
}

func healEach(proxies map[string]linkProxy) error {
	return parallel(proxies, func(name string, p linkProxy) error {
		if err := p.heal(); err != nil {
			return fmt.Errorf("heal %s: %w", name, err)
		}
		return nil
	})
}

func (c *Cluster) addToxics(op string, dir Direction, links []string, spec func(stream string) toxicSpec) error {
	streams, err := dir.streams()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	proxies, err := c.proxiesFor(op, links, false)
	if err != nil {
		return err
	}
	return parallel(proxies, func(name string, p linkProxy) error {
		for _, s := range streams {
			if err := p.setToxic(spec(s)); err != nil {
				return fmt.Errorf("%s %s %s: %w", op, name, s, err)
			}
		}
		return nil
	})
}

// proxiesFor resolves link names to their proxies; empty means all when
// all is set.
func (c *Cluster) proxiesFor(op string, links []string, all bool) (map[string]linkProxy, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("%s: cluster closed", op)
	}
	if len(links) == 0 {
		if !all {
			return nil, fmt.Errorf("%s: no links named", op)
		}
		out := make(map[string]linkProxy, len(c.links))
		for _, l := range c.links {
			out[l.String()] = c.proxies[l.String()]
		}
		return out, nil
	}
	out := make(map[string]linkProxy, len(links))
	for _, name := range links {
		p := c.proxies[name]
		if p == nil {
			return nil, fmt.Errorf("%s: no link %q in this cluster (%s)", op, name, c.linkHint(name))
		}
		out[name] = p
	}
	return out, nil
}

func (c *Cluster) linkHint(name string) string {
	l, err := ParseLink(name)
	if err != nil {
		return err.Error()
	}
	if _, ok := c.nodes[l.To]; !ok {
		return fmt.Sprintf("%q is not a data node or Sentinel; data nodes are %s", l.To, strings.Join(c.topo.Nodes(), ", "))
	}
	if slices.Contains(c.topo.Links(c.spec.Clients), l) {
		// A link of the topology without a proxy: an adopted deployment
		// that does not declare it.
		return "the deployment declares the links " + strings.Join(c.Links(), ", ")
	}
	return "links are " + c.topo.LinkForms(c.spec.Clients)
}

// parallel runs f on every proxy at once: toxiproxy interrupts each
// connection's pipeline to insert a toxic, so one link at a time would add
// up across a partition of many links.
func parallel(proxies map[string]linkProxy, f func(string, linkProxy) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for name, p := range proxies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(name, p); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// healAll removes every toxic from every link, for Close: it works on a
// closed cluster.
func (c *Cluster) healAll() error {
	return healEach(c.proxies)
}

// Links are the names of all links of the cluster, in a stable order:
// client links by client then node, replication links, peer links. Split a
// name with ParseLink to filter by either end.
func (c *Cluster) Links() []string {
	out := make([]string, len(c.links))
	for i, l := range c.links {
		out[i] = l.String()
	}
	return out
}

// LinksTo are the names of every link into node: from each client, from
// the other data nodes and from peers (for a Sentinel: from each client).
// Cutting them all isolates the node.
func (c *Cluster) LinksTo(node string) []string {
	var out []string
	for _, l := range c.links {
		if l.To == node {
			out = append(out, l.String())
		}
	}
	return out
}

// ClientLinks are the names of client i's links to every data node and
// Sentinel.
func (c *Cluster) ClientLinks(client int) []string {
	var out []string
	from := "c" + strconv.Itoa(client)
	for _, l := range c.links {
		if l.From == from {
			out = append(out, l.String())
		}
	}
	return out
}

// LinkAddr is the address a link's proxy listens on.
func (c *Cluster) LinkAddr(link string) (string, error) {
	p := c.proxies[link]
	if p == nil {
		return "", fmt.Errorf("no link %q in this cluster (%s)", link, c.linkHint(link))
	}
	return p.addr(), nil
}
