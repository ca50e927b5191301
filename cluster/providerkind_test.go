package cluster

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// incomplete lists what a provider kind leaves out that every kind must
// declare: a name as plans write it, a one-line doc for the flag's help,
// what it can do to the nodes, how it is built.
func incomplete(k ProviderKind) []string {
	var out []string
	if !regexp.MustCompile(`^[a-z]+$`).MatchString(k.Name) {
		out = append(out, "a name of lower-case letters")
	}
	if k.Doc == "" || strings.ContainsAny(k.Doc, "\n") || strings.HasSuffix(k.Doc, ".") {
		out = append(out, "a one-line doc without a full stop (the flag's help lists it)")
	}
	if k.Controls == 0 {
		out = append(out, "the node controls it can carry out at most")
	}
	if k.New == nil {
		out = append(out, "New, how a plan's provider of it is built")
	}
	return out
}

// TestProviderKindsComplete: every registered provider declares itself
// whole; exactly one is the default and exactly one takes --external (the
// flag alone picks it); names are unique. A kind missing a field is
// refused, which the incomplete ones below show.
func TestProviderKindsComplete(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	defaults, externals := 0, 0
	for _, k := range Providers() {
		if miss := incomplete(k); len(miss) > 0 {
			t.Errorf("provider %q lacks %s", k.Name, strings.Join(miss, "; "))
		}
		if seen[k.Name] {
			t.Errorf("provider %q registered twice", k.Name)
		}
		seen[k.Name] = true
		if k.Default {
			defaults++
		}
		if k.External {
			externals++
		}
		if got, err := LookupProvider(k.Name); err != nil || got.Name != k.Name {
			t.Errorf("LookupProvider(%q) = %q, %v", k.Name, got.Name, err)
		}
		if !strings.Contains(ProviderHelp(), k.Name+" ("+k.Doc+")") {
			t.Errorf("the help %q does not give provider %s its line", ProviderHelp(), k.Name)
		}
	}
	if defaults != 1 || externals != 1 {
		t.Errorf("%d default providers and %d taking --external, want one each", defaults, externals)
	}
	whole := processKind
	for name, k := range map[string]ProviderKind{
		"no doc":      {Name: "k8s", Controls: CanKill, New: whole.New},
		"no New":      {Name: "k8s", Doc: "pods", Controls: CanKill},
		"no controls": {Name: "k8s", Doc: "pods", New: whole.New},
		"bad name":    {Name: "K8s!", Doc: "pods", Controls: CanKill, New: whole.New},
		"long doc":    {Name: "k8s", Doc: "pods.\nMore.", Controls: CanKill, New: whole.New},
	} {
		if len(incomplete(k)) == 0 {
			t.Errorf("%s: an incomplete provider passes", name)
		}
	}
}

// TestLookupProviderUnknown: an unknown provider's error lists the known
// ones.
func TestLookupProviderUnknown(t *testing.T) {
	t.Parallel()
	_, err := LookupProvider("k8s")
	if err == nil || err.Error() != `"k8s" unknown (valid: `+strings.Join(ProviderNames(), ", ")+")" {
		t.Fatalf("unknown provider: %v", err)
	}
	for _, name := range []string{"process", "docker", "external"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q is not listed: %v", name, err)
		}
	}
}

// TestProviderKindsBuild: the providers that build without starting or
// building anything (process; external from deploy/external.json) are
// what their kind declares: the same name, no more controls, an Adopter
// exactly when the kind adopts. A configuration that cannot be read, or
// that describes another topology, is the plan's fault.
func TestProviderKindsBuild(t *testing.T) {
	t.Parallel()
	ext := filepath.Join("..", "deploy", "external.json")
	cfg, err := LoadExternalConfig(ext)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Providers() {
		if !k.Probe {
			continue // may build an image: TUMBLER_DOCKER_TESTS' business
		}
		prov, _, err := k.New(context.Background(), ProviderOptions{Topology: cfg.Topology, External: ext})
		if err != nil {
			t.Errorf("%s: %v", k.Name, err)
			continue
		}
		_, adopts := prov.(Adopter)
		if prov.Name() != k.Name || !k.Controls.Has(prov.Controls()) || adopts != k.Adopts {
			t.Errorf("%s builds %s with controls %s (declared %s), adopter %v", k.Name, prov.Name(), prov.Controls(), k.Controls, adopts)
		}
		if err := prov.Close(); err != nil {
			t.Errorf("%s: close: %v", k.Name, err)
		}
	}
	ek := ExternalKind()
	for _, o := range []ProviderOptions{
		{Topology: Topology{Kind: Replicated, N: 1}, External: ext},
		{Topology: cfg.Topology, External: filepath.Join(t.TempDir(), "missing.json")},
	} {
		if _, _, err := ek.New(context.Background(), o); !errors.Is(err, ErrProviderConfig) {
			t.Errorf("%s on %s from %s: %v, want ErrProviderConfig", ek.Name, o.Topology, o.External, err)
		}
	}
}

// TestProviderNamesRegistered: every provider the project names — in a
// plan ("provider": "…": the catalog's rows, the golden plans, deploy/),
// in the docs and in the commands' help and examples (--provider NAME) —
// is registered, so renaming or dropping one leaves no stale name behind.
func TestProviderNamesRegistered(t *testing.T) {
	t.Parallel()
	inPlan := regexp.MustCompile(`"provider":\s*"([^"]*)"`)
	onFlag := regexp.MustCompile(`--provider[ =]([A-Za-z0-9_-]+)`)
	// prose that names the flag itself ("--provider and --external", "but
	// --provider is %s")
	prose := map[string]bool{"and": true, "or": true, "is": true}
	found := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "store", "bin", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".json" && ext != ".md" && (ext != ".go" || strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var names [][]string
		if ext != ".go" { // Go's "provider": "…" are maps and tags, not plans
			names = append(names, inPlan.FindAllStringSubmatch(string(b), -1)...)
		}
		names = append(names, onFlag.FindAllStringSubmatch(string(b), -1)...)
		for _, m := range names {
			if prose[m[1]] {
				continue
			}
			found++
			if _, err := LookupProvider(m[1]); err != nil {
				t.Errorf("%s: provider %v", path, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 10 {
		t.Fatalf("found %d provider names in the repository, want the catalog's and the docs' (is the walk in the right place?)", found)
	}
}
