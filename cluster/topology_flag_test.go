package cluster

import (
	"strings"
	"testing"
)

// A topology and a persistence mode are flag values: they parse what a
// plan writes, refuse the rest, and a zero topology prints as nothing.
func TestTopologyAndPersistenceFlags(t *testing.T) {
	var topo Topology
	if topo.String() != "" {
		t.Errorf("the zero topology prints as %q", topo.String())
	}
	if err := topo.Set("replicated:1+sentinels"); err != nil || topo != (Topology{Kind: Replicated, N: 1, Sentinels: true}) {
		t.Errorf("Set: %+v, %v", topo, err)
	}
	if err := topo.Set("ring:3"); err == nil || !strings.Contains(err.Error(), "unknown kind") || topo.Kind != Replicated {
		t.Errorf("ring:3: %v, topology now %+v", err, topo)
	}
	var p Persistence
	if err := p.Set("AOF-always"); err != nil || p != AOFAlways || p.String() != "aof-always" {
		t.Errorf("Set: %q, %v", p, err)
	}
	if err := p.Set("rdb"); err == nil || !strings.Contains(err.Error(), "unknown persistence") || p != AOFAlways {
		t.Errorf("rdb: %v, persistence now %q", err, p)
	}
}
