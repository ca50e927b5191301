package cluster

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestCloseOnSignal(t *testing.T) {
	c := startCluster(t, Spec{Topology: topo(t, "independent:1")})
	pid := pidsOf(c)["n1"]
	got := make(chan os.Signal, 1)
	stop := CloseOnSignal(c, func(s os.Signal) { got <- s })
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != syscall.SIGHUP {
			t.Errorf("handler got %v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no signal handled")
	}
	if processExists(pid) {
		t.Errorf("n1 (pid %d) survived the signal", pid)
	}
	if !c.closed.Load() {
		t.Error("cluster not closed by the signal")
	}
}
