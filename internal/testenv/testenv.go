// Package testenv gives a parallel test an environment variable of its
// own. t.Setenv refuses a parallel test, because a variable belongs to the
// whole process and another test could read or change it meanwhile; a
// name that no other test in the process uses makes that harmless, so a
// test that hands a secret to a child process (a client program, a
// server's config naming the variable) can run beside the others.
package testenv

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
)

var seq atomic.Int64

// Set sets a variable named prefix, an underscore and a number that no
// other call in this process gets, to value until t and its subtests end,
// and returns the name. Child processes started meanwhile inherit it.
func Set(t testing.TB, prefix, value string) string {
	t.Helper()
	name := fmt.Sprintf("%s_%d", prefix, seq.Add(1))
	if err := os.Setenv(name, value); err != nil {
		t.Fatalf("testenv: set %s: %v", name, err)
	}
	t.Cleanup(func() { _ = os.Unsetenv(name) })
	return name
}
