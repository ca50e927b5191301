package campaign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/scenarios"
)

// Merge joins the shards of one campaign (campaign --shard i/n, each
// directory holding a shard's campaign.json) into one summary in out:
// every cell as the shard that owns it hunted it, the finds of all shards
// folded by signature (the first shard's find keeps its ID, the others are
// renumbered after it) and classified again against catalog (nil: the
// catalog of this tumbler), and paths relative to out. Shards of
// different campaigns (another lock template, cells, settings), a shard
// given twice and a missing shard are refused (bad input, naming them).
func Merge(out string, catalog []scenarios.Scenario, dirs ...string) (*Summary, error) {
	if len(dirs) == 0 {
		return nil, outcome.Input(errors.New("campaign merge: give the shards' campaign directories"))
	}
	if catalog == nil {
		catalog = scenarios.All()
	}
	shards := make([]*Summary, len(dirs))
	for i, d := range dirs {
		s, err := Load(d)
		if err != nil {
			return nil, err
		}
		if s.Shard == nil {
			return nil, outcome.Input(fmt.Errorf("campaign merge: %s is not a shard (tumbler campaign --shard i/n): there is nothing to merge it with", d))
		}
		shards[i] = s
	}
	if err := fitTogether(shards); err != nil {
		return nil, outcome.Input(fmt.Errorf("campaign merge: %w", err))
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Shard.Index < shards[j].Shard.Index })
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("campaign merge: %w", err)
	}
	first := shards[0]
	m := &Summary{Name: first.Name, Dir: out, Lock: first.Lock, Started: first.Started, Budget: first.Budget,
		Template: first.Template, Replays: first.Replays, Need: first.Need, Confirm: first.Confirm,
		Cells: slices.Clone(first.Cells), Finds: []Find{}}
	var stopped []string
	ids := map[string]string{} // shard dir + old ID → merged ID
	for _, s := range shards {
		r := rel(out, s.Dir)
		m.Shards = append(m.Shards, r)
		if s.Started.Before(m.Started) {
			m.Started = s.Started
		}
		m.Elapsed = max(m.Elapsed, s.Elapsed)
		m.Interrupted = m.Interrupted || s.Interrupted
		stopped = append(stopped, fmt.Sprintf("%s %s", s.Shard, s.Stopped))
		for _, f := range s.Finds {
			f = moveFind(f, r)
			if i := slices.IndexFunc(m.Finds, func(g Find) bool { return g.Signature == f.Signature }); i >= 0 {
				g := &m.Finds[i]
				g.Folded += 1 + f.Folded
				for _, c := range f.Cells {
					if !slices.Contains(g.Cells, c) {
						g.Cells = append(g.Cells, c)
					}
				}
				ids[s.Dir+"/"+f.ID] = g.ID
				continue
			}
			old := f.ID
			f.ID = fmt.Sprintf("f%d", len(m.Finds)+1)
			ids[s.Dir+"/"+old] = f.ID
			Classify(&f, m.Lock, catalog)
			m.Finds = append(m.Finds, f)
		}
		for i, c := range s.Cells {
			if c.Skipped == notThisShard {
				continue
			}
			if c.Hunt != "" {
				c.Hunt = filepath.Join(r, c.Hunt)
			}
			var fs []string
			for _, id := range c.Finds {
				fs = append(fs, ids[s.Dir+"/"+id])
			}
			c.Finds = fs
			m.Cells[i] = c
		}
	}
	for _, c := range m.Cells {
		if c.Skipped == notThisShard {
			return nil, outcome.Input(fmt.Errorf("campaign merge: no shard hunted cell %s: a shard is missing", c.Name()))
		}
	}
	m.Stopped = fmt.Sprintf("merged from %d shards (%s)", len(shards), strings.Join(stopped, "; "))
	m.ExitCode = exitCode(m)
	return m, m.Write()
}

// moveFind is f with its paths relative to a merged campaign whose shard
// lies at r.
func moveFind(f Find, r string) Find {
	for _, p := range []*string{&f.Hunt, &f.Plan, &f.Shrink, &f.Minimal, &f.Report, &f.RowFile} {
		if *p != "" {
			*p = filepath.Join(r, *p)
		}
	}
	return f
}

// fitTogether refuses shards that are not the parts of one campaign.
func fitTogether(shards []*Summary) error {
	first := shards[0]
	seen := map[int]string{}
	for _, s := range shards {
		if s.Shard.Count != first.Shard.Count {
			return fmt.Errorf("%s is shard %s, %s is shard %s: not one campaign's", first.Dir, first.Shard, s.Dir, s.Shard)
		}
		if d, dup := seen[s.Shard.Index]; dup {
			return fmt.Errorf("shard %s given twice (%s and %s)", s.Shard, d, s.Dir)
		}
		seen[s.Shard.Index] = s.Dir
		for _, c := range []struct {
			what string
			a, b any
		}{
			{"lock template", first.Template, s.Template}, {"cells", cellKeys(first), cellKeys(s)},
			{"replays", first.Replays, s.Replays}, {"need", first.Need, s.Need}, {"confirm", first.Confirm, s.Confirm},
			{"budget", first.Budget, s.Budget},
		} {
			if !sameJSON(c.a, c.b) {
				return fmt.Errorf("%s and %s differ in their %s: not shards of one campaign", first.Dir, s.Dir, c.what)
			}
		}
	}
	var missing []string
	for i := 1; i <= first.Shard.Count; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, first.Shard.Count))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shard %s missing", strings.Join(missing, ", "))
	}
	return nil
}

// cellKeys are a campaign's cells as its shards must share them: each
// topology × family, and whether it could run at all.
func cellKeys(s *Summary) []string {
	var out []string
	for _, c := range s.Cells {
		k := c.Name()
		if c.Skipped != "" && c.Skipped != notThisShard {
			k += " (skipped)"
		}
		out = append(out, k)
	}
	return out
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// Resort sorts a stored campaign's finds again (Classify) against catalog
// (nil: the catalog of this tumbler) and writes campaign.json and its
// page back: after a row was added for a find, or the windows' marks
// changed, what a campaign found reads as it would now.
func Resort(dir string, catalog []scenarios.Scenario) (*Summary, error) {
	if catalog == nil {
		catalog = scenarios.All()
	}
	s, err := Load(dir)
	if err != nil {
		return nil, err
	}
	for i := range s.Finds {
		Classify(&s.Finds[i], s.Lock, catalog)
	}
	s.ExitCode = exitCode(s)
	return s, s.Write()
}
