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
	"github.com/tumbler-dev/tumbler/internal/clienttest"
	"github.com/tumbler-dev/tumbler/lock/conform"
	"github.com/tumbler-dev/tumbler/lock/protocol"
)

// TestConformShippedClients: Conform on real servers, with a proxy on every
// link, runs every check on the reference client and on redis-py, and each
// passes — or fails exactly as the client's manifest says its library
// does (a deviation) — and the result is what conform.json holds.
func TestConformShippedClients(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"reference", "redis-py"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
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
				if c.Name == conform.Valid && !m.AnswersValid {
					want = ConformNotApplicable
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

// TestConformValidAnswers: a client directory whose manifest declares
// answers_valid has its answers checked: the reference client answering
// from its key in Redis (its token there, and the key's PTTL) passes
// Valid, and the same client answering "valid" whatever it is asked fails
// it, so conform fails.
func TestConformValidAnswers(t *testing.T) {
	t.Parallel()
	const unsupported = `    return {"type": "fail", "error": "unsupported request " + t}`
	for _, tc := range []struct {
		name, answer string
		want         string
	}{
		{"from-redis", `    if t == "valid":
        left = r.pttl(key) if r.get(key) == req["lease"]["token"].encode() else -2
        return {"type": "ok", "valid": True, "remaining_ms": left} if left > 0 else {"type": "ok", "valid": False}
`, ConformPass},
		{"always-valid", `    if t == "valid":
        return {"type": "ok", "valid": True}
`, ConformFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prog := clienttest.ReferenceCopy(t, "client.py", [2]string{unsupported, tc.answer + unsupported})
			dir := filepath.Join(filepath.Dir(prog), "valid-"+tc.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(prog, filepath.Join(dir, "client.py")); err != nil {
				t.Fatal(err)
			}
			manifest := `{"name": "valid-` + tc.name + `", "command": ["/usr/bin/python3", "client.py"], "library": "tumbler reference, answering valid",
  "kind": "lock", "answers_valid": true, "doc": "the reference client with a valid answer", "source": "clients/PROTOCOL.md"}`
			if err := os.WriteFile(filepath.Join(dir, protocol.ManifestFile), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			res, err := Conform(ctx, ConformOptions{Client: protocol.Program{Dir: dir}, Store: t.TempDir()})
			if err != nil {
				t.Fatalf("conform: %v", err)
			}
			for _, c := range res.Checks {
				want := ConformPass
				if c.Name == conform.Valid {
					want = tc.want
				}
				if c.Outcome != want {
					t.Errorf("check %s: %s (%s), want %s", c.Name, c.Outcome, c.Detail, want)
				}
				if c.Name == conform.Valid && want == ConformFail && !strings.Contains(c.Detail, "still valid") {
					t.Errorf("check Valid failed saying %q, want it to say the lease was called still valid after its TTL", c.Detail)
				}
			}
			if res.Passed() != (tc.want == ConformPass) {
				t.Errorf("Passed() = %v with Valid %s", res.Passed(), tc.want)
			}
		})
	}
}
