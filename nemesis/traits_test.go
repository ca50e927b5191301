package nemesis

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/history"
)

// TestKindsDeclareTraits: every registered kind declares what its faults
// do, each a trait, once; and every trait is declared by some kind (a
// trait no kind has reaches nothing).
func TestKindsDeclareTraits(t *testing.T) {
	declared := map[history.Trait]bool{}
	for _, k := range Kinds {
		ts := k.Traits()
		if len(ts) == 0 {
			t.Errorf("kind %s declares no traits (kind_*.go's traits)", k)
		}
		for i, tr := range ts {
			if !tr.Valid() {
				t.Errorf("kind %s declares %q, which is no history.Trait", k, tr)
			}
			if slices.Contains(ts[:i], tr) {
				t.Errorf("kind %s declares %s twice", k, tr)
			}
			declared[tr] = true
		}
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range history.Traits() {
		if !declared[tr] {
			t.Errorf("no kind declares trait %s", tr)
		}
		if !strings.Contains(string(doc), "//\t"+string(tr)+" ") {
			t.Errorf("doc.go's list of traits lacks %s", tr)
		}
	}
	if Kind("meteor").Traits() != nil {
		t.Error("an unknown kind has traits")
	}
	// The rules that read traits: a kind arms a lock step when it declares
	// it does.
	for _, k := range Kinds {
		if k.ArmsStep() != k.Traits().Has(history.ArmsStep) {
			t.Errorf("%s: ArmsStep %v", k, k.ArmsStep())
		}
	}
}

func TestKindsWith(t *testing.T) {
	if got := KindsWith(history.RestartsNode); !slices.Equal(got, []Kind{Kill, Restart}) {
		t.Errorf("kinds that restart a node: %v", got)
	}
	if got := KindsWith(history.MovesNodeClock, history.MovesClientClock); !slices.Equal(got, []Kind{Clock, ClientClock, ClockDrift, ClientDrift}) {
		t.Errorf("kinds that move a clock, in the registry's order: %v", got)
	}
	if got := KindsWith(); got != nil {
		t.Errorf("kinds with no trait asked: %v", got)
	}
}

// meteor is a kind of fault tumbler does not ship: it stops nodes and
// brings them back empty. Its traits are all it says about what it does.
type meteor struct{ kindBase }

const meteorKind Kind = "meteor"

func (meteor) kind() Kind { return meteorKind }
func (meteor) traits() history.TraitSet {
	return history.TraitSet{history.TouchesNode, history.StopsNode, history.RestartsNode, history.LosesKey}
}
func (meteor) doc() string                      { return "strikes nodes" }
func (meteor) fields() []string                 { return []string{"nodes", "node"} }
func (meteor) targets() targetKind              { return targetsNodes }
func (meteor) apply(*runner, int, target) error { return nil }
func (meteor) describe(c *compiled, t target) string {
	return fmt.Sprintf("a meteor strikes %s", nodesText(c, t))
}
func (meteor) draw(*gen, aim) (Step, bool) { return Step{}, false }

// registerForTest registers k for the test and removes it after.
func registerForTest(t *testing.T, rank int, k faultKind) {
	register(rank, k)
	t.Cleanup(func() {
		i := slices.Index(Kinds, k.kind())
		registry, ranks, Kinds = slices.Delete(registry, i, i+1), slices.Delete(ranks, i, i+1), slices.Delete(Kinds, i, i+1)
	})
}

// TestNewKindKnownByItsTraits: a kind registered from its own file, with
// no edit anywhere else, records its traits on its faults, joins the
// families of its traits, and reaches the dangerous windows they stand
// for — here a meteor that brings the node of a lease back empty while it
// is held reaches restart-empty.
func TestNewKindKnownByItsTraits(t *testing.T) {
	registerForTest(t, 10_000, meteor{})
	if f, _ := FamilyNamed("persistence"); !slices.Contains(f.Kinds, meteorKind) {
		t.Errorf("the meteor restarts nodes and is not in the persistence family: %v", f.Kinds)
	}
	f := newFakeCluster(t, "independent:1", 1)
	s := newSink()
	plan := mustPlan(t, `{"ttl":"1s","steps":[{"at":"50ms","fault":"meteor","nodes":["n1"],"for":"50ms"}]}`)
	if err := Run(context.Background(), plan, fakeEnv(f, &fakeClients{n: 1}, nil), s); err != nil {
		t.Fatal(err)
	}
	ops := s.Ops()
	if len(ops) != 2 || !slices.Equal(ops[0].Fault.Traits, meteor{}.traits()) || !ops[0].Fault.Empty {
		t.Fatalf("the meteor's records: %v", ops)
	}
	// Client 0 holds a lease on n1 across the strike, valid for a second.
	start, stop := ops[0].Time, ops[1].Time
	hold := []history.Op{
		{Process: 0, Type: history.Invoke, F: history.Acquire, Key: "k", Time: 0},
		{Process: 0, Type: history.OK, F: history.Acquire, Key: "k", Value: "v", ValidUntil: stop + int64(time.Second), Time: 1},
	}
	all := append(hold, ops...)
	all = append(all, history.Op{Process: 0, Type: history.Invoke, F: history.Release, Key: "k", Value: "v", Time: stop + 1},
		history.Op{Process: 0, Type: history.OK, F: history.Release, Key: "k", Value: "v", Time: stop + 2})
	for i := range all {
		all[i].Index = int64(i)
	}
	holds, err := checker.Holds(all, checker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	setup := coverage.Setup{TTL: time.Second, Validity: 990 * time.Millisecond, Leases: true,
		Nodes: []string{"n1"}, LeaseNodes: []string{"n1"}, Traits: meteorKind.Traits()}
	run := coverage.Judge(coverage.Input{Setup: setup, Ops: all, Holds: holds})
	if w, _ := run.Get(coverage.RestartEmpty); w.Reached != 1 || w.First != start {
		t.Errorf("restart-empty after the meteor: %+v", w)
	}
	if w, _ := run.Get(coverage.PromotedLackingKey); w.Reached != 0 {
		t.Errorf("a meteor promoted nothing: %+v", w)
	}
}
