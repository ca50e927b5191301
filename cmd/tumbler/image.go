package main

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/cluster/image"
)

func (a *app) imageCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build tumbler's container images locally, without a registry",
		Args:  noArgs,
	}
	cmd.AddCommand(a.imageBuildCmd(), a.toxiproxyCmd())
	return cmd
}

func (a *app) imageBuildCmd() *cobra.Command {
	var binary, tag string
	var force bool
	cmd := &cobra.Command{
		Use:   "build [--force] [--binary FILE] [--tag TAG]",
		Short: "Build the Redis image and the harness image (tumbler:local)",
		Long: `build makes the images docker-compose.yml runs, on this machine and without
a registry: tumbler's Redis image (tumbler/redis:<key>, the one the docker
provider uses: a debootstrap'd Debian bookworm with redis-server,
redis-sentinel and the clock shim; needs root, debootstrap and a Debian
mirror) and the harness image (--tag, default tumbler:local): that image
plus the tumbler binary as its entrypoint, which also serves the links'
toxiproxy ("tumbler image toxiproxy"). The binary is this one unless
--binary names another; it must be static (CGO_ENABLED=0 go build).

Images that are present and up to date are kept; --force rebuilds them.
It prints the tags, one per line as NAME=TAG, for docker-compose's
environment.`,
		Example: `  CGO_ENABLED=0 go build -o bin/tumbler ./cmd/tumbler && bin/tumbler image build
  bin/tumbler image build --force`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if binary == "" {
				self, err := os.Executable()
				if err != nil {
					return failed(fmt.Errorf("find this binary: %w (give --binary)", err))
				}
				binary = self
			}
			built, err := image.BuildLocal(cmd.Context(), image.Local{Server: cluster.Redis, Binary: binary, Harness: tag, Force: force})
			if err != nil {
				return failed(err)
			}
			for _, b := range built {
				state := "up to date"
				if b.Built {
					state = "built"
				}
				a.log.Info("image "+state, "image", b.Tag, "role", b.Role)
			}
			fmt.Fprintf(a.stdout, "TUMBLER_REDIS_IMAGE=%s\nTUMBLER_HARNESS_IMAGE=%s\n", built[0].Tag, built[1].Tag)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&force, "force", false, "rebuild the images even when they are up to date")
	fs.StringVar(&binary, "binary", "", "the static tumbler binary to put in the harness image (default: this one)")
	fs.StringVar(&tag, "tag", image.LocalHarness, "tag of the harness image")
	return cmd
}

func (a *app) toxiproxyCmd() *cobra.Command {
	var host, port, config string
	cmd := &cobra.Command{
		Use:   "toxiproxy [--host HOST] [--port PORT] [--config FILE]",
		Short: "Serve toxiproxy (the links' proxies of a Compose deployment) until stopped",
		Long: `toxiproxy runs the toxiproxy server tumbler embeds, with its HTTP API on
--host:--port and the proxies of --config (toxiproxy's JSON: a list of
{name, listen, upstream, enabled}), until SIGINT or SIGTERM. The flags are
toxiproxy-server's; the harness image has it as /toxiproxy, where the
official toxiproxy image has its server, so docker-compose.yml's toxiproxy
service runs either image with the same command.`,
		Example: `  tumbler image toxiproxy --host 0.0.0.0 --config deploy/compose-toxiproxy.json`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return failed(image.ServeToxiproxy(cmd.Context(), net.JoinHostPort(host, port), config, os.Stderr))
		},
	}
	cmd.Flags().StringVar(&host, "host", "localhost", "host toxiproxy's HTTP API listens on")
	cmd.Flags().StringVar(&port, "port", "8474", "port of toxiproxy's HTTP API")
	cmd.Flags().StringVar(&config, "config", "", "toxiproxy's JSON list of proxies to create at start")
	return cmd
}
