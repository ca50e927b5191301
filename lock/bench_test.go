package lock_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/adapters"
	"github.com/tumbler-dev/tumbler/lock/redlock"
	"github.com/tumbler-dev/tumbler/lock/single"
)

// docsRelease is the release script exactly as the Redis documentation prints it: the
// hand-written baseline a library must not lose to, sent as plain EVAL
// ("raw") and as EVALSHA ("rawsha", what single sends).
const docsRelease = `if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end`

// BenchmarkLocks measures one acquire+release cycle of each lock against
// the same five redis-servers, interleaving the variants (rotating their
// order every round) so machine noise hits all of them alike, and reports
// each variant's median cycle (<name>-p50-ns) and ratios of the medians:
//
//	single/raw        tumbler's single vs. SET NX PX + EVAL by hand  (target ≤ 1.10)
//	single/rawsha     the same with the release sent as EVALSHA, as single does
//	redlock5/floor5   tumbler's Redlock on 5 nodes vs. its floor      (target ≤ 1.15)
//	redlock5/single   tumbler's Redlock on 5 nodes vs. single
//	floor5/single     what 5 nodes cost at the least, vs. one node
//	redlock5/redsync5 tumbler's Redlock vs. go-redsync on 5 nodes    (target ≤ 0.77: 1.3× faster)
//	single/redislock  tumbler's single vs. bsm/redislock
//
// floor5 (floor_test.go) is what a 5-node lock costs at the least: SET NX
// PX written at once on five raw connections, returning at the third OK,
// then the compare-and-delete by EVALSHA the same way. redlock5/floor5 is
// therefore what tumbler's Redlock adds to the protocol; redlock5/single
// mixes that with what five servers sharing the machine's cores cost
// against one, which swings with how fast an idle core wakes (1.5×–4.7×
// seen on a shared 2-core host) and says little about the code:
// floor5/single shows that part alone.
//
// On loopback the figures are dominated by round trips and scheduling of
// the servers on the machine's cores, which is what the ratios compare.
// Both Redlocks get a node timeout of 500 ms instead of the default 50 ms:
// on a loaded two-core machine a scheduling stall past 50 ms now and then
// would fail an acquire and abort the whole run, and medians are what
// count. docs/measurements.md ("Redlock against its floor") records a run.
func BenchmarkLocks(b *testing.B) {
	servers := redistest.Start(b, 5)
	const ttl = 2500 * time.Millisecond // not whole seconds: go-redis's SetNX then sends PX, as the others do
	ctx := context.Background()
	newClient := func(addr string) *redis.Client {
		c := lock.NewClient(addr)
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	fiveNodes := func() []redis.UniversalClient {
		cs := make([]redis.UniversalClient, len(servers))
		for i, s := range servers {
			cs[i] = newClient(s.Addr)
		}
		return cs
	}
	must := func(l lock.Locker, err error) lock.Locker {
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	cycle := func(l lock.Locker) func() error {
		return func() error {
			lease, err := l.Acquire(ctx)
			if err != nil {
				return err
			}
			return l.Release(ctx, lease)
		}
	}
	stalls := lock.WithNodeTimeout(500 * time.Millisecond)
	raw := newClient(servers[0].Addr)
	rawSHA, err := raw.ScriptLoad(ctx, docsRelease).Result()
	if err != nil {
		b.Fatal(err)
	}
	floor5 := newFloor(b, redistest.Addrs(servers))
	rawCycle := func(key string, release func(value string) *redis.Cmd) error {
		value := lock.RandomValue()
		if ok, err := raw.SetNX(ctx, key, value, ttl).Result(); err != nil || !ok {
			return fmt.Errorf("raw SET NX PX: %v %v", ok, err)
		}
		if n, err := release(value).Int(); err != nil || n != 1 {
			return fmt.Errorf("raw release: %v %v", n, err)
		}
		return nil
	}
	variants := []struct {
		name  string
		cycle func() error
	}{
		{"raw", func() error {
			return rawCycle("bench:raw", func(value string) *redis.Cmd {
				return raw.Eval(ctx, docsRelease, []string{"bench:raw"}, value)
			})
		}},
		{"rawsha", func() error {
			return rawCycle("bench:rawsha", func(value string) *redis.Cmd {
				return raw.EvalSha(ctx, rawSHA, []string{"bench:rawsha"}, value)
			})
		}},
		{"single", cycle(must(single.New(newClient(servers[0].Addr), "bench:single", ttl)))},
		{"redislock", cycle(must(adapters.NewRedislock(newClient(servers[0].Addr), "bench:redislock", ttl)))},
		{"redlock5", cycle(must(redlock.New(fiveNodes(), "bench:redlock", ttl, stalls)))},
		{"redsync5", cycle(must(adapters.NewRedsync(fiveNodes(), "bench:redsync", ttl, stalls)))},
		{"floor5", func() error { return floor5.cycle("bench:floor", ttl) }},
	}
	names := make([]string, len(variants))
	for k, v := range variants {
		names[k] = v.name
	}
	for _, v := range variants { // connections, script caches, first-use allocations
		for range 50 {
			if err := v.cycle(); err != nil {
				b.Fatalf("%s warm-up: %v", v.name, err)
			}
		}
	}
	samples := make([][]time.Duration, len(variants))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range variants {
			k := (i + j) % len(variants)
			start := time.Now()
			if err := variants[k].cycle(); err != nil {
				b.Fatalf("%s: %v", variants[k].name, err)
			}
			samples[k] = append(samples[k], time.Since(start))
		}
	}
	b.StopTimer()
	reportMedians(b, names, samples, [][2]string{
		{"single", "raw"}, {"single", "rawsha"}, {"redlock5", "floor5"}, {"redlock5", "single"},
		{"floor5", "single"}, {"redlock5", "redsync5"}, {"single", "redislock"},
	})
}

// reportMedians reports each variant's median sample as <name>-p50-ns and
// the ratio of the medians of each pair as <a>/<b>.
func reportMedians(b *testing.B, names []string, samples [][]time.Duration, ratios [][2]string) {
	med := map[string]float64{}
	var line strings.Builder
	for k, name := range names {
		slices.Sort(samples[k])
		m := samples[k][len(samples[k])/2]
		med[name] = float64(m)
		b.ReportMetric(float64(m.Nanoseconds()), name+"-p50-ns")
		fmt.Fprintf(&line, " %s %v", name, m)
	}
	b.Logf("median acquire+release cycle over %d rounds:%s", b.N, line.String())
	for _, r := range ratios {
		b.ReportMetric(med[r[0]]/med[r[1]], r[0]+"/"+r[1])
	}
}
