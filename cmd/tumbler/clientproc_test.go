package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/outcome"
)

// hangingClient is a lock client program that hangs with a process of its
// own below it (sh runs sleep) — at once, or (answerInit) once it answered
// its init: its sleep's argument is unique to the test, so that what is
// left can be found.
func hangingClient(t *testing.T, answerInit bool) (cmd, marker string) {
	marker = fmt.Sprintf("1000.%d", time.Now().UnixNano()%1_000_000_000)
	if answerInit {
		return `sh -c 'read l; echo "{\"in_reply_to\":1,\"type\":\"ok\",\"library\":\"hang\"}"; sleep ` + marker + `; true'`, marker
	}
	return "sh -c 'sleep " + marker + "; true'", marker
}

// processesOf are the pids whose command line holds marker.
func processesOf(marker string) []string {
	return processesWith(func(cmdline []byte) bool { return bytes.Contains(cmdline, []byte(marker)) })
}

// sleepingOf are the pids of the client's own sleep (not tumbler's, whose
// arguments also hold marker): a client that answered its init has one.
func sleepingOf(marker string) []string {
	return processesWith(func(cmdline []byte) bool { return bytes.Equal(cmdline, []byte("sleep\x00"+marker+"\x00")) })
}

func processesWith(match func(cmdline []byte) bool) []string {
	var out []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil && match(b) {
			out = append(out, filepath.Base(filepath.Dir(f)))
		}
	}
	return out
}

// waitExit waits for cmd to exit; a hang past guard fails the test (it is
// a bound on a hang, not a measurement).
func waitExit(t *testing.T, cmd *exec.Cmd, guard time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(guard):
		_ = cmd.Process.Kill()
		t.Fatalf("still running after %v", guard)
	}
	return time.Since(start)
}

// TestClientNeverAnswersInit: conform and run of a client program that
// never answers its init stop on their own with a harness failure (255)
// naming the client and the unanswered init, and leave none of its
// processes behind (the sh, nor the sleep it started).
func TestClientNeverAnswersInit(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"conform"}, {"run", "--time-limit", "3s", "--seed", "1"}, {"run", "--time-limit", "3s", "--seed", "1", "--client-mode", "inprocess"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			client, marker := hangingClient(t, false)
			cmd := command(t, nil, append(args, "--client-cmd", client, "--store", t.TempDir(), "--log-level", "warn")...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			took := waitExit(t, cmd, 3*time.Minute)
			t.Logf("%s stopped after %v", args[0], took.Round(100*time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != outcome.ExitHarness {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, outcome.ExitHarness, out.String(), errb.String())
			}
			for _, w := range []string{"client sh -c sleep " + marker, "no reply to init within 30s"} {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, errb.String())
				}
			}
			if left := processesOf(marker); len(left) > 0 {
				t.Errorf("processes of the client left behind: %v", left)
			}
		})
	}
}

// TestSecondInterruptLeavesNoClient: a second Ctrl-C quits at once (130)
// while the first one waits for a client program's call to end (it
// answered its init, then hangs), and kills the client programs and what
// they started — in a conform (a process group of the harness's per
// client) and in a run (the client workers' groups).
func TestSecondInterruptLeavesNoClient(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"conform"}, {"run", "--time-limit", "3s", "--seed", "1"}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			client, marker := hangingClient(t, true)
			cmd := command(t, nil, append(args, "--client-cmd", client, "--store", t.TempDir(), "--log-level", "warn")...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			for deadline := time.Now().Add(time.Minute); len(sleepingOf(marker)) == 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the client never answered its init\n%s", errb.String())
				}
			}
			time.Sleep(200 * time.Millisecond) // its first call sent
			_ = cmd.Process.Signal(syscall.SIGINT)
			time.Sleep(300 * time.Millisecond) // the first one taken: the call in flight holds the stop for seconds
			_ = cmd.Process.Signal(syscall.SIGINT)
			waitExit(t, cmd, time.Minute)
			if code := cmd.ProcessState.ExitCode(); code != outcome.ExitAbort {
				t.Errorf("exit %d after two interrupts, want %d\n%s", code, outcome.ExitAbort, errb.String())
			}
			var left []string
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) { // SIGKILLed, maybe not reaped yet
				if left = processesOf(marker); len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			if len(left) > 0 {
				t.Errorf("processes of the client left behind after a second interrupt: %v\n%s", left, errb.String())
			}
		})
	}
}
