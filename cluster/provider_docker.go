package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster/image"
)

// dockerKind: containers of a server image (DockerProvider), tumbler's
// own unless the environment names another (image.Env). Building one may
// build the image, so it is not probed before a run; an image without
// the clock shim takes no clock faults.
var dockerKind = ProviderKind{
	Name:     "docker",
	Doc:      "containers of tumbler's server image, built on this machine",
	Controls: AllControls,
	New: func(ctx context.Context, o ProviderOptions) (Provider, *access.Config, error) {
		prov, err := NewDockerProvider(ctx, DockerOptions{Server: o.Server, Image: imageOverride(o.Server)})
		if err != nil {
			return nil, nil, fmt.Errorf("docker provider: %w", err)
		}
		return prov, o.Access, nil
	},
	Ready: dockerReady,
}

// dockerReady builds tumbler's server image for o's server if it is not
// here (about 40 s the first time, nothing after), so that a first run on
// a fresh machine is not timed with the build (a catalog row may take its
// whole time limit). An image the environment names is left as it is.
func dockerReady(ctx context.Context, o ProviderOptions, log *slog.Logger) error {
	if imageOverride(o.Server) != "" {
		return nil
	}
	start := time.Now()
	tag, err := image.Build(ctx, o.Server)
	if err != nil {
		return fmt.Errorf("docker provider: %w", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		log.Info("server image built on this machine (once; not part of the run's time)", "image", tag, "took", took.Round(100*time.Millisecond))
	}
	return nil
}

// imageOverride is the server image the environment names for server
// (image.Env), "" for tumbler's own, built here.
func imageOverride(server Server) string { return os.Getenv(image.Env(server)) }
