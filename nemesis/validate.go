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

// compiled is a validated step with its spans resolved against the TTL.
type compiled struct {
	Step
	idx                                                                  int // position in Plan.Steps
	shape                                                                Shape
	mode                                                                 cluster.CutMode
	dir                                                                  cluster.Direction
	at, dur, timeout, latency, jitter, delay, offset, strobe, lag, pause time.Duration
}

// name is how errors and records refer to the step: numbered from 1.
func (c *compiled) name() string { return fmt.Sprintf("step %d (%s)", c.idx+1, c.Fault) }

// id pairs the step's start and stop records.
func (c *compiled) id() string { return fmt.Sprintf("f%d", c.idx+1) }

// triggered reports whether the step waits for a grant.
func (c *compiled) triggered() bool { return c.Trigger != "" }

// holder reports whether the step targets the holder of Key.
func (c *compiled) holder() bool { return c.Client == Holder }

// window is the longest the step can be active: its event may come as late
// as At+Timeout, then it lasts For (plus a restart's delay or a failover's
// lag). The time a node takes to start or a failover to complete is not
// known in advance; Run refuses what still collides at run time.
func (c *compiled) window() (from, to time.Duration) {
	to = c.at + c.dur + c.delay + c.lag
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
		for _, sp := range st.spans() {
			relative = relative || sp.Relative()
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
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	if len(errs) == 0 {
		errs = overlaps(out)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (st Step) spans() []Span {
	return []Span{st.At, st.Timeout, st.For, st.Latency, st.Jitter, st.Delay, st.Offset, st.Strobe, st.Lag, st.Pause}
}

// kindRule says what a kind takes.
type kindRule struct {
	fields []string // parameter and target fields it accepts
	forReq int      // forPositive, forZero or forAny
}

const (
	forPositive = iota
	forZero
	forAny
)

var rules = map[Kind]kindRule{
	Partition:       {[]string{"nodes", "clients", "client", "links", "shape", "mode", "direction"}, forPositive},
	Latency:         {[]string{"nodes", "clients", "client", "links", "shape", "direction", "latency", "jitter"}, forPositive},
	Kill:            {[]string{"nodes", "persistence"}, forPositive},
	Restart:         {[]string{"nodes", "persistence", "delay"}, forZero},
	Pause:           {[]string{"nodes"}, forPositive},
	Clock:           {[]string{"nodes", "offset", "strobe"}, forPositive},
	Failover:        {[]string{"via", "nodes", "cut_replication", "lag"}, forAny},
	ClientPause:     {[]string{"clients", "client"}, forPositive},
	ClientClock:     {[]string{"clients", "client", "offset"}, forPositive},
	StepPause:       {[]string{"clients", "client", "step", "pause"}, forPositive},
	StepCrash:       {[]string{"clients", "client", "step"}, forPositive},
	ClientPartition: {[]string{"clients", "client", "mode", "direction"}, forPositive},
}

// setFields are the JSON names of the step's target and parameter fields
// that are set.
func (st Step) setFields() []string {
	var f []string
	add := func(set bool, name string) {
		if set {
			f = append(f, name)
		}
	}
	add(len(st.Nodes) > 0, "nodes")
	add(len(st.Clients) > 0, "clients")
	add(st.Client != "", "client")
	add(len(st.Links) > 0, "links")
	add(st.Shape != "", "shape")
	add(st.Mode != "", "mode")
	add(st.Direction != "", "direction")
	add(!st.Latency.IsZero(), "latency")
	add(!st.Jitter.IsZero(), "jitter")
	add(st.Persistence != "", "persistence")
	add(!st.Delay.IsZero(), "delay")
	add(!st.Offset.IsZero(), "offset")
	add(!st.Strobe.IsZero(), "strobe")
	add(st.Via != "", "via")
	add(st.CutReplication, "cut_replication")
	add(!st.Lag.IsZero(), "lag")
	add(st.LockStep != "", "step")
	add(!st.Pause.IsZero(), "pause")
	return f
}

func isClientKind(k Kind) bool {
	switch k {
	case ClientPause, ClientClock, StepPause, StepCrash, ClientPartition:
		return true
	}
	return false
}

func isNodeKind(k Kind) bool { return k == Kill || k == Restart || k == Pause || k == Clock }

// supports says why a setup cannot take a kind at all, if it cannot.
func supports(k Kind, s Setup) error {
	if _, ok := rules[k]; !ok {
		names := make([]string, len(Kinds))
		for i, k := range Kinds {
			names[i] = string(k)
		}
		return fmt.Errorf("unknown fault %q (known: %s)", k, strings.Join(names, ", "))
	}
	if slices.Contains(s.Refuses, k) {
		return fmt.Errorf("the cluster's provider cannot take %s faults", k)
	}
	switch {
	case k == Failover && s.Topology.Kind != cluster.Replicated:
		return fmt.Errorf("topology %s has no replicas", s.Topology)
	case k == Clock && !s.NodeClock:
		return errors.New("the data nodes run without the clock shim (start the cluster with Spec.Clock)")
	case isClientKind(k) && s.Clients == 0:
		return errors.New("the run has no clients")
	case (k == ClientPause || k == StepPause) && s.ClientMode == InProcessClients:
		return errors.New("needs clients in process mode: a real pause is a SIGSTOP of the client's process")
	}
	return nil
}

func compileStep(i int, st Step, ttl time.Duration, s Setup) (*compiled, error) {
	c := &compiled{Step: st, idx: i}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("step %d (%s): %s", i+1, st.Fault, fmt.Sprintf(format, args...))
	}
	if st.Fault == "" {
		return nil, fmt.Errorf("step %d: no \"fault\"", i+1)
	}
	if err := supports(st.Fault, s); err != nil {
		return nil, fail("%v", err)
	}
	rule := rules[st.Fault]
	for _, f := range st.setFields() {
		if !slices.Contains(rule.fields, f) {
			return nil, fail("%q does not apply to %s (it takes %s)", f, st.Fault, strings.Join(rule.fields, ", "))
		}
	}
	c.at, c.dur, c.timeout = st.At.Resolve(ttl), st.For.Resolve(ttl), st.Timeout.Resolve(ttl)
	c.latency, c.jitter, c.delay = st.Latency.Resolve(ttl), st.Jitter.Resolve(ttl), st.Delay.Resolve(ttl)
	c.offset, c.strobe, c.lag, c.pause = st.Offset.Resolve(ttl), st.Strobe.Resolve(ttl), st.Lag.Resolve(ttl), st.Pause.Resolve(ttl)
	if c.at < 0 {
		return nil, fail("at %q is negative", st.At)
	}
	switch rule.forReq {
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
	for name, d := range map[string]time.Duration{"delay": c.delay, "lag": c.lag} {
		if d < 0 {
			return nil, fail("%q is negative", name)
		}
	}

	// Trigger and selectors.
	switch st.Trigger {
	case "":
		if !st.Timeout.IsZero() || st.OnTimeout != "" {
			return nil, fail("\"timeout\" and \"on_timeout\" are for triggered steps; there is no \"trigger\"")
		}
	case TriggerGrant:
		if st.Key == "" {
			return nil, fail("trigger %q needs a \"key\"", st.Trigger)
		}
		if st.Timeout.IsZero() {
			c.timeout = DefaultTriggerTimeout
		} else if c.timeout <= 0 {
			return nil, fail("\"timeout\" %q must be positive", st.Timeout)
		}
		if st.OnTimeout != "" && st.OnTimeout != "skip" && st.OnTimeout != OnTimeoutApply {
			return nil, fail("\"on_timeout\" %q unknown (known: skip, apply)", st.OnTimeout)
		}
	default:
		return nil, fail("unknown trigger %q (known: %s)", st.Trigger, TriggerGrant)
	}
	switch st.Client {
	case "":
	case Holder:
		if st.Key == "" {
			return nil, fail("client %q needs a \"key\"", Holder)
		}
		if len(st.Clients) > 0 {
			return nil, fail("give \"clients\" or \"client\": %q, not both", Holder)
		}
	default:
		return nil, fail("unknown client selector %q (the only one is %q; list client numbers in \"clients\")", st.Client, Holder)
	}
	if st.Key != "" && st.Trigger == "" && st.Client == "" {
		return nil, fail("\"key\" is for a trigger or the %q target; there is neither", Holder)
	}
	if err := checkNodes(st.Nodes, s.Topology); err != nil {
		return nil, fail("%v", err)
	}
	if err := checkClients(st.Clients, s.Clients); err != nil {
		return nil, fail("%v", err)
	}
	if isClientKind(st.Fault) && len(st.Clients) == 0 && st.Client == "" {
		return nil, fail("needs \"clients\" or \"client\": %q", Holder)
	}
	if isNodeKind(st.Fault) && len(st.Nodes) == 0 {
		return nil, fail("needs \"nodes\"")
	}

	// Link parameters.
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

	var err error
	switch st.Fault {
	case Partition, Latency:
		err = c.compileShape(s)
		if err == nil && st.Fault == Latency {
			switch {
			case c.latency < minDelay:
				err = fmt.Errorf("needs a \"latency\" of at least %v (toxiproxy works in milliseconds), got %q", minDelay, st.Latency)
			case c.jitter < 0 || c.jitter > c.latency:
				err = fmt.Errorf("\"jitter\" %q must be between 0 and the latency %q", st.Jitter, st.Latency)
			}
		}
	case ClientPartition:
		c.shape = ShapeClient
	case Clock:
		switch {
		case c.offset == 0:
			err = errors.New("needs a non-zero \"offset\" (\"+2ttl\" ahead, \"-500ms\" behind)")
		case st.Strobe.IsZero():
		case c.strobe <= 0 || c.strobe >= c.dur:
			err = fmt.Errorf("\"strobe\" %q must be positive and shorter than \"for\" %q", st.Strobe, st.For)
		}
	case ClientClock:
		if c.offset == 0 {
			err = errors.New("needs a non-zero \"offset\"")
		}
	case StepPause, StepCrash:
		if st.LockStep == "" {
			err = errors.New("needs the lock \"step\" to arm")
		} else if st.Fault == StepPause && c.pause <= 0 {
			err = fmt.Errorf("needs a positive \"pause\", got %q", st.Pause)
		}
	case Failover:
		err = c.compileFailover(s)
	}
	if err != nil {
		return nil, fail("%v", err)
	}
	return c, nil
}

func (c *compiled) compileShape(s Setup) error {
	hasNodes, hasClients, hasLinks := len(c.Nodes) > 0, len(c.Clients) > 0 || c.Client != "", len(c.Links) > 0
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
			return errors.New("needs targets: \"nodes\", \"clients\", \"client\": \"holder\", \"links\", or a \"shape\"")
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
		if s.Topology.Kind != cluster.Replicated {
			return fmt.Errorf("topology %s has no replication links", s.Topology)
		}
		return only("\"nodes\" (replicas; all if none)", !hasClients && !hasLinks)
	case ShapeBridge:
		if c.Fault != Partition {
			return errors.New("a bridge is a partition shape")
		}
		if n := len(s.Topology.Nodes()); n < 3 || s.Clients < 2 {
			return fmt.Errorf("a bridge needs at least 3 nodes and 2 clients, the setup has %d and %d", n, s.Clients)
		}
		return only("no targets (it splits all clients and nodes)", !hasNodes && !hasClients && !hasLinks)
	case ShapeLinks:
		if !hasLinks {
			return fmt.Errorf("shape %q needs \"links\"", c.shape)
		}
		if err := only("\"links\"", !hasNodes && !hasClients); err != nil {
			return err
		}
		return checkLinks(c.Links, s)
	}
	return fmt.Errorf("unknown shape %q (nodes, isolate, client, replication, bridge or links)", c.shape)
}

func (c *compiled) compileFailover(s Setup) error {
	switch c.Via {
	case ViaKill, ViaSentinel:
		if !s.Topology.Sentinels {
			return fmt.Errorf("via %q needs Sentinels (topology %s+sentinels); use via %q", c.Via, s.Topology, ViaPromote)
		}
		if len(c.Nodes) > 0 {
			return fmt.Errorf("via %q lets Sentinel choose the replica; \"nodes\" is for via %q", c.Via, ViaPromote)
		}
	case ViaPromote:
		if len(c.Nodes) != 1 {
			return fmt.Errorf("via %q needs the one replica to promote in \"nodes\"", c.Via)
		}
	case "":
		return fmt.Errorf("needs \"via\": %q, %q or %q", ViaKill, ViaSentinel, ViaPromote)
	default:
		return fmt.Errorf("unknown via %q (%s, %s or %s)", c.Via, ViaKill, ViaSentinel, ViaPromote)
	}
	if !c.Lag.IsZero() && !c.CutReplication {
		return errors.New("\"lag\" is how long replication stays cut before the failover; it needs \"cut_replication\"")
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

// checkLinks checks explicit link names against the links the setup's
// cluster has.
func checkLinks(links []string, s Setup) error {
	nodes := s.Topology.Nodes()
	for _, name := range links {
		l, err := cluster.ParseLink(name)
		if err != nil {
			return err
		}
		if !slices.Contains(nodes, l.To) {
			return fmt.Errorf("link %q: no node %q in %s", name, l.To, s.Topology)
		}
		ok := false
		switch {
		case strings.HasPrefix(l.From, "c"):
			for i := 0; i < s.Clients && !ok; i++ {
				ok = l.From == fmt.Sprintf("c%d", i)
			}
		case l.From == "peer":
			ok = s.Topology.Kind == cluster.Replicated
		default:
			ok = s.Topology.Kind == cluster.Replicated && slices.Contains(nodes, l.From) && l.From != l.To
		}
		if !ok {
			return fmt.Errorf("no link %q: links are c0..c%d->node (c<i> is client i), and for a replicated topology replica->node and peer->node", name, s.Clients-1)
		}
	}
	return nil
}

// overlaps finds steps whose windows collide in a way the faults cannot
// take: two lifecycle faults (kill, restart, pause) on one node, anything
// on a node during a failover, two failovers, and one lock step of one
// client armed twice. Link, clock, gate and client-pause faults compose.
func overlaps(steps []*compiled) []error {
	var errs []error
	for i, a := range steps {
		for _, b := range steps[:i] {
			af, at := a.window()
			bf, bt := b.window()
			if !(af < bt && bf < at) {
				continue
			}
			why := ""
			switch {
			case a.Fault == Failover && b.Fault == Failover:
				why = "two failovers cannot overlap"
			case a.Fault == Failover && isLifecycle(b.Fault), b.Fault == Failover && isLifecycle(a.Fault):
				why = "a node cannot be killed, restarted or paused during a failover"
			case isLifecycle(a.Fault) && isLifecycle(b.Fault):
				if n := common(a.Nodes, b.Nodes); n != "" {
					why = fmt.Sprintf("both hit %s, and a node can be killed, restarted or paused by one step at a time", n)
				}
			case a.Fault.ArmsStep() && b.Fault.ArmsStep() && a.LockStep == b.LockStep:
				if a.holder() || b.holder() || commonInt(a.Clients, b.Clients) {
					why = fmt.Sprintf("both arm lock step %q of the same client", a.LockStep)
				}
			}
			if why != "" {
				errs = append(errs, fmt.Errorf("%s: overlaps %s between %v and %v: %s", a.name(), b.name(), max(af, bf), min(at, bt), why))
			}
		}
	}
	return errs
}

func isLifecycle(k Kind) bool { return k == Kill || k == Restart || k == Pause }

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
