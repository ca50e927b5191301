package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// StoreIndexFile is the page in a store's directory that lists every run
// kept in it (WriteStoreIndex).
const StoreIndexFile = "index.html"

// storeIndexMark is in every page WriteStoreIndex writes: a store's
// index.html without it is someone else's (a hunt's directory is the
// store of its attempts and has its own index.html) and is left alone.
const storeIndexMark = "<!-- tumbler store index -->"

// storeIndexDepth bounds how deep under the store run directories are
// looked for: <name>/<time> is 2, a hunt's attempts hunts/<name>/<time>/
// seed-<N>/<time> are 5.
const storeIndexDepth = 5

// StoreRun is one run directory of a store, as the store's index lists it.
type StoreRun struct {
	// Dir is the run directory relative to the store, with slashes.
	Dir  string
	Name string
	Seed int64
	// Started is when the run started (plan.json's time for a run that
	// never finished).
	Started time.Time
	// Finished is false when the run has no results.json (it is running,
	// or was killed); Verdict is then empty.
	Finished bool
	Verdict  string
	// Expected is a catalog row's expectation ("" for a run without one),
	// and Reproduced whether the run met it.
	Expected   string
	Reproduced bool
	ExitCode   int
}

// ListStore finds every run directory (one with plan.json) under store,
// newest first. Symbolic links (latest) and hidden directories are not
// followed. A run whose results.json cannot be read is listed as
// unfinished.
func ListStore(store string) ([]StoreRun, error) {
	var runs []StoreRun
	err := filepath.WalkDir(store, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == store {
				return err
			}
			return nil // a directory removed while we walk
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(store, path)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.Count(filepath.ToSlash(rel), "/") >= storeIndexDepth) {
			return fs.SkipDir
		}
		plan, err := os.Stat(filepath.Join(path, PlanFile))
		if err != nil {
			return nil
		}
		runs = append(runs, storeRun(path, filepath.ToSlash(rel), plan.ModTime()))
		return fs.SkipDir // a run directory holds no runs
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", store, err)
	}
	slices.SortStableFunc(runs, func(a, b StoreRun) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	return runs, nil
}

func storeRun(dir, rel string, planTime time.Time) StoreRun {
	s := StoreRun{Dir: rel, Started: planTime}
	if res, err := ReadResults(dir); err == nil {
		s.Name, s.Seed, s.Finished = res.Name, res.Seed, true
		if !res.Started.IsZero() {
			s.Started = res.Started
		}
		s.Verdict, s.ExitCode = string(res.Verdict), res.ExitCode
		if e := res.Expected; e != nil {
			s.Expected, s.Reproduced = e.Expected.String(), e.Reproduced
		}
		return s
	}
	// Unfinished: the plan names the run.
	var p struct {
		Name string `json:"name"`
		Seed int64  `json:"seed"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, PlanFile)); err == nil && json.Unmarshal(b, &p) == nil {
		s.Name, s.Seed = p.Name, p.Seed
	}
	if s.Name == "" {
		s.Name = filepath.Base(filepath.Dir(dir))
	}
	return s
}

var storeIndexTmpl = template.Must(template.New("store").Funcs(template.FuncMap{
	"report": func(dir string) string { return dir + "/index.html" },
	"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tumbler runs</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5em; }
table { border-collapse: collapse; }
th, td { padding: .25em .7em; text-align: left; border-bottom: 1px solid #ddd; }
.valid { color: #176b1a; } .invalid { color: #a11; font-weight: bold; } .unknown, .unfinished { color: #8a6d00; }
.no { color: #a11; font-weight: bold; }
</style></head><body>
<h1>tumbler runs</h1>
<p>{{len .Runs}} runs in this store, newest first; rewritten after each run and analysis ({{when .Now}}).</p>
<table>
<thead><tr><th>started</th><th>name</th><th>seed</th><th>verdict</th><th>expected</th><th>reproduced</th><th>report</th></tr></thead>
<tbody>
{{range .Runs}}<tr>
<td>{{when .Started}}</td><td>{{.Name}}</td><td>{{.Seed}}</td>
{{if .Finished}}<td class="{{.Verdict}}">{{.Verdict}}</td>{{else}}<td class="unfinished">unfinished</td>{{end}}
<td>{{if .Expected}}{{.Expected}}{{else}}—{{end}}</td>
<td>{{if not .Expected}}—{{else if .Reproduced}}yes{{else}}<span class="no">no</span>{{end}}</td>
<td><a href="{{report .Dir}}">{{.Dir}}</a></td>
</tr>
{{end}}</tbody></table>
</body></html>
`))

// WriteStoreIndex rewrites store/index.html, the list of every run in the
// store (ListStore). Runs in other processes may finish at the same time:
// writers take turns (an flock on store/.index.lock) and the page is
// written to a temporary file and renamed over the old one, so a reader
// never sees half a page. An index.html that WriteStoreIndex did not write
// is left alone.
func WriteStoreIndex(store string) error {
	lock, err := os.OpenFile(filepath.Join(store, ".index.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("store index: lock %s: %w", lock.Name(), err)
	}
	path := filepath.Join(store, StoreIndexFile)
	if old, err := os.ReadFile(path); err == nil && !bytes.HasPrefix(old, []byte(storeIndexMark)) {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store index: %w", err)
	}
	runs, err := ListStore(store)
	if err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(storeIndexMark + "\n") // html/template drops comments
	if err := storeIndexTmpl.Execute(&buf, struct {
		Runs []StoreRun
		Now  time.Time
	}{runs, time.Now()}); err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	tmp, err := os.CreateTemp(store, ".index-*.html")
	if err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("store index: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("store index: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	return nil
}

// IsStoreIndexed says whether store has an index WriteStoreIndex wrote.
func IsStoreIndexed(store string) bool {
	f, err := os.Open(filepath.Join(store, StoreIndexFile))
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(storeIndexMark))
	n, _ := f.Read(head)
	return string(head[:n]) == storeIndexMark
}
