package cluster

import (
	"context"

	"github.com/tumbler-dev/tumbler/access"
)

// processKind: redis-server and redis-sentinel from PATH, children of the
// harness (ProcessProvider), so every control is the harness's.
var processKind = ProviderKind{
	Name:     "process",
	Doc:      "redis-server from PATH",
	Default:  true,
	Controls: AllControls,
	Probe:    true,
	New: func(_ context.Context, o ProviderOptions) (Provider, *access.Config, error) {
		prov, err := NewProcessProvider()
		if err != nil {
			return nil, nil, err
		}
		return prov, o.Access, nil
	},
}
