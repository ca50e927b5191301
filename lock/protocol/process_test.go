package protocol

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/lock"
)

const fakeKey = "tumbler:0"

// startFake runs the fake client in mode; its restarts behave.
func startFake(t *testing.T, mode string, grace time.Duration) (*Process, string) {
	t.Helper()
	state := t.TempDir()
	p, err := Start(Config{
		Name: "fake", Command: []string{os.Args[0]},
		Env:   []string{fakeEnv + "=1", fakeMode + "=" + mode, fakeState + "=" + state, "GORACE=atexit_sleep_ms=0"},
		Init:  Init{Client: 3, Kind: lock.KindLock, Keys: []string{fakeKey}, TTLMS: 1000, Connect: ConnectNode, Nodes: []Node{{Name: "n1", Addr: "127.0.0.1:1"}}, ReadTimeoutMS: 100},
		Grace: grace,
	})
	if err != nil {
		t.Fatalf("start the fake client (%s): %v", mode, err)
	}
	t.Cleanup(func() { p.Close() })
	return p, state
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

func TestGoodClient(t *testing.T) {
	p, _ := startFake(t, "good", 0)
	if got := p.Library(); got != "fake 1.0" {
		t.Fatalf("Library() = %q, want the init reply's %q", got, "fake 1.0")
	}
	prim, err := p.Primitive(fakeKey)
	if err != nil {
		t.Fatal(err)
	}
	l := prim.(lock.Locker)
	before := time.Now()
	lease, err := l.Acquire(ctxFor(t, time.Second))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if lease.Value != "tok1" || lease.Token != 1 || lease.Key != fakeKey {
		t.Fatalf("lease %+v: want the library's token tok1 as the owner value, fence 1 as the token", lease)
	}
	if lease.Start.Before(before) || lease.ValidUntil.Before(time.Now().Add(24*time.Hour)) {
		t.Fatalf("lease start %v, valid until %v: a library that exposes no validity is held until released", lease.Start, lease.ValidUntil)
	}
	if _, err := l.Acquire(ctxFor(t, time.Second)); !errors.Is(err, lock.ErrNotObtained) || !strings.Contains(err.Error(), "held") {
		t.Fatalf("second acquire: %v, want ErrNotObtained with the library's error", err)
	}
	if err := l.Release(ctxFor(t, time.Second), lease); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := l.Release(ctxFor(t, time.Second), lease); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
}

func TestValidUntilFromTheLibrary(t *testing.T) {
	p, _ := startFake(t, "valid", 0)
	prim, _ := p.Primitive(fakeKey)
	lease, err := prim.(lock.Locker).Acquire(ctxFor(t, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The fake says valid_until_ns = its CLOCK_MONOTONIC + 500 ms.
	if left := time.Until(lease.ValidUntil); left > 500*time.Millisecond || left < 300*time.Millisecond {
		t.Fatalf("validity left %v, want just under the 500ms the library gave", left)
	}
}

// TestFailurePaths: every way a client can break the protocol on a call
// is an unknown outcome naming the client, the request and the problem;
// the next call runs on a restarted client.
func TestFailurePaths(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"garbage", []string{"not a JSON object", "hello, I am not JSON"}},
		{"crash", []string{"exit status 7", "dying on purpose"}},
		{"hang", []string{"no reply within", "killed"}},
		{"endless-steps", []string{"no reply within", "killed"}},
		{"unknown-type", []string{`unknown reply type "maybe"`}},
		{"wrong-id", []string{"a reply to request 999 while request 2 is in flight"}},
		{"no-lease", []string{`an ok acquire without "lease"`}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p, state := startFake(t, tc.mode, 300*time.Millisecond)
			prim, _ := p.Primitive(fakeKey)
			l := prim.(lock.Locker)
			_, err := l.Acquire(ctxFor(t, 200*time.Millisecond))
			var perr *Error
			if !errors.Is(err, lock.ErrUnknown) || !errors.As(err, &perr) {
				t.Fatalf("acquire on a client that misbehaves (%s): %v, want an unknown outcome (*Error)", tc.mode, err)
			}
			for _, w := range append(tc.want, "client fake", "request 2 (acquire tumbler:0)") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, err := l.Acquire(ctxFor(t, time.Second)); err != nil {
				t.Fatalf("acquire after the client was restarted: %v", err)
			}
			if n, _ := os.ReadDir(state); len(n) != 2 {
				t.Fatalf("the client ran %d times, want 2 (one restart)", len(n))
			}
		})
	}
}

// TestReplyInPieces: a reply written in two parts, the second after several
// of the harness's read deadlines (20 ms each) passed, is read whole.
func TestReplyInPieces(t *testing.T) {
	p, _ := startFake(t, "slow-line", 0)
	prim, _ := p.Primitive(fakeKey)
	lease, err := prim.(lock.Locker).Acquire(ctxFor(t, time.Second))
	if err != nil || lease.Value != "tok1" || lease.Token != 1 {
		t.Fatalf("acquire whose reply came in two pieces 70 ms apart: %+v, %v; want the lease tok1, fence 1", lease, err)
	}
}

// TestReplyThenExit: the reply a client wrote just before it exited is
// still read, and the next call starts it again.
func TestReplyThenExit(t *testing.T) {
	p, state := startFake(t, "reply-exit", 0)
	prim, _ := p.Primitive(fakeKey)
	l := prim.(lock.Locker)
	if _, err := l.Acquire(ctxFor(t, time.Second)); err != nil {
		t.Fatalf("acquire from a client that exits after its reply: %v", err)
	}
	p.mu.Lock()
	c := p.cur
	p.mu.Unlock()
	select {
	case <-c.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not exit after its reply")
	}
	if _, err := l.Acquire(ctxFor(t, time.Second)); err != nil {
		t.Fatalf("acquire after the client exited: %v", err)
	}
	if n, _ := os.ReadDir(state); len(n) != 2 {
		t.Fatalf("the client ran %d times, want 2 (restarted once it had exited)", len(n))
	}
}

func TestStepsReachTheHook(t *testing.T) {
	p, _ := startFake(t, "step", 0)
	var got []string
	prim, _ := p.Primitive(fakeKey, lock.WithHook(func(_ context.Context, step string) error {
		got = append(got, step)
		return nil
	}))
	if _, err := prim.(lock.Locker).Acquire(ctxFor(t, time.Second)); err != nil {
		t.Fatalf("acquire with a step: %v", err)
	}
	if len(got) != 1 || got[0] != "after-set" {
		t.Fatalf("hook saw %q, want the client's step after-set", got)
	}
}

func TestStepCrashKillsTheClient(t *testing.T) {
	p, state := startFake(t, "step", 0)
	crash := errors.New("crashed at after-set")
	prim, _ := p.Primitive(fakeKey, lock.WithHook(func(context.Context, string) error { return crash }))
	l := prim.(lock.Locker)
	if _, err := l.Acquire(ctxFor(t, time.Second)); !errors.Is(err, crash) {
		t.Fatalf("acquire whose step crashes: %v, want the hook's error", err)
	}
	if _, err := l.Acquire(ctxFor(t, time.Second)); err != nil {
		t.Fatalf("acquire after the crash: %v", err)
	}
	if n, _ := os.ReadDir(state); len(n) != 2 {
		t.Fatalf("the client ran %d times, want 2 (killed at its step, then restarted)", len(n))
	}
}

func TestInitRefused(t *testing.T) {
	_, err := Start(Config{
		Name: "fake", Command: []string{os.Args[0]},
		Env:  []string{fakeEnv + "=1", fakeMode + "=init-fail", "GORACE=atexit_sleep_ms=0"},
		Init: Init{Kind: lock.KindLock, Keys: []string{fakeKey}, TTLMS: 1000, Connect: ConnectNode, Nodes: []Node{{Name: "n1", Addr: "127.0.0.1:1"}}},
	})
	if !errors.Is(err, ErrInit) || !strings.Contains(err.Error(), `option "bogus" unknown`) {
		t.Fatalf("start of a client that refuses its init: %v, want ErrInit with its reason", err)
	}
}

func TestBadCommand(t *testing.T) {
	_, err := Start(Config{Name: "nope", Command: []string{"/nonexistent/client"},
		Init: Init{Kind: lock.KindLock, Keys: []string{fakeKey}, TTLMS: 1000, Connect: ConnectNode, Nodes: []Node{{Name: "n1", Addr: "x:1"}}}})
	if !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "/nonexistent/client") {
		t.Fatalf("start of a missing program: %v, want ErrCommand naming it", err)
	}
	_, err = Start(Config{Name: "fake", Command: []string{os.Args[0]}, Init: Init{Kind: "mutex", Keys: []string{fakeKey}, TTLMS: 1000, Connect: ConnectNode, Nodes: []Node{{Name: "n1", Addr: "x:1"}}}})
	if !errors.Is(err, lock.ErrConfig) || !strings.Contains(err.Error(), `kind "mutex" unknown`) {
		t.Fatalf("init with a bad kind: %v, want ErrConfig naming it", err)
	}
}

func TestCloseEndsTheProgram(t *testing.T) {
	p, _ := startFake(t, "good", 0)
	p.mu.Lock()
	pid := p.cur.cmd.Process.Pid
	p.mu.Unlock()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("client %d still exists after Close (kill -0: %v)", pid, err)
	}
}

// TestEveryKindOverTheProtocol: a client of each lock kind (lock.Kinds)
// hands out a Primitive of that kind's interface; a kind added to package
// lock without a case here fails.
func TestEveryKindOverTheProtocol(t *testing.T) {
	for _, k := range lock.Kinds {
		p, err := Start(Config{
			Name: "fake", Command: []string{os.Args[0]},
			Env:  []string{fakeEnv + "=1", fakeMode + "=good", fakeState + "=" + t.TempDir(), "GORACE=atexit_sleep_ms=0"},
			Init: Init{Kind: k, Keys: []string{fakeKey}, TTLMS: 1000, Connect: ConnectNode, Nodes: []Node{{Name: "n1", Addr: "127.0.0.1:1"}}, ReadTimeoutMS: 100},
		})
		if err != nil {
			t.Fatalf("kind %s: %v", k, err)
		}
		prim, err := p.Primitive(fakeKey)
		p.Close()
		if err != nil || !k.Of(prim) {
			t.Errorf("kind %s: Primitive = %T, %v: not of the kind's interface", k, prim, err)
		}
	}
}
