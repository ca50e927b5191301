package nemesis

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tumbler-dev/tumbler/cluster"
)

// TestKindTableInDocs: the table of kinds in the package documentation and
// in docs/how-it-works.md is the one the registry renders. When a kind changes, paste
// the table this test prints.
func TestKindTableInDocs(t *testing.T) {
	table := kindTable()
	var commented []string
	for _, l := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		commented = append(commented, "//\t"+l)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), strings.Join(commented, "\n")+"\n") {
		t.Errorf("doc.go's table of kinds is not the registry's; it should read:\n%s", strings.Join(commented, "\n"))
	}
	readme, err := os.ReadFile("../docs/how-it-works.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```\n"+table+"```\n") {
		t.Errorf("docs/how-it-works.md's table of kinds is not the registry's; it should read:\n```\n%s```", table)
	}
}

// TestRegistry: every kind takes only real step fields, every step field is
// taken by some kind and listed in the package documentation, and the
// names are unique.
func TestRegistry(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string]bool{}
	seen := map[Kind]bool{}
	for _, k := range registry {
		if seen[k.kind()] {
			t.Errorf("kind %s registered twice", k.kind())
		}
		seen[k.kind()] = true
		for _, f := range k.fields() {
			if !slices.Contains(stepFields, f) || slices.Contains(commonFields, f) {
				t.Errorf("%s takes %q, which is no field of Step or one every step has", k.kind(), f)
			}
			taken[f] = true
		}
		if k.doc() == "" || strings.Contains(k.doc(), "\n") {
			t.Errorf("%s: its description must be one line", k.kind())
		}
	}
	for _, f := range stepFields {
		if !slices.Contains(commonFields, f) && !taken[f] {
			t.Errorf("no kind takes step field %q", f)
		}
		if !strings.Contains(string(doc), "//\t"+f) && !strings.Contains(string(doc), ", "+f) {
			t.Errorf("doc.go does not list step field %q", f)
		}
	}
	if err := Kind("meteor").Available(Setup{}); err == nil || !strings.Contains(err.Error(), `unknown fault "meteor"`) {
		t.Errorf("an unknown kind: %v", err)
	}
	// Available names what is missing, and a provider's answer counts.
	ind := Setup{Topology: cluster.Topology{Kind: cluster.Independent, N: 3}, Clients: 2, NodeClock: true}
	for k, want := range map[Kind]string{Failover: "has no replicas", Clock: ""} {
		if err := k.Available(ind); (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s on %s: %v, want %q", k, ind.Topology, err, want)
		}
	}
	ind.Provider, ind.Controls = "docker", cluster.AllControls&^cluster.CanClock
	if err := Clock.Available(ind); err == nil || !strings.Contains(err.Error(), "the docker provider can kill/start, wipe, pause/resume") {
		t.Errorf("clock on a provider without clock: %v", err)
	}
	if err := Pause.Available(ind); err != nil {
		t.Errorf("pause on a provider that can pause: %v", err)
	}
}
