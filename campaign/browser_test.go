//go:build linux

package campaign

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/internal/browsertest"
)

// cellText is the text of the table cell whose id is id.
func cellText(dom, id string) (string, bool) {
	m := regexp.MustCompile(`(?s)<td id="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</td>`).FindStringSubmatch(dom)
	if m == nil {
		return "", false
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(m[1], " ")), " "), true
}

// TestCampaignPageInBrowser: a campaign's page, rendered by Chromium,
// shows the headline with the classes, a row per find in its class's
// colour with its minimal plan and replay rate, and the grid of cells —
// each hunted one with its attempts and the windows reached, the skipped
// ones with why.
func TestCampaignPageInBrowser(t *testing.T) {
	browser := browsertest.Chromium(t)
	s, err := Run(context.Background(), options(t, &world{}))
	if err != nil {
		t.Fatal(err)
	}
	page, err := filepath.Abs(filepath.Join(s.Dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	dom, log := browsertest.DumpDOM(t, browser, page)
	if lines := browsertest.ConsoleErrors.FindAllString(log, -1); len(lines) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(lines, "\n"))
	}
	if !strings.Contains(dom, "1 candidates, 1 generic, 1 known") {
		t.Errorf("the headline does not count the classes:\n%s", browsertest.Tail(dom, 3000))
	}
	for _, f := range s.Finds {
		row := regexp.MustCompile(`(?s)<tr id="find-` + f.ID + `" class="` + f.Class + `">(.*?)</tr>`).FindStringSubmatch(dom)
		if row == nil {
			t.Errorf("no %s row for find %s", f.Class, f.ID)
			continue
		}
		for _, want := range []string{string(f.Kind), f.Confirmed.String(), "1 steps"} {
			if !strings.Contains(row[1], want) {
				t.Errorf("find %s's row lacks %q", f.ID, want)
			}
		}
	}
	text, ok := cellText(dom, "cell-independent:1-process")
	if !ok || !regexp.MustCompile(`^\d+ attempts ?, \d+ faults kill, restart, pause windows reached: \d+ of \d+`).MatchString(text) {
		t.Errorf("the one-node process cell reads %q", text)
	}
	if !regexp.MustCompile(`class="skipped"[^>]*>skipped\s*<div class="small">the lock cannot run on it`).MatchString(dom) {
		t.Errorf("the groups cells are not shown skipped with why")
	}
	shot := filepath.Join(t.TempDir(), "campaign.png")
	browsertest.Screenshot(t, browser, page, shot, 1200, 900)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width != 1200 {
		t.Errorf("screenshot: %+v %v", cfg, err)
	}
}
