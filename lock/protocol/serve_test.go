package protocol

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// serveEnv makes the test binary a Go client program: tumbler's single
// lock served over the protocol with Serve.
const serveEnv = "TUMBLER_PROTOCOL_SERVE"

func serveClient() int {
	err := Serve(os.Stdin, os.Stdout, func(in Init) (Opened, error) {
		if in.Connect != ConnectNode {
			return Opened{}, fmt.Errorf("connect %q: this client takes one node", in.Connect)
		}
		c := lock.NewClient(in.Nodes[0].Addr)
		ttl := time.Duration(in.TTLMS) * time.Millisecond
		return Opened{
			Library: "tumbler single (test)",
			Primitive: func(key string, opts ...lock.Option) (lock.Primitive, error) {
				return single.New(c, key, ttl, opts...)
			},
			Close: c.Close,
		}, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// served starts tumbler's single lock on addr as a client program; each
// tweak edits its Config first.
func served(t testing.TB, addr, key string, ttl time.Duration, tweaks ...func(*Config)) *Process {
	t.Helper()
	cfg := Config{
		Name: "go-single", Command: []string{os.Args[0]}, Env: []string{serveEnv + "=1", "GORACE=atexit_sleep_ms=0"},
		Init: Init{Kind: lock.KindLock, Keys: []string{key}, TTLMS: ttl.Milliseconds(), Connect: ConnectNode,
			Nodes: []Node{{Name: "n1", Addr: addr}}, ReadTimeoutMS: 1000},
	}
	for _, tw := range tweaks {
		tw(&cfg)
	}
	p, err := Start(cfg)
	if err != nil {
		t.Fatalf("start the Go client: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestServeConformance: tumbler's single lock over the protocol passes the
// conformance suite every lock passes in-process: mutual exclusion under
// contention (eight client programs), refusal to release another's lease,
// expiry, extend, and the lease's fields (its validity comes across).
func TestServeConformance(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	locktest.Suite{
		New: func(t testing.TB, key string, ttl time.Duration) lock.Locker {
			prim, err := served(t, srv.Addr, key, ttl).Primitive(key)
			if err != nil {
				t.Fatal(err)
			}
			return prim.(lock.Locker)
		},
	}.Run(t)
}

// TestServeLostReply: a server that stops answering makes the Go client's
// acquire an unknown outcome, and the protocol carries it as info.
func TestServeLostReply(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	key := locktest.Key(t)
	p := served(t, srv.Addr, key, time.Second)
	prim, _ := p.Primitive(key)
	thaw := srv.Freeze(t)
	defer thaw()
	_, err := prim.(lock.Locker).Acquire(locktest.Context(t))
	if err == nil || !isUnknown(err) {
		t.Fatalf("acquire against a frozen server: %v, want an unknown outcome", err)
	}
}

func isUnknown(err error) bool {
	return errors.Is(err, lock.ErrUnknown)
}

// TestServeOnlyTheArmableSteps: the Go client reports a step only when its
// init's "steps" names it (single reports "granted" inside every acquire).
func TestServeOnlyTheArmableSteps(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	for _, tc := range []struct {
		steps *[]string
		want  int
	}{{nil, 1}, {&[]string{}, 0}, {&[]string{"other"}, 0}, {&[]string{lock.StepGranted}, 1}} {
		key := locktest.Key(t)
		p, err := Start(Config{
			Name: "go-single", Command: []string{os.Args[0]}, Env: []string{serveEnv + "=1", "GORACE=atexit_sleep_ms=0"},
			Init: Init{Kind: lock.KindLock, Keys: []string{key}, TTLMS: 1000, Connect: ConnectNode,
				Nodes: []Node{{Name: "n1", Addr: srv.Addr}}, ReadTimeoutMS: 1000, Steps: tc.steps},
		})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		prim, _ := p.Primitive(key, lock.WithHook(func(context.Context, string) error { seen++; return nil }))
		l := prim.(lock.Locker)
		lease, err := l.Acquire(locktest.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(locktest.Context(t), lease)
		p.Close()
		if seen != tc.want {
			label := "absent"
			if tc.steps != nil {
				label = fmt.Sprint(*tc.steps)
			}
			t.Errorf("steps %s: the hook saw %d steps, want %d", label, seen, tc.want)
		}
	}
}

// TestServeHeldRefusal: a Go lock's refusal of a held key (lock.ErrHeld)
// crosses the protocol as a fail with "held", and comes back as ErrHeld.
func TestServeHeldRefusal(t *testing.T) {
	srv := redistest.Start(t, 1)[0]
	key := locktest.Key(t)
	a, _ := served(t, srv.Addr, key, 5*time.Second).Primitive(key)
	b, _ := served(t, srv.Addr, key, 5*time.Second).Primitive(key)
	if _, err := a.(lock.Locker).Acquire(locktest.Context(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := b.(lock.Locker).Acquire(ctx)
	if !errors.Is(err, lock.ErrHeld) || !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire of a held key over the protocol: %v, want ErrHeld", err)
	}
}

// TestHeldOnlyOnAFailedAcquire: "held" on any other reply breaks the
// protocol.
func TestHeldOnlyOnAFailedAcquire(t *testing.T) {
	id := uint64(4)
	for _, tc := range []struct {
		typ, req string
		ok       bool
	}{
		{TypeFail, TypeAcquire, true},
		{TypeOK, TypeAcquire, false},
		{TypeInfo, TypeAcquire, false},
		{TypeFail, TypeRelease, false},
	} {
		rep := Reply{InReplyTo: &id, Type: tc.typ, Held: true, Lease: &Lease{Token: "t"}}
		err := rep.check(Request{ID: id, Type: tc.req})
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), `"held"`) {
			t.Errorf("held on %s to %s: %v, want ok %v", tc.typ, tc.req, err, tc.ok)
		}
	}
}
