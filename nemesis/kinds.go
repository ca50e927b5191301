package nemesis

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/workloads"
)

// faultKind is everything the package knows about one kind of fault, kept
// in the kind's own file (kind_<name>.go), in the manner of etcd's
// robustness failpoints and Jepsen's nemesis packages: the kind bundles its
// fields and their rules, what it needs of the run, how it is applied and
// healed, its sentence in the history, and how the generator draws it.
// What faults share — the event loop, the link table, undo lists, counted
// pauses, gates and clock shares, the overlap rules, target selectors —
// stays in the shared files.
type faultKind interface {
	kind() Kind
	// doc is one sentence saying what the fault does.
	doc() string
	// fields are the step fields it takes besides the ones every step has
	// (at, trigger, key, timeout, on_timeout, after, fault, for), targets first.
	fields() []string
	// duration says what it takes as "for".
	duration() forRule
	// needs is what it needs of the run at all (Kind.Available).
	needs() needs
	// targets says what its steps must name.
	targets() targetKind
	// traits are what its faults do (history.Trait), recorded on every
	// fault of the kind: what the windows, the checkers and guidance read,
	// and what the overlap rules, the runner and the generator ask of a
	// kind where a trait says it (stops-node, restarts-node, arms-step,
	// promotes-replica, slows-links). Every kind declares at least one.
	traits() history.TraitSet
	// sharing says what else the overlap rules, the sentences and the
	// generator need to know of it.
	sharing() sharing
	// check is the kind's own rules on a step, after the shared ones
	// (fields, spans, selectors, target names) passed.
	check(c *compiled, s Setup) error
	// apply starts step i's fault on its resolved targets, registering an
	// undo for each part as soon as it took effect (see runner.apply).
	apply(r *runner, i int, t target) error
	// describe is the fault's sentence, with its targets as resolved (or
	// as planned, for a step that was skipped).
	describe(c *compiled, t target) string
	// draw makes a step of this kind for the generator aimed as asked;
	// false when the kind has no such shape in this run.
	draw(g *gen, a aim) (Step, bool)
}

// registry lists every kind, in the order the documentation gives them:
// each kind's file registers it, with its rank in that order, from an init
// function (register), so a new kind touches no other file.
var registry []faultKind

// ranks are the registered kinds' ranks, in the registry's order.
var ranks []int

// Kinds lists every fault kind, in the registry's order.
var Kinds []Kind

// register adds kind k at rank (its place in the documented order; ranks
// are unique). It is called from the kinds' init functions only.
func register(rank int, k faultKind) {
	i, dup := slices.BinarySearch(ranks, rank)
	if dup || slices.Contains(Kinds, k.kind()) {
		panic(fmt.Sprintf("nemesis: kind %s registered twice, or at rank %d taken", k.kind(), rank))
	}
	ranks = slices.Insert(ranks, i, rank)
	registry = slices.Insert(registry, i, k)
	Kinds = slices.Insert(Kinds, i, k.kind())
}

// KindList is fault kinds as a command-line flag gives them (a
// pflag.Value): comma separated, repeatable, a kind given twice weighs
// twice as much when a schedule is drawn ("kill,partition,partition").
type KindList []Kind

// String is the kinds comma separated.
func (l KindList) String() string {
	s := make([]string, len(l))
	for i, k := range l {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// Set adds the comma-separated kinds of v, refusing an unknown one.
func (l *KindList) Set(v string) error {
	for _, name := range strings.Split(v, ",") {
		k, err := ParseKind(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		*l = append(*l, k)
	}
	return nil
}

// ParseKind is the kind called name, or an error listing the kinds.
func ParseKind(name string) (Kind, error) {
	if _, err := lookup(Kind(name)); err != nil {
		return "", err
	}
	return Kind(name), nil
}

// Type names a kinds flag's value in help.
func (*KindList) Type() string { return "strings" }

func lookup(k Kind) (faultKind, error) {
	for _, fk := range registry {
		if fk.kind() == k {
			return fk, nil
		}
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return nil, fmt.Errorf("unknown fault %q (known: %s)", k, strings.Join(names, ", "))
}

// Available says why a run with setup s cannot take the kind at all, or nil
// when it can: the topology, the clients and their mode, the clock shim and
// the provider's controls it needs. Unknown kinds are an error too.
func (k Kind) Available(s Setup) error {
	fk, err := lookup(k)
	if err != nil {
		return err
	}
	return fk.needs().check(s)
}

// ArmsStep reports whether the kind arms a lock step (history.ArmsStep:
// step-pause, step-crash): it acts only if a target client reaches that
// step while armed.
func (k Kind) ArmsStep() bool { return k.Traits().Has(history.ArmsStep) }

// Traits are what the kind's faults do, as its file declares them; none
// for a kind that is not one.
func (k Kind) Traits() history.TraitSet {
	fk, err := lookup(k)
	if err != nil {
		return nil
	}
	return slices.Clone(fk.traits())
}

// KindsWith lists the kinds with any of traits, in the registry's order: a
// family of faults declared once as the traits its kinds share
// (Families).
func KindsWith(traits ...history.Trait) []Kind {
	var out []Kind
	for _, fk := range registry {
		if fk.traits().Has(traits...) {
			out = append(out, fk.kind())
		}
	}
	return out
}

// NeedsNodeClock reports whether the kind shifts the data nodes' clocks,
// so the cluster must start them with the clock shim.
func (k Kind) NeedsNodeClock() bool {
	fk, err := lookup(k)
	return err == nil && fk.needs().nodeClock
}

// NeedsNodeClock reports whether any step of the plan needs the data
// nodes' clock shim.
func (p Plan) NeedsNodeClock() bool {
	return slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Fault.NeedsNodeClock() })
}

// forRule says what a kind takes as "for".
type forRule int

const (
	forPositive forRule = iota // how long until the heal: required
	forZero                    // none: the fault ends by itself
	forAny                     // optional: at least this long
)

func (f forRule) String() string {
	return [...]string{"for > 0", "no for", "for ≥ 0"}[f]
}

// targetKind is what a kind's steps must name.
type targetKind int

const (
	targetsNone    targetKind = iota // the fault picks its own (failover)
	targetsNodes                     // "nodes" or "node"
	targetsClients                   // "clients" or "client"
	targetsLinks                     // links by shape: nodes, clients, links or none
)

// sharing is what the overlap rules, the sentences and the generator know
// of a kind besides its traits (which say that it stops a node, restarts
// one, arms a lock step, promotes a replica or slows links: the overlap
// rules and the runner read those from its traits).
type sharing struct {
	// gates: a link fault that also holds back the client's requests to
	// the protected resource (counted gates).
	gates bool
	// forgets: aimed at a lease, it hits a node the lease rests on, which
	// may then forget it or let it expire early (kill, restart, clock,
	// pause): a follow-up to a bare-majority cut.
	forgets bool
	// allowance is how long the fault may last past its planned end: a
	// node's start, a failover. The generator leaves that much time.
	allowance time.Duration
}

// needs is what a kind needs of the run at all.
type needs struct {
	// controls of the provider (cluster.Controls).
	controls cluster.Controls
	// nodeClock: the data nodes run with the clock shim.
	nodeClock bool
	// replicated: a topology with replicas (replicated, groups of a
	// primary and a replica, or a cluster whose shards have replicas).
	replicated bool
	// clients: the run has workload clients.
	clients bool
	// processClients: the clients run as processes (a real SIGSTOP).
	processClients bool
	// links: something to cut or delay — clients, or replication links.
	links bool
}

func (n needs) check(s Setup) error {
	switch {
	case n.replicated && s.Topology.Traits().Failovers == 0:
		return fmt.Errorf("topology %s has no replicas", s.Topology)
	case n.links && s.Clients == 0 && !s.Topology.Traits().NodeLinks:
		return fmt.Errorf("topology %s without clients has no links to act on", s.Topology)
	case n.clients && s.Clients == 0:
		return errors.New("the run has no clients")
	case n.processClients && s.ClientMode.OrDefault() == workloads.InProcess:
		return errors.New("needs clients in process mode: a real pause is a SIGSTOP of the client's process")
	case n.nodeClock && !s.NodeClock:
		return errors.New("the data nodes run without the clock shim (start the cluster with Spec.Clock)")
	}
	return s.provides(n.controls)
}

// provides says why the setup's provider lacks a control in c, if it does.
// Without a provider at hand every control is assumed.
func (s Setup) provides(c cluster.Controls) error {
	if s.Provider == "" || s.Controls.Has(c) {
		return nil
	}
	return fmt.Errorf("needs a provider that can %s nodes; the %s provider can %s", cluster.Controls(c&^s.Controls), s.Provider, s.Controls)
}

// String is the needs as the documentation lists them.
func (n needs) String() string {
	var out []string
	if n.replicated {
		out = append(out, "a replicated topology")
	}
	if n.links {
		out = append(out, "links (clients, or replication)")
	}
	if n.clients {
		out = append(out, "clients")
	}
	if n.processClients {
		out = append(out, "process clients")
	}
	if n.nodeClock {
		out = append(out, "the clock shim")
	}
	if n.controls != 0 {
		out = append(out, "provider control "+n.controls.String())
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// common are the step fields every kind takes.
var commonFields = []string{"at", "trigger", "key", "timeout", "on_timeout", "after", "fault", "for"}

// stepFields are the JSON names of Step's fields, in order, and
// stepFieldIndex where each sits: the kinds' parameter groups are embedded,
// so their fields are Step's own in the JSON.
var stepFields, stepFieldIndex = func() ([]string, [][]int) {
	var names []string
	var index [][]int
	for _, f := range reflect.VisibleFields(reflect.TypeFor[Step]()) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		index = append(index, f.Index)
	}
	return names, index
}()

// isZeroer is a field type with its own notion of absent (Span).
type isZeroer interface{ IsZero() bool }

// optionalField is a field of Step besides the common ones: its JSON name,
// where it sits, and how to tell it is set.
type optionalField struct {
	name  string
	index []int
	set   func(reflect.Value) bool
}

// optionalFields are worked out once: setFields runs for every step
// compiled, and a generator compiles many.
var optionalFields = func() []optionalField {
	var out []optionalField
	t := reflect.TypeFor[Step]()
	for i, name := range stepFields {
		if slices.Contains(commonFields, name) {
			continue
		}
		f := optionalField{name: name, index: stepFieldIndex[i]}
		ft := t.FieldByIndex(f.index).Type
		switch {
		case ft.Kind() == reflect.Slice:
			f.set = func(v reflect.Value) bool { return v.Len() > 0 }
		case ft.Implements(reflect.TypeFor[isZeroer]()):
			f.set = func(v reflect.Value) bool { return !v.Addr().Interface().(isZeroer).IsZero() }
		default:
			f.set = func(v reflect.Value) bool { return !v.IsZero() }
		}
		out = append(out, f)
	}
	return out
}()

// setFields are the JSON names of the step's fields that are set, besides
// the common ones.
func (st Step) setFields() []string {
	v := reflect.ValueOf(&st).Elem()
	var out []string
	for _, f := range optionalFields {
		if f.set(v.FieldByIndex(f.index)) {
			out = append(out, f.name)
		}
	}
	return out
}

// kindTable is the table of kinds the package documentation and the README
// give, rendered from the registry: a test keeps them in step.
func kindTable() string {
	var b strings.Builder
	for _, k := range registry {
		fmt.Fprintf(&b, "%s\n", k.kind())
		wrap(&b, k.doc())
		wrap(&b, fmt.Sprintf("takes: %s; %s", strings.Join(k.fields(), ", "), k.duration()))
		wrap(&b, "needs: "+k.needs().String())
		wrap(&b, "traits: "+k.traits().String())
	}
	return b.String()
}

// wrap writes text indented by four spaces, wrapped at 72 columns, its
// continuation lines indented by six.
func wrap(b *strings.Builder, text string) {
	line := "    "
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 72 && strings.TrimSpace(line) != "" {
			b.WriteString(line + "\n")
			line = "      "
		}
		if strings.TrimSpace(line) != "" {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
}

// kindBase gives a kind the common defaults.
type kindBase struct{}

func (kindBase) duration() forRule            { return forPositive }
func (kindBase) needs() needs                 { return needs{} }
func (kindBase) sharing() sharing             { return sharing{} }
func (kindBase) check(*compiled, Setup) error { return nil }
