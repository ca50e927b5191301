// Command huntguided measures guided hunts against today's generator
// (docs/measurements.md, "Guided hunts"): the same configurations, first
// seeds and budgets, one hunt and one attempt at a time (--parallel 1),
// with and without --guided, and
// writes the table (store/hunt-guided/table.md): per configuration and
// generator the hunts that found the wanted anomaly, the median time to
// the first find, the seeds tried, and for safe configurations whether
// they stayed quiet.
//
// It is resumable: each hunt's JSON is written under --out as it ends and
// not run again. It runs bin/tumbler (go build -o bin/tumbler ./cmd/tumbler).
//
// --jobs prints the measurement split into jobs that can each run on a
// runner of their own (one per row, one for the other configurations), as
// JSON: .github/workflows/nightly.yml's weekly "guided" job runs one per
// runner, with --hunts 30.
//
//	go run ./scripts/huntguided                       # every part, three first seeds per row
//	go run ./scripts/huntguided --hunts 3 --other-hunts 1 --budget 3m --other-budget 1m
//	go run ./scripts/huntguided --parts rows --rows latch-failover --first-hunt 9 --hunts 16  # hunts 9–24
//	go run ./scripts/huntguided --jobs                # [{"name":"latch-failover","args":"--parts rows --rows latch-failover"}, …]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/hunt"
)

// rows are the catalog rows whose hunts were slowest before guidance.
var rows = []string{"latch-failover", "watchdog-gc-pause", "redsync-setnx-on-extend", "redisson-redlock-pause-during-acquire"}

// config is a configuration that is not a catalog row.
type config struct {
	name, args string
	safe       bool
}

var others = []config{
	{"redlock over 5, partitions, restarts, clock jumps", "--lock redlock --nodes 5 --nemesis partition,restart,clock", false},
	{"single on a Sentinel pair, failovers and partitions", "--lock single --topology replicated:1+sentinels --nemesis failover,partition", false},
	{"watchdog, client pauses and step pauses, validity checked", "--lock watchdog --inner single --workload fenced-write --check-validity --nemesis client-pause,step-pause", false},
	{"redlock over 5, partitions only (safe)", "--lock redlock --nodes 5 --nemesis partition", true},
	{"single with WAIT 1, failovers (safe)", "--lock single --topology replicated:1+sentinels --wait-replicas 1 --wait-timeout 100ms --nemesis failover", true},
	{"fenced, client pauses and partitions (safe)", "--lock fenced --nemesis client-pause,client-partition,step-pause", true},
}

func main() {
	bin := flag.String("bin", "bin/tumbler", "the tumbler binary")
	out := flag.String("out", "store/hunt-guided", "where results go (resumable)")
	budget := flag.Duration("budget", 3*time.Minute, "budget of each hunt of a row")
	otherBudget := flag.Duration("other-budget", 2*time.Minute, "budget of each hunt of another configuration")
	hunts := flag.Int("hunts", 3, "first seeds per row (1001, 2001, …)")
	otherHunts := flag.Int("other-hunts", 2, "first seeds per other configuration")
	parts := flag.String("parts", "rows,others", "which parts to measure")
	only := flag.String("rows", strings.Join(rows, ","), "which rows to hunt (with --parts rows)")
	firstHunt := flag.Int("first-hunt", 1, "the first hunt's number h (first seed h*1000+1), to add hunts to an earlier measurement")
	list := flag.Bool("jobs", false, "print the measurement's parts, each a job for a runner of its own (their flags), as JSON, and exit")
	flag.Parse()
	if *list {
		b, err := json.Marshal(jobs())
		if err != nil {
			fail(err)
		}
		fmt.Println(string(b))
		return
	}
	if *firstHunt < 1 {
		fail(fmt.Errorf("--first-hunt %d: the first hunt is 1 or more", *firstHunt))
	}
	m := &measure{bin: *bin, out: *out, first: *firstHunt}
	want := strings.Split(*parts, ",")
	var lines []string
	if slices.Contains(want, "rows") {
		for _, row := range strings.Split(*only, ",") {
			if !slices.Contains(rows, row) {
				fail(fmt.Errorf("--rows: %q is not one of the measured rows (%s)", row, strings.Join(rows, ", ")))
			}
			lines = append(lines, m.compare(row, "`--like "+row+"`", []string{"--like", row, "--budget", budget.String()}, *hunts, false)...)
		}
	}
	if slices.Contains(want, "others") {
		for i, c := range others {
			args := append(strings.Fields(c.args), "--budget", otherBudget.String(), "--time-limit", "20s")
			lines = append(lines, m.compare(fmt.Sprintf("other-%d", i+1), c.name, args, *otherHunts, c.safe)...)
		}
	}
	table := "| configuration | generator | hunts | found | median time to first find | seeds tried | windows reached (of those that count) |\n|---|---|---|---|---|---|---|\n" + strings.Join(lines, "\n") + "\n"
	table += "\n" + spreadHeader + strings.Join(m.spreads, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(*out, "table.md"), []byte(table), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(table)
}

// job is one part of the measurement that can run on a runner of its own:
// its name and the flags that select it.
type job struct {
	Name string `json:"name"`
	Args string `json:"args"`
}

// jobs splits the measurement: one job per row, one for the other
// configurations.
func jobs() []job {
	var out []job
	for _, r := range rows {
		out = append(out, job{Name: r, Args: "--parts rows --rows " + r})
	}
	return append(out, job{Name: "others", Args: "--parts others"})
}

type measure struct {
	bin, out string
	first    int      // the first hunt's number
	spreads  []string // the second table's lines, two per configuration
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "huntguided:", err)
	os.Exit(1)
}

// compare hunts one configuration n times with each generator, one hunt
// at a time and alternating (today's, then guided, on the same first
// seed), and returns the table's two lines.
func (m *measure) compare(name, label string, args []string, n int, safe bool) []string {
	var lines []string
	sums := map[bool][]*hunt.Summary{}
	for h := m.first; h < m.first+n; h++ {
		for _, guided := range []bool{false, true} {
			sums[guided] = append(sums[guided], m.hunt(name, h, guided, args))
		}
	}
	for _, guided := range []bool{false, true} {
		gen := "today's"
		if guided {
			gen = "guided"
		}
		lines = append(lines, row(label, gen, sums[guided], safe))
	}
	m.spreads = append(m.spreads, spread(label, sums[false], sums[true], safe))
	return lines
}

func (m *measure) hunt(name string, h int, guided bool, args []string) *hunt.Summary {
	tag := "today"
	if guided {
		tag = "guided"
	}
	path := filepath.Join(m.out, tag, fmt.Sprintf("%s-%02d.json", name, h))
	if b, err := os.ReadFile(path); err == nil {
		return parse(path, b)
	}
	args = append([]string{"hunt", "--no-shrink", "--json", "--parallel", "1", fmt.Sprintf("--guided=%v", guided), "--first-seed", fmt.Sprint(h*1000 + 1),
		"--store", filepath.Join(m.out, "store"), "--name", fmt.Sprintf("%s-%s-%02d", name, tag, h), "--log-level", "warn"}, args...)
	fmt.Fprintf(os.Stderr, "huntguided: %s %s hunt %d (load %s)\n", name, tag, h, load())
	cmd := exec.Command(m.bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() >= 254) {
		fail(fmt.Errorf("%s %s: %v", m.bin, strings.Join(args, " "), err))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fail(err)
	}
	if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
		fail(err)
	}
	return parse(path, stdout.Bytes())
}

func parse(path string, b []byte) *hunt.Summary {
	var s hunt.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		fail(fmt.Errorf("%s: %w", path, err))
	}
	return &s
}

// row is one table line: the finds, the median time to the first, the
// seeds tried and the windows reached.
func row(label, gen string, ss []*hunt.Summary, safe bool) string {
	var times []time.Duration
	tried, reached, counts := 0, 0, 0
	for _, s := range ss {
		tried += s.Tried
		if _, ok := s.Found(); ok {
			times = append(times, s.TimeToFirst)
		}
		if s.Coverage != nil {
			for _, c := range s.Coverage.Windows {
				if c.Counts() {
					counts++
					if c.Reached > 0 {
						reached++
					}
				}
			}
		}
	}
	found := fmt.Sprintf("%d/%d", len(times), len(ss))
	if safe {
		found += map[bool]string{true: " (quiet)", false: " (**not quiet**)"}[len(times) == 0]
	}
	med := "—"
	if len(times) > 0 {
		slices.Sort(times)
		med = times[len(times)/2].Round(100 * time.Millisecond).String()
		if len(times)%2 == 0 {
			med = ((times[len(times)/2-1] + times[len(times)/2]) / 2).Round(100 * time.Millisecond).String()
		}
		if len(times) < len(ss) {
			med += fmt.Sprintf(" (of the %d that found)", len(times))
		}
	}
	return fmt.Sprintf("| %s | %s | %d | %s | %s | %d | %d/%d |", label, gen, len(ss), found, med, tried, reached, counts)
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
