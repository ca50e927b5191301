// Command hunttable measures tumbler's hunt and shrink and writes the
// README's table (store/hunt-table/table.md): rediscovery of every invalid
// catalog row by "tumbler hunt --like ROW" (the row's configuration and
// fault kinds, not its schedule), the five representative rows on ten hunt
// seeds with their finds shrunk and the shrunk plans replayed ten times,
// and five configurations that are safe under their fault mix, hunted on
// three seeds each.
//
// It is resumable: every hunt, shrink and replay writes its JSON under
// --out as it ends, and a measurement whose file exists is not run again,
// so the whole table (about two hours on a 2-core machine) can be made
// across sittings. It runs bin/tumbler (go build -o bin/tumbler ./cmd/tumbler).
//
//	go run ./scripts/hunttable --parts representative,safe,rediscover
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
	"sort"
	"strings"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/hunt"
	"github.com/tumbler-dev/tumbler/scenarios"
	"github.com/tumbler-dev/tumbler/shrink"
)

var representative = []string{"redlock-restart-empty", "redlock-clock-jump", "single-failover", "redsync-restart-empty", "single-gc-pause"}

// safe are configurations that no fault of their mix can make unsafe;
// the README argues each.
var safe = []struct{ name, args string }{
	{"fenced, client pauses and partitions", "--lock fenced --nemesis client-pause,client-partition,step-pause"},
	{"redlock, partitions only", "--lock redlock --nodes 5 --nemesis partition"},
	{"redlock, restarts and kills with appendfsync always", "--lock redlock --nodes 5 --persistence aof-always --nemesis restart,kill,partition"},
	{"single with WAIT 1, failovers", "--lock single --topology replicated:1+sentinels --wait-replicas 1 --wait-timeout 100ms --nemesis failover"},
	{"single, latency and server pauses", "--lock single --nemesis latency,pause"},
	{"single, latency and server pauses, clients checking validity", "--lock single --check-validity --nemesis latency,pause"},
}

func main() {
	bin := flag.String("bin", "bin/tumbler", "the tumbler binary")
	out := flag.String("out", "store/hunt-table", "where results go (resumable)")
	parts := flag.String("parts", "representative,safe,rediscover", "which parts to measure")
	budget := flag.Duration("budget", 3*time.Minute, "budget of each hunt")
	safeBudget := flag.Duration("safe-budget", 3*time.Minute, "budget of each hunt of a safe configuration")
	shrinkBudget := flag.Duration("shrink-budget", 5*time.Minute, "budget of each shrink")
	repHunts := flag.Int("representative-hunts", 10, "hunt seeds per representative row")
	otherHunts := flag.Int("rediscover-hunts", 5, "hunt seeds per other invalid row")
	safeSeeds := flag.Int("safe-seeds", 3, "hunt seeds per safe configuration")
	flag.Parse()
	m := &measure{bin: *bin, out: *out}
	want := strings.Split(*parts, ",")
	if slices.Contains(want, "representative") {
		for _, row := range representative {
			for h := 1; h <= *repHunts; h++ {
				m.hunt("rows", row, h, []string{"--like", row, "--budget", budget.String()})
			}
			m.shrinkAndReplay(row, *shrinkBudget)
		}
	}
	if slices.Contains(want, "safe") {
		for i, s := range safe {
			for h := 1; h <= *safeSeeds; h++ {
				m.hunt("safe", fmt.Sprintf("safe-%d", i+1), h, append(strings.Fields(s.args), "--budget", safeBudget.String(), "--time-limit", "20s"))
			}
		}
	}
	if slices.Contains(want, "rediscover") {
		for _, s := range scenarios.All() {
			if s.Expect.Verdict != checker.Invalid || slices.Contains(representative, s.Name) || len(s.Plan.Faults) == 0 {
				continue // a row that fails without faults has no kinds to hunt with
			}
			for h := 1; h <= *otherHunts; h++ {
				m.hunt("rows", s.Name, h, []string{"--like", s.Name, "--budget", budget.String()})
			}
		}
	}
	table := m.table(*repHunts, *otherHunts, *safeSeeds)
	if err := os.WriteFile(filepath.Join(*out, "table.md"), []byte(table), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(table)
}

type measure struct{ bin, out string }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hunttable:", err)
	os.Exit(1)
}

func (m *measure) file(part, name string, h int) string {
	return filepath.Join(m.out, part, fmt.Sprintf("%s-%02d.json", name, h))
}

// hunt runs one hunt (no shrink) unless its result is on disk.
func (m *measure) hunt(part, name string, h int, args []string) {
	path := m.file(part, name, h)
	if _, err := os.Stat(path); err == nil {
		return
	}
	args = append([]string{"hunt", "--no-shrink", "--json", "--parallel", "1", "--first-seed", fmt.Sprint(h*1000 + 1),
		"--store", filepath.Join(m.out, "store"), "--name", fmt.Sprintf("%s-%02d", name, h)}, args...)
	fmt.Fprintf(os.Stderr, "hunttable: %s %s hunt %d\n", part, name, h)
	b := m.run(args)
	m.save(path, b)
}

func (m *measure) run(args []string) []byte {
	cmd := exec.Command(m.bin, append(args, "--log-level", "warn")...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fail(err)
	}
	if ee != nil && ee.ExitCode() >= 254 {
		fail(fmt.Errorf("%s %s: exit %d", m.bin, strings.Join(args, " "), ee.ExitCode()))
	}
	return stdout.Bytes()
}

func (m *measure) save(path string, b []byte) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		fail(err)
	}
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		fail(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		fail(err)
	}
}

func (m *measure) summary(part, name string, h int) (*hunt.Summary, bool) {
	b, err := os.ReadFile(m.file(part, name, h))
	if err != nil {
		return nil, false
	}
	var s hunt.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		fail(fmt.Errorf("%s: %w", m.file(part, name, h), err))
	}
	return &s, true
}

// shrinkAndReplay shrinks the row's first find that replays k of R times
// (a find that does not is not shrunk; the next hunt's find is tried),
// then replays the minimal plan ten times.
func (m *measure) shrinkAndReplay(row string, budget time.Duration) {
	path := filepath.Join(m.out, "shrink", row+".json")
	if _, err := os.Stat(path); err != nil {
		for h := 1; ; h++ {
			s, ok := m.summary("rows", row, h)
			if !ok {
				return // no find to shrink
			}
			a, found := s.Found()
			if !found || a.Dir == "" {
				continue
			}
			try := filepath.Join(m.out, "shrink", fmt.Sprintf("%s-hunt-%02d.json", row, h))
			b, err := os.ReadFile(try)
			if err != nil {
				fmt.Fprintf(os.Stderr, "hunttable: shrink %s (hunt %d, seed %d)\n", row, h, a.Seed)
				b = m.run([]string{"shrink", filepath.Join(s.Dir, a.Dir), "--json", "--budget", budget.String(),
					"--store", filepath.Join(m.out, "store")})
				m.save(try, b)
			}
			var r shrink.Result
			if err := json.Unmarshal(b, &r); err != nil {
				fail(fmt.Errorf("%s: %w", try, err))
			}
			if r.Reproduced {
				m.save(path, b)
				break
			}
		}
	}
	res := m.shrinkResult(row)
	if res == nil || !res.Reproduced {
		return
	}
	plan := filepath.Join(res.Dir, shrink.PlanFile)
	for r := 1; r <= 10; r++ {
		rp := m.file("replays", row, r)
		if _, err := os.Stat(rp); err == nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "hunttable: replay %s %d\n", row, r)
		m.save(rp, m.run([]string{"run", "--plan", plan, "--json", "--store", filepath.Join(m.out, "store")}))
	}
}

func (m *measure) shrinkResult(row string) *shrink.Result {
	b, err := os.ReadFile(filepath.Join(m.out, "shrink", row+".json"))
	if err != nil {
		return nil
	}
	var r shrink.Result
	if err := json.Unmarshal(b, &r); err != nil {
		fail(err)
	}
	return &r
}

// hunts gathers a configuration's hunts: finds, and the times to them.
func (m *measure) hunts(part, name string, n int) (done, found int, times []time.Duration, seeds int) {
	for h := 1; h <= n; h++ {
		s, ok := m.summary(part, name, h)
		if !ok {
			continue
		}
		done++
		seeds += s.Tried
		if _, f := s.Found(); f {
			found++
			times = append(times, s.TimeToFirst)
		}
	}
	return
}

func median(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	md := s[len(s)/2]
	if len(s)%2 == 0 {
		md = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.0f s", md.Seconds())
}

func (m *measure) table(repHunts, otherHunts, safeSeeds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | hunts done | found (wanted kind) | median time to first | seeds tried | shrunk steps | shrink time | shrunk plan fails alike |\n|---|---|---|---|---|---|---|---|\n")
	rows := append([]string(nil), representative...)
	for _, s := range scenarios.All() {
		if s.Expect.Verdict == checker.Invalid && !slices.Contains(rows, s.Name) {
			rows = append(rows, s.Name)
		}
	}
	for _, row := range rows {
		n := otherHunts
		if slices.Contains(representative, row) {
			n = repHunts
		}
		done, found, times, seeds := m.hunts("rows", row, n)
		if done == 0 {
			continue
		}
		steps, took, alike := "—", "—", "—"
		if res := m.shrinkResult(row); res != nil && res.Reproduced {
			steps = fmt.Sprintf("%d → %d", len(res.Original.Faults), len(res.Minimal.Faults))
			if skipped := m.unreproduced(row); skipped > 0 {
				steps += fmt.Sprintf(" (%d earlier find(s) replayed alike fewer than k of R times)", skipped)
			}
			took = fmt.Sprintf("%.0f s", res.Elapsed.Seconds())
			ok, total := 0, 0
			for r := 1; r <= 10; r++ {
				bs, err := os.ReadFile(m.file("replays", row, r))
				if err != nil {
					continue
				}
				var v struct {
					Anomalies []checker.Anomaly `json:"anomalies"`
				}
				if json.Unmarshal(bs, &v) != nil {
					continue
				}
				total++
				if slices.ContainsFunc(v.Anomalies, func(a checker.Anomaly) bool { return slices.Contains(res.Kinds, a.Kind) }) {
					ok++
				}
			}
			if total > 0 {
				alike = fmt.Sprintf("%d/%d", ok, total)
			}
		}
		fmt.Fprintf(&b, "| `--like %s` | %d | %d/%d | %s | %d | %s | %s | %s |\n", row, done, found, done, median(times), seeds, steps, took, alike)
	}
	var faultless []string
	for _, s := range scenarios.All() {
		if s.Expect.Verdict == checker.Invalid && len(s.Plan.Faults) == 0 {
			faultless = append(faultless, "`"+s.Name+"`")
		}
	}
	if len(faultless) > 0 {
		fmt.Fprintf(&b, "| %s: invalid without any fault, so no fault kinds to hunt with | — | — | — | — | — | — | — |\n", strings.Join(faultless, ", "))
	}
	for i, s := range safe {
		done, found, _, seeds := m.hunts("safe", fmt.Sprintf("safe-%d", i+1), safeSeeds)
		if done == 0 {
			continue
		}
		fmt.Fprintf(&b, "| safe: %s (`%s`) | %d | %d/%d (any kind) | — | %d | — | — | — |\n", s.name, s.args, done, found, done, seeds)
	}
	return b.String()
}

// unreproduced counts the row's finds whose shrink found the plan as found
// failing fewer than k of R times.
func (m *measure) unreproduced(row string) int {
	n := 0
	tries, _ := filepath.Glob(filepath.Join(m.out, "shrink", row+"-hunt-*.json"))
	for _, t := range tries {
		b, err := os.ReadFile(t)
		var r shrink.Result
		if err == nil && json.Unmarshal(b, &r) == nil && !r.Reproduced {
			n++
		}
	}
	return n
}
