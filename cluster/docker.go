package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/cluster/image"
	"github.com/tumbler-dev/tumbler/internal/clockshim"
)

// DockerOptions configure a DockerProvider.
type DockerOptions struct {
	// Server is the software the containers run (default Redis).
	Server Server
	// Image runs the data nodes and Sentinels. Empty means
	// image.Tag(Server), built on this machine by image.Build when
	// missing. Any image with the server's binaries (redis-server and
	// redis-sentinel, or valkey-server and valkey-sentinel) on PATH and a
	// pass-through entrypoint works (image.OfficialRedis, pulled if
	// missing), but only an image labelled image.ClockShimLabel can take
	// clock faults.
	Image string
	// Logf gets testcontainers-go's messages about each container; nil
	// drops them.
	Logf func(format string, args ...any)
}

// DockerProvider runs each data node and Sentinel in containers of a Redis
// image (DockerOptions.Image), created with testcontainers-go on a
// user-defined bridge network of its own. Each process has a sandbox
// container that holds its network namespace, and so its IP, for the whole
// run, and a Redis container that joins that namespace; Kill (docker kill,
// SIGKILL) ends only the latter, so a killed node keeps its address and
// refuses connections at once, as a killed process does. The harness
// reaches the nodes at their IPs, on Redis's default ports; they reach the
// cluster's proxies on the network's gateway (ProxyHost), an address of
// this host. Each process's directory is bind-mounted at /tumbler, so
// logs, AOF files, a Sentinel's config and the clock offset file (mapped
// shared by the clock shim inside) live on this machine.
//
// Start after Kill makes a new Redis container with the new command line;
// Pause and Resume are docker pause and unpause (the cgroup freezer). All
// containers and the network carry DockerRunLabel=Run(); Close removes
// them, and the provider's record under StateDir() lets SweepOrphans
// remove them if the harness dies first (testcontainers' reaper, Ryuk, is
// disabled: its image cannot be pulled without a registry). Linux only:
// the harness must reach container IPs directly.
type DockerProvider struct {
	cli     *testcontainers.DockerClient
	image   string
	shim    string // the clock shim's path in the image, "" if it has none
	logger  tcLogger
	run     string
	netName string
	gateway netip.Addr
	subnet  netip.Prefix
	rec     *record

	mu     sync.Mutex
	ctrs   map[string]*dctr
	closed bool
}

// dctr is one process: its Redis container, and the sandbox container
// that holds its network namespace (see DockerProvider).
type dctr struct {
	served
	sandbox string     // the sandbox container, "" until the first start
	ip      netip.Addr // the sandbox's, on the provider's network
	port    int
	id      string // the current Redis container, "" if none
}

type tcLogger func(format string, args ...any)

func (l tcLogger) Printf(format string, args ...any) {
	if l != nil {
		l(format, args...)
	}
}

// Ports inside the containers: every process has an IP of its own.
const (
	dockerServerPort   = 6379
	dockerSentinelPort = 26379
	dockerMount        = "/tumbler"
	// dockerSecretMount is where a process's private directory
	// (ProcSpec.SecretDir) is mounted.
	dockerSecretMount = "/tumbler-secret"
)

// DockerRunLabel is on every container and network of a DockerProvider,
// with DockerProvider.Run as its value.
const DockerRunLabel = "tumbler.run"

// NewDockerProvider connects to the Docker daemon, makes sure the image is
// there (building image.Tag(o.Server) if o.Image is empty) and creates the
// provider's network.
func NewDockerProvider(ctx context.Context, o DockerOptions) (*DockerProvider, error) {
	img := o.Image
	if img == "" {
		if err := o.Server.Validate(); err != nil {
			return nil, err
		}
		var err error
		if img, err = image.Build(ctx, o.Server); err != nil {
			return nil, err
		}
	}
	cli, err := image.Docker(ctx)
	if err != nil {
		return nil, err
	}
	d := &DockerProvider{cli: cli, image: img, logger: tcLogger(o.Logf), ctrs: map[string]*dctr{}}
	labels, found, err := image.Labels(ctx, cli, img)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	if found {
		d.shim = labels[image.ClockShimLabel]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	d.run = hex.EncodeToString(b[:])
	d.netName = "tumbler-" + d.run
	if d.rec, err = newRecord(); err != nil {
		_ = cli.Close()
		return nil, err
	}
	// Recorded before anything exists, so a crash from here on is swept.
	if err := d.rec.setDockerRun(d.run); err != nil {
		d.rec.delete()
		_ = cli.Close()
		return nil, err
	}
	if err := d.createNetwork(ctx); err != nil {
		return nil, errors.Join(err, d.Close())
	}
	return d, nil
}

func (d *DockerProvider) labels() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{DockerRunLabel: d.run, "tumbler.owner": host + "/" + strconv.Itoa(os.Getpid())}
}

// createNetwork makes the provider's user-defined bridge network and
// learns its subnet and gateway.
func (d *DockerProvider) createNetwork(ctx context.Context) error {
	res, err := d.cli.NetworkCreate(ctx, d.netName, client.NetworkCreateOptions{Driver: "bridge", Labels: d.labels()})
	if err != nil {
		return fmt.Errorf("docker network %s: %w", d.netName, err)
	}
	in, err := d.cli.NetworkInspect(ctx, res.ID, client.NetworkInspectOptions{})
	if err != nil {
		return fmt.Errorf("docker network %s: %w", d.netName, err)
	}
	for _, c := range in.Network.IPAM.Config {
		if c.Subnet.Addr().Is4() {
			d.subnet, d.gateway = c.Subnet.Masked(), c.Gateway
			if !d.gateway.IsValid() {
				d.gateway = d.subnet.Addr().Next()
			}
			return nil
		}
	}
	return fmt.Errorf("docker network %s: the daemon gave it no IPv4 subnet", d.netName)
}

// Prepare implements Provider: the image brings the servers and the clock
// shim, and NewDockerProvider has made sure it is here.
func (d *DockerProvider) Prepare(Spec) error { return nil }

func (d *DockerProvider) sweepRecord() *record { return d.rec }

// Name is "docker".
func (d *DockerProvider) Name() string { return dockerKind.Name }

// ProxyHost is the gateway of the provider's network: an address of this
// host that every container reaches.
func (d *DockerProvider) ProxyHost() string { return d.gateway.String() }

// Run is the value of DockerRunLabel on the provider's containers and
// network, e.g. for `docker ps -a --filter label=tumbler.run=<run>`.
func (d *DockerProvider) Run() string { return d.run }

// Network is the name of the provider's Docker network.
func (d *DockerProvider) Network() string { return d.netName }

// Image is the image the containers run.
func (d *DockerProvider) Image() string { return d.image }

func (d *DockerProvider) get(name string) (*dctr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.ctrs[name]
	if c == nil {
		return nil, fmt.Errorf("no container %q", name)
	}
	return c, nil
}

// Start implements Provider.
func (d *DockerProvider) Start(ctx context.Context, s ProcSpec) (string, error) {
	if s.Name == "" || s.Dir == "" {
		return "", fmt.Errorf("start: process needs a name and a directory")
	}
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	s.Dir = dir
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return "", fmt.Errorf("start %s: provider closed", s.Name)
	}
	c := d.ctrs[s.Name]
	if c == nil {
		port := dockerServerPort
		if s.Sentinel {
			port = dockerSentinelPort
		}
		c = &dctr{served: served{name: s.Name, dir: dir}, port: port}
		d.ctrs[s.Name] = c
	}
	d.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	d.mu.Lock()
	closed := d.closed // Close may have run while we waited for c.mu
	d.mu.Unlock()
	if closed {
		return "", fmt.Errorf("start %s: provider closed", s.Name)
	}
	if d.running(ctx, c) {
		return "", fmt.Errorf("start %s: already running", s.Name)
	}
	if c.sandbox == "" {
		if err := d.createSandbox(ctx, c); err != nil {
			return "", fmt.Errorf("start %s: %w", s.Name, err)
		}
	}
	if err := layout(s); err != nil {
		return "", err
	}
	c.log = filepath.Join(dir, s.logName())
	env := map[string]string{}
	if s.Clock && d.shim != "" {
		if c.clk == nil {
			if c.clk, err = clockshim.Open(filepath.Join(dir, "clock")); err != nil {
				return "", fmt.Errorf("start %s: %w", s.Name, err)
			}
		}
		env["LD_PRELOAD"] = d.shim
		env[clockshim.Env] = dockerMount + "/clock"
	}
	if err := d.remove(ctx, c); err != nil {
		return "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	cmd := append([]string{s.binary()}, redisArgs(s, dockerMount, dockerSecretMount, "0.0.0.0", c.port)...)
	logStart := fileSize(c.log)
	if err := d.create(ctx, c, cmd, env, s.SecretDir); err != nil {
		return "", fmt.Errorf("start %s: %w", s.Name, err)
	}
	if err := d.waitReady(ctx, c, s.Login); err != nil {
		logs := d.containerLogs(c)
		_, _ = d.cli.ContainerKill(context.Background(), c.id, client.ContainerKillOptions{Signal: "KILL"})
		return "", fmt.Errorf("start %s in container %s on %s: %w%s", s.Name, c.id[:12], c.addr(), err, s.Login.Redact(logTail(c.log, logStart, logs)))
	}
	return c.addr(), nil
}

func (c *dctr) addr() string { return net.JoinHostPort(c.ip.String(), strconv.Itoa(c.port)) }

func (c *dctr) containerName(run string) string { return "tumbler-" + run + "-" + c.name }

// create creates and starts c's container with testcontainers-go. The
// image is local, so testcontainers does not pull it (it pulls only what
// ImageInspect does not find); nothing asks it for host-port access, which
// would pull an sshd image.
func (d *DockerProvider) create(ctx context.Context, c *dctr, cmd []string, env map[string]string, secretDir string) error {
	labels := d.labels()
	labels["tumbler.node"] = c.name
	user := strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	ctr, err := testcontainers.Run(ctx, d.image,
		testcontainers.WithLogger(d.logger),
		testcontainers.WithName(c.containerName(d.run)),
		testcontainers.WithLabels(labels),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithEnv(env),
		testcontainers.WithConfigModifier(func(cfg *container.Config) {
			// Files in the bind mount belong to the harness's user, and
			// an official image's entrypoint skips its chown and gosu.
			cfg.User = user
		}),
		testcontainers.WithHostConfigModifier(func(h *container.HostConfig) {
			h.Binds = []string{c.dir + ":" + dockerMount}
			if secretDir != "" {
				h.Binds = append(h.Binds, secretDir+":"+dockerSecretMount)
			}
			h.NetworkMode = container.NetworkMode("container:" + c.sandbox)
		}),
	)
	if ctr != nil {
		c.id = ctr.GetContainerID()
	}
	return d.pullHint(err)
}

// createSandbox starts the container that holds c's network namespace
// for the whole run: it sleeps, on the provider's network, and the Redis
// containers of c join its namespace one after the other. So a killed
// node keeps its address, and the kernel refuses connections to its
// closed port at once, as for a killed process. Without it a killed
// container's address would vanish, connects would hang until the
// kernel's SYN retries give up (about two minutes), and toxiproxy, which
// dials upstreams without a timeout, would stall its proxies to the node.
func (d *DockerProvider) createSandbox(ctx context.Context, c *dctr) error {
	labels := d.labels()
	labels["tumbler.node"] = c.name
	labels["tumbler.role"] = "sandbox"
	ctr, err := testcontainers.Run(ctx, d.image,
		testcontainers.WithLogger(d.logger),
		testcontainers.WithName(c.containerName(d.run)+"-net"),
		testcontainers.WithLabels(labels),
		testcontainers.WithCmd("sleep", "infinity"),
		testcontainers.CustomizeRequestOption(func(req *testcontainers.GenericContainerRequest) error {
			req.Networks = []string{d.netName}
			return nil
		}),
		testcontainers.WithConfigModifier(func(cfg *container.Config) {
			cfg.Hostname = c.name
			cfg.User = strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
		}),
		testcontainers.WithHostConfigModifier(func(h *container.HostConfig) {
			// testcontainers publishes an image's EXPOSEd ports (the
			// official image's 6379) on every host interface; an
			// unprotected Redis belongs on loopback at most.
			h.PortBindings = network.PortMap{}
			for _, p := range []int{dockerServerPort, dockerSentinelPort} {
				h.PortBindings[network.MustParsePort(strconv.Itoa(p)+"/tcp")] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1")}}
			}
		}),
	)
	if ctr != nil {
		c.sandbox = ctr.GetContainerID()
	}
	if err := d.pullHint(err); err != nil {
		return fmt.Errorf("sandbox container: %w", err)
	}
	in, err := d.cli.ContainerInspect(ctx, c.sandbox, client.ContainerInspectOptions{})
	if err != nil {
		return fmt.Errorf("sandbox container: %w", err)
	}
	if in.Container.NetworkSettings != nil {
		if ep := in.Container.NetworkSettings.Networks[d.netName]; ep != nil {
			c.ip = ep.IPAddress
		}
	}
	if !c.ip.IsValid() {
		return fmt.Errorf("sandbox container %s has no address on %s", c.sandbox[:12], d.netName)
	}
	return nil
}

func (d *DockerProvider) pullHint(err error) error {
	if err != nil && strings.Contains(err.Error(), "pull") {
		return fmt.Errorf("%w (image %s is not on this machine and could not be pulled; build tumbler's with image.Build (tumbler image build) or pull it beforehand)", err, d.image)
	}
	return err
}

// waitReady waits until c answers PING, or its container stops.
func (d *DockerProvider) waitReady(ctx context.Context, c *dctr, login access.Login) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan struct{})
	res := d.cli.ContainerWait(wctx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	go func() {
		select {
		case <-res.Result:
			close(exited)
		case <-res.Error:
		}
	}()
	return waitPing(ctx, c.addr(), login, exited)
}

func (d *DockerProvider) containerLogs(c *dctr) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := d.cli.ContainerLogs(ctx, c.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "40"})
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(io.LimitReader(r, 8192))
	// The stream is multiplexed with 8-byte frame headers; keep the text.
	return strings.Map(func(r rune) rune {
		if r < 32 && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, string(b))
}

func (d *DockerProvider) running(ctx context.Context, c *dctr) bool {
	if c.id == "" {
		return false
	}
	in, err := d.cli.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	return err == nil && in.Container.State != nil && in.Container.State.Running
}

// remove removes c's old container, if any.
func (d *DockerProvider) remove(ctx context.Context, c *dctr) error {
	if c.id == "" {
		return nil
	}
	_, err := d.cli.ContainerRemove(ctx, c.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove old container %s: %w", c.id[:12], err)
	}
	c.id = ""
	return nil
}

// Kill implements Provider with docker kill (SIGKILL), which also ends a
// paused container. The stopped container stays until Start or Close.
func (d *DockerProvider) Kill(name string) error {
	c, err := d.get(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if !d.running(ctx, c) {
		return nil
	}
	if _, err := d.cli.ContainerKill(ctx, c.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsConflict(err) {
		return fmt.Errorf("kill %s: %w", name, err)
	}
	res := d.cli.ContainerWait(ctx, c.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-res.Result:
		return nil
	case err := <-res.Error:
		return fmt.Errorf("kill %s: waiting for the container to stop: %w", name, err)
	}
}

// Pause implements Provider with docker pause.
func (d *DockerProvider) Pause(name string) error { return d.pause(name, true) }

// Resume implements Provider with docker unpause.
func (d *DockerProvider) Resume(name string) error { return d.pause(name, false) }

func (d *DockerProvider) pause(name string, pause bool) error {
	op := "resume"
	if pause {
		op = "pause"
	}
	c, err := d.get(name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if !d.running(ctx, c) {
		return fmt.Errorf("%s %s: not running", op, name)
	}
	if pause {
		_, err = d.cli.ContainerPause(ctx, c.id, client.ContainerPauseOptions{})
	} else {
		_, err = d.cli.ContainerUnpause(ctx, c.id, client.ContainerUnpauseOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	return nil
}

// Controls is every control, but clock offsets only with an image that has
// the clock shim (tumbler's own has).
func (d *DockerProvider) Controls() Controls {
	if d.shim == "" {
		return AllControls &^ (CanClock | CanDrift)
	}
	return AllControls
}

// SetClock implements Provider: the offset file is bind-mounted into the
// container, where the image's clock shim maps it.
func (d *DockerProvider) SetClock(name string, offset time.Duration) error {
	if d.shim == "" {
		return fmt.Errorf("%w: image %s has no clock shim (tumbler's own image has)", Unsupported("clock offset on "+name, d.Name()), d.image)
	}
	c, err := d.get(name)
	if err != nil {
		return err
	}
	return c.setClock(offset)
}

// SetClockDrift implements Provider through the same bind-mounted file.
func (d *DockerProvider) SetClockDrift(name string, dr clockshim.Drift) error {
	if d.shim == "" {
		return fmt.Errorf("%w: image %s has no clock shim (tumbler's own image has)", Unsupported("clock rate on "+name, d.Name()), d.image)
	}
	c, err := d.get(name)
	if err != nil {
		return err
	}
	return c.setDrift(dr)
}

// LogFile implements Provider: the log is in the bind-mounted directory.
func (d *DockerProvider) LogFile(name string) string {
	c, err := d.get(name)
	if err != nil {
		return ""
	}
	return c.logFile()
}

// Close implements Provider: removes every container and the network of
// the run, then the record. Idempotent.
func (d *DockerProvider) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	ctrs := slices.Collect(maps.Values(d.ctrs))
	d.mu.Unlock()
	for _, c := range ctrs {
		c.mu.Lock() // wait for a Start in progress: its container must go too
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := removeRun(ctx, d.cli, d.run)
	for _, c := range ctrs {
		if cerr := c.clk.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		c.id = ""
		c.mu.Unlock()
	}
	if err == nil {
		d.rec.delete()
	}
	_ = d.cli.Close()
	return err
}
