package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/moby/moby/client"
	"github.com/rs/zerolog"
	"github.com/testcontainers/testcontainers-go"
)

// LocalHarness is the default tag of the harness image
// BuildLocal makes: tumbler's own binary on tumbler's Redis image.
const LocalHarness = "tumbler:local"

// Labels on the harness image: the binary's digest and the ID of the
// image it was built on, which together say whether it is up to date.
const (
	harnessBinaryLabel = "tumbler.binary-sha256"
	harnessBaseLabel   = "tumbler.base-image"
	harnessBinaryPath  = "/usr/local/bin/tumbler"
)

// Local says what BuildLocal makes.
type Local struct {
	// Server is the software of the server image the harness image is
	// built on (cluster.Redis for docker-compose.yml).
	Server Server
	// Binary is the tumbler binary to put in the harness image; it must be
	// statically linked (CGO_ENABLED=0 go build).
	Binary string
	// Harness is the harness image's tag; empty means LocalHarness.
	Harness string
	// Force rebuilds the images even when they are up to date.
	Force bool
}

// Built is one image BuildLocal made or found up to date.
type Built struct {
	Tag, Role string
	// Built is false when the image was up to date and left alone.
	Built bool
}

// BuildLocal makes, without a registry, the images a Compose
// deployment of tumbler runs: Tag(o.Server) (Build: the
// data nodes and Sentinels) and the harness image, that image plus the
// tumbler binary as /usr/local/bin/tumbler and its entrypoint (the
// harness), and /toxiproxy, which serves the links' toxiproxy with the
// official toxiproxy image's flags (ServeToxiproxy). An image
// that is present and up to date (the same build key; the same binary on
// the same base) is kept unless o.Force.
func BuildLocal(ctx context.Context, o Local) ([]Built, error) {
	if o.Harness == "" {
		o.Harness = LocalHarness
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("harness image: %w", err)
	}
	if err := checkStatic(o.Binary, bin); err != nil {
		return nil, fmt.Errorf("harness image: %w", err)
	}
	cli, err := Docker(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()

	base := Tag(o.Server)
	var out []Built
	_, had, err := Labels(ctx, cli, base)
	if err != nil {
		return nil, err
	}
	if had && o.Force {
		if err := removeImage(ctx, cli, base); err != nil {
			return nil, err
		}
	}
	if _, err := Build(ctx, o.Server); err != nil {
		return nil, err
	}
	out = append(out, Built{Tag: base, Role: o.Server.Name() + " (data nodes and Sentinels)", Built: !had || o.Force})

	built, err := buildHarnessImageOn(ctx, cli, base, o.Harness, bin, o.Force)
	if err != nil {
		return nil, err
	}
	return append(out, Built{Tag: o.Harness, Role: "harness (tumbler and toxiproxy)", Built: built}), nil
}

// buildHarnessImageOn makes tag from the local image base plus bin, unless
// an image of that binary on that base is there already and not force. A
// rebuild removes the image it replaces, unless something still uses it.
func buildHarnessImageOn(ctx context.Context, cli *testcontainers.DockerClient, base, tag string, bin []byte, force bool) (built bool, err error) {
	baseInfo, err := cli.ImageInspect(ctx, base)
	if err != nil {
		return false, fmt.Errorf("inspect image %s: %w", base, err)
	}
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	labels, found, err := Labels(ctx, cli, tag)
	if err != nil {
		return false, err
	}
	if found && !force && labels[harnessBinaryLabel] == digest && labels[harnessBaseLabel] == baseInfo.ID {
		return false, nil
	}
	var old string
	if found {
		if info, err := cli.ImageInspect(ctx, tag); err == nil {
			old = info.ID
		}
	}
	if err := buildHarnessOn(ctx, cli, base, tag, bin, map[string]string{
		harnessBinaryLabel: digest, harnessBaseLabel: baseInfo.ID,
	}); err != nil {
		return false, fmt.Errorf("build %s: %w", tag, err)
	}
	if info, err := cli.ImageInspect(ctx, tag); old != "" && err == nil && info.ID != old {
		_, _ = cli.ImageRemove(ctx, old, client.ImageRemoveOptions{PruneChildren: true}) // in use: kept
	}
	return true, nil
}

func removeImage(ctx context.Context, cli *testcontainers.DockerClient, tag string) error {
	if _, err := cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
		return fmt.Errorf("remove image %s: %w", tag, err)
	}
	return nil
}

// toxiproxyShim is /toxiproxy in the harness image, where the official
// toxiproxy image has its server: the same --host, --port and --config
// flags, so a Compose file runs either image with one command line.
const toxiproxyShim = "#!/bin/sh\nexec " + harnessBinaryPath + " image toxiproxy \"$@\"\n"

// buildHarnessOn builds tag from the local image base and bin with the
// classic builder, which takes base from this machine (no pull).
func buildHarnessOn(ctx context.Context, cli *testcontainers.DockerClient, base, tag string, bin []byte, labels map[string]string) error {
	dockerfile := strings.Join([]string{
		"FROM " + base,
		"COPY tumbler " + harnessBinaryPath,
		"COPY toxiproxy /toxiproxy",
		`ENTRYPOINT ["` + harnessBinaryPath + `"]`,
	}, "\n") + "\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{{"Dockerfile", 0o644, []byte(dockerfile)}, {"tumbler", 0o755, bin}, {"toxiproxy", 0o755, []byte(toxiproxyShim)}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: now}); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags: []string{tag}, Labels: labels, Remove: true, ForceRemove: true, NoCache: true,
	})
	if err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	defer res.Body.Close()
	// As with import, failures come inside the JSON stream.
	var tail []string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		if msg.Error != "" {
			return fmt.Errorf("docker build: %s (%s)", msg.Error, strings.Join(tail, " "))
		}
		if s := strings.TrimSpace(msg.Stream); s != "" {
			tail = append(tail, s)
			if len(tail) > 5 {
				tail = tail[1:]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	if _, found, err := Labels(ctx, cli, tag); err != nil || !found {
		return errors.Join(err, fmt.Errorf("docker build left no image %s (%s)", tag, strings.Join(tail, " ")))
	}
	return nil
}

// ServeToxiproxy runs a toxiproxy server, the same code the cluster embeds,
// with its HTTP API on addr and the proxies of configFile (toxiproxy's
// JSON list of {name, listen, upstream, enabled}; none if empty), until
// ctx ends or SIGINT/SIGTERM. It is what the harness image runs as the
// links' toxiproxy of a Compose deployment, so no toxiproxy image is
// needed. It logs errors only: every connection a fault cuts would be a
// warning.
func ServeToxiproxy(ctx context.Context, addr, configFile string, logTo io.Writer) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("toxiproxy: listen address %q is not host:port", addr)
	}
	logger := zerolog.New(logTo).Level(zerolog.ErrorLevel).With().Timestamp().Logger()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), logger)
	if configFile != "" {
		f, err := os.Open(configFile)
		if err != nil {
			return fmt.Errorf("toxiproxy: %w", err)
		}
		_, err = srv.Collection.PopulateJson(srv, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("toxiproxy config %s: %w", configFile, err)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Listen(addr) }()
	select {
	case err := <-errc:
		return fmt.Errorf("toxiproxy: %w", err)
	case <-ctx.Done():
		return srv.Shutdown()
	}
}
