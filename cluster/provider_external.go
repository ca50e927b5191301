package cluster

import (
	"context"
	"fmt"

	"github.com/tumbler-dev/tumbler/access"
)

// externalKind: a deployment its owner runs, adopted as its external
// configuration describes it (ExternalProvider): its nodes, its
// toxiproxy, its hooks, which say what it can do (at most restart a node,
// empty or not, pause it, move its clock and change its settings; never
// its persistence mode or its clock's rate). Every run reaches the same
// servers.
var externalKind = ProviderKind{
	Name:     "external",
	Doc:      "a deployment its owner runs, adopted from --external FILE",
	Controls: CanKill | CanWipe | CanPause | CanClock | CanConfig,
	Probe:    true,
	External: true,
	Adopts:   true,
	Shares:   true,
	New:      newExternal,
}

// newExternal reads the deployment's configuration, which must describe
// the plan's topology, and logs in with the plan's access, else the
// configuration's.
func newExternal(_ context.Context, o ProviderOptions) (Provider, *access.Config, error) {
	cfg, err := LoadExternalConfig(o.External)
	if err != nil {
		return nil, nil, configErr{err}
	}
	if cfg.Topology != o.Topology {
		return nil, nil, configErr{fmt.Errorf("it needs topology %s, and the external deployment (%s) is %s", o.Topology, o.External, cfg.Topology)}
	}
	prov, err := NewExternalProvider(cfg)
	if err != nil {
		return nil, nil, err
	}
	acc := o.Access
	if acc == nil {
		acc = cfg.Access
	}
	return prov, acc, nil
}
