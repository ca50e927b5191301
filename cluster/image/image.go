// Package image builds tumbler's container images on this machine, without
// a registry: the server image the docker provider runs (Tag, Build: a
// debootstrap'd Debian bookworm with the server and the clock shim) and,
// for a Compose deployment, the harness image (BuildLocal: that image plus
// the tumbler binary, which also serves the links' toxiproxy,
// ServeToxiproxy). The docker provider (package cluster) and `tumbler
// image build` use it.
package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"golang.org/x/sys/unix"

	"github.com/tumbler-dev/tumbler/internal/clockshim"
	"github.com/tumbler-dev/tumbler/internal/statedir"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// OfficialRedis is the image to use where the tumbler image cannot be
// built (no root, no debootstrap) but a registry can be reached. It has no
// clock shim, so clock faults are refused on it.
const OfficialRedis = "redis:7"

// ClockShimLabel on an image names the clock shim library inside it.
const ClockShimLabel = "tumbler.clockshim"

// Server is the software an image runs: its name ("redis", "valkey") and
// its programs (redis-server, redis-sentinel). cluster.Server is one.
type Server interface {
	Name() string
	Binary(sentinel bool) string
}

const (
	imageShimPath = "/usr/local/lib/tumbler/clockshim.so"
	// DefaultDebianMirror is where debootstrap fetches packages unless
	// TUMBLER_DEBIAN_MIRROR names another mirror.
	DefaultDebianMirror = "http://deb.debian.org/debian"
)

// imageRecipe is how tumbler's image of server is built: the debootstrap
// suites and packages. It is part of the image's key: change it whenever
// the build below changes, so machines build the new image.
//
// Redis is in bookworm, so debootstrap includes it. Valkey 8.0 is in
// bookworm-backports only, which debootstrap's --extra-suites cannot
// install from (its second stage finds no archive to install), so the
// root is bootstrapped bare and Valkey installed in it afterwards by apt
// from the backports suite of the same mirror.
func imageRecipe(server Server) (backports bool, packages []string, recipe string) {
	packages = []string{server.Binary(false), server.Binary(true), server.Name() + "-tools"}
	backports = server.Name() == "valkey"
	recipe = "debootstrap --variant=minbase bookworm +" + strings.Join(packages, ",") + "; shim; v1"
	if backports {
		recipe = "debootstrap --variant=minbase bookworm; apt-get -t bookworm-backports " + strings.Join(packages, ",") + "; shim; v1"
	}
	return backports, packages, recipe
}

// Env names the environment variable that overrides the image of
// server: TUMBLER_REDIS_IMAGE or TUMBLER_VALKEY_IMAGE.
func Env(server Server) string {
	return "TUMBLER_" + strings.ToUpper(server.Name()) + "_IMAGE"
}

// Tag is the tag of tumbler's image of server for this version of
// the build and of the clock shim: tumbler/redis:<key>,
// tumbler/valkey:<key>. Build makes it; a machine builds each
// key once.
func Tag(server Server) string {
	_, _, recipe := imageRecipe(server)
	h := sha256.New()
	h.Write([]byte(recipe))
	h.Write(clockshim.Source())
	return "tumbler/" + server.Name() + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// Docker is the Engine API client testcontainers-go would use: the
// same DOCKER_HOST, context and ~/.testcontainers.properties resolution,
// with API version negotiation (the engines here speak 1.41).
func Docker(ctx context.Context) (*testcontainers.DockerClient, error) {
	// Ryuk, testcontainers' reaper, is an image that cannot be pulled
	// without a registry; tumbler removes its containers itself.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("docker: %w (install the Debian package docker.io and start the daemon, or set DOCKER_HOST)", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		return nil, fmt.Errorf("docker daemon not reachable: %w (install the Debian package docker.io and start the daemon, or set DOCKER_HOST)", err)
	}
	return cli, nil
}

// Labels returns the labels of a local image; found is false if the
// image is not on this machine.
func Labels(ctx context.Context, cli *testcontainers.DockerClient, ref string) (labels map[string]string, found bool, err error) {
	img, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	if img.Config == nil {
		return map[string]string{}, true, nil
	}
	return img.Config.Labels, true, nil
}

var serverBuild sync.Mutex

// Build makes Tag(server) unless it is on this machine
// already, and returns its tag: a debootstrap --variant=minbase bookworm
// root with redis-server, redis-sentinel, redis-tools (Valkey: valkey-server,
// valkey-sentinel and valkey-tools, from bookworm-backports) and the clock
// shim (compiled here with cc), without docs, man pages and apt lists,
// imported with docker import. It needs root, debootstrap and a reachable
// Debian mirror (TUMBLER_DEBIAN_MIRROR, else DefaultDebianMirror); it takes
// about 40 s. Builders in other processes wait for each other (a lock
// under statedir.Dir()), so a machine builds each image once.
func Build(ctx context.Context, server Server) (string, error) {
	tag := Tag(server)
	cli, err := Docker(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	if _, found, err := Labels(ctx, cli, tag); err != nil || found {
		return tag, err
	}
	serverBuild.Lock()
	defer serverBuild.Unlock()
	unlock, err := lockFile(ctx, filepath.Join(statedir.Dir(), server.Name()+"-image.lock"))
	if err != nil {
		return "", fmt.Errorf("build %s: %w", tag, err)
	}
	defer unlock()
	if _, found, err := Labels(ctx, cli, tag); err != nil || found {
		return tag, err // built by someone else while we waited
	}
	if err := build(ctx, cli, server, tag); err != nil {
		return "", fmt.Errorf("build %s: %w", tag, err)
	}
	return tag, nil
}

func build(ctx context.Context, cli *testcontainers.DockerClient, server Server, tag string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("debootstrap needs root; run once as root to build the image, or set %s to an image with %s in it (without clock faults)", Env(server), server.Binary(false))
	}
	deboot, err := exec.LookPath("debootstrap")
	if err != nil {
		return errors.New("debootstrap not found on PATH: install the Debian package debootstrap (apt-get install debootstrap)")
	}
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		return errors.New("tar not found on PATH: install the Debian package tar")
	}
	shim, err := clockshim.Build()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "tumbler-rootfs-")
	if err != nil {
		return err
	}
	root := filepath.Join(work, "root")
	defer func() {
		unmountUnder(root) // an interrupted debootstrap leaves /proc and /sys mounted
		_ = os.RemoveAll(work)
	}()

	mirror := os.Getenv("TUMBLER_DEBIAN_MIRROR")
	if mirror == "" {
		mirror = DefaultDebianMirror
	}
	backports, packages, _ := imageRecipe(server)
	args := []string{"--variant=minbase"}
	if !backports {
		args = append(args, "--include="+strings.Join(packages, ","))
	}
	cmd := exec.CommandContext(ctx, deboot, append(args, "bookworm", root, mirror)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		detail := tailString(string(out), 1500)
		if b, rerr := os.ReadFile(filepath.Join(root, "debootstrap", "debootstrap.log")); rerr == nil {
			detail += "\ndebootstrap.log: " + tailString(string(b), 1500)
		}
		return fmt.Errorf("debootstrap bookworm from %s: %v: %s", mirror, err, detail)
	}
	if backports {
		if err := installBackports(ctx, root, mirror, packages); err != nil {
			return err
		}
	}
	for _, bin := range []string{"usr/bin/" + server.Binary(false), "usr/bin/" + server.Binary(true), "usr/bin/" + server.Name() + "-cli"} {
		if _, err := os.Stat(filepath.Join(root, bin)); err != nil {
			return fmt.Errorf("debootstrap left no /%s", bin)
		}
	}
	// About 130 MB the image never uses.
	for _, pattern := range []string{"usr/share/doc/*", "usr/share/man/*", "usr/share/info/*", "usr/share/locale/*",
		"var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb", "var/log/*.log", "debootstrap"} {
		matches, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, m := range matches {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
	}
	if err := copyFile(shim, filepath.Join(root, imageShimPath), 0o755); err != nil {
		return fmt.Errorf("copy clock shim: %w", err)
	}

	tarCmd := exec.CommandContext(ctx, tarBin, "--numeric-owner", "--exclude=./dev/*", "--exclude=./proc/*",
		"--exclude=./sys/*", "-C", root, "-cf", "-", ".")
	tarCmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var tarErr bytes.Buffer
	tarCmd.Stderr = &tarErr
	stream, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("tar: %w", err)
	}
	importErr := importImage(ctx, cli, stream, tag, []string{
		// No ENTRYPOINT, so the provider's command runs as given, as
		// with the official image's pass-through entrypoint.
		`CMD ["` + server.Binary(false) + `", "--protected-mode", "no"]`,
		"LABEL " + ClockShimLabel + "=" + imageShimPath,
		"LABEL org.opencontainers.image.description=\"tumbler: Debian bookworm " + strings.Join(packages, ", ") + " and the clock shim\"",
	})
	_, _ = io.Copy(io.Discard, stream)
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("tar the root: %v: %s", err, tailString(tarErr.String(), 1000))
	}
	return importErr
}

// installBackports installs packages from bookworm-backports into the
// bootstrapped root with apt in a chroot: the suite from the same mirror,
// the host's resolver, no service started (policy-rc.d), /proc mounted for
// the maintainer scripts (unmountUnder takes it down).
func installBackports(ctx context.Context, root, mirror string, packages []string) error {
	files := map[string]string{
		"etc/apt/sources.list.d/bookworm-backports.list": "deb " + mirror + " bookworm-backports main\n",
		"usr/sbin/policy-rc.d":                           "#!/bin/sh\nexit 101\n",
	}
	if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		files["etc/resolv.conf"] = string(b)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o755); err != nil {
			return fmt.Errorf("prepare the root for bookworm-backports: %w", err)
		}
	}
	if err := unix.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
		return fmt.Errorf("mount /proc in the root: %w", err)
	}
	for _, argv := range [][]string{
		{"apt-get", "update", "-qq"},
		append([]string{"apt-get", "install", "-y", "-qq", "--no-install-recommends", "-t", "bookworm-backports"}, packages...),
	} {
		cmd := exec.CommandContext(ctx, "chroot", append([]string{root}, argv...)...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LANG=C"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("chroot %s: %v: %s", strings.Join(argv, " "), err, tailString(string(out), 1500))
		}
	}
	for _, name := range []string{"usr/sbin/policy-rc.d", "etc/apt/sources.list.d/bookworm-backports.list"} {
		_ = os.Remove(filepath.Join(root, name))
	}
	return unix.Unmount(filepath.Join(root, "proc"), unix.MNT_DETACH)
}

// importImage is docker import: a root file system as a tar stream, plus
// Dockerfile instructions (CMD, ENTRYPOINT, LABEL, ENV…), tagged tag.
func importImage(ctx context.Context, cli *testcontainers.DockerClient, rootfs io.Reader, tag string, changes []string) error {
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: rootfs, SourceName: "-"}, tag, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("docker import %s: %w", tag, err)
	}
	defer res.Close()
	// The daemon reports failures inside the JSON stream, with HTTP 200.
	sc := bufio.NewScanner(res)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		var msg struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Error != "" {
			return fmt.Errorf("docker import %s: %s", tag, msg.Error)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("docker import %s: %w", tag, err)
	}
	return nil
}

// checkStatic refuses what cannot run in a scratch image.
func checkStatic(path string, b []byte) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			libs, _ := f.ImportedLibraries()
			return fmt.Errorf("%s is dynamically linked (needs %s): build it with CGO_ENABLED=0", path, strings.Join(libs, ", "))
		}
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s is not an executable (ELF type %v)", path, f.Type)
	}
	return nil
}

// lockFile takes an exclusive flock on path, waiting while ctx lets it.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			return func() { _ = f.Close() }, nil
		}
		if err := wait.For(ctx, 200*time.Millisecond); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("waiting for another build (lock %s): %w", path, err)
		}
	}
}

// unmountUnder detaches every mount point under dir, deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			points = append(points, f[1])
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		_ = unix.Unmount(points[i], unix.MNT_DETACH)
	}
}

func copyFile(from, to string, mode os.FileMode) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, mode)
}

func tailString(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
