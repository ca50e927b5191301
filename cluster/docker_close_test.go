package cluster

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/tumbler-dev/tumbler/cluster/image"
)

// TestRemoveNetworkSweepsALateContainer: a container of the run that
// joined the network after the containers were swept (so its endpoint
// keeps the network busy) is swept too, and the network then goes, where
// removal used to give up after 10 s with "has active endpoints".
func TestRemoveNetworkSweepsALateContainer(t *testing.T) {
	t.Parallel()
	img := dockerImage(t)
	_, prov := startDocker(t, img, Spec{Topology: topo(t, "independent:1"), Clients: 1})
	ctx := testCtx(t, time.Minute)
	cli, err := image.Docker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	filter := make(client.Filters).Add("label", DockerRunLabel+"="+prov.Run())
	// The run's containers are swept first, as Close does ...
	for _, err := range removeContainers(ctx, cli, prov.Run(), filter) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// ... and then one more joins the network.
	out, err := exec.Command("docker", "run", "-d", "--network", prov.Network(),
		"--label", DockerRunLabel+"="+prov.Run(), img, "sleep", "infinity").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run a late container: %v: %s", err, out)
	}
	late := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", late).Run() })

	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil || len(nets.Items) != 1 {
		t.Fatalf("the run's networks: %v (%d)", err, len(nets.Items))
	}
	if err := removeNetwork(ctx, cli, prov.Run(), nets.Items[0].ID, filter); err != nil {
		t.Fatalf("removeNetwork with a late container on it: %v", err)
	}
	if n := runLeftovers(t, prov.Run()); n != 0 {
		t.Errorf("%d containers/networks of the run left after removeNetwork", n)
	}
}
