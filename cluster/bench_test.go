package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func benchStart(b *testing.B, spec Spec) {
	ctx := context.Background()
	var up time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c, err := Start(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		up += time.Since(start)
		b.StopTimer()
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(up.Milliseconds())/float64(b.N), "up-ms")
}

// BenchmarkStartIndependent5: five masters and 5×5 client proxies, until
// every node answers (target < 1 s).
func BenchmarkStartIndependent5(b *testing.B) {
	benchStart(b, Spec{Topology: Topology{Kind: Independent, N: 5}, Clients: 5})
}

// BenchmarkStartReplicated2Sentinels: primary, two linked replicas, three
// Sentinels that know every replica and each other (target < 3 s).
func BenchmarkStartReplicated2Sentinels(b *testing.B) {
	benchStart(b, Spec{Topology: Topology{Kind: Replicated, N: 2, Sentinels: true}, Clients: 5})
}

// BenchmarkPartition times cutting two of five nodes from five clients (10
// links, each with an open connection) and healing it (target < 10 ms).
func BenchmarkPartition(b *testing.B) {
	for _, mode := range []CutMode{Reset, Blackhole} {
		b.Run(string(mode), func(b *testing.B) {
			ctx := context.Background()
			c, err := Start(ctx, Spec{Topology: Topology{Kind: Independent, N: 5}, Clients: 5})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var clients []*redis.Client
			for i := 0; i < 5; i++ {
				for _, x := range c.Nodes() {
					addr, _ := c.ClientAddr(i, x)
					cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, DisableIdentity: true, Protocol: 2})
					defer cl.Close()
					clients = append(clients, cl)
				}
			}
			links := append(c.LinksTo("n1"), c.LinksTo("n2")...)
			var apply, heal time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, cl := range clients { // every link carries a live connection
					_ = cl.Ping(ctx).Err()
				}
				b.StartTimer()
				t0 := time.Now()
				if err := c.Cut(mode, Both, links...); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := c.Heal(links...); err != nil {
					b.Fatal(err)
				}
				apply += t1.Sub(t0)
				heal += time.Since(t1)
			}
			b.ReportMetric(float64(apply.Microseconds())/1000/float64(b.N), "apply-ms")
			b.ReportMetric(float64(heal.Microseconds())/1000/float64(b.N), "heal-ms")
		})
	}
}

// BenchmarkFailover times a Sentinel failover from the kill of the primary
// to WaitFailover's return (about 3 s with down-after 1000 ms).
func BenchmarkFailover(b *testing.B) {
	ctx := context.Background()
	var took time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, err := Start(ctx, Spec{Topology: Topology{Kind: Replicated, N: 1, Sentinels: true}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := c.Kill("p"); err != nil {
			b.Fatal(err)
		}
		if _, err := c.WaitFailover(ctx, "p"); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		b.StopTimer()
		_ = c.Close()
		b.StartTimer()
	}
	b.ReportMetric(took.Seconds()/float64(b.N), "failover-s")
}
