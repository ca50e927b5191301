package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// nodeCount is how many servers a client locks over: every node of an
// independent topology for a Redlock, else one.
func nodeCount(m protocol.Manifest) int {
	if m.AllNodes {
		return 3
	}
	return 1
}

// initFor is the init a run would send the client over servers.
func initFor(m protocol.Manifest, servers []*redistest.Server, key string, ttl time.Duration, opts map[string]any) protocol.Init {
	return initAt(m, redistest.Addrs(servers), key, ttl, opts)
}

// initAt is the init a run would send the client to reach the nodes at addrs.
func initAt(m protocol.Manifest, addrs []string, key string, ttl time.Duration, opts map[string]any) protocol.Init {
	in := protocol.Init{Kind: m.Kind, Keys: []string{key}, TTLMS: ttl.Milliseconds(), Connect: protocol.ConnectNode, ReadTimeoutMS: 1000}
	if m.AllNodes {
		in.Connect = protocol.ConnectNodes
	}
	for i, a := range addrs[:nodeCount(m)] {
		in.Nodes = append(in.Nodes, protocol.Node{Name: fmt.Sprintf("n%d", i+1), Addr: a})
	}
	if opts != nil {
		in.Options, _ = json.Marshal(opts)
	}
	return in
}

// start installs the client and runs it with in, as a run does (its
// locks answer valid if its manifest says so); its stderr is shown if
// the test fails. A missing interpreter or package fails the test with the
// Debian packages to install (Manifest.Install's probe), never skips it.
// Each tweak edits the program's Config first.
func start(t testing.TB, name string, in protocol.Init, tweaks ...func(*protocol.Config)) *protocol.Process {
	t.Helper()
	m, err := protocol.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := m.Install()
	if err != nil {
		t.Fatalf("install client %s: %v", name, err)
	}
	var mu sync.Mutex
	var log bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			t.Logf("client %s stderr:\n%s", name, log.String())
			mu.Unlock()
		}
	})
	cfg := protocol.Config{Name: name, Command: inst.Command, Env: inst.Env, Init: in, Log: lockedWriter{&mu, &log}, AnswersValid: m.AnswersValid}
	for _, tw := range tweaks {
		tw(&cfg)
	}
	p, err := protocol.Start(cfg)
	if err != nil {
		t.Fatalf("start client %s: %v", name, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// wantRefused: the client's init refuses in, saying says.
func wantRefused(t *testing.T, name string, in protocol.Init, says string) {
	t.Helper()
	_, err := startOrRefused(t, name, in)
	if !errors.Is(err, protocol.ErrInit) || !strings.Contains(err.Error(), says) {
		t.Errorf("client %s, init with connect %s: %v, want its init refused (ErrInit) saying %q", name, in.Connect, err, says)
	}
}

// startOrRefused starts the client, or returns its init's refusal.
func startOrRefused(t *testing.T, name string, in protocol.Init) (*protocol.Process, error) {
	t.Helper()
	m, _ := protocol.Lookup(name)
	inst, err := m.Install()
	if err != nil {
		t.Fatal(err)
	}
	p, err := protocol.Start(protocol.Config{Name: name, Command: inst.Command, Env: inst.Env, Init: in})
	if err != nil {
		if !errors.Is(err, protocol.ErrInit) {
			t.Fatalf("start client %s: %v", name, err)
		}
		return nil, err
	}
	t.Cleanup(func() { p.Close() })
	return p, nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// locker is the client's lock on key, with opts.
func locker(t testing.TB, p *protocol.Process, key string, opts ...lock.Option) lock.Locker {
	t.Helper()
	prim, err := p.Primitive(key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := prim.(lock.Locker)
	if !ok {
		t.Fatalf("client's primitive on %s is a %T, not a lock.Locker", key, prim)
	}
	return l
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// TestConformance: every shipped client passes the conformance suite over
// real Redis, one client program per contender; what its library breaks
// is excluded by name and proven below.
func TestConformance(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	for _, name := range protocol.Shipped() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, _ := protocol.Lookup(name)
			locktest.Suite{
				New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
					return locker(t, start(t, name, initFor(m, servers, key, ttl, nil)), key)
				},
				Exclude:    m.Conform.Deviations,
				TTL:        time.Duration(m.Conform.TTLMS) * time.Millisecond,
				NoValidity: !m.Validity,
				Remote:     true,
			}.Run(t)
		})
	}
}

// TestWaitForARelease: an acquire that may wait (wait_ms > 0) uses the
// library's own waiting and gets the lock once its holder releases it.
func TestWaitForARelease(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	for _, name := range protocol.Shipped() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, _ := protocol.Lookup(name)
			key := locktest.Key(t)
			in := initFor(m, servers, key, 10*time.Second, nil)
			a := locker(t, start(t, name, in), key)
			b := locker(t, start(t, name, in), key, lock.WithRetry(lock.Wait(0, 0)))
			held, err := a.Acquire(ctxFor(t, 5*time.Second))
			if err != nil {
				t.Fatalf("A acquire: %v", err)
			}
			released := make(chan time.Time, 1)
			go func() {
				time.Sleep(time.Second)
				err := a.Release(ctxFor(t, 5*time.Second), held)
				if err != nil {
					t.Errorf("A release: %v", err)
				}
				released <- time.Now()
			}()
			got, err := b.Acquire(ctxFor(t, 8*time.Second))
			if err != nil {
				t.Fatalf("B waiting up to 8s for A's release: %v", err)
			}
			if at := <-released; got.Start.Add(900 * time.Millisecond).After(at) {
				t.Errorf("B's acquire started %v and A released at %v: B cannot have waited", got.Start, at)
			}
			if err := b.Release(ctxFor(t, 5*time.Second), got); err != nil {
				t.Fatalf("B release: %v", err)
			}
		})
	}
}

// TestStepsAsTheManifestSays: an acquire reports exactly the acquiring
// steps the client's manifest lists, and a pause there holds the acquire.
func TestStepsAsTheManifestSays(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	for _, name := range protocol.Shipped() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, _ := protocol.Lookup(name)
			var want []string
			for _, s := range m.Steps {
				if s.Acquiring {
					want = append(want, s.Name)
				}
			}
			key := locktest.Key(t)
			var seen []string
			const stall = 300 * time.Millisecond
			l := locker(t, start(t, name, initFor(m, servers, key, 10*time.Second, nil)), key, lock.WithHook(func(_ context.Context, step string) error {
				seen = append(seen, step)
				time.Sleep(stall)
				return nil
			}))
			begin := time.Now()
			held, err := l.Acquire(ctxFor(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(seen) != fmt.Sprint(want) {
				t.Fatalf("steps during an acquire: %q, want the manifest's %q", seen, want)
			}
			if took := time.Since(begin); took < time.Duration(len(want))*stall {
				t.Fatalf("acquire took %v with %d steps stalled %v each: the client did not wait for continue", took, len(want), stall)
			}
			if err := l.Release(ctxFor(t, 5*time.Second), held); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOnlyTheArmableSteps: a client reports only the steps its init's
// "steps" names (the ones the run's faults may stop it at), none when the
// list is empty.
func TestOnlyTheArmableSteps(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	for _, name := range protocol.Shipped() {
		m, _ := protocol.Lookup(name)
		if len(m.Steps) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, armable := range [][]string{{}, {"not-a-step-of-it"}, {m.Steps[0].Name}} {
				key := locktest.Key(t)
				in := initFor(m, servers, key, 10*time.Second, nil)
				in.Steps = &armable
				var seen []string
				l := locker(t, start(t, name, in), key, lock.WithHook(func(_ context.Context, step string) error {
					seen = append(seen, step)
					return nil
				}))
				held, err := l.Acquire(ctxFor(t, 5*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Release(ctxFor(t, 5*time.Second), held); err != nil {
					t.Fatal(err)
				}
				for _, st := range seen {
					if !slices.Contains(armable, st) {
						t.Errorf("steps %q: the client reported %s", armable, st)
					}
				}
				if want := slices.Contains(armable, m.Steps[0].Name) && m.Steps[0].Acquiring; want && !slices.Contains(seen, m.Steps[0].Name) {
					t.Errorf("steps %q: the client did not report %s", armable, m.Steps[0].Name)
				}
			}
		})
	}
}

// TestLostReply: a server that stops answering makes an acquire and a
// release an unknown outcome (info), never a failure, for every client.
func TestLostReply(t *testing.T) {
	t.Parallel()
	for _, name := range protocol.Shipped() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, _ := protocol.Lookup(name)
			servers := redistest.Start(t, nodeCount(m))
			key := locktest.Key(t)
			in := initFor(m, servers, key, 10*time.Second, nil)
			in.ReadTimeoutMS = 300
			l := locker(t, start(t, name, in), key)
			held, err := l.Acquire(ctxFor(t, 5*time.Second))
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			var thaws []func()
			for _, s := range servers {
				thaws = append(thaws, s.Freeze(t))
			}
			defer func() {
				for _, thaw := range thaws {
					thaw()
				}
			}()
			if err := l.Release(ctxFor(t, 10*time.Second), held); !errors.Is(err, lock.ErrUnknown) {
				t.Errorf("release against frozen servers: %v, want an unknown outcome (info)", err)
			}
			if _, err := l.Acquire(ctxFor(t, 10*time.Second)); !errors.Is(err, lock.ErrUnknown) {
				t.Errorf("acquire against frozen servers: %v, want an unknown outcome (info)", err)
			}
		})
	}
}

// TestInitRefusals: every client refuses an option it does not know,
// naming it, and a connect mode its library cannot do, saying why.
func TestInitRefusals(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	for _, name := range protocol.Shipped() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, _ := protocol.Lookup(name)
			refused := func(in protocol.Init, says string) { t.Helper(); wantRefused(t, name, in, says) }
			key := locktest.Key(t)
			refused(initFor(m, servers, key, time.Second, map[string]any{"bogus_option": 1}), "bogus_option")
			if name == "reference" { // the protocol's example: it takes whatever nodes[0] is
				return
			}
			other := initFor(m, servers, key, time.Second, nil)
			if m.AllNodes {
				other.Connect, other.Nodes = protocol.ConnectNode, other.Nodes[:1]
			} else {
				other.Connect = protocol.ConnectNodes
			}
			refused(other, "connect "+other.Connect+": ")
			other.Connect = protocol.ConnectCluster
			refused(other, "connect cluster: ")
		})
	}
}

// TestMissingPackagesNamed: a client whose interpreter or library is not
// installed fails to install with the Debian packages to get and
// scripts/setup named — what every test above then fails with.
func TestMissingPackagesNamed(t *testing.T) {
	for _, name := range protocol.Shipped() {
		m, _ := protocol.Lookup(name)
		if len(m.Probe) == 0 || len(m.Packages) == 0 {
			t.Errorf("client %s: its manifest names no probe or no Debian packages", name)
			continue
		}
		m.Probe = append([]string{"/nonexistent" + m.Probe[0]}, m.Probe[1:]...)
		_, err := m.Install()
		if err == nil || !strings.Contains(err.Error(), "scripts/setup") || !strings.Contains(err.Error(), "apt-get install "+strings.Join(m.Packages, " ")) {
			t.Errorf("client %s without its interpreter: %v, want the packages %v and scripts/setup named", name, err, m.Packages)
		}
	}
}
