package hunt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/runner"
	"github.com/tumbler-dev/tumbler/scenarios/matrix"
)

// TestMergeReadsLegacyDraw: the shards of a hunt written before the draw
// had JSON names (Go's field names, the interval in nanoseconds) merge,
// their draw read as it was, and the merged hunt.json writes it in the
// plan's style.
func TestMergeReadsLegacyDraw(t *testing.T) {
	root := t.TempDir()
	plan, err := runner.ParsePlan([]byte(`{"topology": "independent:1", "ttl": "1s", "time_limit": "10s"}`), "template")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := 1; i <= 2; i++ {
		dir := filepath.Join(root, "shard"+string(rune('0'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := &Summary{Name: "h", Dir: dir, Started: time.Unix(1, 0), Template: plan.Normalize(), Shard: &matrix.Shard{Index: i, Count: 2},
			First: -1, Replayed: -1, Attempts: []Attempt{}}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		raw["draw"] = json.RawMessage(`{"Kinds":["kill","partition"],"Interval":1500000000,"Concurrency":3}`)
		if b, err = json.Marshal(raw); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, SummaryFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	m, err := Merge(filepath.Join(root, "all"), dirs...)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Draw; !slices.Equal(d.Kinds, []nemesis.Kind{nemesis.Kill, nemesis.Partition}) || d.Interval.Resolve(time.Second) != 1500*time.Millisecond || d.Concurrency != 3 {
		t.Fatalf("merged draw: %+v", d)
	}
	b, err := os.ReadFile(filepath.Join(root, "all", SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"draw": {
    "kinds": [
      "kill",
      "partition"
    ],
    "interval": "1.5s",
    "concurrency": 3
  }`) {
		t.Errorf("the merged hunt.json does not write the draw in the plan's style:\n%s", b)
	}
}
