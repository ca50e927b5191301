package clients

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Lang is a language `tumbler client new` writes a client directory in.
type Lang struct {
	Name string
	// Program is the file the user edits.
	Program string
	// What the program drives as written.
	What string
}

// Langs are the scaffolds' languages: those whose Redis library is on
// Debian drive that library's lock; the others speak RESP with their
// standard library only, so that they run here with nothing installed.
var Langs = []Lang{
	{"python", "client.py", "drives redis-py's Lock (python3-redis) on one node"},
	{"php", "client.php", "drives Symfony Lock's RedisStore (php-symfony-lock, php-redis) on one node"},
	{"go", "client.go", "speaks RESP with Go's standard library (SET NX PX, a compare-and-delete release, a compare-and-PEXPIRE extend) to one node, and exposes a validity"},
	{"node", "client.js", "speaks RESP with Node's own modules (SET NX PX, a compare-and-delete release, a compare-and-PEXPIRE extend) to one node, and exposes a validity"},
	{"java", "Client.java", "speaks RESP with Java's standard library (SET NX PX, a compare-and-delete release, a compare-and-PEXPIRE extend) to one node, and exposes a validity"},
}

// LangNames are the scaffolds' languages by name.
func LangNames() []string {
	out := make([]string, len(Langs))
	for i, l := range Langs {
		out[i] = l.Name
	}
	return out
}

// ErrScaffold is a scaffold that cannot be written as asked: a bad name,
// language or directory (bad input).
var ErrScaffold = errors.New("cannot write the client directory")

var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Scaffold writes a client directory for a lock client named name in lang
// into dir (its name must be name: a client directory is named by its
// client), and returns it: the program (dispatch on the request's type,
// each outcome mapped to ok, fail or info, steps reported as init arms
// them, credentials read from where init says they are, TLS), its
// manifest and a README saying what to change. dir must not exist, or be
// empty.
func Scaffold(name, lang, dir string) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("%w: name %q: lower-case letters, digits, '.', '-' and '_', starting with a letter or digit", ErrScaffold, name)
	}
	var l *Lang
	for i := range Langs {
		if Langs[i].Name == lang {
			l = &Langs[i]
		}
	}
	if l == nil {
		return "", fmt.Errorf("%w: language %q unknown (valid: %s)", ErrScaffold, lang, strings.Join(LangNames(), ", "))
	}
	if dir == "" {
		dir = name
	}
	if filepath.Base(filepath.Clean(dir)) != name {
		return "", fmt.Errorf("%w: directory %s: a client directory is named by its client (…/%s)", ErrScaffold, dir, name)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return "", fmt.Errorf("%w: directory %s exists and is not empty", ErrScaffold, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	fill := func(b []byte) []byte {
		s := strings.NewReplacer("__NAME__", name, "__LANG__", l.Name, "__PROGRAM__", l.Program, "__WHAT__", l.What).Replace(string(b))
		return []byte(s)
	}
	src := path.Join("_scaffold", l.Name)
	err := fs.WalkDir(files, src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, strings.TrimSuffix(strings.TrimPrefix(p, src+"/"), ".scaffold"))
		return os.WriteFile(out, fill(b), 0o644)
	})
	if err != nil {
		return "", err
	}
	readme, err := files.ReadFile("_scaffold/README.md")
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "README.md"), fill(readme), 0o644)
}
