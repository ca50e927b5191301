package redlock

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

// The cleanup counts a node as clear only if its compare-and-delete is
// known to have been applied after the SET: the SET answered, or both went
// out on the same connection.
func TestCleanupConfirmsOnlyOrderedDeletes(t *testing.T) {
	addrs := redistest.Addrs(redistest.Start(t, 3))
	ctx := context.Background()
	set := request{op: opSet, key: "cleanup", value: "v", ttl: 10 * time.Second}
	all := []bool{true, true, true}
	unknown := []error{errNodeTimeout, errNodeTimeout, errNodeTimeout}

	l, err := New(locktest.Clients(t, addrs), "cleanup", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, gen := l.fanout(ctx, set, nil, 4)
	for i, err := range res {
		if err != nil || gen[i] == 0 {
			t.Fatalf("node %d: SET %v on connection %d", i, err, gen[i])
		}
	}
	if left := l.cleanup(ctx, "v", all, unknown, gen); left != 0 {
		t.Fatalf("deletes behind the SETs on their connections: %d nodes left, want 0", left)
	}
	// The key is gone now, so every delete answers "not ours". Where the
	// SET's outcome is unknown and it went out on another connection, that
	// answer may have overtaken it.
	other := []uint64{gen[0] + 1000, gen[1], 0}
	if left := l.cleanup(ctx, "v", all, unknown, other); left != 2 {
		t.Fatalf("deletes on other connections than unknown SETs: %d nodes left, want 2", left)
	}
	if left := l.cleanup(ctx, "v", all, []error{nil, errHeld, lock.ErrNotObtained}, other); left != 0 {
		t.Fatalf("deletes after answered SETs: %d nodes left, want 0", left)
	}

	// Through go-redis nothing is known about the order.
	g, err := New(ringClients(t, addrs), "cleanup", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, gen := g.fanout(ctx, set, nil, 4); gen[0] != 0 {
		t.Fatalf("go-redis transport reported connection %d", gen[0])
	}
	if left := g.cleanup(ctx, "v", all, unknown, []uint64{0, 0, 0}); left != 3 {
		t.Fatalf("go-redis transport, unknown SETs: %d nodes left, want 3", left)
	}
	if left := g.cleanup(ctx, "v", all, []error{nil, nil, nil}, []uint64{0, 0, 0}); left != 0 {
		t.Fatalf("go-redis transport, answered SETs: %d nodes left, want 0", left)
	}
}

func ringClients(t testing.TB, addrs []string) []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"s": a}, MaxRetries: -1, DisableIdentity: true, Protocol: 2})
		t.Cleanup(func() { _ = r.Close() })
		out[i] = r
	}
	return out
}

func TestDirectClient(t *testing.T) {
	plain := lock.NewClient("127.0.0.1:1")
	hooked := lock.NewClient("127.0.0.1:1", func(o *redis.Options) {
		o.OnConnect = func(context.Context, *redis.Conn) error { return nil }
	})
	creds := lock.NewClient("127.0.0.1:1", func(o *redis.Options) {
		o.CredentialsProvider = func() (string, string) { return "u", "p" }
	})
	tlsc := lock.NewClient("127.0.0.1:1", func(o *redis.Options) { o.TLSConfig = &tls.Config{} })
	ring := ringClients(t, []string{"127.0.0.1:1"})[0]
	for _, c := range []*redis.Client{plain, hooked, creds, tlsc} {
		t.Cleanup(func() { _ = c.Close() })
	}
	if directClient(plain) != plain {
		t.Error("a plain *redis.Client does not take the pipelined transport")
	}
	for name, c := range map[string]redis.UniversalClient{"OnConnect": hooked, "CredentialsProvider": creds, "TLS": tlsc, "Ring": ring} {
		if directClient(c) != nil {
			t.Errorf("a client with %s takes the pipelined transport, which cannot honour it", name)
		}
	}
}
