package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestImageBadInput: the image commands refuse what cannot work before
// they touch Docker, with a message saying why.
func TestImageBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"image", "build", "--binary", "/bin/true"}, 255, "CGO_ENABLED=0"},
		{[]string{"image", "build", "--binary", filepath.Join(dir, "none")}, 255, "no such file"},
		{[]string{"image", "build", "extra"}, 254, "extra"},
		{[]string{"image", "toxiproxy", "--config", filepath.Join(dir, "none.json")}, 255, "none.json"},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("tumbler %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}
