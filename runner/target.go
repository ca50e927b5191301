package runner

import (
	"fmt"
	"strings"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster"
)

// Target is where a run's servers are and how to log in to them: settings
// that move a plan without changing what it does. `run`, `reproduce`,
// `matrix` and `audit` take the same flags for it, and Apply lays them
// over a plan (a catalog row's, a plan file's or one built from flags). A
// zero field keeps the plan's.
type Target struct {
	// Provider runs the servers: a registered provider's name
	// (cluster.ProviderNames).
	Provider string
	// External is an external deployment's configuration file; it implies
	// the provider that takes one (cluster.ExternalKind).
	External string
	// Server is the software: redis or valkey.
	Server string
	// Access is how to authenticate and speak TLS; secrets are referenced,
	// never given.
	Access *access.Config
}

// Apply returns p moved onto t. Errors wrap ErrPlan and name the flag.
func (t Target) Apply(p Plan) (Plan, error) {
	bad := func(flag, format string, args ...any) (Plan, error) {
		return Plan{}, fmt.Errorf("%w: --%s: %s", ErrPlan, flag, fmt.Sprintf(format, args...))
	}
	ext := cluster.ExternalKind().Name
	switch {
	case t.External != "" && t.Provider == "":
		t.Provider = ext
	case t.External != "" && t.Provider != ext:
		return bad("external", "names an external deployment, but --provider is %s", t.Provider)
	case t.Provider == ext && t.External == "" && p.External == "":
		return bad("provider", "%s needs --external FILE, the deployment's configuration", ext)
	}
	if t.Provider != "" {
		k, err := cluster.LookupProvider(t.Provider)
		if err != nil {
			return bad("provider", "%v", err)
		}
		p.Provider = t.Provider
		if !k.External {
			p.External = ""
		}
	}
	if t.External != "" {
		p.External = t.External
	}
	if t.Server != "" {
		srv, err := cluster.ParseServer(t.Server)
		if err != nil {
			return bad("server", "%v", err)
		}
		p.Server = srv
	}
	if t.Access != nil {
		if err := t.Access.Validate(); err != nil {
			return bad("auth", "%v", err)
		}
		p.Access = t.Access
	}
	return p, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Runnable checks, before anything starts, that p can run where it says:
// the plan is valid (faults its provider cannot take are refused there)
// and an external deployment has the plan's topology. The error says why
// not, wrapping ErrPlan.
func Runnable(p Plan) error {
	p, err := p.Normalized()
	if err != nil {
		return err
	}
	k, err := p.providerKind()
	if err != nil {
		return err
	}
	if k.Adopts {
		if err := adoptedRunnable(p); err != nil {
			return err
		}
	}
	// The provider's own answer: an external deployment's topology, and
	// the node controls the faults need (a clock fault without a clock
	// hook). The docker provider is asked when the run starts.
	setup, err := p.probeSetup()
	if err != nil {
		return err
	}
	if err := p.nemesisPlan().Validate(setup); err != nil {
		return fmt.Errorf("%w: %w", ErrPlan, faultsError(err))
	}
	return nil
}

// adoptedRunnable refuses what only the owner of an adopted (external)
// deployment can set up.
func adoptedRunnable(p Plan) error {
	if !p.SentinelDownAfter.IsZero() {
		return fmt.Errorf("%w: it sets the Sentinels' down-after (sentinel_down_after), which an external deployment's owner does, not tumbler", ErrPlan)
	}
	if len(p.NodeConfig) > 0 {
		return fmt.Errorf("%w: it configures the data nodes (node_config: %s), which an external deployment's owner does, not tumbler", ErrPlan, strings.Join(sortedKeys(p.NodeConfig), ", "))
	}
	return nil
}
