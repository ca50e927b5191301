package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
)

// DefaultTriggerTimeout is how long a triggered step waits for its event
// when the step gives no timeout.
const DefaultTriggerTimeout = 10 * time.Second

// minDelay: toxiproxy works in milliseconds.
const minDelay = time.Millisecond

// maxSteps bounds a plan; a schedule longer than this is a mistake.
const maxSteps = 10000

// compiled is a validated step with the TTL its spans resolve against
// (span), and the spans every step has resolved: at, for and the
// trigger's timeout (its default filled in).
type compiled struct {
	Step
	kind faultKind
	idx  int // position in Plan.Steps
	// pick chooses among the nodes a selector finds: from the plan's seed
	// and the step's number, so a replay picks the same.
	pick             uint64
	shape            Shape
	mode             cluster.CutMode
	dir              cluster.Direction
	ttl              time.Duration
	at, dur, timeout time.Duration
	// topology is the one the step was compiled for, so a sentence
	// written before the step applies can name what it will do there.
	topology cluster.Topology
}

// span is one of the step's spans (c.Latency, c.Strobe, …) resolved
// against the plan's TTL.
func (c *compiled) span(sp Span) time.Duration { return sp.Resolve(c.ttl) }

// name is how errors and records refer to the step: numbered from 1.
func (c *compiled) name() string { return fmt.Sprintf("step %d (%s)", c.idx+1, c.Fault) }

// id pairs the step's start and stop records.
func (c *compiled) id() string { return fmt.Sprintf("f%d", c.idx+1) }

// triggered reports whether the step waits for a grant.
func (c *compiled) triggered() bool { return c.Trigger != "" }

// holder reports whether the step targets the holder of Key.
func (c *compiled) holder() bool { return c.Client == Holder }

// nodes are the nodes the step names, or every node when it selects one
// by role: what it may hit, for the overlap rules.
func (c *compiled) nodes(s Setup) []string {
	if c.Node != "" {
		return s.Topology.Nodes()
	}
	return c.Nodes
}

// window is the longest the step can be active: its event may come as late
// as At+Timeout, then it lasts For (plus a restart's delay or a failover's
// lag). The time a node takes to start or a failover to complete is not
// known in advance; Run refuses what still collides at run time.
func (c *compiled) window() (from, to time.Duration) {
	to = c.at + c.dur + c.span(c.Delay) + c.span(c.Lag)
	if c.triggered() {
		to += c.timeout
	}
	return c.at, to
}

// Validate checks the plan against a setup and returns every problem, one
// per line, each naming its step (numbered from 1) and kind, e.g.
// "step 3 (failover): topology independent:5 has no replicas".
func (p Plan) Validate(s Setup) error {
	_, err := p.compile(s)
	return err
}

func (p Plan) compile(s Setup) ([]*compiled, error) {
	if err := s.Topology.Validate(); err != nil {
		return nil, fmt.Errorf("plan setup: %w", err)
	}
	if s.Clients < 0 {
		return nil, fmt.Errorf("plan setup: negative client count %d", s.Clients)
	}
	var errs []error
	relative := false
	for _, st := range p.Steps {
		for _, f := range st.Spans() {
			relative = relative || f.Span.Relative()
		}
	}
	ttl := p.TTL.Resolve(0)
	switch {
	case p.TTL.Relative():
		errs = append(errs, fmt.Errorf("plan ttl %q: the TTL cannot be relative to itself", p.TTL))
	case ttl < 0:
		errs = append(errs, fmt.Errorf("plan ttl %q is negative", p.TTL))
	case ttl == 0 && relative:
		errs = append(errs, errors.New(`plan has spans relative to the TTL ("…ttl") but no "ttl"`))
	}
	if len(p.Steps) > maxSteps {
		errs = append(errs, fmt.Errorf("plan has %d steps, more than %d", len(p.Steps), maxSteps))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]*compiled, 0, len(p.Steps))
	for i, st := range p.Steps {
		c, err := compileStep(i, st, ttl, s)
		if c != nil {
			c.pick = splitmix(uint64(p.Seed) ^ uint64(i+1)*0x9e3779b97f4a7c15)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	if len(errs) == 0 {
		errs = overlaps(out, s)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// splitmix is SplitMix64's finaliser: a well-mixed number from a seed.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func compileStep(i int, st Step, ttl time.Duration, s Setup) (*compiled, error) {
	c := &compiled{Step: st, idx: i, topology: s.Topology, ttl: ttl}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("step %d (%s): %s", i+1, st.Fault, fmt.Sprintf(format, args...))
	}
	if st.Fault == "" {
		return nil, fmt.Errorf("step %d: no \"fault\"", i+1)
	}
	fk, err := lookup(st.Fault)
	if err != nil {
		return nil, fail("%v", err)
	}
	c.kind = fk
	if err := fk.needs().check(s); err != nil {
		return nil, fail("%v", err)
	}
	for _, f := range st.setFields() {
		if !slices.Contains(fk.fields(), f) {
			return nil, fail("%q does not apply to %s (it takes %s)", f, st.Fault, strings.Join(fk.fields(), ", "))
		}
	}
	c.at, c.dur, c.timeout = c.span(st.At), c.span(st.For), c.span(st.Timeout)
	if c.at < 0 {
		return nil, fail("at %q is negative", st.At)
	}
	switch fk.duration() {
	case forPositive:
		if c.dur <= 0 {
			return nil, fail("needs a positive \"for\" (how long until the heal), got %q", st.For)
		}
	case forZero:
		if !st.For.IsZero() {
			return nil, fail("takes no \"for\": it lasts until the nodes answer again (use \"delay\" to keep them down)")
		}
	case forAny:
		if c.dur < 0 {
			return nil, fail("\"for\" %q is negative", st.For)
		}
	}
	for name, d := range map[string]time.Duration{"delay": c.span(st.Delay), "lag": c.span(st.Lag)} {
		if d < 0 {
			return nil, fail("%q is negative", name)
		}
	}
	if err := c.checkSelectors(s); err != nil {
		return nil, fail("%v", err)
	}
	if err := checkNodes(st.Nodes, s.Topology); err != nil {
		return nil, fail("%v", err)
	}
	if err := checkClients(st.Clients, s.Clients); err != nil {
		return nil, fail("%v", err)
	}
	switch fk.targets() {
	case targetsNodes:
		if len(st.Nodes) == 0 && st.Node == "" {
			return nil, fail("needs \"nodes\", or \"node\": %q or %q", NodeLease, NodePrimary)
		}
	case targetsClients:
		if len(st.Clients) == 0 && st.Client == "" {
			return nil, fail("needs \"clients\" or \"client\": %q", Holder)
		}
	}

	// Shared field values: link modes and directions, persistence.
	c.mode, c.dir = st.Mode, st.Direction
	if c.mode == "" {
		c.mode = cluster.Blackhole
	}
	if c.dir == "" {
		c.dir = cluster.Both
	}
	if c.mode != cluster.Reset && c.mode != cluster.Blackhole {
		return nil, fail("unknown mode %q (reset or blackhole)", st.Mode)
	}
	if c.dir != cluster.Both && c.dir != cluster.Upstream && c.dir != cluster.Downstream {
		return nil, fail("unknown direction %q (upstream, downstream or both)", st.Direction)
	}
	if st.Persistence != "" {
		if err := st.Persistence.Validate(); err != nil {
			return nil, fail("%v", err)
		}
	}
	if err := fk.check(c, s); err != nil {
		return nil, fail("%v", err)
	}
	return c, nil
}

// checkSelectors checks the trigger and the role selectors, "client" and
// "node", and the key they need.
func (c *compiled) checkSelectors(s Setup) error {
	switch c.Trigger {
	case "":
		if !c.Timeout.IsZero() || c.OnTimeout != "" {
			return errors.New("\"timeout\" and \"on_timeout\" are for triggered steps; there is no \"trigger\"")
		}
	case TriggerGrant:
		if c.Key == "" {
			return fmt.Errorf("trigger %q needs a \"key\"", c.Trigger)
		}
		if c.Timeout.IsZero() {
			c.timeout = DefaultTriggerTimeout
		} else if c.timeout <= 0 {
			return fmt.Errorf("\"timeout\" %q must be positive", c.Timeout)
		}
		if c.OnTimeout != "" && c.OnTimeout != "skip" && c.OnTimeout != OnTimeoutApply {
			return fmt.Errorf("\"on_timeout\" %q unknown (known: skip, apply)", c.OnTimeout)
		}
	default:
		return fmt.Errorf("unknown trigger %q (known: %s)", c.Trigger, TriggerGrant)
	}
	switch c.Client {
	case "":
	case Holder:
		if c.Key == "" {
			return fmt.Errorf("client %q needs a \"key\"", Holder)
		}
		if len(c.Clients) > 0 {
			return fmt.Errorf("give \"clients\" or \"client\": %q, not both", Holder)
		}
	default:
		return fmt.Errorf("unknown client selector %q (the only one is %q; list client numbers in \"clients\")", c.Client, Holder)
	}
	switch c.Node {
	case "":
	case NodeLease:
		if c.Key == "" {
			return fmt.Errorf("node %q needs a \"key\": the lock key whose lease it finds", NodeLease)
		}
	case NodePrimary:
		if !s.Topology.Traits().OnePrimary {
			return fmt.Errorf("node %q: topology %s has no primary", NodePrimary, s.Topology)
		}
	default:
		return fmt.Errorf("unknown node selector %q (known: %s, %s; name nodes in \"nodes\")", c.Node, NodeLease, NodePrimary)
	}
	if c.Node != "" && len(c.Nodes) > 0 {
		return fmt.Errorf("give \"nodes\" or \"node\": %q, not both", c.Node)
	}
	if c.Key != "" && c.Trigger == "" && c.Client == "" && c.Node != NodeLease {
		return fmt.Errorf("\"key\" is for a trigger, the %q client or the %q node; there is none", Holder, NodeLease)
	}
	return nil
}

func checkNodes(nodes []string, t cluster.Topology) error {
	all := t.Nodes()
	seen := map[string]bool{}
	for _, n := range nodes {
		if !slices.Contains(all, n) {
			return fmt.Errorf("no node %q in %s (nodes: %s)", n, t, strings.Join(all, ", "))
		}
		if seen[n] {
			return fmt.Errorf("node %q named twice", n)
		}
		seen[n] = true
	}
	return nil
}

func checkClients(clients []int, n int) error {
	seen := map[int]bool{}
	for _, i := range clients {
		if i < 0 || i >= n {
			if n == 0 {
				return fmt.Errorf("no client %d: the run has no clients", i)
			}
			return fmt.Errorf("no client %d: clients are 0..%d", i, n-1)
		}
		if seen[i] {
			return fmt.Errorf("client %d named twice", i)
		}
		seen[i] = true
	}
	return nil
}

// overlaps finds steps whose windows collide in a way the faults cannot
// take: two lifecycle faults (kill, restart, pause) on one node, anything
// on a node during a failover, two failovers, and one lock step of one
// client armed twice. A node chosen by a selector may be any node. Link,
// clock, gate and client-pause faults compose.
func overlaps(steps []*compiled, s Setup) []error {
	return conflicts(steps, 0, s, (*compiled).window)
}

// conflicts is overlaps of the steps from index from on with every step
// before them, each step's window as window says (the generator stretches
// them by what a start or a failover may take).
func conflicts(steps []*compiled, from int, s Setup, window func(*compiled) (from, to time.Duration)) []error {
	var errs []error
	for i, a := range steps {
		if i < from {
			continue
		}
		for _, b := range steps[:i] {
			af, at := window(a)
			bf, bt := window(b)
			if !(af < bt && bf < at) {
				continue
			}
			ta, tb := a.kind.traits(), b.kind.traits()
			why := ""
			switch {
			case ta.failover && tb.failover:
				why = "two failovers cannot overlap"
			case ta.failover && tb.lifecycle, tb.failover && ta.lifecycle:
				why = "a node cannot be killed, restarted or paused during a failover"
			case ta.lifecycle && tb.lifecycle:
				if n := common(a.nodes(s), b.nodes(s)); n != "" {
					why = fmt.Sprintf("both hit %s, and a node can be killed, restarted or paused by one step at a time", n)
					if a.Node != "" || b.Node != "" {
						why = "both may hit one node (a node chosen by \"node\" may be any), and a node can be killed, restarted or paused by one step at a time"
					}
				}
			case ta.arms && tb.arms && a.LockStep == b.LockStep:
				if a.holder() || b.holder() || commonInt(a.Clients, b.Clients) {
					why = fmt.Sprintf("both arm lock step %q of the same client", a.LockStep)
				}
			default:
				why = settingsConflict(a, b, s)
			}
			if why != "" {
				errs = append(errs, fmt.Errorf("%s: overlaps %s between %v and %v: %s", a.name(), b.name(), max(af, bf), min(at, bt), why))
			}
		}
	}
	return errs
}

// settingsKind is a kind that changes a node's settings and restores them
// at its heal (memory, refuse-writes): a node takes one step of such a
// kind at a time, and none during a failover, which moves roles.
type settingsKind interface{ changesSettings() }

// settingsConflict says why two overlapping steps collide over a node's
// settings, or "".
func settingsConflict(a, b *compiled, s Setup) string {
	_, sa := a.kind.(settingsKind)
	_, sb := b.kind.(settingsKind)
	switch {
	case sa && b.kind.traits().failover, sb && a.kind.traits().failover:
		return "a node's settings cannot be changed during a failover"
	case sa && sb && a.Fault == b.Fault:
		if common(a.nodes(s), b.nodes(s)) != "" {
			return fmt.Sprintf("both may change the settings of one node, and a node takes one %s step at a time", a.Fault)
		}
	}
	return ""
}

func common(a, b []string) string {
	for _, x := range a {
		if slices.Contains(b, x) {
			return x
		}
	}
	return ""
}

func commonInt(a, b []int) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
