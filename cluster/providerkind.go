package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tumbler-dev/tumbler/access"
)

// ProviderKind is what tumbler knows of a provider before it builds one:
// its name in a plan, a line saying what runs the servers, what it can and
// cannot run, and how a plan's provider of it is built. Each provider
// declares its kind in its own file (provider_<name>.go), beside the
// Provider it builds, and is listed in providerKinds, the one
// registration line. The runner, the command line and the catalog ask the
// kind (LookupProvider) instead of comparing provider names; a test
// refuses a kind with a field it must have left empty.
type ProviderKind struct {
	// Name is the provider's name in a plan (`provider`) and on the
	// command line (--provider): lower-case letters. A Provider it builds
	// gives the same Name.
	Name string
	// Doc is one line for a person saying what runs the servers: the
	// flag's help lists it.
	Doc string
	// Default marks the provider of a plan that names none; exactly one
	// kind has it.
	Default bool
	// Controls are the most it can do to the nodes: restart one (kill and
	// start), restart one with an empty disk (wipe), pause one, move its
	// clock, change its settings. A built provider may say fewer
	// (Provider.Controls: an image without the clock shim, an external
	// deployment without a hook); one that cannot be probed is held to
	// these until the run builds it.
	Controls Controls
	// Probe: building it starts nothing and builds nothing, so a plan's
	// faults are checked against the built provider's own Controls before
	// anything runs. A kind without it (the docker provider may have an
	// image to build) is asked for them when the run starts.
	Probe bool
	// External: it runs the deployment the plan's `external` file
	// describes (--external), and needs one; no other provider takes
	// the file, and --external alone picks this provider. At most one kind
	// has it.
	External bool
	// Adopts: it adopts servers their owner runs and configures (its
	// providers are Adopters). The deployment's server is what it is (a
	// plan's `server` is checked against it), tumbler sets neither the
	// nodes' settings nor the Sentinels' down-after, and it runs only the
	// topologies an adoption can (Topology.Adoptable).
	Adopts bool
	// Shares: every run on it reaches the same servers through the same
	// proxies, so runs of a hunt, a matrix or a campaign go one at a time.
	Shares bool
	// New builds the provider for a plan, and says how to log in to its
	// servers (the plan's access, or what the deployment declares). It
	// starts no server. An error wrapping ErrProviderConfig is the fault
	// of what the plan gave it (bad input); any other is the machine's.
	New func(ctx context.Context, o ProviderOptions) (Provider, *access.Config, error)
	// Ready, if set, makes this machine ready for the provider once,
	// before a run begins and outside its time (the docker provider builds
	// its server image when it is missing); it logs what took long.
	Ready func(ctx context.Context, o ProviderOptions, log *slog.Logger) error
}

// ProviderOptions are what a plan tells its provider.
type ProviderOptions struct {
	// Server is the software the plan asks for.
	Server Server
	// Topology is the plan's.
	Topology Topology
	// External is the plan's external configuration file, for the kind
	// that takes one.
	External string
	// Access is how the plan logs in; nil for no credentials or TLS.
	Access *access.Config
}

// providerKinds lists every provider, in the order help and errors give
// them: the one registration line of a provider.
var providerKinds = []ProviderKind{processKind, dockerKind, externalKind}

// ErrProviderConfig is wrapped by a ProviderKind.New error that is the
// fault of what the plan gave the provider (an external configuration
// that cannot be read, or that describes another topology), so the caller
// reports bad input rather than a failure of the harness.
var ErrProviderConfig = errors.New("bad provider configuration")

// configErr marks err as ErrProviderConfig without changing its text.
type configErr struct{ error }

func (e configErr) Is(target error) bool { return target == ErrProviderConfig }
func (e configErr) Unwrap() error        { return e.error }

// Providers are the registered provider kinds, in their order.
func Providers() []ProviderKind { return append([]ProviderKind(nil), providerKinds...) }

// ProviderNames are the registered providers' names, in their order.
func ProviderNames() []string { return ProviderNamesWith(func(ProviderKind) bool { return true }) }

// ProviderNamesWith are the names of the providers for which has is true,
// in their order: ProviderNamesWith(func(k ProviderKind) bool { return
// !k.Adopts }) are those that start their servers.
func ProviderNamesWith(has func(ProviderKind) bool) []string {
	var out []string
	for _, k := range providerKinds {
		if has(k) {
			out = append(out, k.Name)
		}
	}
	return out
}

// LookupProvider is the kind named name, or an error listing the known
// ones: `"k8s" unknown (valid: process, docker, external)`.
func LookupProvider(name string) (ProviderKind, error) {
	for _, k := range providerKinds {
		if k.Name == name {
			return k, nil
		}
	}
	return ProviderKind{}, fmt.Errorf("%q unknown (valid: %s)", name, strings.Join(ProviderNames(), ", "))
}

// DefaultProvider is the kind of a plan that names no provider.
func DefaultProvider() ProviderKind {
	return providerWith(func(k ProviderKind) bool { return k.Default })
}

// ExternalKind is the kind that takes a plan's external configuration
// file (ProviderKind.External); its zero value if none does.
func ExternalKind() ProviderKind {
	return providerWith(func(k ProviderKind) bool { return k.External })
}

func providerWith(has func(ProviderKind) bool) ProviderKind {
	for _, k := range providerKinds {
		if has(k) {
			return k
		}
	}
	return ProviderKind{}
}

// ProviderHelp lists the providers with their lines and the default, for
// a flag's help: "process (redis-server from PATH), docker (…) or
// external (…); default process".
func ProviderHelp() string {
	out := make([]string, len(providerKinds))
	for i, k := range providerKinds {
		out[i] = k.Name + " (" + k.Doc + ")"
	}
	return orList(out) + "; default " + DefaultProvider().Name
}
