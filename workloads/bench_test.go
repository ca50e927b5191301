package workloads_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/redistest"
	"github.com/tumbler-dev/tumbler/workloads"
)

type discard struct{}

func (discard) Record(op history.Op) (history.Op, error) { return op, nil }

// BenchmarkRecording runs a mutex workload against one loopback Redis with
// and without recording (history.Recorder streaming JSON lines to a file vs
// a recorder that drops everything), alternating the two within each
// iteration so machine load hits both alike. Reported: recorded lock
// operations per second (every acquire and release invoke and completion)
// with recording, the same without, and the cost of recording in percent
// (the median over iterations of 1 − with/without, robust to load bursts
// from whatever else runs on the machine);
// and, since throughput on a shared machine is noisy, the harness's own CPU
// time per lock operation with and without recording and its difference.
func BenchmarkRecording(b *testing.B) {
	srv := redistest.Start(b, 1)[0]
	cfg := workloads.Config{
		Options: workloads.Options{
			Mode:    workloads.InProcess,
			Kind:    workloads.Mutex,
			Clients: 16,
			Keys:    256,
		},
		KeyPrefix: "bench:",
		Lock:      workloads.LockSpec{Builder: testBuilder, Spec: spec(b, testSpec{Addr: srv.Addr, TTL: 10 * time.Second})},
		TimeLimit: 500 * time.Millisecond,
	}
	lockOps := func(s workloads.Stats) float64 {
		a, r := s.Ops[history.Acquire], s.Ops[history.Release]
		return float64(a.Invoke + a.OK + a.Fail + a.Info + r.Invoke + r.OK + r.Fail + r.Info)
	}
	var withCPU, withoutCPU time.Duration
	run := func(rec workloads.Recorder) (float64, time.Duration) {
		before := cpuTime(b)
		stats, err := workloads.Run(context.Background(), cfg, workloads.Harness{Clock: history.NewClock(), Recorder: rec})
		if err != nil {
			b.Fatal(err)
		}
		if _, discarding := rec.(discard); discarding {
			withoutCPU += cpuTime(b) - before
		} else {
			withCPU += cpuTime(b) - before
		}
		return lockOps(stats), stats.Elapsed
	}
	var withOps, withoutOps float64
	var withTime, withoutTime time.Duration
	dir := b.TempDir()
	b.ResetTimer()
	var costs []float64
	for i := 0; i < b.N; i++ {
		var pair [2]float64 // ops/s without, with
		for _, recording := range []bool{i%2 == 0, i%2 != 0} {
			if !recording {
				n, d := run(discard{})
				withoutOps, withoutTime = withoutOps+n, withoutTime+d
				pair[0] = n / d.Seconds()
				continue
			}
			rec, err := history.CreateFile(filepath.Join(dir, "history.jsonl"), history.RecorderOptions{})
			if err != nil {
				b.Fatal(err)
			}
			n, d := run(rec) // Close's final flush is part of the cost: counted below
			before := cpuTime(b)
			if err := rec.Close(); err != nil {
				b.Fatal(err)
			}
			if st, err := os.Stat(filepath.Join(dir, "history.jsonl")); err != nil || st.Size() == 0 {
				b.Fatalf("history file: %v, %v", st, err)
			}
			withCPU += cpuTime(b) - before
			withOps, withTime = withOps+n, withTime+d
			pair[1] = n / d.Seconds()
		}
		costs = append(costs, 100*(1-pair[1]/pair[0]))
	}
	sort.Float64s(costs)
	with, without := withOps/withTime.Seconds(), withoutOps/withoutTime.Seconds()
	b.ReportMetric(with, "lock-ops/s")
	b.ReportMetric(without, "lock-ops/s-unrecorded")
	b.ReportMetric(costs[len(costs)/2], "recording-cost-%")
	cpuWith, cpuWithout := float64(withCPU)/withOps, float64(withoutCPU)/withoutOps
	b.ReportMetric(cpuWith, "cpu-ns/lock-op")
	b.ReportMetric(cpuWithout, "cpu-ns/lock-op-unrecorded")
	b.ReportMetric(100*(cpuWith/cpuWithout-1), "recording-cpu-cost-%")
}

// cpuTime is the CPU time this process has used (user + system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
