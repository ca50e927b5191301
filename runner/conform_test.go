package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/lock/conform"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// TestConformShippedClients: Conform on real servers, with a proxy on every
// link, runs every check on the reference client and on redis-py, and each
// passes — or fails exactly as the client's manifest says its library
// does (a deviation) — and the result is what conform.json holds.
func TestConformShippedClients(t *testing.T) {
	for _, name := range []string{"reference", "redis-py"} {
		t.Run(name, func(t *testing.T) {
			m, err := protocol.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			store := t.TempDir()
			res, err := Conform(ctx, ConformOptions{Client: protocol.Program{Name: name}, Store: store})
			if err != nil {
				t.Fatalf("conform %s: %v", name, err)
			}
			if res.Client != name || !strings.Contains(res.Library, "redis-py") || !strings.HasPrefix(res.Dir, filepath.Join(store, "conform", name)) {
				t.Errorf("result names client %q, library %q, dir %q", res.Client, res.Library, res.Dir)
			}
			if len(res.Checks) != len(conform.Checks) {
				t.Fatalf("%d checks ran, want every one of %d: %+v", len(res.Checks), len(conform.Checks), res.Checks)
			}
			for i, c := range res.Checks {
				want := ConformPass
				if _, deviates := m.Conform.Deviations[c.Name]; deviates {
					want = ConformDeviation
				}
				if c.Name != conform.Checks[i].Name || c.Outcome != want || c.Took <= 0 {
					t.Errorf("check %d: %s %s (%v): %s; want %s %s", i, c.Name, c.Outcome, c.Took, c.Detail, conform.Checks[i].Name, want)
				}
			}
			if !res.Passed() {
				t.Errorf("Passed() = false for %+v", res.Checks)
			}
			var stored ConformResult
			if b, err := os.ReadFile(filepath.Join(res.Dir, "conform.json")); err != nil || json.Unmarshal(b, &stored) != nil ||
				len(stored.Checks) != len(res.Checks) || stored.Library != res.Library {
				t.Errorf("conform.json: %v, %+v", err, stored)
			}
			if logs, _ := filepath.Glob(filepath.Join(res.Dir, "clients", "contender-*.log")); len(logs) < 8 {
				t.Errorf("clients' logs %v: want one per contender (at least the 8 of mutual exclusion)", logs)
			}
		})
	}
}
