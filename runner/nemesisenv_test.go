package runner

import (
	"context"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/history"
)

// TestOracleGrantSaysWhenItsAcquireBegan: a grant the oracle hands a
// trigger carries the time its acquire was invoked (not when it returned),
// which a failover that cut replication compares with the cut.
func TestOracleGrantSaysWhenItsAcquireBegan(t *testing.T) {
	o := newOracle(checker.Config{})
	got := make(chan error, 1)
	var invoked int64
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		g, err := o.WaitGrant(ctx, "k")
		invoked = g.Invoked
		got <- err
	}()
	for {
		o.mu.Lock()
		n := len(o.waiters["k"])
		o.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	o.observe(history.Op{Process: 2, Client: 2, Type: history.Invoke, F: history.Acquire, Key: "k", Time: 100})
	o.observe(history.Op{Process: 1, Client: 1, Type: history.Invoke, F: history.Acquire, Key: "k", Time: 200})
	o.observe(history.Op{Process: 1, Client: 1, Type: history.OK, F: history.Acquire, Key: "k", Value: "v", Time: 300})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if invoked != 200 {
		t.Errorf("the grant says its acquire began at %d, want 200 (process 1's invoke)", invoked)
	}
}
