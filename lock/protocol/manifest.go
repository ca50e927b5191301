package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/conform"
)

// ManifestFile is the name of a client directory's manifest.
const ManifestFile = "client.json"

// Manifest describes a lock client program: how to run it, what it drives
// and what it declares of itself. It is a client directory's client.json —
// a directory of tumbler's shipped clients (clients/<name>/, embedded) or
// one of your own on disk, read by the same loader (LoadDir, ShipClients)
// and held to the same rules.
type Manifest struct {
	// Name is the client's name: its directory's.
	Name string `json:"name"`
	// Command runs it; relative paths are the client directory's own files.
	Command []string `json:"command"`
	// Env is added to its environment.
	Env []string `json:"env,omitempty"`
	// Shared are files of tumbler's shipped clients' tree that its program
	// loads beside it ("_shared/tumbler_client.py"): installed into its
	// directory under their base names.
	Shared []string `json:"shared,omitempty"`
	// Library is what it drives, with its version.
	Library string `json:"library"`
	// Packages are the Debian packages it needs; Probe, when set, is a
	// command that fails if they are missing.
	Packages []string `json:"packages,omitempty"`
	Probe    []string `json:"probe,omitempty"`
	// Traits are what the lock declares of itself (kind, all_nodes,
	// fencing, steps, …), as a variant's registration declares them: the
	// variant client takes them as they are (variants.Options.Info).
	lock.Traits
	// Validity: its leases carry the validity the library exposes
	// (valid_until_ns); without it they carry none, and a lease is held
	// until its release.
	Validity bool `json:"validity,omitempty"`
	// AnswersValid: the program answers the valid request, asking its
	// library at that moment whether a lease is still valid (clients/
	// PROTOCOL.md, "valid"); a run with check_validity asks it before
	// every protected action.
	AnswersValid bool `json:"answers_valid,omitempty"`
	// ACL are the rights its library needs on the data nodes beyond those
	// of tumbler's own locks (variants.ACL), in ACL SETUSER form: commands
	// its scripts call, keys it writes besides the plan's.
	ACL []string `json:"acl,omitempty"`
	// Options it takes (lock.client.options), each with one line of doc:
	// a plan that gives it any other is refused (Program.Manifest).
	Options map[string]string `json:"options,omitempty"`
	// Conform is what the conformance checks (package lock/conform, `tumbler
	// conform`) must know of the library.
	Conform Conform `json:"conform,omitzero"`
	Doc     string  `json:"doc"`
	// Source is where the library documents what the client drives.
	Source string `json:"source"`

	files fs.FS  // the client directory's files
	from  string // where it was read: "clients/<name>" (shipped) or its directory
	// shared is the tree Shared names files of (the shipped clients').
	shared fs.FS
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

// File is where the manifest was read from ("clients/redis-py/client.json",
// "/home/me/my-lock/client.json"); "" for a bare program's.
func (m Manifest) File() string {
	if m.from == "" {
		return ""
	}
	return path.Join(filepath.ToSlash(m.from), ManifestFile)
}

// parseManifest reads a client directory's manifest: from, its name as
// errors give it; files, its files; shared, the tree its Shared files are
// in (nil: it may name none). Every error names the file and the field.
func parseManifest(b []byte, from string, files, shared fs.FS) (Manifest, error) {
	file := path.Join(filepath.ToSlash(from), ManifestFile)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", file, manifestJSONError(err))
	}
	if dec.More() {
		return Manifest{}, fmt.Errorf("%s: more than one JSON value", file)
	}
	m.files, m.from, m.shared = files, from, shared
	if err := m.check(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// manifestJSONError says which field a decoding error is about.
func manifestJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("field %q: %s is not a %s", te.Field, te.Value, te.Type)
	}
	if s := err.Error(); strings.HasPrefix(s, "json: unknown field ") {
		return fmt.Errorf("field %s is unknown (a manifest's fields: %s)", strings.TrimPrefix(s, "json: unknown field "), strings.Join(manifestFields(), ", "))
	}
	return err
}

// manifestFields are the JSON names of a manifest's fields.
func manifestFields() []string {
	full := Manifest{Name: "x", Command: []string{"x"}, Env: []string{"x"}, Shared: []string{"x"}, Library: "x", Packages: []string{"x"},
		Probe: []string{"x"}, Validity: true, AnswersValid: true, ACL: []string{"x"}, Options: map[string]string{"x": ""}, Conform: Conform{TTLMS: 1}, Doc: "x", Source: "x",
		Traits: lock.Traits{Kind: lock.KindLock, Servers: lock.Servers{AllNodes: true, CrossSlot: true, OddMasters: true, Accepts: []string{"x"}},
			Grants: lock.Grants{Tokens: true, Reentrant: true, Fair: true}, Steps: []lock.Step{{Name: "x"}}}}
	b, _ := json.Marshal(full)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// check holds a manifest to the rules every client directory follows,
// shipped or not; each error names the file and the field.
func (m Manifest) check() error {
	file := m.File()
	bad := func(fieldName, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", file, fieldName, fmt.Sprintf(format, args...))
	}
	dir := path.Base(filepath.ToSlash(m.from))
	switch {
	case m.Name == "":
		return bad("name", "missing: a client is named by its directory (%q)", dir)
	case m.Name != dir:
		return bad("name", "%q is not its directory's name %q: a client directory and its manifest name the client alike", m.Name, dir)
	case len(m.Command) == 0 || m.Command[0] == "":
		return bad("command", "missing: the program to run, as a list of words")
	}
	if c := m.Command[0]; !filepath.IsAbs(c) && strings.ContainsRune(c, '/') && !exists(m.files, c) {
		return bad("command[0]", "%q does not exist in the client directory %s (a relative command is one of the directory's files)", c, m.from)
	}
	if err := m.Kind.Check(); err != nil {
		return bad("kind", "%v", err)
	}
	if m.Fair {
		return bad("fair", "a lock client program cannot declare a fair lock: the protocol carries no queue events for the fairness checker")
	}
	seen := map[string]bool{}
	for i, st := range m.Steps {
		switch {
		case st.Name == "":
			return bad(fmt.Sprintf("steps[%d].name", i), "missing")
		case seen[st.Name]:
			return bad(fmt.Sprintf("steps[%d].name", i), "%q is listed twice", st.Name)
		}
		seen[st.Name] = true
	}
	for check := range m.Conform.Deviations {
		if !slices.ContainsFunc(conform.Checks, func(c conform.Check) bool { return c.Name == check }) {
			return bad("conform.deviations", "%q is no conformance check (checks: %s)", check, strings.Join(checkNames(), ", "))
		}
	}
	for i, f := range m.Shared {
		switch {
		case m.shared == nil || !strings.HasPrefix(f, "_") || !exists(m.shared, f):
			return bad(fmt.Sprintf("shared[%d]", i), "%q is not a file under one of the shipped clients' clients/_… directories", f)
		case exists(m.files, path.Base(f)):
			return bad(fmt.Sprintf("shared[%d]", i), "%q has the name of one of the client's own files", f)
		}
	}
	return nil
}

func checkNames() []string {
	var out []string
	for _, c := range conform.Checks {
		out = append(out, c.Name)
	}
	return out
}

func exists(fsys fs.FS, name string) bool {
	if fsys == nil {
		return false
	}
	_, err := fs.Stat(fsys, path.Clean(name))
	return err == nil
}

// shippedTree is the tree of tumbler's shipped clients (package clients
// hands it over with ShipClients): one directory per client, and the
// shared "_…" ones.
var shippedTree struct {
	mu    sync.Mutex
	fs    fs.FS
	once  *sync.Once
	all   map[string]Manifest
	err   error
	names []string
}

// ShipClients makes the client directories of tree (each a directory whose
// name does not start with "_", holding client.json and its program) the
// shipped clients: Lookup names them, and a client directory's manifest
// may name tree's shared files. Package clients calls it with its embedded
// files; the manifests are read, with LoadDir's rules, when first looked
// up.
func ShipClients(tree fs.FS) {
	shippedTree.mu.Lock()
	defer shippedTree.mu.Unlock()
	shippedTree.fs, shippedTree.once = tree, &sync.Once{}
}

func shipped() (map[string]Manifest, []string, error) {
	shippedTree.mu.Lock()
	tree, once := shippedTree.fs, shippedTree.once
	shippedTree.mu.Unlock()
	if tree == nil {
		return nil, nil, errors.New("no shipped clients (package clients registers them: import it)")
	}
	once.Do(func() {
		all := map[string]Manifest{}
		var names []string
		dirs, err := fs.ReadDir(tree, ".")
		for _, d := range dirs {
			if err != nil || !d.IsDir() || strings.HasPrefix(d.Name(), "_") {
				continue
			}
			sub, _ := fs.Sub(tree, d.Name())
			var b []byte
			if b, err = fs.ReadFile(sub, ManifestFile); err != nil {
				err = fmt.Errorf("clients/%s: %w", d.Name(), err)
				break
			}
			var m Manifest
			if m, err = parseManifest(b, "clients/"+d.Name(), sub, tree); err != nil {
				break
			}
			all[m.Name] = m
			names = append(names, m.Name)
		}
		sort.Strings(names)
		shippedTree.mu.Lock()
		shippedTree.all, shippedTree.names, shippedTree.err = all, names, err
		shippedTree.mu.Unlock()
	})
	shippedTree.mu.Lock()
	defer shippedTree.mu.Unlock()
	return shippedTree.all, shippedTree.names, shippedTree.err
}

// Shipped lists the shipped clients, sorted.
func Shipped() []string {
	_, names, _ := shipped()
	return slices.Clone(names)
}

// Lookup is the manifest of the shipped client name, or an error listing
// the names.
func Lookup(name string) (Manifest, error) {
	all, names, err := shipped()
	if err != nil {
		return Manifest{}, err
	}
	m, ok := all[name]
	if !ok {
		return Manifest{}, fmt.Errorf("unknown client %q (shipped: %s; or a client directory of your own, by its path)", name, strings.Join(names, ", "))
	}
	return m, nil
}

// LoadDir reads the client directory dir (its client.json and its
// program), with the rules of the shipped clients' directories. Every
// error names the file and the field.
func LoadDir(dir string) (Manifest, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Manifest{}, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return Manifest{}, fmt.Errorf("client directory %s: not a directory (a client directory holds client.json and the program)", dir)
	}
	b, err := os.ReadFile(filepath.Join(abs, ManifestFile))
	if err != nil {
		return Manifest{}, fmt.Errorf("client directory %s: %w (a client directory holds its manifest, %s, beside the program: clients/PROTOCOL.md, \"Writing a client\")", dir, err, ManifestFile)
	}
	return parseManifest(b, abs, os.DirFS(abs), sharedTree())
}

// recorded is m, a manifest as a plan recorded it, checked again against
// its directory dir as LoadDir checks one.
func recorded(m Manifest, dir string) (Manifest, error) {
	m.files, m.from, m.shared = os.DirFS(dir), dir, sharedTree()
	return m, m.check()
}

func sharedTree() fs.FS {
	shippedTree.mu.Lock()
	defer shippedTree.mu.Unlock()
	return shippedTree.fs
}

// Installed is a client ready to run: its command with its files on disk.
type Installed struct {
	Dir     string
	Command []string
	Env     []string
}

var installMu sync.Mutex

// Install writes the client's files (its directory's, and the shared ones
// it names) into tumbler's cache, once per content, and returns its
// command, whose relative paths are made the copies'. A bare program's
// command is returned as it is. It checks first that the library's
// packages are there (Probe), naming them if not.
func (m Manifest) Install() (Installed, error) {
	if len(m.Probe) > 0 {
		if out, err := exec.Command(m.Probe[0], m.Probe[1:]...).CombinedOutput(); err != nil {
			return Installed{}, fmt.Errorf("client %s needs the Debian packages %s (apt-get install %s; scripts/setup installs them): %s: %v: %s",
				m.Name, strings.Join(m.Packages, ", "), strings.Join(m.Packages, " "), strings.Join(m.Probe, " "), err, strings.TrimSpace(string(out)))
		}
	}
	if m.files == nil {
		return Installed{Command: m.Command, Env: m.Env}, nil
	}
	h := sha256.New()
	var names []string
	err := fs.WalkDir(m.files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		return Installed{}, fmt.Errorf("install client %s from %s: %w", m.Name, m.from, err)
	}
	for _, n := range names {
		if err := hashFile(h, m.files, n); err != nil {
			return Installed{}, fmt.Errorf("install client %s from %s: %w", m.Name, m.from, err)
		}
	}
	for _, n := range m.Shared {
		if err := hashFile(h, m.shared, n); err != nil {
			return Installed{}, fmt.Errorf("install client %s: %w", m.Name, err)
		}
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
		if err := m.copyFiles(tmp); err != nil {
			os.RemoveAll(tmp)
			return Installed{}, fmt.Errorf("install client %s from %s: %w", m.Name, m.from, err)
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
		case !filepath.IsAbs(a) && exists(m.files, a):
			cmd[i] = filepath.Join(dir, a)
		default:
			cmd[i] = a
		}
	}
	return Installed{Dir: dir, Command: cmd, Env: m.Env}, nil
}

func hashFile(h io.Writer, fsys fs.FS, name string) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	mode := fs.FileMode(0)
	if fi, err := fs.Stat(fsys, name); err == nil {
		mode = fi.Mode().Perm() & 0o111
	}
	fmt.Fprintf(h, "%s %d %o\n", name, len(b), mode)
	h.Write(b)
	return nil
}

// copyFiles writes the client's own files and its shared ones into dir.
func (m Manifest) copyFiles(dir string) error {
	if err := os.CopyFS(dir, m.files); err != nil {
		return err
	}
	for _, f := range m.Shared {
		b, err := fs.ReadFile(m.shared, f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(f)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
