package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/locktest"
)

// BenchmarkCycle is one Redlock acquire+release on five local servers, on
// its own, for profiling (-cpuprofile, -benchmem). The ratios against its
// floor (raw pipelined connections), single and redsync are lock's
// BenchmarkLocks.
func BenchmarkCycle(b *testing.B) {
	cs := locktest.Clients(b, redistest.Addrs(redistest.Start(b, 5)))
	// 500 ms node timeout: see lock's BenchmarkLocks.
	l := newLock(b, cs, "bench", 2500*time.Millisecond, lock.WithNodeTimeout(500*time.Millisecond))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		lease, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx, lease); err != nil {
			b.Fatal(err)
		}
	}
}
