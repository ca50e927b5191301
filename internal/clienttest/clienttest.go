// Package clienttest writes lock client programs for tests: tumbler's
// reference client (clients/reference) with some of its text replaced, so a
// test can run a client that misbehaves in one precise way.
package clienttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// ReferenceCopy writes the reference client, with each edit's old text
// (which must occur exactly once) replaced by its new one, as an executable
// program name in a directory of the test's, and returns its path: a lock
// client program of the test's own, run with --client-cmd.
func ReferenceCopy(t *testing.T, name string, edits ...[2]string) string {
	t.Helper()
	m, err := protocol.Lookup("reference")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := m.Install()
	if err != nil {
		t.Fatalf("install the reference client: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(inst.Dir, "client.py"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for _, e := range edits {
		if n := strings.Count(src, e[0]); n != 1 {
			t.Fatalf("the reference client has %d of %q, want one to replace", n, e[0])
		}
		src = strings.Replace(src, e[0], e[1], 1)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
