package cluster

import (
	"errors"
	"fmt"
)

// An independent topology (independent:N) runs N standalone masters
// n1..nN, which share nothing: Redlock's setting. Clients reach each
// through their own proxies c<i>->n<j>; there are no other links.

// Independent is the kind of N standalone masters.
const Independent Kind = "independent"

// MaxIndependent is the most masters an independent topology runs: beyond
// it a test machine runs out of cores long before the harness learns
// anything new.
const MaxIndependent = 15

type independent struct{ topoBase }

func (independent) kind() Kind   { return Independent }
func (independent) form() string { return "independent:N" }

func (independent) check(t Topology) error {
	if t.Sentinels {
		return fmt.Errorf("sentinels watch a replicated topology, not independent masters")
	}
	return errors.Join(checkSize(t, MaxIndependent, "masters"), checkShardReplicas(t))
}

func (independent) nodes(t Topology) []string   { return numbered("n", t.N) }
func (independent) masters(t Topology) []string { return numbered("n", t.N) }

func (independent) traits(Topology) Traits {
	return Traits{IndependentMasters: true, IndependentNodes: true, Splittable: true}
}
