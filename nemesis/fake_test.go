package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/wait"
	"github.com/tumbler-dev/tumbler/workloads"
)

// fakeCluster records every control call and keeps the state the calls
// leave, for tests of the runtime without servers.
type fakeCluster struct {
	topo    cluster.Topology
	clients int

	mu      sync.Mutex
	calls   []string
	toxics  map[string]map[string]string // link → "cut-upstream" etc. → params
	down    map[string]bool
	paused  map[string]bool
	clock   map[string]time.Duration
	primary string
	// groupPrimary: a groups topology's primary of each group that was
	// promoted (the group's first node otherwise).
	groupPrimary map[string]string
	values       map[string]map[string]string // node → key → value
	// controls of the provider; the fake's name is "fake".
	controls cluster.Controls
	fail     map[string]error // call name → error to return
	// startDelay is how long a node takes to start.
	startDelay time.Duration
	persist    map[string]cluster.Persistence // node → mode; none if absent
}

func newFakeCluster(t testing.TB, topo string, clients int) *fakeCluster {
	t.Helper()
	tp, err := cluster.ParseTopology(topo)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCluster{topo: tp, clients: clients, toxics: map[string]map[string]string{}, down: map[string]bool{},
		paused: map[string]bool{}, clock: map[string]time.Duration{}, fail: map[string]error{},
		values: map[string]map[string]string{}, controls: cluster.AllControls}
	if tp.Kind == cluster.Replicated {
		f.primary = "p"
	}
	return f
}

func (f *fakeCluster) log(format string, args ...any) error {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return f.fail[strings.Fields(fmt.Sprintf(format, args...))[0]]
}

func (f *fakeCluster) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeCluster) Topology() cluster.Topology { return f.topo }
func (f *fakeCluster) ProviderName() string       { return "fake" }
func (f *fakeCluster) Controls() cluster.Controls { return f.controls }

// Values reads the values set in f.values, of the nodes that are up.
func (f *fakeCluster) Values(_ context.Context, key string, _ time.Duration) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for n, kv := range f.values {
		if v, ok := kv[key]; ok && !f.down[n] {
			out[n] = v
		}
	}
	return out
}

// setValue sets key on node, for Values.
func (f *fakeCluster) setValue(node, key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.values[node] == nil {
		f.values[node] = map[string]string{}
	}
	f.values[node][key] = value
}
func (f *fakeCluster) Clients() int { return f.clients }

func streams(dir cluster.Direction) []string {
	switch dir {
	case cluster.Upstream:
		return []string{"upstream"}
	case cluster.Downstream:
		return []string{"downstream"}
	}
	return []string{"upstream", "downstream"}
}

func (f *fakeCluster) Cut(mode cluster.CutMode, dir cluster.Direction, links ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.log("cut %s %s %s", mode, dir, strings.Join(links, ",")); err != nil {
		return err
	}
	for _, l := range links {
		if f.toxics[l] == nil {
			f.toxics[l] = map[string]string{}
		}
		for _, s := range streams(dir) {
			f.toxics[l]["cut-"+s] = string(mode)
		}
	}
	return nil
}

func (f *fakeCluster) Delay(lat, jit time.Duration, dir cluster.Direction, links ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.log("delay %v %v %s %s", lat, jit, dir, strings.Join(links, ",")); err != nil {
		return err
	}
	for _, l := range links {
		if f.toxics[l] == nil {
			f.toxics[l] = map[string]string{}
		}
		for _, s := range streams(dir) {
			f.toxics[l]["delay-"+s] = fmt.Sprintf("%v±%v", lat, jit)
		}
	}
	return nil
}

func (f *fakeCluster) Heal(links ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(links) == 0 {
		panic("Heal with no links heals everything: the nemesis must never call it so")
	}
	if err := f.log("heal %s", strings.Join(links, ",")); err != nil {
		return err
	}
	for _, l := range links {
		delete(f.toxics, l)
	}
	return nil
}

// Toxics is the effective state: links with a cut or a non-zero delay.
func (f *fakeCluster) Toxics() map[string]map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]map[string]string{}
	for l, m := range f.toxics {
		for k, v := range m {
			if v == "0s±0s" {
				continue
			}
			if out[l] == nil {
				out[l] = map[string]string{}
			}
			out[l][k] = v
		}
	}
	return out
}

func (f *fakeCluster) Kill(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.log("kill %s", name); err != nil {
		return err
	}
	f.down[name] = true
	f.paused[name] = false
	return nil
}

func (f *fakeCluster) start(ctx context.Context, name string) error {
	select {
	case <-time.After(f.startDelay):
	case <-ctx.Done():
		return ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.log("start %s", name); err != nil {
		return err
	}
	f.down[name] = false
	return nil
}

func (f *fakeCluster) StartNode(ctx context.Context, name string) error { return f.start(ctx, name) }

func (f *fakeCluster) Restart(ctx context.Context, name string, o cluster.RestartOptions) error {
	f.mu.Lock()
	err := f.log("restart %s %s %v", name, o.Persistence, o.Delay)
	f.down[name] = true
	if o.Persistence != "" {
		if f.persist == nil {
			f.persist = map[string]cluster.Persistence{}
		}
		f.persist[name] = o.Persistence
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if err := wait.For(ctx, o.Delay); err != nil {
		return err
	}
	return f.start(ctx, name)
}

// Persistence: the fake's nodes run without persistence unless persist
// says otherwise; a restart that names a mode switches to it.
func (f *fakeCluster) Persistence(name string) (cluster.Persistence, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.persist[name]; ok {
		return p, true
	}
	return cluster.PersistNone, true
}

func (f *fakeCluster) Up(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.down[name]
}

func (f *fakeCluster) Pause(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[name] {
		return fmt.Errorf("pause %s: not running", name)
	}
	f.paused[name] = true
	return f.log("pause %s", name)
}

func (f *fakeCluster) Resume(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused[name] = false
	return f.log("resume %s", name)
}

func (f *fakeCluster) SetClock(name string, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock[name] = d
	return f.log("clock %s %v", name, d)
}

func (f *fakeCluster) SetClockDrift(name string, d clockshim.Drift) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log("drift %s %g", name, 1+d.Slope)
}

func (f *fakeCluster) Primary(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.primary == "" {
		return "", errors.New("no primary")
	}
	return f.primary, nil
}

func (f *fakeCluster) Promote(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if grp, ok := f.topo.PromoteGroup(name); ok && len(f.topo.PromoteGroups()) > 1 {
		if f.groupPrimary == nil {
			f.groupPrimary = map[string]string{}
		}
		f.groupPrimary[grp[0]] = name
	} else {
		f.primary = name
	}
	return f.log("promote %s", name)
}

// PrimaryOf is the primary of node's group, in a groups topology.
func (f *fakeCluster) PrimaryOf(_ context.Context, node string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	grp, ok := f.topo.PromoteGroup(node)
	if !ok || len(f.topo.PromoteGroups()) < 2 {
		return "", fmt.Errorf("%s is in no group", node)
	}
	if p, ok := f.groupPrimary[grp[0]]; ok {
		return p, nil
	}
	return grp[0], nil
}

func (f *fakeCluster) SentinelFailover(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log("sentinel-failover")
}

func (f *fakeCluster) WaitFailover(ctx context.Context, from string) (string, error) {
	if err := wait.For(ctx, 50*time.Millisecond); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.topo.Nodes() {
		if n != from {
			f.primary = n
			return n, f.log("failover %s->%s", from, n)
		}
	}
	return "", errors.New("no replica")
}

// fakeClients records the client controls.
type fakeClients struct {
	n     int
	mu    sync.Mutex
	calls []string
	fail  error
}

func (c *fakeClients) Count() int { return c.n }
func (c *fakeClients) rec(format string, args ...any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
	return c.fail
}
func (c *fakeClients) Pause(i int) error  { return c.rec("pause %d", i) }
func (c *fakeClients) Resume(i int) error { return c.rec("resume %d", i) }
func (c *fakeClients) SetClockOffset(i int, d time.Duration) error {
	return c.rec("clock %d %v", i, d)
}
func (c *fakeClients) SetClockDrift(i int, d clockshim.Drift) error {
	return c.rec("drift %d %g", i, 1+d.Slope)
}
func (c *fakeClients) ArmStep(i int, step string, a workloads.StepAction) error {
	return c.rec("arm %d %s %+v", i, step, a)
}
func (c *fakeClients) GateResource(i int, closed bool) error { return c.rec("gate %d %v", i, closed) }
func (c *fakeClients) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// fakeOracle grants when told to: client c's lease has the value "v<c>".
type fakeOracle struct {
	mu      sync.Mutex
	holder  map[string]int
	grants  chan int
	waiting chan struct{} // signalled when a WaitGrant starts
}

func fakeGrant(c int) Grant { return Grant{Client: c, Value: fmt.Sprintf("v%d", c)} }

func newFakeOracle() *fakeOracle {
	return &fakeOracle{holder: map[string]int{}, grants: make(chan int), waiting: make(chan struct{}, 16)}
}

func (o *fakeOracle) Holder(key string) (Grant, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c, ok := o.holder[key]
	return fakeGrant(c), ok
}

func (o *fakeOracle) WaitGrant(ctx context.Context, key string) (Grant, error) {
	o.waiting <- struct{}{}
	select {
	case c := <-o.grants:
		return fakeGrant(c), nil
	case <-ctx.Done():
		return Grant{}, ctx.Err()
	}
}

// sink collects records and lets a test wait for one.
type sink struct {
	mu  sync.Mutex
	ops []history.Op
	ch  chan history.Op
}

func newSink() *sink { return &sink{ch: make(chan history.Op, 1000)} }

func (s *sink) Record(op history.Op) (history.Op, error) {
	if err := op.Validate(); err != nil {
		panic("nemesis recorded an invalid op: " + err.Error())
	}
	s.mu.Lock()
	op.Index = int64(len(s.ops))
	s.ops = append(s.ops, op)
	s.mu.Unlock()
	s.ch <- op
	return op, nil
}

func (s *sink) Ops() []history.Op {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops)
}

// wait returns the next record with the given f and fault ID.
func (s *sink) wait(t testing.TB, f, id string, within time.Duration) history.Op {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case op := <-s.ch:
			if op.F == f && op.Fault.ID == id {
				return op
			}
		case <-deadline:
			t.Fatalf("no %s record of %s within %v; records: %v", f, id, within, s.Ops())
			return history.Op{}
		}
	}
}

// mustPlan parses a plan literal.
func mustPlan(t testing.TB, js string) Plan {
	t.Helper()
	p, err := ParsePlan([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fakeCluster) Squeeze(_ context.Context, name, policy string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log("squeeze %s %s", name, policy)
}

func (f *fakeCluster) PushMemory(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log("push %s", name)
}

func (f *fakeCluster) Unsqueeze(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log("unsqueeze %s", name)
}

func (f *fakeCluster) RefuseWrites(_ context.Context, name string, r cluster.Refusal) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log("refuse %s %s", name, r)
}

func (f *fakeCluster) AcceptWrites(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log("accept %s", name)
}
