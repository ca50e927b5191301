package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
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
	to = c.at + c.dur + c.span(c.Delay) + c.span(c.Lag) + c.span(c.After)
	if c.triggered() {
		to += c.timeout
	}
	return c.at, to
}

// Validate checks the plan against a setup and returns every problem, one
// per line. A problem of a step names it by its path within the plan's
// steps (internal/field, numbered from 0 as in JSON): the field at fault,
// "[2].offset: must be non-zero …", or the step and its kind, "[2]
// (failover): topology independent:5 has no replicas" (a runner plan's
// faults read "faults[2].offset"). The nemesis's records and its errors
// while it runs name a step as "step 3 (failover)", numbered from 1.
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
		return nil, field.Join(errs...)
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
	if st.Fault == "" {
		return nil, stepError(i, st.Fault, field.Errorf("fault", "%v is missing", field.Self))
	}
	fk, err := lookup(st.Fault)
	if err != nil {
		return nil, stepError(i, st.Fault, field.Errorf("fault", "%w", err))
	}
	c.kind = fk
	if err := c.checkCommon(s); err != nil {
		return nil, stepError(i, st.Fault, err)
	}
	if err := fk.check(c, s); err != nil {
		return nil, stepError(i, st.Fault, err)
	}
	return c, nil
}

// stepError is err as an error of step i (of kind k), its path within the
// plan's steps: an error about one of the step's fields gets the step in
// front of its path ("[2].offset"), any other error names the step and
// its kind ("[2] (failover): …"). A plan's faults put "faults" in front.
func stepError(i int, k Kind, err error) error {
	at := fmt.Sprintf("[%d]", i)
	if _, ok := err.(*field.Error); ok {
		return field.Within(at, err)
	}
	return field.Errorf(at, "%v (%s): %w", field.Self, k, err)
}

// checkCommon checks what every kind's step shares: the fields its kind
// takes, at, for, delay and lag, the selectors, the targets, link modes
// and directions, persistence. It fills in the spans and defaults.
func (c *compiled) checkCommon(s Setup) error {
	st, fk := c.Step, c.kind
	if err := fk.needs().check(s); err != nil {
		return err
	}
	for _, f := range st.setFields() {
		if !slices.Contains(fk.fields(), f) {
			return field.Errorf(f, "does not apply to %s (it takes %s)", st.Fault, strings.Join(fk.fields(), ", "))
		}
	}
	c.at, c.dur, c.timeout = c.span(st.At), c.span(st.For), c.span(st.Timeout)
	if c.at < 0 {
		return field.Errorf("at", "%q is negative", st.At)
	}
	switch fk.duration() {
	case forPositive:
		if c.dur <= 0 {
			return field.Errorf("for", "must be positive for %s (how long until the heal), got %q", st.Fault, st.For)
		}
	case forZero:
		if !st.For.IsZero() {
			return field.Errorf("for", "%s takes none: it lasts until the nodes answer again (use \"delay\" to keep them down)", st.Fault)
		}
	case forAny:
		if c.dur < 0 {
			return field.Errorf("for", "%q is negative", st.For)
		}
	}
	for name, sp := range map[string]Span{"delay": st.Delay, "lag": st.Lag, "after": st.After} {
		if c.span(sp) < 0 {
			return field.Errorf(name, "%q is negative", sp)
		}
	}
	if err := c.checkSelectors(s); err != nil {
		return err
	}
	if err := checkNodes(st.Nodes, s.Topology); err != nil {
		return err
	}
	if err := checkClients(st.Clients, s.Clients); err != nil {
		return err
	}
	if err := c.checkTargets(); err != nil {
		return err
	}
	if st.Persistence != "" {
		if err := st.Persistence.Validate(); err != nil {
			return field.Errorf("persistence", "%w", err)
		}
	}
	return nil
}

// checkTargets checks that a step on nodes or clients names them, and the
// link mode and direction (defaults: blackhole, both).
func (c *compiled) checkTargets() error {
	switch c.kind.targets() {
	case targetsNodes:
		if len(c.Nodes) == 0 && c.Node == "" {
			return fmt.Errorf("needs \"nodes\", or \"node\": %q or %q", NodeLease, NodePrimary)
		}
	case targetsClients:
		if len(c.Clients) == 0 && c.Client == "" {
			return fmt.Errorf("needs \"clients\" or \"client\": %q", Holder)
		}
	}
	c.mode, c.dir = c.Mode, c.Direction
	if c.mode == "" {
		c.mode = cluster.Blackhole
	}
	if c.dir == "" {
		c.dir = cluster.Both
	}
	if c.mode != cluster.Reset && c.mode != cluster.Blackhole {
		return field.Errorf("mode", "%q unknown (reset or blackhole)", c.Mode)
	}
	if c.dir != cluster.Both && c.dir != cluster.Upstream && c.dir != cluster.Downstream {
		return field.Errorf("direction", "%q unknown (upstream, downstream or both)", c.Direction)
	}
	return nil
}

// checkSelectors checks the trigger and the role selectors, "client" and
// "node", and the key they need.
func (c *compiled) checkSelectors(s Setup) error {
	switch c.Trigger {
	case "":
		if !c.Timeout.IsZero() {
			return field.Errorf("timeout", "is for a triggered step; there is no %v", field.Ref("trigger"))
		}
		if c.OnTimeout != "" {
			return field.Errorf("on_timeout", "is for a triggered step; there is no %v", field.Ref("trigger"))
		}
		if !c.After.IsZero() {
			return field.Errorf("after", "is for a triggered step (how long after its event it applies); there is no %v: put the time in %v", field.Ref("trigger"), field.Ref("at"))
		}
	case TriggerGrant:
		if c.Key == "" {
			return field.Errorf("key", "%v is missing: trigger %q waits for a grant of it", field.Self, c.Trigger)
		}
		if c.Timeout.IsZero() {
			c.timeout = DefaultTriggerTimeout
		} else if c.timeout <= 0 {
			return field.Errorf("timeout", "%q must be positive", c.Timeout)
		}
		if c.OnTimeout != "" && c.OnTimeout != "skip" && c.OnTimeout != OnTimeoutApply {
			return field.Errorf("on_timeout", "%q unknown (known: skip, apply)", c.OnTimeout)
		}
	default:
		return field.Errorf("trigger", "%q unknown (known: %s)", c.Trigger, TriggerGrant)
	}
	switch c.Client {
	case "":
	case Holder:
		if c.Key == "" {
			return field.Errorf("key", "%v is missing: client %q is the holder of a grant of it", field.Self, Holder)
		}
		if len(c.Clients) > 0 {
			return field.Errorf("client", "give %v or %v %q, not both", field.Ref("clients"), field.Self, Holder)
		}
	default:
		return field.Errorf("client", "unknown selector %q (the only one is %q; list client numbers in %v)", c.Client, Holder, field.Ref("clients"))
	}
	switch c.Node {
	case "":
	case NodeLease:
		if c.Key == "" {
			return field.Errorf("key", "%v is missing: node %q is a node of the lease on it", field.Self, NodeLease)
		}
	case NodePrimary:
		if !s.Topology.Traits().OnePrimary {
			return field.Errorf("node", "%q: topology %s has no primary", NodePrimary, s.Topology)
		}
	default:
		return field.Errorf("node", "unknown selector %q (known: %s, %s; name nodes in %v)", c.Node, NodeLease, NodePrimary, field.Ref("nodes"))
	}
	if c.Node != "" && len(c.Nodes) > 0 {
		return field.Errorf("node", "give %v or %v %q, not both", field.Ref("nodes"), field.Self, c.Node)
	}
	if c.Key != "" && c.Trigger == "" && c.Client == "" && c.Node != NodeLease {
		return field.Errorf("key", "is for a trigger, the %q client or the %q node; there is none", Holder, NodeLease)
	}
	return nil
}

func checkNodes(nodes []string, t cluster.Topology) error {
	all := t.Nodes()
	seen := map[string]bool{}
	for j, n := range nodes {
		at := fmt.Sprintf("nodes[%d]", j)
		if !slices.Contains(all, n) {
			return field.Errorf(at, "no node %q in %s (nodes: %s)", n, t, strings.Join(all, ", "))
		}
		if seen[n] {
			return field.Errorf(at, "node %q named twice", n)
		}
		seen[n] = true
	}
	return nil
}

func checkClients(clients []int, n int) error {
	seen := map[int]bool{}
	for j, i := range clients {
		at := fmt.Sprintf("clients[%d]", j)
		if i < 0 || i >= n {
			if n == 0 {
				return field.Errorf(at, "no client %d: the run has no clients", i)
			}
			return field.Errorf(at, "no client %d: clients are 0..%d", i, n-1)
		}
		if seen[i] {
			return field.Errorf(at, "client %d named twice", i)
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
			failover := func(t history.TraitSet) bool { return t.Has(history.PromotesReplica) }
			stops := func(t history.TraitSet) bool { return t.Has(history.StopsNode) }
			why := ""
			switch {
			case failover(ta) && failover(tb):
				why = "two failovers cannot overlap"
			case failover(ta) && stops(tb), failover(tb) && stops(ta):
				why = "a node cannot be killed, restarted or paused during a failover"
			case stops(ta) && stops(tb):
				if n := common(a.nodes(s), b.nodes(s)); n != "" {
					why = fmt.Sprintf("both hit %s, and a node can be killed, restarted or paused by one step at a time", n)
					if a.Node != "" || b.Node != "" {
						why = "both may hit one node (a node chosen by \"node\" may be any), and a node can be killed, restarted or paused by one step at a time"
					}
				}
			case ta.Has(history.ArmsStep) && tb.Has(history.ArmsStep) && a.LockStep == b.LockStep:
				if a.holder() || b.holder() || commonInt(a.Clients, b.Clients) {
					why = fmt.Sprintf("both arm lock step %q of the same client", a.LockStep)
				}
			default:
				why = settingsConflict(a, b, s)
			}
			if why != "" {
				errs = append(errs, field.Errorf(fmt.Sprintf("[%d]", a.idx), "%v (%s) overlaps %v (%s) between %v and %v: %s",
					field.Self, a.Fault, field.Ref(fmt.Sprintf("[%d]", b.idx)), b.Fault, max(af, bf), min(at, bt), why))
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
	case sa && b.kind.traits().Has(history.PromotesReplica), sb && a.kind.traits().Has(history.PromotesReplica):
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
