package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSweepOrphans plays a harness that died without cleaning up: a record
// names a dead owner and a live process that nothing else would kill.
func TestSweepOrphans(t *testing.T) {
	t.Parallel()
	// A dead owner: a process that has exited.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	// The orphan: no Pdeathsig, its own process group, like a server left
	// behind.
	orphan := exec.Command("sleep", "300")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = orphan.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-orphan.Process.Pid, syscall.SIGKILL); <-exited })
	start, err := procStart(orphan.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	leftDir := t.TempDir() + "/left-behind"
	if err := os.Mkdir(leftDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(StateDir(), "procs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := record{Owner: gone.Process.Pid, OwnerStart: 1, RemoveDirs: []string{leftDir},
		Procs: []recordEntry{{Name: "n1", Pid: orphan.Process.Pid, Start: start}}}
	b, _ := json.Marshal(&rec)
	path := filepath.Join(dir, fmt.Sprintf("%d-test.json", gone.Process.Pid))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// A live owner's record is left alone, even listing a live process.
	self, _ := procStart(os.Getpid())
	live := record{Owner: os.Getpid(), OwnerStart: self, Procs: []recordEntry{{Name: "n1", Pid: orphan.Process.Pid, Start: start}}}
	b, _ = json.Marshal(&live)
	livePath := filepath.Join(dir, fmt.Sprintf("%d-livetest.json", os.Getpid()))
	if err := os.WriteFile(livePath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(livePath) })

	killed, err := SweepOrphans()
	if err != nil {
		t.Logf("sweep reported: %v", err) // other runs' records are not ours to judge
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("orphan %d survived the sweep (killed %v)", orphan.Process.Pid, killed)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the dead owner's record is still there: %v", err)
	}
	if _, err := os.Stat(leftDir); !os.IsNotExist(err) {
		t.Errorf("the dead owner's temporary dir is still there: %v", err)
	}
	if _, err := os.Stat(livePath); err != nil {
		t.Errorf("a live owner's record was swept: %v", err)
	}
}

const panicChildEnv = "TUMBLER_CLUSTER_PANIC_CHILD"

// TestPanickingOwnerLeavesNoServer runs a child test process that starts a
// cluster (data nodes and Sentinels) and panics without closing it, then
// checks that every Redis process of that cluster is gone.
func TestPanickingOwnerLeavesNoServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestPanickingOwnerChild$", "-test.count=1")
	child.Env = append(os.Environ(), panicChildEnv+"=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = child.Stdout
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	var transcript []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		transcript = append(transcript, line)
		if rest, ok := strings.CutPrefix(line, "PIDS "); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("bad pid line %q", line)
				}
				pids = append(pids, pid)
			}
		}
	}
	err = child.Wait()
	if err == nil {
		t.Fatalf("the child did not panic:\n%s", strings.Join(transcript, "\n"))
	}
	if !strings.Contains(strings.Join(transcript, "\n"), "panic: owner panics") {
		t.Fatalf("the child failed otherwise (%v):\n%s", err, strings.Join(transcript, "\n"))
	}
	if len(pids) != 5 {
		t.Fatalf("child reported pids %v, want 5 (p, r1, s1..s3):\n%s", pids, strings.Join(transcript, "\n"))
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for processExists(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d of the panicked owner %d still runs", pid, child.Process.Pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Its record is stale now; the next sweep removes it.
	_, _ = SweepOrphans()
	matches, _ := filepath.Glob(filepath.Join(StateDir(), "procs", strconv.Itoa(child.Process.Pid)+"-*.json"))
	if len(matches) != 0 {
		t.Errorf("records of the dead owner remain: %v", matches)
	}
}

func TestPanickingOwnerChild(t *testing.T) {
	if os.Getenv(panicChildEnv) == "" {
		t.Skip("run by TestPanickingOwnerLeavesNoServer")
	}
	c, err := Start(context.Background(), Spec{Topology: Topology{Kind: Replicated, N: 1, Sentinels: true}, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, p := range c.Info().Procs {
		pids = append(pids, strconv.Itoa(p.Pid))
	}
	fmt.Println("PIDS " + strings.Join(pids, " "))
	// A panic on another goroutine: no deferred call, no t.Cleanup runs.
	go panic("owner panics")
	select {}
}
