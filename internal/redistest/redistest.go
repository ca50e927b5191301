// Package redistest starts real redis-server processes on 127.0.0.1 for
// tests and always stops them: on test cleanup, including after a failure
// or a panic in the test. It is a thin layer over cluster's process
// provider, which owns ports, process groups, Pdeathsig and the orphan
// record.
package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/cluster"
)

// Server is one running redis-server.
type Server struct {
	Addr string
	Port int
	// Dir is the server's directory: its log, and its data under data/.
	Dir  string
	name string
	args []string
	prov *cluster.ProcessProvider
}

// Start starts n independent redis-server processes and registers their
// shutdown with t.Cleanup. extra are additional redis-server arguments.
func Start(t testing.TB, n int, extra ...string) []*Server {
	t.Helper()
	prov, err := cluster.NewProcessProvider()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { _ = prov.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := make([]*Server, 0, n)
	for i := 0; i < n; i++ {
		s := &Server{Dir: t.TempDir(), name: fmt.Sprintf("redis%d", i+1), args: extra, prov: prov}
		addr, err := prov.Start(ctx, cluster.ProcSpec{Name: s.name, Dir: s.Dir, Args: extra})
		if err != nil {
			t.Fatalf("start redis-server %d: %v", i, err)
		}
		_, port, _ := net.SplitHostPort(addr)
		s.Addr = addr
		s.Port, _ = strconv.Atoi(port)
		servers = append(servers, s)
	}
	return servers
}

// Addrs returns the servers' addresses.
func Addrs(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr
	}
	return out
}

// Client returns a go-redis client to s, closed on test cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DisableIdentity: true, Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop kills the server (SIGKILL) and waits for it.
func (s *Server) Stop() { _ = s.prov.Kill(s.name) }

// Restart starts a stopped server again on its port, with its data wiped:
// a node that restarts empty.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.prov.Start(ctx, cluster.ProcSpec{Name: s.name, Dir: s.Dir, Args: s.args, Wipe: true}); err != nil {
		t.Fatalf("restart redis-server %s: %v", s.name, err)
	}
}

// Freeze stops the server (SIGSTOP) until thaw is called, or until the test
// ends: connections stay open and requests wait unread in its socket
// buffer, as with a stalled node. thaw may be called more than once.
func (s *Server) Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	if err := s.prov.Pause(s.name); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	frozen := true
	thaw = func() {
		if frozen {
			frozen = false
			_ = s.prov.Resume(s.name)
		}
	}
	t.Cleanup(thaw)
	return thaw
}

// Replicate makes replica a replica of primary and waits until their link
// is up.
func Replicate(t testing.TB, primary, replica *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	host, port, _ := net.SplitHostPort(primary.Addr)
	c := replica.Client(t)
	if err := c.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatalf("redistest: REPLICAOF on %s: %v", replica.Addr, err)
	}
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: replica %s never linked to %s (last INFO error: %v)", replica.Addr, primary.Addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
