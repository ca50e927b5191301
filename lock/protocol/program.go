package protocol

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock"
)

// Program is the lock client program a plan runs (its lock.client), one of
// three forms: a shipped client by Name, a client directory of your own by
// Dir (its client.json and its program, exactly as a shipped one's), or a
// bare program by Command, with no manifest: tumbler then assumes nothing
// it cannot check, and the plan may say here what a manifest would (its
// Traits). Options are the library's, passed to it untouched.
type Program struct {
	Name string `json:"name,omitempty"`
	// Dir is a client directory; Normalize makes it absolute.
	Dir     string          `json:"dir,omitempty"`
	Command []string        `json:"command,omitempty"`
	Env     []string        `json:"env,omitempty"`
	Options json.RawMessage `json:"options,omitempty"`
	// Traits of a bare program (Command): what its manifest would declare.
	// A shipped client's and a client directory's come from its manifest.
	lock.Traits
	// Recorded is a client directory's manifest as the run read it
	// (Normalize fills it in), so that the run's plan.json replays and
	// re-checks it as it ran.
	Recorded *Manifest `json:"manifest,omitempty"`
}

// Normalize is p with its client directory made absolute and its manifest
// read into Recorded (when it can be read: Validate says why not).
func (p Program) Normalize() Program {
	if p.Dir == "" {
		return p
	}
	if abs, err := filepath.Abs(p.Dir); err == nil {
		p.Dir = abs
	}
	if p.Recorded == nil {
		if m, err := LoadDir(p.Dir); err == nil {
			p.Recorded = &m
		}
	}
	return p
}

// Validate checks the program without starting anything: its manifest
// (read from its directory with every rule a shipped client's follows),
// and the options it is given.
func (p Program) Validate() error {
	_, err := p.Manifest()
	return err
}

// Label names the program in a word: the shipped client's or the client
// directory's name, or the command's base name.
func (p Program) Label() string {
	switch {
	case p.Name != "":
		return p.Name
	case p.Recorded != nil:
		return p.Recorded.Name
	case p.Dir != "":
		return filepath.Base(p.Dir)
	case len(p.Command) > 0:
		return filepath.Base(p.Command[0])
	}
	return ""
}

// Manifest is the program's manifest: the shipped client's, the client
// directory's (as recorded, checked again against the directory), or one
// made of a bare program's command and traits. A client with a manifest
// takes only the options its manifest lists (the error is a field error of
// "options").
func (p Program) Manifest() (Manifest, error) {
	var opts map[string]json.RawMessage
	if len(p.Options) > 0 {
		if err := json.Unmarshal(p.Options, &opts); err != nil {
			return Manifest{}, field.Errorf("options", "%v must be a JSON object: %w", field.Self, err)
		}
	}
	forms := 0
	for _, given := range []bool{p.Name != "", p.Dir != "", len(p.Command) > 0} {
		if given {
			forms++
		}
	}
	switch {
	case forms > 1:
		return Manifest{}, fmt.Errorf("name %q, dir %q and command %q: give one — a shipped client, a client directory, or a bare program", p.Name, p.Dir, p.Command)
	case forms == 0 || len(p.Command) > 0 && p.Command[0] == "":
		return Manifest{}, fmt.Errorf("needs a name (shipped: %s), a client directory (dir) or a command", strings.Join(Shipped(), ", "))
	case p.Recorded != nil && p.Dir == "":
		return Manifest{}, field.Errorf("manifest", "%v is a client directory's, recorded by a run: it needs its dir", field.Self)
	case len(p.Command) == 0 && !traitsZero(p.Traits):
		return Manifest{}, fmt.Errorf("client %s: its traits (kind, fencing, all_nodes, steps, …) come from its manifest", p.Label())
	}
	var m Manifest
	var err error
	switch {
	case p.Name != "":
		m, err = Lookup(p.Name)
	case p.Recorded != nil:
		m, err = recorded(*p.Recorded, p.Dir)
	case p.Dir != "":
		m, err = LoadDir(p.Dir)
	default:
		if err := p.Kind.Check(); err != nil {
			return Manifest{}, field.Errorf("kind", "%w", err)
		}
		m = Manifest{Name: p.Command[0], Command: p.Command, Traits: p.Traits}
		m.Kind = m.Kind.Or()
		return m.withEnv(p.Env), nil
	}
	if err != nil {
		return Manifest{}, err
	}
	m.Kind = m.Kind.Or()
	if err := m.checkOptions(opts); err != nil {
		return Manifest{}, err
	}
	return m.withEnv(p.Env), nil
}

func (m Manifest) withEnv(env []string) Manifest {
	m.Env = append(slices.Clone(m.Env), env...)
	return m
}

func traitsZero(t lock.Traits) bool {
	return t.Kind == "" && !t.AllNodes && !t.CrossSlot && !t.OddMasters && len(t.Accepts) == 0 &&
		t.Grants == (lock.Grants{}) && len(t.Steps) == 0
}

// checkOptions refuses the options a manifest does not list (Options;
// none listed: it takes none), naming each and the ones it takes, before
// anything runs. A bare program has no manifest: its init refuses what it
// does not know (clients/PROTOCOL.md).
func (m Manifest) checkOptions(given map[string]json.RawMessage) error {
	var unknown []string
	for name := range given {
		if _, ok := m.Options[name]; !ok {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	if len(m.Options) == 0 {
		return field.Errorf("options", "client %s takes no options (given %s; its manifest: %s)", m.Name, strings.Join(unknown, ", "), m.File())
	}
	known := make([]string, 0, len(m.Options))
	for name := range m.Options {
		known = append(known, name)
	}
	sort.Strings(known)
	what := "option"
	if len(unknown) > 1 {
		what = "options"
	}
	return field.Errorf("options", "client %s has no %s %s (its options: %s)", m.Name, what, strings.Join(unknown, ", "), strings.Join(known, ", "))
}

// ClientFlag sets a Program from a command line's --client: a shipped
// client's name, or the path of a client directory (a value with a "/" or
// starting with ".", or a directory of that name when no shipped client
// has it).
type ClientFlag struct{ P *Program }

// Set names the client.
func (f ClientFlag) Set(s string) error {
	if s == "" {
		return fmt.Errorf("empty: a shipped client (%s) or a client directory", strings.Join(Shipped(), ", "))
	}
	f.P.Name, f.P.Dir = "", ""
	if strings.ContainsRune(s, filepath.Separator) || strings.HasPrefix(s, ".") {
		f.P.Dir = s
		return nil
	}
	if slices.Contains(Shipped(), s) {
		f.P.Name = s
		return nil
	}
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		f.P.Dir = s
		return nil
	}
	return fmt.Errorf("%q is no shipped client (%s) and no client directory here", s, strings.Join(Shipped(), ", "))
}

func (f ClientFlag) String() string {
	if f.P == nil {
		return ""
	}
	if f.P.Dir != "" {
		return f.P.Dir
	}
	return f.P.Name
}

// Type names the flag's value in help.
func (ClientFlag) Type() string { return "name|dir" }
