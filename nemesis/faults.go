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
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// apply starts step i's fault. It registers each undo as soon as the part
// it undoes took effect, so a failure half-way is healed by the same undo
// list. A slow part (restart, failover) is started last, only when
// everything before it worked.
func (r *runner) apply(i int, holder int) error {
	st := r.steps[i]
	c := st.c
	clients, err := r.targetClients(c, holder)
	if err != nil {
		return err
	}
	if len(clients) > 0 {
		st.client = clients[0]
	}
	if isClientKind(c.Fault) {
		st.fault.Desc = describe(c, clients)
		st.fault.Targets = clientNames(clients)
	}
	switch c.Fault {
	case Partition, Latency, ClientPartition:
		return r.applyLinks(i, clients)
	case Kill, Restart:
		return r.applyKill(i)
	case Pause:
		return r.applyPause(i)
	case Clock:
		st.strobeOn = true
		for _, n := range c.Nodes {
			st.undo = append(st.undo, func() error { return r.setNodeOffset(n, i, 0) })
			if err := r.setNodeOffset(n, i, c.offset); err != nil {
				return err
			}
		}
		st.fault.Targets = slices.Clone(c.Nodes)
		return nil
	case Failover:
		return r.applyFailover(i)
	case ClientPause:
		for _, cl := range clients {
			if r.clientPause[cl]++; r.clientPause[cl] == 1 {
				if err := r.env.Clients.Pause(cl); err != nil {
					r.clientPause[cl]--
					return fmt.Errorf("pause client %d: %w", cl, err)
				}
			}
			st.undo = append(st.undo, func() error {
				if r.clientPause[cl]--; r.clientPause[cl] == 0 {
					delete(r.clientPause, cl)
					if err := r.env.Clients.Resume(cl); err != nil {
						return fmt.Errorf("resume client %d: %w", cl, err)
					}
				}
				return nil
			})
		}
	case ClientClock:
		for _, cl := range clients {
			st.undo = append(st.undo, func() error { return r.setClientOffset(cl, i, 0) })
			if err := r.setClientOffset(cl, i, c.offset); err != nil {
				return err
			}
		}
	case StepPause, StepCrash:
		action := StepAction{Pause: c.pause, Crash: c.Fault == StepCrash}
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
				if err := r.env.Clients.ArmStep(cl, c.LockStep, StepAction{}); err != nil {
					return fmt.Errorf("disarm client %d at %q: %w", cl, c.LockStep, err)
				}
				return nil
			})
		}
	}
	return nil
}

// targetClients resolves the step's clients: the listed ones, or the
// holder of Key (the one a trigger found, or whoever holds it now).
func (r *runner) targetClients(c *compiled, holder int) ([]int, error) {
	if !c.holder() {
		return c.Clients, nil
	}
	if holder >= 0 {
		return []int{holder}, nil
	}
	cl, ok := r.env.Oracle.Holder(c.Key)
	if !ok {
		return nil, errSkip{fmt.Sprintf("nobody holds %q", c.Key)}
	}
	if cl < 0 || cl >= r.setup.Clients {
		return nil, fmt.Errorf("the oracle says client %d holds %q, but clients are 0..%d", cl, c.Key, r.setup.Clients-1)
	}
	return []int{cl}, nil
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

func (r *runner) applyLinks(i int, clients []int) error {
	st := r.steps[i]
	c := st.c
	w, err := r.world(c.shape == ShapeReplication)
	if err != nil {
		return err
	}
	links, err := w.resolveLinks(c, clients)
	if err != nil {
		return err
	}
	st.fault.Desc = describeLinks(c, w, clients, links)
	st.fault.Targets = linkTargets(c, w, clients, links)
	lc := linkContrib{step: i, latency: c.latency, jitter: c.jitter}
	if c.Fault != Latency {
		lc.cut = c.mode
	}
	lc.up, lc.down = streamsOf(c.dir)
	st.undo = append(st.undo, func() error { return r.links.remove(i, links) })
	if err := r.links.add(lc, links); err != nil {
		return err
	}
	if c.Fault == ClientPartition {
		for _, cl := range clients {
			if err := r.setGate(cl, +1); err != nil {
				return err
			}
			st.undo = append(st.undo, func() error { return r.setGate(cl, -1) })
		}
	}
	return nil
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

func (r *runner) applyKill(i int) error {
	st := r.steps[i]
	c := st.c
	st.fault.Targets = slices.Clone(c.Nodes)
	for _, n := range c.Nodes {
		if err := r.busy(n); err != nil {
			return err
		}
	}
	st.slow = r.bringUp(c.Nodes, c.Persistence)
	for _, n := range c.Nodes {
		r.owner[n] = i
		if err := r.env.Cluster.Kill(n); err != nil {
			return err
		}
	}
	if c.Fault == Restart {
		st.settling = true
		up, delay := st.slow, c.delay
		r.async(func(ctx context.Context) event {
			err := wait.For(ctx, delay)
			if err == nil {
				err = up(ctx)
			}
			return event{kind: evApplied, step: i, err: err}
		})
	}
	return nil
}

func (r *runner) applyPause(i int) error {
	st := r.steps[i]
	c := st.c
	st.fault.Targets = slices.Clone(c.Nodes)
	for _, n := range c.Nodes {
		if o, ok := r.owner[n]; ok {
			return fmt.Errorf("%s is down or restarting by %s", n, r.steps[o].c.name())
		}
		if r.failover >= 0 {
			return fmt.Errorf("%s is failing over", r.steps[r.failover].c.name())
		}
	}
	for _, n := range c.Nodes {
		if r.nodePaused[n]++; r.nodePaused[n] == 1 {
			if err := r.env.Cluster.Pause(n); err != nil {
				r.nodePaused[n]--
				return err
			}
		}
		st.undo = append(st.undo, func() error {
			if r.nodePaused[n]--; r.nodePaused[n] == 0 {
				delete(r.nodePaused, n)
				return r.env.Cluster.Resume(n)
			}
			return nil
		})
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

// toggle flips a strobing clock between its offset and 0.
func (r *runner) toggle(i int) {
	st := r.steps[i]
	c := st.c
	if st.phase != active {
		return
	}
	st.strobeOn = !st.strobeOn
	d := time.Duration(0)
	if st.strobeOn {
		d = c.offset
	}
	for _, n := range c.Nodes {
		if err := r.setNodeOffset(n, i, d); err != nil {
			st.errs = append(st.errs, err)
		}
	}
	st.toggles++
	if next := st.base + int64(st.toggles+1)*int64(c.strobe); next < st.healAt {
		r.push(event{at: next, kind: evToggle, step: i})
	}
}

func (r *runner) applyFailover(i int) error {
	st := r.steps[i]
	c := st.c
	if r.failover >= 0 {
		return fmt.Errorf("%s is still failing over", r.steps[r.failover].c.name())
	}
	w, err := r.world(true)
	if err != nil {
		return err
	}
	old := w.primary
	var target string
	candidates := w.replicas()
	if c.Via == ViaPromote {
		target = c.Nodes[0]
		if target == old {
			return fmt.Errorf("%s is the primary already", target)
		}
		candidates = []string{target}
	}
	for _, n := range append([]string{old}, candidates...) {
		if err := r.busy(n); err != nil {
			return err
		}
	}
	st.fault.Desc = describeFailover(c, old, candidates)
	st.fault.Targets = append([]string{old}, candidates...)
	r.failover = i
	if c.Via == ViaKill {
		r.owner[old] = i
		st.slow = r.bringUp([]string{old}, "")
	}
	if c.CutReplication {
		var links []string
		for _, n := range candidates {
			links = append(links, cluster.ReplicationLink(n, old))
		}
		st.undo = append(st.undo, func() error { return r.links.remove(i, links) })
		if err := r.links.add(linkContrib{step: i, cut: cluster.Blackhole, up: true, down: true}, links); err != nil {
			return err
		}
	}
	st.settling = true
	cl := r.env.Cluster
	r.async(func(ctx context.Context) event {
		if c.triggered() { // with a cut: the grant comes while replication is cut
			if _, err := r.waitGrant(ctx, c); err != nil {
				return event{kind: evApplied, step: i, err: err}
			}
		}
		if err := wait.For(ctx, c.lag); err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		t0 := time.Now()
		var err error
		switch c.Via {
		case ViaPromote:
			if err = cl.Promote(ctx, target); err == nil {
				return event{kind: evApplied, step: i, note: fmt.Sprintf("%s promoted by hand in %v", target, time.Since(t0).Round(time.Millisecond))}
			}
			return event{kind: evApplied, step: i, err: err}
		case ViaKill:
			err = cl.Kill(old)
		case ViaSentinel:
			err = cl.SentinelFailover(ctx)
		}
		if err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		wctx, cancel := context.WithTimeout(ctx, FailoverTimeout)
		defer cancel()
		p, err := cl.WaitFailover(wctx, old)
		if err != nil {
			return event{kind: evApplied, step: i, err: err}
		}
		return event{kind: evApplied, step: i, note: fmt.Sprintf("%s took over from %s %v after the %s", p, old, time.Since(t0).Round(time.Millisecond), map[Via]string{ViaKill: "kill", ViaSentinel: "request"}[c.Via])}
	})
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

// plannedFault is the fault record of a step before its targets are
// resolved: the sentence says what was planned (a skipped step keeps it).
func (r *runner) plannedFault(c *compiled) history.Fault {
	f := history.Fault{ID: c.id(), Kind: string(c.Fault), Targets: slices.Clone(c.Nodes), Arms: c.Fault.ArmsStep()}
	for _, cl := range c.Clients {
		f.Targets = append(f.Targets, clientName(cl))
	}
	f.Desc = describe(c, c.Clients)
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

// describe is the sentence for a step, with its clients resolved (or as
// planned).
func describe(c *compiled, clients []int) string {
	nodes := list(c.Nodes)
	switch c.Fault {
	case Partition, Latency, ClientPartition:
		return describeLinks(c, world{}, clients, c.Links)
	case Kill:
		how := "with its persistence"
		if c.Persistence != "" {
			how = "with persistence " + string(c.Persistence)
		}
		return fmt.Sprintf("kill %s for %v, then start it again %s", nodes, c.dur, how)
	case Restart:
		how := "with its persistence"
		switch c.Persistence {
		case "":
		case cluster.PersistNone:
			how = "empty"
		default:
			how = "from its AOF (" + string(c.Persistence) + ")"
		}
		if c.delay > 0 {
			return fmt.Sprintf("restart %s %s after %v down", nodes, how, c.delay)
		}
		return fmt.Sprintf("restart %s %s", nodes, how)
	case Pause:
		return fmt.Sprintf("pause %s (SIGSTOP) for %v", nodes, c.dur)
	case Clock:
		if c.strobe > 0 {
			return fmt.Sprintf("strobe %s's clock between 0 and %s every %v for %v", nodes, signed(c.offset), c.strobe, c.dur)
		}
		return fmt.Sprintf("jump %s's clock by %s for %v", nodes, signed(c.offset), c.dur)
	case Failover:
		return describeFailover(c, "", nil)
	case ClientPause:
		return fmt.Sprintf("pause %s (SIGSTOP) for %v", clientsText(c, clients), c.dur)
	case ClientClock:
		return fmt.Sprintf("shift the clock of %s by %s for %v", clientsText(c, clients), signed(c.offset), c.dur)
	case StepPause:
		return fmt.Sprintf("arm %s to pause %v at lock step %q (armed for %v)", clientsText(c, clients), c.pause, c.LockStep, c.dur)
	case StepCrash:
		return fmt.Sprintf("arm %s to crash at lock step %q (armed for %v)", clientsText(c, clients), c.LockStep, c.dur)
	}
	return string(c.Fault)
}

func describeLinks(c *compiled, w world, clients []int, links []string) string {
	delay := c.Fault == Latency
	var what string
	switch c.shape {
	case ShapeNodes:
		what = fmt.Sprintf("%s from every client", list(c.Nodes))
		if delay {
			what = fmt.Sprintf("every client's link to %s", list(c.Nodes))
		}
	case ShapeIsolate:
		what = fmt.Sprintf("%s from everything (clients, peers, replication)", list(c.Nodes))
		if delay {
			what = fmt.Sprintf("every link of %s", list(c.Nodes))
		}
	case ShapeClient:
		what = fmt.Sprintf("%s from every node", clientsText(c, clients))
		if c.Fault == ClientPartition {
			what += " and from the resource"
		}
		if delay {
			what = fmt.Sprintf("the links of %s to every node", clientsText(c, clients))
		}
	case ShapeReplication:
		what = "replication"
		if len(links) > 0 && w.primary != "" {
			what += " " + list(links)
		} else if len(c.Nodes) > 0 {
			what += " of " + list(c.Nodes)
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
	}
	if delay {
		return fmt.Sprintf("delay %s by %v ± %v for %v%s", what, c.latency, c.jitter, c.dur, dirText(c.dir))
	}
	return fmt.Sprintf("cut %s for %v (%s)", what, c.dur, cutText(c))
}

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

func linkTargets(c *compiled, w world, clients []int, links []string) []string {
	switch c.shape {
	case ShapeNodes, ShapeIsolate:
		return slices.Clone(c.Nodes)
	case ShapeClient:
		return clientNames(clients)
	case ShapeBridge:
		return w.topo.Nodes()
	}
	return slices.Clone(links)
}

func describeFailover(c *compiled, old string, candidates []string) string {
	primary := "the primary"
	if old != "" {
		primary += " " + old
	}
	var how string
	switch c.Via {
	case ViaKill:
		how = "kill " + primary + " and let Sentinel fail over"
	case ViaSentinel:
		how = "ask Sentinel to fail over from " + primary
	case ViaPromote:
		how = fmt.Sprintf("promote %s by hand", list(c.Nodes))
	}
	if !c.CutReplication {
		return how
	}
	cut := "cut replication (blackhole)"
	if len(candidates) > 0 {
		links := make([]string, len(candidates))
		for k, n := range candidates {
			links[k] = cluster.ReplicationLink(n, old)
		}
		cut = "cut replication " + list(links) + " (blackhole)"
	}
	if c.triggered() {
		if c.OnTimeout == OnTimeoutApply {
			cut += fmt.Sprintf(", wait up to %v for a grant of %q", c.timeout, c.Key)
		} else {
			cut += fmt.Sprintf(", wait for a grant of %q", c.Key)
		}
	}
	if c.lag > 0 {
		cut += fmt.Sprintf(", wait %v", c.lag)
	}
	return cut + ", then " + how
}
