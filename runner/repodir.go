package runner

import (
	"os"
	"path/filepath"
)

// FromRepository is p with a relative client directory (lock.client.dir)
// named from the root of tumbler's repository — a catalog row's
// contrib/clients/<name>, which the binary does not embed — made absolute:
// the working directory or the nearest of its parents that holds it, so
// that the row runs from anywhere in a checkout (the command line at its
// root, a package's tests in their directory). Where no such directory is
// found (a binary run outside a checkout) it stays as written, and
// validating the plan names the directory that is missing.
func (p Plan) FromRepository() Plan {
	c := p.Lock.Client
	if c == nil || c.Dir == "" || filepath.IsAbs(c.Dir) {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(filepath.Join(dir, c.Dir)); err == nil && fi.IsDir() {
			found := *c
			found.Dir = filepath.Join(dir, c.Dir)
			p.Lock.Client = &found
			return p
		}
		if filepath.Dir(dir) == dir {
			return p
		}
	}
}
