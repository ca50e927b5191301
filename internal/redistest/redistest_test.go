package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartServesAndStops(t *testing.T) {
	servers := Start(t, 2)
	ctx := context.Background()
	for _, s := range servers {
		c := s.Client(t)
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("set on %s: %v", s.Addr, err)
		}
	}
	servers[0].Stop()
	if err := servers[0].Client(t).Ping(ctx).Err(); err == nil {
		t.Fatalf("server %s still answers after Stop", servers[0].Addr)
	}
}

// A frozen server keeps its connections but answers nothing until thawed.
func TestFreezeAndThaw(t *testing.T) {
	s := Start(t, 1)[0]
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	thaw := s.Freeze(t)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("a frozen server answered PING")
	}
	thaw()
	thaw() // idempotent
	if err := s.Client(t).Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after thaw: %v", err)
	}
}

func TestReplicate(t *testing.T) {
	t.Parallel()
	s := Start(t, 2)
	Replicate(t, s[0], s[1])
	ctx := context.Background()
	if err := s[0].Client(t).Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := s[1].Client(t)
	deadline := time.Now().Add(5 * time.Second)
	for r.Get(ctx, "k").Val() != "v" {
		if time.Now().After(deadline) {
			t.Fatal("the replica never got the primary's write")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
