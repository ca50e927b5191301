package history

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/internal/racebuild"
)

// writeSynthetic writes n ops shaped like a mutex run with fencing: 16
// clients on 4 keys, owner values unique per acquire, and a fault now and
// then.
func writeSynthetic(w io.Writer, n int) error {
	bw := bufio.NewWriter(w)
	var b []byte
	t := int64(0)
	for i := 0; i < n; i++ {
		c := i % 16
		op := Op{Index: int64(i), Process: Process(c), Client: c, Key: fmt.Sprintf("lock-%d", c%4), Time: t}
		switch i % 8 {
		case 0:
			op.Type, op.F = Invoke, Acquire
		case 1:
			op.Type, op.F, op.Value, op.Token, op.ValidUntil = OK, Acquire, fmt.Sprintf("c%d-%08d", c, i), int64(i), t+1e9
		case 2, 4:
			op.Type, op.F, op.Value, op.Token, op.ValidUntil = Invoke, Write, fmt.Sprint(i), int64(i), t+1e9
		case 3:
			op.Type, op.F, op.Value, op.Token, op.ValidUntil = OK, Write, fmt.Sprint(i), int64(i), t+1e9
		case 5:
			op.Type, op.F, op.Error = Fail, Write, "token 12 below 13"
		case 6:
			op.Type, op.F, op.Value = Invoke, Release, fmt.Sprintf("c%d-%08d", c, i-5)
		case 7:
			if i%800 == 7 {
				op = Op{Index: int64(i), Process: NemesisProcess, Type: Info, F: Start, Time: t,
					Fault: &Fault{ID: fmt.Sprint("f", i), Kind: "partition", Targets: []string{"n1"}, Desc: "cut n1 from every client"}}
			} else {
				op.Type, op.F, op.Error = Info, Release, "i/o timeout"
			}
		}
		t += 37_000
		b = appendOp(b[:0], &op)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// loadMeasured reads a history of n ops from disk and returns the live
// heap the ops occupy and how much the process got from the OS meanwhile.
func loadMeasured(tb testing.TB, n int) (live, sys uint64, took time.Duration) {
	path := filepath.Join(tb.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := writeSynthetic(f, n); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	ops, err := ReadFile(path)
	took = time.Since(start)
	if err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(ops) != n {
		tb.Fatalf("read %d ops, want %d", len(ops), n)
	}
	runtime.KeepAlive(ops)
	return after.HeapAlloc - before.HeapAlloc, after.Sys - before.Sys, took
}

// TestDecodeMemoryPerOp keeps a 1M-op history under 1 GiB by bounding the
// live cost per op at 1 KiB on a smaller history (BenchmarkDecodeMillion
// measures the million).
func TestDecodeMemoryPerOp(t *testing.T) {
	if racebuild.Enabled || testing.Short() {
		t.Skip("memory figures are meaningless under the race detector; skipped in -short")
	}
	const n = 200_000
	live, _, _ := loadMeasured(t, n)
	if perOp := live / n; perOp > 1024 {
		t.Fatalf("%d bytes live per op: a million ops would not fit in 1 GiB", perOp)
	}
}

func BenchmarkDecodeMillion(b *testing.B) {
	for b.Loop() {
		live, sys, took := loadMeasured(b, 1_000_000)
		b.ReportMetric(took.Seconds(), "s-decode")
		b.ReportMetric(float64(live)/(1<<20), "MiB-live")
		b.ReportMetric(float64(sys)/(1<<20), "MiB-from-OS")
	}
}
