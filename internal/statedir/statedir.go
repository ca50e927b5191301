// Package statedir names the directory where tumbler leaves what another
// run of it on this machine must find: the records of the processes and
// containers a cluster starts (for a sweep after a crash), its port
// reservations, and the locks of image builds.
package statedir

import (
	"os"
	"path/filepath"
	"strconv"
)

// Dir is $XDG_RUNTIME_DIR/tumbler when that is usable, else
// os.TempDir()/tumbler-<uid>.
func Dir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		dir := filepath.Join(d, "tumbler")
		if os.MkdirAll(dir, 0o700) == nil {
			return dir
		}
	}
	return filepath.Join(os.TempDir(), "tumbler-"+strconv.Itoa(os.Getuid()))
}
