//go:build linux

package hunt

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/internal/browsertest"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

// coveredHunt is a hunt of three attempts (tmpl, restarts only, so two
// windows count: a fault on the lease and a restart empty) whose every
// attempt reaches a fault on the lease (1, 2 and 1 times) and none a
// restart empty; seed 2 finds a double grant that followed its reach.
func coveredHunt(t *testing.T) *Summary {
	t.Helper()
	p := tmpl(t)
	d := runner.Draw{Kinds: []nemesis.Kind{nemesis.Restart}}
	run := func(ctx context.Context, pl runner.Plan, o runner.Options) (*runner.Outcome, error) {
		dir := filepath.Join(o.Store, pl.Name, "t")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		res := &checker.Result{Verdict: checker.Valid, Faults: []checker.FaultWindow{{ID: "f1"}, {ID: "f2"}}}
		cov := &coverage.Run{}
		for _, c := range newTally(p, d).Windows {
			r := coverage.Result{Heading: c.Heading, First: -1}
			if c.Name == coverage.LeaseNodeFault {
				r.Reached, r.First = 1, int64(time.Second)
				if pl.Seed == 2 {
					r.Reached, r.AnomalyFollowed = 2, true
				}
			}
			cov.Windows = append(cov.Windows, r)
		}
		if pl.Seed == 2 {
			res.Verdict = checker.Invalid
			res.Anomalies = []checker.Anomaly{{Kind: checker.DoubleGrant, At: int64(3 * time.Second)}}
		}
		return &runner.Outcome{Dir: dir, Plan: pl, Result: res, Coverage: cov, Judgement: outcome.Judgement{Verdict: res.Verdict}}, nil
	}
	s, err := Run(context.Background(), p, d, Options{Name: "covered", Budget: time.Hour, Store: t.TempDir(), Parallel: 1,
		MaxSeeds: 3, KeepGoing: true, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rowCells are the texts of the cells of the table row whose id is id
// ("" and false when the DOM has no such row).
func rowCells(dom, id string) ([]string, bool) {
	row := regexp.MustCompile(`(?s)<tr id="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</tr>`).FindStringSubmatch(dom)
	if row == nil {
		return nil, false
	}
	var cells []string
	for _, m := range regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`).FindAllStringSubmatch(row[1], -1) {
		cells = append(cells, strings.TrimSpace(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], "")))
	}
	return cells, true
}

// TestHuntPageInBrowser: a hunt's page, rendered by Chromium, shows the
// coverage table with a row per window that counts — the one reached with
// its reaches, attempts and the anomaly that followed, the one never
// reached marked as such — and the find among the attempts.
func TestHuntPageInBrowser(t *testing.T) {
	browser := browsertest.Chromium(t)
	s := coveredHunt(t)
	page, err := filepath.Abs(filepath.Join(s.Dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	dom, log := browsertest.DumpDOM(t, browser, page)
	if lines := browsertest.ConsoleErrors.FindAllString(log, -1); len(lines) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(lines, "\n"))
	}
	ids := regexp.MustCompile(`<tr id="(window-[a-z-]+)"`).FindAllStringSubmatch(dom, -1)
	var got []string
	for _, m := range ids {
		got = append(got, m[1])
	}
	want := []string{"window-" + coverage.LeaseNodeFault, "window-" + coverage.RestartEmpty}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("coverage rows %v, want %v\n%s", got, want, browsertest.Tail(dom, 4000))
	}
	for _, c := range []struct {
		id    string
		cells []string
	}{
		{"window-" + coverage.LeaseNodeFault, []string{"fault on a node of the live lease while it is held", "4", "3 of 3", "1 of 3"}},
		{"window-" + coverage.RestartEmpty, []string{"node of the lease restarted empty within the TTL", "0", "0 of 3", "—"}},
	} {
		cells, _ := rowCells(dom, c.id)
		if len(cells) < len(c.cells) || strings.Join(cells[:len(c.cells)], " | ") != strings.Join(c.cells, " | ") {
			t.Errorf("%s: cells %q, want %q first", c.id, cells, c.cells)
		}
	}
	if !regexp.MustCompile(`<tr id="window-` + coverage.RestartEmpty + `" class="never"`).MatchString(dom) {
		t.Errorf("the window never reached is not marked so")
	}
	if regexp.MustCompile(`<tr id="window-` + coverage.LeaseNodeFault + `" class="never"`).MatchString(dom) {
		t.Errorf("the window reached is marked as never reached")
	}
	if !strings.Contains(dom, "Highlighted: a window no attempt reached") {
		t.Errorf("the page does not say what the highlighted window means")
	}
	if !strings.Contains(dom, "found double-grant on seed 2") {
		t.Errorf("the headline does not show the find")
	}
	for _, a := range []struct{ seed, class, reached string }{
		{"1", "valid", "lease-node-fault"}, {"2", "invalid found", "lease-node-fault ×2"}, {"3", "valid", "lease-node-fault"},
	} {
		cells, ok := rowCells(dom, "seed-"+a.seed)
		if !ok || !regexp.MustCompile(`<tr id="seed-`+a.seed+`" class="`+a.class+`"`).MatchString(dom) {
			t.Errorf("seed %s: no attempt row of class %q (%q)", a.seed, a.class, cells)
			continue
		}
		if len(cells) < 6 || cells[0] != a.seed || cells[5] != a.reached {
			t.Errorf("seed %s: cells %q, want the seed first and %q reached sixth", a.seed, cells, a.reached)
		}
	}
	// The windows that do not count are listed aside, with why.
	if !regexp.MustCompile(`<li id="aside-` + coverage.BareMajority + `">[^<]*out of reach`).MatchString(dom) {
		t.Errorf("the bare majority, out of reach of restarts, is not listed aside with why")
	}

	shot := os.Getenv("TUMBLER_HUNT_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "huntpage.png")
	}
	browsertest.Screenshot(t, browser, page, shot, 1200, 900)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 1200 {
		t.Errorf("screenshot %s: %+v %v, want a PNG 1200 pixels wide", shot, cfg, err)
	}
}
