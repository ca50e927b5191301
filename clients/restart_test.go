package clients_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// dieAfterGrant runs a client program (its command after the state
// directory) and relays its lines both ways; in its first run, once it has
// relayed a grant (an ok reply with a lease), it SIGKILLs the program and
// exits, as a client process that crashed while holding. Each run leaves
// a file named by its pid in the state directory.
const dieAfterGrant = `
import json, os, subprocess, sys, threading
state, cmd = sys.argv[1], sys.argv[2:]
first = not os.listdir(state)
open(os.path.join(state, str(os.getpid())), "w").close()
child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def down():
    for line in sys.stdin.buffer:
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
threading.Thread(target=down, daemon=True).start()
for line in child.stdout:
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    msg = json.loads(line)
    if first and msg.get("type") == "ok" and "lease" in msg:
        child.kill()
        child.wait()
        os._exit(9)
sys.exit(child.wait())
`

// TestRestartedClientReleasesTheDeadOnesLease: clients/PROTOCOL.md
// promises that a restarted client keeps its client number and that
// "leases granted to its previous process are still released through it,
// with the lease the acquire returned". A client program dies right after
// its grant (killed, holding the lock on a real server); the next call, a
// release of that lease, runs on a restarted program, succeeds, and frees
// the lock for another owner — which the lock refused while the dead
// process's lease stood.
func TestRestartedClientReleasesTheDeadOnesLease(t *testing.T) {
	t.Parallel()
	relay := filepath.Join(t.TempDir(), "die-after-grant.py")
	if err := os.WriteFile(relay, []byte(dieAfterGrant), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range protocol.Shipped() {
		t.Run(name, func(t *testing.T) {
			m, _ := protocol.Lookup(name)
			servers := redistest.Start(t, nodeCount(m))
			key := locktest.Key(t)
			in := initFor(m, servers, key, 30*time.Second, nil) // no expiry frees it during the test
			inst, err := m.Install()
			if err != nil {
				t.Fatalf("install client %s: %v", name, err)
			}
			state := t.TempDir()
			var mu sync.Mutex
			var log bytes.Buffer
			t.Cleanup(func() {
				if t.Failed() {
					mu.Lock()
					t.Logf("client %s stderr:\n%s", name, log.String())
					mu.Unlock()
				}
			})
			p, err := protocol.Start(protocol.Config{Name: name, Command: append([]string{"/usr/bin/python3", relay, state}, inst.Command...),
				Env: inst.Env, Init: in, Log: lockedWriter{&mu, &log}})
			if err != nil {
				t.Fatalf("start client %s behind the relay: %v", name, err)
			}
			t.Cleanup(func() { p.Close() })
			l := locker(t, p, key)
			other := locker(t, start(t, name, in), key)

			held, err := l.Acquire(ctxFor(t, 10*time.Second))
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			waitGone(t, state)
			if _, err := other.Acquire(ctxFor(t, 10*time.Second)); !errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("another owner's acquire while the dead process's lease stands: %v, want ErrNotObtained", err)
			}
			if err := l.Release(ctxFor(t, 10*time.Second), held); err != nil {
				t.Fatalf("release, through the restarted client, of the lease its dead process acquired: %v", err)
			}
			if runs, _ := os.ReadDir(state); len(runs) != 2 {
				t.Fatalf("the client ran %d times, want 2 (restarted once, for the release)", len(runs))
			}
			got, err := other.Acquire(ctxFor(t, 10*time.Second))
			if err != nil {
				t.Fatalf("another owner's acquire after the release: %v; the release did not free the lock", err)
			}
			if err := other.Release(ctxFor(t, 10*time.Second), got); err != nil {
				t.Fatalf("release of the other owner's lease: %v", err)
			}
		})
	}
}

// waitGone waits until the first run of the relay (its pid, the one file
// in state) has exited and been reaped.
func waitGone(t *testing.T, state string) {
	t.Helper()
	runs, err := os.ReadDir(state)
	if err != nil || len(runs) != 1 {
		t.Fatalf("relay runs %v (%v), want one", runs, err)
	}
	pid, err := strconv.Atoi(runs[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the client (relay pid %d) did not exit after its grant", pid)
		}
	}
}
