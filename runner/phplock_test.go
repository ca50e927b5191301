package runner

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
	"github.com/tumbler-dev/tumbler/lock/conform"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// phpLockClient is the client directory of php-lock/lock's PHPRedisMutex
// (Debian php-malkusch-lock), loaded from disk as a user's is.
const phpLockClient = "../contrib/clients/php-lock"

// phpLock is php-lock's manifest, installed; the test is skipped when php
// or the library is missing, except in CI (TUMBLER_CI=1), where
// scripts/setup installs them and a missing one fails.
func phpLock(t *testing.T) (protocol.Manifest, protocol.Installed) {
	t.Helper()
	m, err := protocol.LoadDir(phpLockClient)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := m.Install()
	if err != nil {
		if os.Getenv("TUMBLER_CI") != "" {
			t.Fatalf("php-lock's client cannot run (scripts/setup installs %s): %v", strings.Join(m.Packages, ", "), err)
		}
		t.Skipf("php-lock's client cannot run here: %v", err)
	}
	return m, inst
}

// startPHPLock runs the client over servers with a TTL of ttl on key.
func startPHPLock(t *testing.T, inst protocol.Installed, servers []*redistest.Server, key string, ttl time.Duration) (*protocol.Process, error) {
	t.Helper()
	in := protocol.Init{Kind: lock.KindLock, Keys: []string{key}, TTLMS: ttl.Milliseconds(), Connect: protocol.ConnectNodes, ReadTimeoutMS: 1000}
	for i, a := range redistest.Addrs(servers) {
		in.Nodes = append(in.Nodes, protocol.Node{Name: fmt.Sprintf("n%d", i+1), Addr: a})
	}
	p, err := protocol.Start(protocol.Config{Name: "php-lock", Command: inst.Command, Env: inst.Env, Init: in})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { p.Close() })
	return p, nil
}

// TestConformPHPLock: php-lock's client directory conforms on real
// servers (three independent nodes: its manifest connects to all), every
// check passing but Extend, the deviation its manifest documents.
func TestConformPHPLock(t *testing.T) {
	t.Parallel()
	phpLock(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Conform(ctx, ConformOptions{Client: protocol.Program{Dir: phpLockClient}, Store: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Client != "php-lock" || !res.Passed() || !strings.Contains(res.Library, "PHPRedisMutex") || len(res.Checks) != len(conform.Checks) {
		t.Fatalf("conform of %s: %s %s %+v", phpLockClient, res.Client, res.Library, res.Checks)
	}
	for _, c := range res.Checks {
		want := ConformPass
		switch c.Name {
		case conform.Extend:
			want = ConformDeviation
		case conform.Valid: // php-lock exposes no verdict on a held lock to ask
			want = ConformNotApplicable
		}
		if c.Outcome != want {
			t.Errorf("check %s: %s %s, want %s", c.Name, c.Outcome, c.Detail, want)
		}
	}
}

// TestPHPLockCannotExtend: what the manifest says of php-lock, on the
// library: its keys are lock_<name> on every node, living the timeout plus
// one second; an extend fails naming why (the library has none); a TTL
// that is not whole seconds is refused at init; and a release after the
// timeout is refused with the library's ExecutionOutsideLockException,
// leaving the keys to expire.
func TestPHPLockCannotExtend(t *testing.T) {
	t.Parallel()
	_, inst := phpLock(t)
	servers := redistest.Start(t, 3)
	key := "tumbler:phplock"
	p, err := startPHPLock(t, inst, servers, key, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	prim, err := p.Primitive(key)
	if err != nil {
		t.Fatal(err)
	}
	l := prim.(lock.Locker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		c := s.Client(t)
		if v := c.Get(ctx, "lock_"+key).Val(); v != held.Value {
			t.Errorf("n%d: lock_%s = %q, want the lease's token %q", i+1, key, v, held.Value)
		}
		if ttl := c.PTTL(ctx, "lock_"+key).Val(); ttl <= 2*time.Second || ttl > 3*time.Second {
			t.Errorf("n%d: PTTL %v for a 2 s timeout, want the library's timeout + 1 s", i+1, ttl)
		}
	}
	if _, err := l.Extend(ctx, held); !errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "cannot be extended") {
		t.Errorf("extend: %v, want a refusal saying the lock cannot be extended", err)
	}
	if err := l.Release(ctx, held); err != nil {
		t.Fatalf("release within the timeout: %v", err)
	}
	if n := servers[0].Client(t).Exists(ctx, "lock_"+key).Val(); n != 0 {
		t.Errorf("lock_%s still on n1 after the release", key)
	}

	late, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // past the timeout, within the keys' 3 s
	if err := l.Release(ctx, late); !errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), "ExecutionOutsideLockException") {
		t.Errorf("release after the timeout: %v, want the library's ExecutionOutsideLockException", err)
	}
	if v := servers[0].Client(t).Get(ctx, "lock_"+key).Val(); v != late.Value {
		t.Errorf("after the refused release lock_%s = %q, want the key left to expire (%q)", key, v, late.Value)
	}

	if _, err := startPHPLock(t, inst, servers, key, 1500*time.Millisecond); !errors.Is(err, protocol.ErrInit) || !strings.Contains(err.Error(), "whole seconds") {
		t.Errorf("init with a TTL of 1.5 s: %v, want a refusal naming whole seconds", err)
	}
}
