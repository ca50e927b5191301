// Package clients are the lock client programs tumbler ships (one
// directory each, with a manifest, client.json, and the program), speaking
// the lock client protocol of PROTOCOL.md. They are embedded in tumbler and
// installed into its cache directory when a run uses one, so a run needs
// nothing but tumbler and the library's Debian packages. A client of your
// own needs no manifest here: name its command (lock.client.command,
// --client-cmd). A directory whose name starts with "_" is not a client:
// it holds files several clients share (a manifest's Shared), installed
// beside each client's own.
package clients

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/lock/conform"
)

//go:embed */*
var files embed.FS

// Manifest describes a shipped client.
type Manifest struct {
	Name string `json:"name"`
	// Command runs it; relative paths are the client's own files.
	Command []string `json:"command"`
	// Env is added to its environment.
	Env []string `json:"env,omitempty"`
	// Shared are files under clients/ that its program loads beside it
	// ("_shared/tumbler_client.py"): installed into its directory under
	// their base names.
	Shared []string `json:"shared,omitempty"`
	// Library is what it drives, with the version the Debian package has.
	Library string `json:"library"`
	// Packages are the Debian packages it needs; Probe, when set, is a
	// command that fails if they are missing.
	Packages []string `json:"packages,omitempty"`
	Probe    []string `json:"probe,omitempty"`
	// Kind is what it drives: lock (default), read-write, semaphore, latch.
	Kind string `json:"kind,omitempty"`
	// Fencing: its leases carry fencing tokens.
	Fencing bool `json:"fencing,omitempty"`
	// Validity: its leases carry the validity the library exposes.
	Validity bool `json:"validity,omitempty"`
	// AllNodes: it locks over every node of an independent topology (a
	// Redlock); otherwise one node, a primary found by Sentinel, or a
	// cluster.
	AllNodes bool `json:"all_nodes,omitempty"`
	// ACL are the rights its library needs on the data nodes beyond those
	// of tumbler's own locks (variants.ACL), in ACL SETUSER form: commands
	// its scripts call, keys it writes besides the plan's.
	ACL []string `json:"acl,omitempty"`
	// Steps it reports, where step faults can stop it.
	Steps []Step `json:"steps,omitempty"`
	// Options it takes (lock.client.options), each with one line of doc:
	// a plan that gives it any other is refused (Spec.Manifest).
	Options map[string]string `json:"options,omitempty"`
	// Conform is what the conformance checks (package lock/conform, `tumbler
	// conform`) must know of the library.
	Conform Conform `json:"conform,omitzero"`
	Doc     string  `json:"doc"`
	// Source is where the library documents what the client drives.
	Source string `json:"source"`

	shipped bool // one of this package's, with files to install
}

// Conform is what the conformance checks must know of a client's library.
type Conform struct {
	// TTLMS is the TTL of the timing checks, for a library that takes whole
	// seconds (0: the checks' own).
	TTLMS int64 `json:"ttl_ms,omitempty"`
	// Deviations are the checks a documented property of the library
	// breaks, by name (lock/conform), each with the property and where it
	// is documented or shown (a test of the client's own proves each).
	Deviations map[string]string `json:"deviations,omitempty"`
}

// Step is a step a client reports: inside an acquire (Acquiring) or a release.
type Step struct {
	Name      string `json:"name"`
	Acquiring bool   `json:"acquiring,omitempty"`
}

var load = sync.OnceValues(func() (map[string]Manifest, error) {
	out := map[string]Manifest{}
	dirs, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if !d.IsDir() || strings.HasPrefix(d.Name(), "_") {
			continue
		}
		b, err := files.ReadFile(path.Join(d.Name(), "client.json"))
		if err != nil {
			return nil, fmt.Errorf("clients: %s: %w", d.Name(), err)
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("clients: %s/client.json: %w", d.Name(), err)
		}
		if m.Name != d.Name() {
			return nil, fmt.Errorf("clients: %s/client.json names %q, not its directory", d.Name(), m.Name)
		}
		if m.Kind == "" {
			m.Kind = "lock"
		}
		for check := range m.Conform.Deviations {
			if !slices.ContainsFunc(conform.Checks, func(c conform.Check) bool { return c.Name == check }) {
				return nil, fmt.Errorf("clients: %s/client.json: conform.deviations names %q, which is no conformance check", d.Name(), check)
			}
		}
		m.shipped = true
		for _, f := range m.Shared {
			if _, err := fs.Stat(files, f); err != nil || !strings.HasPrefix(f, "_") {
				return nil, fmt.Errorf("clients: %s/client.json: shared file %q: not a file under a clients/_… directory", d.Name(), f)
			}
			if exists(files, path.Join(d.Name(), path.Base(f))) {
				return nil, fmt.Errorf("clients: %s/client.json: shared file %q has the name of one of the client's own files", d.Name(), f)
			}
		}
		out[m.Name] = m
	}
	return out, nil
})

// Names lists the shipped clients, sorted.
func Names() []string {
	all, _ := load()
	out := make([]string, 0, len(all))
	for n := range all {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup is the manifest of the shipped client name, or an error listing
// the names.
func Lookup(name string) (Manifest, error) {
	all, err := load()
	if err != nil {
		return Manifest{}, err
	}
	m, ok := all[name]
	if !ok {
		return Manifest{}, fmt.Errorf("unknown client %q (shipped: %s; or give a command of your own)", name, strings.Join(Names(), ", "))
	}
	return m, nil
}

// Installed is a shipped client ready to run: its command with its files
// on disk.
type Installed struct {
	Dir     string
	Command []string
	Env     []string
}

var installMu sync.Mutex

// Install writes the client's files into tumbler's cache (once per
// version) and returns its command. It checks first that the library's
// packages are there (Probe), naming them if not.
func (m Manifest) Install() (Installed, error) {
	if len(m.Probe) > 0 {
		if out, err := exec.Command(m.Probe[0], m.Probe[1:]...).CombinedOutput(); err != nil {
			return Installed{}, fmt.Errorf("client %s needs the Debian packages %s (apt-get install %s; scripts/setup installs them): %s: %v: %s",
				m.Name, strings.Join(m.Packages, ", "), strings.Join(m.Packages, " "), strings.Join(m.Probe, " "), err, strings.TrimSpace(string(out)))
		}
	}
	if !m.shipped {
		return Installed{Command: m.Command, Env: m.Env}, nil
	}
	sub, err := fs.Sub(files, m.Name)
	if err != nil {
		return Installed{}, err
	}
	h := sha256.New()
	names, err := fs.Glob(sub, "*")
	if err != nil {
		return Installed{}, err
	}
	for _, n := range append(names, m.Shared...) {
		src := fs.FS(sub)
		if slices.Contains(m.Shared, n) {
			src = files
		}
		b, _ := fs.ReadFile(src, n)
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.TempDir(), "tumbler-cache-"+strconv.Itoa(os.Getuid()))
	}
	dir := filepath.Join(cache, "tumbler", "clients", m.Name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	installMu.Lock()
	defer installMu.Unlock()
	if _, err := os.Stat(dir); err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return Installed{}, fmt.Errorf("install client %s: %w", m.Name, err)
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), m.Name+"-tmp-")
		if err != nil {
			return Installed{}, fmt.Errorf("install client %s: %w", m.Name, err)
		}
		if err := copyFiles(tmp, sub, m.Shared); err != nil {
			os.RemoveAll(tmp)
			return Installed{}, fmt.Errorf("install client %s: %w", m.Name, err)
		}
		if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
			os.RemoveAll(tmp)
			if _, serr := os.Stat(dir); serr != nil { // another process won the race otherwise
				return Installed{}, fmt.Errorf("install client %s: %w", m.Name, err)
			}
		}
	}
	cmd := make([]string, len(m.Command))
	for i, a := range m.Command {
		switch {
		case !filepath.IsAbs(a) && i > 0 && exists(sub, a):
			cmd[i] = filepath.Join(dir, a)
		default:
			cmd[i] = a
		}
	}
	return Installed{Dir: dir, Command: cmd, Env: m.Env}, nil
}

// copyFiles writes the client's own files and its shared ones into dir.
func copyFiles(dir string, own fs.FS, shared []string) error {
	if err := os.CopyFS(dir, own); err != nil {
		return err
	}
	for _, f := range shared {
		b, err := files.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// Spec is the lock client a plan runs (its lock.client): a shipped client
// by Name, or a program of your own by Command, with the library's
// options, passed to it untouched. A program of your own says here what
// its manifest would: its kind, fencing, nodes and steps.
type Spec struct {
	Name    string          `json:"name,omitempty"`
	Command []string        `json:"command,omitempty"`
	Env     []string        `json:"env,omitempty"`
	Options json.RawMessage `json:"options,omitempty"`

	Kind     string `json:"kind,omitempty"`
	Fencing  bool   `json:"fencing,omitempty"`
	AllNodes bool   `json:"all_nodes,omitempty"`
	Steps    []Step `json:"steps,omitempty"`
}

// Validate checks the spec without starting anything.
func (s Spec) Validate() error {
	_, err := s.Manifest()
	return err
}

// Manifest is the shipped client's manifest, or one made of a command's
// fields. A shipped client's options must be among those its manifest
// lists (the error is a field error of "options").
func (s Spec) Manifest() (Manifest, error) {
	var opts map[string]json.RawMessage
	if len(s.Options) > 0 {
		if err := json.Unmarshal(s.Options, &opts); err != nil {
			return Manifest{}, field.Errorf("options", "%v must be a JSON object: %w", field.Self, err)
		}
	}
	switch {
	case s.Name != "" && len(s.Command) > 0:
		return Manifest{}, fmt.Errorf("name %q and command %q: a shipped client or a program of your own, not both", s.Name, s.Command)
	case s.Name != "":
		if s.Kind != "" || s.Fencing || s.AllNodes || len(s.Steps) > 0 {
			return Manifest{}, fmt.Errorf("client %s: kind, fencing, all_nodes and steps come from its manifest", s.Name)
		}
		m, err := Lookup(s.Name)
		if err != nil {
			return Manifest{}, err
		}
		if err := m.checkOptions(opts); err != nil {
			return Manifest{}, err
		}
		m.Env = append(m.Env, s.Env...)
		return m, nil
	case len(s.Command) == 0 || s.Command[0] == "":
		return Manifest{}, fmt.Errorf("needs a name (shipped: %s) or a command", strings.Join(Names(), ", "))
	}
	m := Manifest{Name: s.Command[0], Command: s.Command, Env: s.Env, Kind: s.Kind, Fencing: s.Fencing, AllNodes: s.AllNodes, Steps: s.Steps}
	switch m.Kind {
	case "":
		m.Kind = "lock"
	case "lock", "read-write", "semaphore", "latch":
	default:
		return Manifest{}, fmt.Errorf("kind %q unknown (valid: lock, read-write, semaphore, latch)", s.Kind)
	}
	return m, nil
}

// checkOptions refuses the options a shipped client's manifest does not
// list (Options; none listed: it takes none), naming each and the ones it
// takes, before anything runs. A program of your own has no manifest: its
// init refuses what it does not know (clients/PROTOCOL.md).
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
		return field.Errorf("options", "client %s takes no options (given %s)", m.Name, strings.Join(unknown, ", "))
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
