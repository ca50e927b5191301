package hunt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tumbler-dev/tumbler/outcome"
)

// Load reads a hunt's summary from its directory (or its hunt.json).
func Load(dir string) (*Summary, error) {
	path := dir
	if filepath.Base(dir) != SummaryFile {
		path = filepath.Join(dir, SummaryFile)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, outcome.Input(fmt.Errorf("%s: no hunt here (no %s)", dir, SummaryFile))
	}
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, outcome.Input(fmt.Errorf("%s: %w", path, err))
	}
	s.Dir = filepath.Dir(path)
	// A store's hunts/latest moves on with the next hunt: name the hunt.
	if real, err := filepath.EvalSymlinks(s.Dir); err == nil {
		s.Dir = real
	}
	return &s, nil
}

// Merge joins the shards of one hunt (hunt --shard i/n, each directory
// holding a shard's hunt.json) into one summary in out: hunt.json and
// index.html, every attempt in seed order with its plan and report linked
// where the shard keeps them, the first find and the first that replayed
// over all shards, and the shards' reasons to stop. Shards of different
// hunts (another template, draw, wanted kinds, seeds, replays or
// guidance), a shard given twice and a missing shard are refused (bad
// input, naming them).
func Merge(out string, dirs ...string) (*Summary, error) {
	if len(dirs) == 0 {
		return nil, outcome.Input(errors.New("hunt merge: give the shards' hunt directories"))
	}
	shards := make([]*Summary, len(dirs))
	for i, d := range dirs {
		s, err := Load(d)
		if err != nil {
			return nil, err
		}
		if s.Shard == nil {
			return nil, outcome.Input(fmt.Errorf("hunt merge: %s is not a shard (tumbler hunt --shard i/n): there is nothing to merge it with", d))
		}
		shards[i] = s
	}
	if err := fitTogether(shards); err != nil {
		return nil, outcome.Input(fmt.Errorf("hunt merge: %w", err))
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Shard.Index < shards[j].Shard.Index })
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("hunt merge: %w", err)
	}
	first := shards[0]
	m := &Summary{
		Name: first.Name, Dir: out, Started: first.Started, Budget: first.Budget, Template: first.Template, Draw: first.Draw,
		Want: first.Want, After: first.After, FirstSeed: first.FirstSeed, MaxSeeds: first.MaxSeeds,
		Replays: first.Replays, Need: first.Need, Attempts: []Attempt{},
	}
	from := map[int64]*Summary{}
	var stopped []string
	unsure, broke := false, false
	for _, s := range shards {
		rel := relTo(out, s.Dir)
		m.Shards = append(m.Shards, rel)
		if s.Started.Before(m.Started) {
			m.Started = s.Started
		}
		m.Elapsed = max(m.Elapsed, s.Elapsed)
		m.Interrupted = m.Interrupted || s.Interrupted
		unsure = unsure || s.ExitCode == outcome.ExitUnknown
		broke = broke || s.ExitCode == outcome.ExitHarness
		stopped = append(stopped, fmt.Sprintf("%s %s", s.Shard, s.Stopped))
		for _, a := range s.Attempts {
			a.Plan = filepath.Join(rel, a.Plan)
			if a.Dir != "" {
				a.Dir = filepath.Join(rel, a.Dir)
			}
			if a.Replays != nil {
				r := *a.Replays
				r.Dirs = nil
				for _, d := range a.Replays.Dirs {
					r.Dirs = append(r.Dirs, filepath.Join(rel, d))
				}
				a.Replays = &r
			}
			m.Attempts = append(m.Attempts, a)
			from[a.Seed] = s
		}
	}
	slices.SortFunc(m.Attempts, func(a, b Attempt) int { return int(a.Seed - b.Seed) })
	m.settle()
	m.Coverage, m.Guided = mergeCoverage(shards), first.Guided
	m.Stopped = fmt.Sprintf("merged from %d shards (%s)", len(shards), strings.Join(stopped, "; "))
	if a, ok := m.ToShrink(); ok && from[a.Seed].Shrink != "" {
		m.Shrink = filepath.Join(relTo(out, from[a.Seed].Dir), from[a.Seed].Shrink)
	}
	m.ExitCode = outcome.HuntCode(m.First >= 0, broke, unsure || m.Interrupted)
	return m, m.Write()
}

// fitTogether refuses shards that are not the parts of one hunt.
func fitTogether(shards []*Summary) error {
	first := shards[0]
	byIndex := map[int]string{}
	for _, s := range shards {
		if s.Shard.Count != first.Shard.Count {
			return fmt.Errorf("%s is shard %s but %s is shard %s: not shards of one hunt", first.Dir, first.Shard, s.Dir, s.Shard)
		}
		if d, ok := byIndex[s.Shard.Index]; ok {
			return fmt.Errorf("shard %s given twice: %s and %s", s.Shard, d, s.Dir)
		}
		byIndex[s.Shard.Index] = s.Dir
		for _, c := range []struct {
			what string
			a, b any
		}{
			{"template", first.Template, s.Template}, {"draw", first.Draw, s.Draw}, {"want", first.Want, s.Want},
			{"after_fault_start", first.After, s.After}, {"first_seed", first.FirstSeed, s.FirstSeed},
			{"max_seeds", first.MaxSeeds, s.MaxSeeds}, {"replays", first.Replays, s.Replays}, {"need", first.Need, s.Need},
			{"guided", first.Guided, s.Guided},
		} {
			if diff := differs(c.a, c.b); diff != "" {
				return fmt.Errorf("%s and %s are not shards of one hunt: their %s differs (%s)", first.Dir, s.Dir, c.what, diff)
			}
		}
	}
	var missing []string
	for i := 1; i <= first.Shard.Count; i++ {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shard.Count))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shard %s missing", strings.Join(missing, ", "))
	}
	return nil
}

// differs says how two values differ in JSON: the names of the top-level
// fields that differ for objects, both values otherwise; "" when equal.
func differs(a, b any) string {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) == string(jb) {
		return ""
	}
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(ja, &ma) != nil || json.Unmarshal(jb, &mb) != nil {
		return fmt.Sprintf("%s vs %s", ja, jb)
	}
	var fields []string
	for k, v := range ma {
		if string(mb[k]) != string(v) {
			fields = append(fields, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			fields = append(fields, k)
		}
	}
	sort.Strings(fields)
	return "fields " + strings.Join(fields, ", ")
}

// relTo is path relative to dir when it can be, else path made absolute.
func relTo(dir, path string) string {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	if r, err := filepath.Rel(ad, ap); err == nil {
		return r
	}
	return ap
}
