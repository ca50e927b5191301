package clients_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

// phpClients are the clients that model a PHP application's life
// (per_request).
var phpClients = []string{"symfony", "symfony-combined", "laravel"}

// TestPerRequest: by default a PHP client is an application under PHP-FPM
// — each acquire…release cycle is a request that connects anew and closes
// its connections after the release — and with per_request false a
// long-running worker that keeps one connection for every call.
func TestPerRequest(t *testing.T) {
	t.Parallel()
	for _, name := range phpClients {
		for _, perRequest := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/per_request=%v", name, perRequest), func(t *testing.T) {
				m := manifest(t, name)
				servers := redistest.Start(t, nodeCount(m))
				key := locktest.Key(t)
				l := locker(t, start(t, name, initFor(m, servers, key, 5*time.Second, map[string]any{"per_request": perRequest})), key)
				ctx := ctxFor(t, 30*time.Second)
				admin := servers[0].Client(t).Conn()
				t.Cleanup(func() { admin.Close() })
				var seen []int64 // the client's connection to n1 in each cycle
				for cycle := 1; cycle <= 2; cycle++ {
					held, err := l.Acquire(ctx)
					if err != nil {
						t.Fatalf("cycle %d: acquire: %v", cycle, err)
					}
					ids := clientIDs(t, ctx, admin)
					if len(ids) != 1 {
						t.Fatalf("cycle %d: the client has %d connections to n1 while it holds the lock (%v), want 1", cycle, len(ids), ids)
					}
					seen = append(seen, ids[0])
					if err := l.Release(ctx, held); err != nil {
						t.Fatalf("cycle %d: release: %v", cycle, err)
					}
					want := 1
					if perRequest {
						want = 0 // the request ended: its connection is closed
					}
					if ids := waitClients(t, ctx, admin, want); len(ids) != want {
						t.Fatalf("cycle %d: after the release the client has connections %v to n1, want %d", cycle, ids, want)
					}
				}
				if same := seen[0] == seen[1]; same == perRequest {
					t.Fatalf("connections of the two cycles: %v; per_request %v wants them %s", seen, perRequest, map[bool]string{true: "different", false: "the same"}[perRequest])
				}
			})
		}
	}
}

// TestSymfonyCombinedConnectsLazily: a node the CombinedStore could not
// reach when the client started is tried again at each use, as the lazy
// connection Symfony's StoreFactory makes from a DSN is (RedisProxy), so
// once it is back it holds the lock too — also in a long-running worker.
func TestSymfonyCombinedConnectsLazily(t *testing.T) {
	t.Parallel()
	servers := redistest.Start(t, 3)
	key := locktest.Key(t)
	servers[2].Stop()
	in := initFor(manifest(t, "symfony-combined"), servers, key, 5*time.Second, map[string]any{"per_request": false})
	in.ReadTimeoutMS = 300
	l := locker(t, start(t, "symfony-combined", in), key)
	ctx := ctxFor(t, 30*time.Second)
	held, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire with n3 down since the start: %v", err)
	}
	if err := l.Release(ctx, held); err != nil {
		t.Fatalf("release: %v", err)
	}
	servers[2].Restart(t)
	held, err = l.Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire once n3 is back: %v", err)
	}
	if n := servers[2].Client(t).Exists(ctx, key).Val(); n != 1 {
		t.Fatalf("key on n3 while the lock is held, n3 back: exists %d; the store must have connected to it at its use", n)
	}
	if err := l.Release(ctx, held); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// clientIDs are the ids of the server's client connections other than
// admin's own.
func clientIDs(t *testing.T, ctx context.Context, admin *redis.Conn) []int64 {
	t.Helper()
	own, err := admin.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				if id, err := strconv.ParseInt(v, 10, 64); err == nil && id != own {
					out = append(out, id)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// waitClients returns the client connections once there are want of them,
// or those there are after 5 s (the server notices a close a moment later).
func waitClients(t *testing.T, ctx context.Context, admin *redis.Conn, want int) []int64 {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for {
		ids := clientIDs(t, ctx, admin)
		if len(ids) == want || time.Now().After(end) {
			return ids
		}
		time.Sleep(20 * time.Millisecond)
	}
}
