package nemesis

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
)

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
	p := t.plan(links)
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
	if len(p.heals) > 0 { // Heal with no names would heal every link
		call(p.heals, t.c.Heal(p.heals...))
	}
	// Cuts before delays, so that a link is never briefly delayed but open.
	slices.SortStableFunc(p.order, func(a, b linkOp) int {
		return cmp.Compare(boolInt(a.cut == ""), boolInt(b.cut == ""))
	})
	for _, op := range p.order {
		if op.cut != "" {
			call(p.ops[op], t.c.Cut(op.cut, op.dir, p.ops[op]...))
		} else {
			call(p.ops[op], t.c.Delay(op.latency, op.jitter, op.dir, p.ops[op]...))
		}
	}
	// A link whose call failed is in an unknown state: the next change to
	// it heals it first.
	for l, w := range p.want {
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

// linkPlan is what reconcile does: the links to heal, the calls to make
// (each with the links it applies to, in the order first needed) and the
// state each link is to have.
type linkPlan struct {
	heals []string
	ops   map[linkOp][]string
	order []linkOp
	want  map[string]linkState
}

func (p *linkPlan) add(op linkOp, l string) {
	if _, ok := p.ops[op]; !ok {
		p.order = append(p.order, op)
	}
	p.ops[op] = append(p.ops[op], l)
}

// plan works out reconcile's calls for links: a link already as it should
// be (and not dirty) needs none; one whose cut must go, or that is dirty,
// is healed first; cuts and delays are one call for both directions when
// they agree.
func (t *linkTable) plan(links []string) *linkPlan {
	p := &linkPlan{ops: map[linkOp][]string{}, want: map[string]linkState{}}
	seen := map[string]bool{}
	for _, l := range links {
		if seen[l] {
			continue
		}
		seen[l] = true
		w, have := t.desired(l), t.applied[l]
		p.want[l] = w
		if w == have && !t.dirty[l] {
			continue
		}
		if w.empty() {
			p.heals = append(p.heals, l)
			continue
		}
		if t.dirty[l] || have.up.cut != "" && w.up.cut == "" || have.down.cut != "" && w.down.cut == "" {
			p.heals = append(p.heals, l)
			have = linkState{}
		}
		// Cuts: one call for both directions when they agree.
		upCut := w.up.cut != "" && w.up.cut != have.up.cut
		downCut := w.down.cut != "" && w.down.cut != have.down.cut
		switch {
		case upCut && downCut && w.up.cut == w.down.cut:
			p.add(linkOp{cut: w.up.cut, dir: cluster.Both}, l)
		default:
			if upCut {
				p.add(linkOp{cut: w.up.cut, dir: cluster.Upstream}, l)
			}
			if downCut {
				p.add(linkOp{cut: w.down.cut, dir: cluster.Downstream}, l)
			}
		}
		up, upOK := delayOp(w.up, have.up)
		down, downOK := delayOp(w.down, have.down)
		switch {
		case upOK && downOK && up == down:
			up.dir = cluster.Both
			p.add(up, l)
		default:
			if upOK {
				up.dir = cluster.Upstream
				p.add(up, l)
			}
			if downOK {
				down.dir = cluster.Downstream
				p.add(down, l)
			}
		}
	}
	return p
}

// delayOp is the delay call that takes one direction of a link from have
// to want, if one is needed (a zero delay lifts one).
func delayOp(want, have streamState) (linkOp, bool) {
	switch {
	case want.delayed && (!have.delayed || want.latency != have.latency || want.jitter != have.jitter):
		return linkOp{latency: want.latency, jitter: want.jitter}, true
	case !want.delayed && have.delayed:
		return linkOp{}, true // a zero delay
	}
	return linkOp{}, false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
