package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/tumbler-dev/tumbler/cluster/image"
	"github.com/tumbler-dev/tumbler/internal/wait"
)

// Pid is the host pid of the process in a running container, 0 if none.
func (d *DockerProvider) Pid(name string) int {
	in, ok := d.inspect(name)
	if !ok || !in.Running {
		return 0
	}
	return in.Pid
}

// Paused reports whether the container is paused.
func (d *DockerProvider) Paused(name string) bool {
	in, ok := d.inspect(name)
	return ok && in.Paused
}

func (d *DockerProvider) inspect(name string) (*container.State, bool) {
	c, err := d.get(name)
	if err != nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id == "" {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in, err := d.cli.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil || in.Container.State == nil {
		return nil, false
	}
	return in.Container.State, true
}

// DockerAvailable reports why the Docker daemon cannot be used, or nil.
func DockerAvailable(ctx context.Context) error {
	cli, err := image.Docker(ctx)
	if err != nil {
		return err
	}
	return cli.Close()
}

// removeDockerRun removes the containers and network labelled with run.
func removeDockerRun(ctx context.Context, run string) error {
	cli, err := image.Docker(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	return removeRun(ctx, cli, run)
}

func removeRun(ctx context.Context, cli *testcontainers.DockerClient, run string) error {
	filter := make(client.Filters).Add("label", DockerRunLabel+"="+run)
	errs := removeContainers(ctx, cli, run, filter)
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		errs = append(errs, fmt.Errorf("docker: list networks of run %s: %w", run, err))
	}
	for _, n := range nets.Items {
		if err := removeNetwork(ctx, cli, run, n.ID, filter); err != nil {
			errs = append(errs, fmt.Errorf("docker: remove network %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// removeContainers force-removes every container of the run, stopped
// ones too, at once.
func removeContainers(ctx context.Context, cli *testcontainers.DockerClient, run string, filter client.Filters) []error {
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return []error{fmt.Errorf("docker: list containers of run %s: %w", run, err)}
	}
	errs := make([]error, len(list.Items))
	var wg sync.WaitGroup
	for i, ctr := range list.Items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cli.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && strings.Contains(err.Error(), "already in progress") {
				// Another sweep (a concurrent Start's) is removing it:
				// done once it is gone.
				err = waitRemoved(ctx, cli, ctr.ID)
			}
			if err != nil && !cerrdefs.IsNotFound(err) {
				errs[i] = fmt.Errorf("docker: remove container %s: %w", ctr.ID[:12], err)
			}
		}()
	}
	wg.Wait()
	return errs
}

// removeNetwork removes the run's network once no endpoint is left on it.
// A container another sweep is still removing keeps its endpoint for a
// moment, so a refusal for active endpoints is retried. When it lasts
// (seen in CI on a loaded daemon, past 10 s of retries), the run's
// containers are swept again, in case one joined after the first sweep,
// and every endpoint the network still lists is disconnected by force, in
// case it outlived its container.
func removeNetwork(ctx context.Context, cli *testcontainers.DockerClient, run, id string, filter client.Filters) error {
	_, err := cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
	for try := 1; err != nil && strings.Contains(err.Error(), "active endpoints") && try <= 50; try++ {
		if werr := wait.For(ctx, 200*time.Millisecond); werr != nil {
			break
		}
		if try%10 == 0 {
			removeContainers(ctx, cli, run, filter)
			disconnectAll(ctx, cli, id)
		}
		_, err = cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return err
	}
	return nil
}

// disconnectAll force-disconnects every endpoint the network still lists.
func disconnectAll(ctx context.Context, cli *testcontainers.DockerClient, id string) {
	in, err := cli.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
	if err != nil {
		return
	}
	for ctr := range in.Network.Containers {
		_, _ = cli.NetworkDisconnect(ctx, id, client.NetworkDisconnectOptions{Container: ctr, Force: true})
	}
}

// waitRemoved waits, up to 20 s, until the container is gone.
func waitRemoved(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still there 20 s after another removal began")
		}
		if err := wait.For(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}
