package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/workloads"
)

// What every kind's apply shares: resolving targets, the node and client
// tables, clock shares, and the sentences' pieces. The kinds themselves
// are in kind_*.go.

// leaseReadTimeout bounds the reads that find the nodes of a lease.
const leaseReadTimeout = 250 * time.Millisecond

// hit is what a step's trigger found.
type hit struct {
	// granted: a grant came (not for an untriggered step, nor one applied
	// on its trigger's timeout).
	granted bool
	grant   Grant
	// lease, when read: the nodes the grant's lease rests on, read right
	// after the grant for a "lease" selector.
	lease     []string
	leaseRead bool
}

// target is a step's targets as resolved when it applies.
type target struct {
	nodes   []string
	clients []int
	// role says how a selector chose the nodes, for the sentence ("" for
	// nodes named in the plan).
	role string
	// prior: for a kind that stops nodes, the persistence every one of
	// them ran with before the step, when known and the same for all;
	// "" otherwise (the sentence then says what the plan says).
	prior cluster.Persistence
	// lease: the nodes a selector found holding the lease it aimed at
	// (the primary, for "primary").
	lease []string
}

// observe records on f what the step does as resolved (history.Fault's
// Lease, Empty, Offset, Rate, CutReplication): what coverage judges from.
func observe(f *history.Fault, c *compiled, t target) {
	f.Lease = slices.Clone(t.lease)
	if c.kind.traits().Has(history.RestartsNode) {
		next := c.Persistence
		if next == "" {
			next = t.prior
		}
		f.Empty = next == cluster.PersistNone || t.prior == cluster.PersistNone
	}
	f.Offset = int64(c.span(c.Offset))
	f.Rate = c.Rate
	f.CutReplication = c.CutReplication || c.Shape == ShapeReplication
}

// apply starts step i's fault. The kind registers each undo as soon as the
// part it undoes took effect, so a failure half-way is healed by the same
// undo list. A slow part (restart, failover) is started last, only when
// everything before it worked.
func (r *runner) apply(i int, h hit) error {
	st := r.steps[i]
	c := st.c
	t, err := r.resolve(c, h)
	if err != nil {
		return err
	}
	if len(t.clients) > 0 {
		st.client = t.clients[0]
	}
	st.fault.Targets = append(slices.Clone(t.nodes), clientNames(t.clients)...)
	if c.kind.traits().Has(history.StopsNode) {
		t.prior = r.priorPersistence(t.nodes)
	}
	st.fault.Desc = c.kind.describe(c, t)
	observe(&st.fault, c, t)
	return c.kind.apply(r, i, t)
}

// resolve finds the step's targets: the nodes and clients it names, or the
// ones its selectors pick now.
func (r *runner) resolve(c *compiled, h hit) (target, error) {
	t := target{nodes: c.Nodes, clients: c.Clients}
	if c.holder() {
		g, err := r.holding(c, h)
		if err != nil {
			return t, err
		}
		t.clients = []int{g.Client}
	}
	switch c.Node {
	case NodePrimary:
		p, err := r.env.Cluster.Primary(r.ctx)
		if err != nil {
			return t, err
		}
		t.nodes, t.role, t.lease = []string{p}, "the primary", []string{p}
	case NodeLease:
		g, err := r.holding(c, h)
		if err != nil {
			return t, err
		}
		lease := h.lease
		if !h.leaseRead {
			lease = r.leaseNodes(r.ctx, c.Key, g.Value)
		}
		if len(lease) == 0 {
			return t, errSkip{fmt.Sprintf("no node holds client %d's lease on %q", g.Client, c.Key)}
		}
		t.nodes, t.lease = []string{lease[c.pick%uint64(len(lease))]}, lease
		t.role = fmt.Sprintf("one of %s holding client %d's lease on %q", list(lease), g.Client, c.Key)
		if len(lease) == 1 {
			t.role = fmt.Sprintf("holding client %d's lease on %q", g.Client, c.Key)
		}
	}
	return t, nil
}

// priorPersistence is the mode every one of nodes runs with now, if it is
// known and the same for all, else "".
func (r *runner) priorPersistence(nodes []string) cluster.Persistence {
	var p cluster.Persistence
	for k, n := range nodes {
		m, known := r.env.Cluster.Persistence(n)
		if !known || m == "" || (k > 0 && m != p) {
			return ""
		}
		p = m
	}
	return p
}

// startText says how a kill or restart brings its nodes back: what they
// come back with and the mode they run with from then on. Resolved, it
// goes by the mode they ran with before the kill (t.prior): a node that
// ran without persistence wrote no AOF, so whatever mode the step names it
// comes back empty. Unresolved (a plan, a skipped step), it says what the
// plan asks for.
func startText(c *compiled, t target) string {
	next := c.Persistence
	if t.prior == "" {
		switch next {
		case "":
			return "with its persistence"
		case cluster.PersistNone:
			return "empty"
		}
		return "in " + string(next) + " (from its AOF, if it wrote one)"
	}
	if next == "" {
		next = t.prior
	}
	switch {
	case next == cluster.PersistNone && t.prior == cluster.PersistNone:
		return "empty (it runs without persistence)"
	case next == cluster.PersistNone:
		return "empty (its " + string(t.prior) + " files wiped)"
	case t.prior == cluster.PersistNone:
		return "empty (it ran without persistence, so wrote no AOF), in " + string(next) + " from then on"
	case next == t.prior:
		return "from its AOF (" + string(next) + ")"
	}
	return "from the AOF it wrote in " + string(t.prior) + ", in " + string(next) + " from then on"
}

// holding is the lease the step's selectors go by: the one its trigger saw
// granted, or the one held now.
func (r *runner) holding(c *compiled, h hit) (Grant, error) {
	if h.granted {
		return h.grant, nil
	}
	g, ok := r.env.Oracle.Holder(c.Key)
	if !ok {
		return g, errSkip{fmt.Sprintf("nobody holds %q", c.Key)}
	}
	if g.Client < 0 || g.Client >= r.setup.Clients {
		return g, fmt.Errorf("the oracle says client %d holds %q, but clients are 0..%d", g.Client, c.Key, r.setup.Clients-1)
	}
	return g, nil
}

// leaseNodes are the data nodes, in topology order, whose key holds value
// (any value when value is unknown; a key that is not a string, such as a
// reentrant lock's hash, counts).
func (r *runner) leaseNodes(ctx context.Context, key, value string) []string {
	vals := r.env.Cluster.Values(ctx, key, leaseReadTimeout)
	var out []string
	for _, n := range r.setup.Topology.Nodes() {
		if v, ok := vals[n]; ok && (value == "" || v == value || v == "") {
			out = append(out, n)
		}
	}
	return out
}

func (r *runner) world(needPrimary bool) (world, error) {
	w := world{topo: r.setup.Topology, proxies: r.env.Cluster.Clients(), clients: r.setup.Clients}
	if needPrimary {
		p, err := r.env.Cluster.Primary(r.ctx)
		if err != nil {
			return w, err
		}
		w.primary = p
	}
	return w, nil
}

func (r *runner) setGate(cl, delta int) error {
	r.gates[cl] += delta
	n := r.gates[cl]
	if n == 0 {
		delete(r.gates, cl)
	}
	if (delta > 0 && n == 1) || (delta < 0 && n == 0) {
		if err := r.env.Clients.GateResource(cl, n > 0); err != nil {
			return fmt.Errorf("gate client %d's resource: %w", cl, err)
		}
	}
	return nil
}

// busy says why node cannot take a lifecycle fault now, if it cannot.
func (r *runner) busy(node string) error {
	if o, ok := r.owner[node]; ok {
		return fmt.Errorf("%s is down or restarting by %s", node, r.steps[o].c.name())
	}
	if r.nodePaused[node] > 0 {
		return fmt.Errorf("%s is paused", node)
	}
	if r.failover >= 0 {
		return fmt.Errorf("%s is failing over", r.steps[r.failover].c.name())
	}
	return nil
}

// bringUp starts the nodes that are down, with persistence p ("" keeps
// each node's mode). It is idempotent.
func (r *runner) bringUp(nodes []string, p cluster.Persistence) func(ctx context.Context) error {
	cl := r.env.Cluster
	return func(ctx context.Context) error {
		var errs []error
		for _, n := range nodes {
			if cl.Up(n) {
				continue
			}
			var err error
			if p != "" {
				err = cl.Restart(ctx, n, cluster.RestartOptions{Persistence: p})
			} else {
				err = cl.StartNode(ctx, n)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("start %s: %w", n, err))
			}
		}
		return errors.Join(errs...)
	}
}

// down kills step i's nodes and owns them until the heal, whose slow part
// starts them again with persistence p (kill, restart).
func (r *runner) down(i int, nodes []string, p cluster.Persistence) error {
	st := r.steps[i]
	for _, n := range nodes {
		if err := r.busy(n); err != nil {
			return err
		}
	}
	st.slow = r.bringUp(nodes, p)
	for _, n := range nodes {
		r.owner[n] = i
		if err := r.env.Cluster.Kill(n); err != nil {
			return err
		}
	}
	return nil
}

// setNodeOffset sets step i's share of node's clock offset; the node runs
// at the sum of the shares of the clock faults active on it.
func (r *runner) setNodeOffset(node string, i int, d time.Duration) error {
	return r.env.Cluster.SetClock(node, setShare(r.nodeClock, node, i, d))
}

// setClientOffset is setNodeOffset for client cl's clock.
func (r *runner) setClientOffset(cl, i int, d time.Duration) error {
	if err := r.env.Clients.SetClockOffset(cl, setShare(r.clientClock, cl, i, d)); err != nil {
		return fmt.Errorf("set client %d's clock: %w", cl, err)
	}
	return nil
}

// setShare sets step i's share d of target's clock offset (0 removes it)
// and returns the offset target runs at: the sum of its shares.
func setShare[T comparable](shares map[T]map[int]time.Duration, target T, i int, d time.Duration) time.Duration {
	m := shares[target]
	if m == nil {
		m = map[int]time.Duration{}
		shares[target] = m
	}
	if d == 0 {
		delete(m, i)
	} else {
		m[i] = d
	}
	var sum time.Duration
	for _, v := range m {
		sum += v
	}
	return sum
}

// arm arms the lock step of step i on clients with action (step-pause,
// step-crash), one arming per client and step at a time.
func (r *runner) arm(i int, clients []int, action workloads.StepAction) error {
	st := r.steps[i]
	c := st.c
	for _, cl := range clients {
		k := armKey{cl, c.LockStep}
		if o, ok := r.armed[k]; ok {
			return fmt.Errorf("client %d's lock step %q is armed by %s already", cl, c.LockStep, r.steps[o].c.name())
		}
		if err := r.env.Clients.ArmStep(cl, c.LockStep, action); err != nil {
			return fmt.Errorf("arm client %d at %q: %w", cl, c.LockStep, err)
		}
		r.armed[k] = i
		st.undo = append(st.undo, func() error {
			delete(r.armed, k)
			if err := r.env.Clients.ArmStep(cl, c.LockStep, workloads.StepAction{}); err != nil {
				return fmt.Errorf("disarm client %d at %q: %w", cl, c.LockStep, err)
			}
			return nil
		})
	}
	return nil
}

// plannedFault is the fault record of a step before its targets are
// resolved: the sentence says what was planned (a skipped step keeps it).
func (r *runner) plannedFault(c *compiled) history.Fault {
	f := history.Fault{ID: c.id(), Kind: string(c.Fault), Targets: slices.Clone(c.Nodes), Traits: slices.Clone(c.kind.traits())}
	f.Targets = append(f.Targets, clientNames(c.Clients)...)
	f.Desc = c.kind.describe(c, target{nodes: c.Nodes, clients: c.Clients})
	return f
}

func clientName(i int) string { return "client:" + strconv.Itoa(i) }

func clientNames(cs []int) []string {
	out := make([]string, len(cs))
	for k, cl := range cs {
		out[k] = clientName(cl)
	}
	return out
}

// Descriptions: one human sentence per fault, with durations resolved.

func list(xs []string) string { return strings.Join(xs, ", ") }

// nodesText names the step's nodes as resolved, with the role that chose
// them, or the role alone before it is resolved.
func nodesText(c *compiled, t target) string {
	if len(t.nodes) > 0 {
		if t.role != "" {
			return fmt.Sprintf("%s (%s)", list(t.nodes), t.role)
		}
		return list(t.nodes)
	}
	switch c.Node {
	case NodeLease:
		return fmt.Sprintf("a node holding the lease on %q", c.Key)
	case NodePrimary:
		return "the primary"
	}
	return ""
}

func clientsText(c *compiled, clients []int) string {
	if len(clients) == 0 && c.holder() {
		return fmt.Sprintf("the holder of %q", c.Key)
	}
	s := make([]string, len(clients))
	for k, cl := range clients {
		s[k] = strconv.Itoa(cl)
	}
	word := "client "
	if len(clients) > 1 {
		word = "clients "
	}
	out := word + strings.Join(s, ", ")
	if c.holder() {
		out += fmt.Sprintf(" (holder of %q)", c.Key)
	}
	return out
}

func cutText(c *compiled) string {
	mode := string(c.mode)
	switch c.dir {
	case cluster.Upstream:
		mode += ", requests only"
	case cluster.Downstream:
		mode += ", replies only"
	}
	return mode
}

func signed(d time.Duration) string {
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}
