package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/history"
)

func benchHistory(b *testing.B, cfg simConfig) *prepared {
	b.Helper()
	ops := simulate(cfg)
	c, err := Config{TTL: cfg.ttl, Subject: Subject{Fenced: cfg.writes}}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	p, err := prepare(ops, c)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkLinearizability: 100k operations (calls) of 16 clients on 4
// keys; the target is under 10 s.
func BenchmarkLinearizability(b *testing.B) {
	p := benchHistory(b, simConfig{seed: 9, clients: 16, keys: 4, ops: 200_000, ttl: 200 * time.Millisecond, watchdog: true, infoRate: 0.01})
	var r *report
	for b.Loop() {
		r = &report{CheckerResult: CheckerResult{Name: Linearizability, Verdict: Valid}, max: 100, p: p}
		checkLinearizable(p, &Result{}, r)
		if r.Verdict != Valid {
			b.Fatalf("%s: %s %v", r.Verdict, r.Reason, r.anomalies)
		}
	}
	b.ReportMetric(float64(len(p.ops)), "records")
	b.ReportMetric(float64(len(p.calls)), "calls")
	b.ReportMetric(float64(r.Stats["operations"]), "porcupine-ops")
}

// BenchmarkMutualExclusion: a million records paired, their holds derived
// and swept; the target is under 2 s.
func BenchmarkMutualExclusion(b *testing.B) {
	cfg := simConfig{seed: 11, clients: 16, keys: 4, ops: 1_000_000, ttl: 200 * time.Millisecond, watchdog: true, infoRate: 0.01, writes: true}
	ops := simulate(cfg)
	c, err := Config{TTL: cfg.ttl}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p, err := prepare(ops, c)
		if err != nil {
			b.Fatal(err)
		}
		r := &report{CheckerResult: CheckerResult{Name: MutualExclusion, Verdict: Valid}, max: 100, p: p}
		checkMutex(p, &Result{}, r)
		if r.Anomalies != 0 {
			b.Fatal(r.anomalies)
		}
	}
	b.ReportMetric(float64(len(ops)), "records")
}

// BenchmarkCheckAllButLinearizability: every other checker on the same
// million records.
func BenchmarkCheckAllButLinearizability(b *testing.B) {
	cfg := simConfig{seed: 11, clients: 16, keys: 4, ops: 1_000_000, ttl: 200 * time.Millisecond, watchdog: true, infoRate: 0.01, writes: true}
	ops := simulate(cfg)
	for b.Loop() {
		res, err := Check(ops, Config{TTL: cfg.ttl, Subject: Subject{Fenced: true}, Skip: []string{Linearizability}})
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict != Valid {
			b.Fatal(res.Anomalies)
		}
	}
	b.ReportMetric(float64(len(ops)), "records")
}

// The million-operation targets: a valid history of 16 clients on 8 keys
// (a correct lock, strictly sequential holds per key, every release well
// before its validity), and the same with one overlap planted, read from a
// file and judged by the whole of Check, as tumbler analyze does. Each
// measurement runs in a process of its own (this test binary again,
// TestCheckFileChild), so that its peak RSS is the check's alone.

func BenchmarkCheckMillionFromFile(b *testing.B) { benchCheckFile(b, false) }

func BenchmarkCheckMillionPlantedOverlap(b *testing.B) { benchCheckFile(b, true) }

// checkFileResult is what TestCheckFileChild reports.
type checkFileResult struct {
	Ops       int              `json:"ops"`
	LoadS     float64          `json:"load_s"`
	CheckS    float64          `json:"check_s"`
	PeakRSS   int64            `json:"peak_rss_kib"`
	Verdict   Verdict          `json:"verdict"`
	LinS      float64          `json:"lin_s"`
	LinStats  map[string]int64 `json:"lin_stats"`
	Anomalies []Anomaly        `json:"anomalies"`
}

func benchCheckFile(b *testing.B, planted bool) {
	ops := simulate(simConfig{seed: 9, clients: 16, keys: 8, ops: 1_000_000, ttl: 200 * time.Millisecond})
	a, c := -1, -1
	if planted {
		ops, a, c = plantOverlap(b, ops)
	}
	path := filepath.Join(b.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	rec := history.NewRecorder(f, history.RecorderOptions{})
	for _, o := range ops {
		if _, err := rec.Record(o); err != nil {
			b.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	ops = nil
	var r checkFileResult
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCheckFileChild$")
		cmd.Env = append(os.Environ(), "TUMBLER_CHECK_FILE="+path)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		line := out[:bytes.IndexByte(out, '\n')]
		if err := json.Unmarshal(line, &r); err != nil {
			b.Fatalf("child said %q: %v", out, err)
		}
	}
	switch {
	case !planted && r.Verdict != Valid:
		b.Fatalf("verdict %s", r.Verdict)
	case planted && r.Verdict != Invalid:
		b.Fatalf("verdict %s with an overlap planted", r.Verdict)
	case planted:
		for _, an := range r.Anomalies {
			if !slices.Contains(an.Clients, a) || !slices.Contains(an.Clients, c) {
				b.Fatalf("%s names clients %v, not %d and %d", an.Kind, an.Clients, a, c)
			}
		}
	}
	b.ReportMetric(float64(r.Ops), "records")
	b.ReportMetric(r.LoadS, "s-load")
	b.ReportMetric(r.CheckS, "s-check")
	b.ReportMetric(r.LoadS+r.CheckS, "s-total")
	b.ReportMetric(r.LinS, "s-linearizability")
	b.ReportMetric(float64(r.PeakRSS)/1024, "MiB-peak-RSS")
	b.ReportMetric(float64(r.LinStats["pieces"]), "pieces")
	b.ReportMetric(float64(r.LinStats["largest_piece"]), "largest-piece")
	b.ReportMetric(float64(len(r.Anomalies)), "anomalies")
}

// TestCheckFileChild is BenchmarkCheckMillion*'s measurement: with
// TUMBLER_CHECK_FILE set it reads that history, checks it and prints a
// checkFileResult (JSON) with this process's peak RSS (VmHWM).
func TestCheckFileChild(t *testing.T) {
	path := os.Getenv("TUMBLER_CHECK_FILE")
	if path == "" {
		t.Skip("run by BenchmarkCheckMillion*")
	}
	start := time.Now()
	ops, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	start = time.Now()
	res, err := Check(ops, Config{TTL: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	check := time.Since(start)
	// VmHWM, not getrusage's maxrss: Linux carries the forking parent's
	// peak into a child's maxrss across exec.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var hwm int64
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			hwm, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	if hwm == 0 {
		t.Fatalf("no VmHWM in /proc/self/status")
	}
	lin, _ := res.Checker(Linearizability)
	b, _ := json.Marshal(checkFileResult{
		Ops: len(ops), LoadS: load.Seconds(), CheckS: check.Seconds(), PeakRSS: hwm,
		Verdict: res.Verdict, LinS: lin.Duration.Seconds(), LinStats: lin.Stats, Anomalies: res.Anomalies,
	})
	fmt.Println(string(b))
}
