package runner

import (
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/variants"
)

// A lock's Redis clients never retry unless its redis_retries asks, and
// then retry that often, whichever way they reach the primary (a failover
// client given go-redis's normalized "none", 0, would retry 3 times).
func TestClientsRetryAsTheLockSays(t *testing.T) {
	view := cluster.ClientView{Sentinels: []string{"127.0.0.1:1"}, MasterName: cluster.MasterName}
	for _, retries := range []int{0, 3} {
		cl := ClientLock{Lock: variants.Spec{Options: variants.Options{Variant: "single", RedisRetries: retries}, TTL: time.Second},
			View: view, ReadTimeout: 300 * time.Millisecond}
		want := retries // as go-redis normalizes them: 0 is none
		direct := lock.NewClient("127.0.0.1:1", cl.tweak)
		failover := failoverClient(view, access.Login{}, cl.tweak)
		for name, o := range map[string]int{"direct": direct.Options().MaxRetries, "failover": failover.Options().MaxRetries} {
			if o != want {
				t.Errorf("redis_retries %d: the %s client retries %d times, want %d", retries, name, o, want)
			}
		}
		if rt := direct.Options().ReadTimeout; rt != 300*time.Millisecond {
			t.Errorf("read timeout %v, want the lock's 300ms", rt)
		}
		_ = direct.Close()
		_ = failover.Close()
	}
}
