package testenv

import (
	"os"
	"sync"
	"testing"
)

// TestSetIsOwnAndCleared: concurrent calls with one prefix get distinct
// names, each holding its own value, and every variable is gone once its
// test ends.
func TestSetIsOwnAndCleared(t *testing.T) {
	const n = 16
	names := make([]string, n)
	t.Run("set", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				names[i] = Set(t, "TUMBLER_TESTENV", string(rune('a'+i)))
			}()
		}
		wg.Wait()
		seen := map[string]bool{}
		for i, name := range names {
			if seen[name] {
				t.Fatalf("name %s given twice", name)
			}
			seen[name] = true
			if got := os.Getenv(name); got != string(rune('a'+i)) {
				t.Errorf("%s = %q, want %q", name, got, string(rune('a'+i)))
			}
		}
	})
	for _, name := range names {
		if _, ok := os.LookupEnv(name); ok {
			t.Errorf("%s still set after its test ended", name)
		}
	}
}
