package image

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// redis is the Redis server as cluster.Server names it (cluster imports
// this package, so its tests cannot import cluster).
type redis struct{}

func (redis) Name() string { return "redis" }

func (redis) Binary(sentinel bool) string {
	if sentinel {
		return "redis-sentinel"
	}
	return "redis-server"
}

const (
	dockerTestsEnv = "TUMBLER_DOCKER_TESTS"
	redisImageEnv  = "TUMBLER_REDIS_IMAGE"
)

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// serverImage is tumbler's Redis image, built here once per machine
// (Build caches by tag), or the one redisImageEnv names; without Docker
// or what a build needs, the test is skipped unless dockerTestsEnv is 1.
func serverImage(t *testing.T) string {
	t.Helper()
	ctx := testCtx(t, 5*time.Minute)
	cli, err := Docker(ctx)
	if err != nil {
		if os.Getenv(dockerTestsEnv) == "1" {
			t.Fatalf("%s=1 but Docker cannot be used: %v", dockerTestsEnv, err)
		}
		t.Skipf("no Docker here (%v); set %s=1 to make this a failure", err, dockerTestsEnv)
	}
	cli.Close()
	if img := os.Getenv(redisImageEnv); img != "" {
		return img
	}
	img, err := Build(ctx, redis{})
	if err != nil {
		_, noDeboot := exec.LookPath("debootstrap")
		if os.Getenv(dockerTestsEnv) != "1" && (os.Geteuid() != 0 || noDeboot != nil) {
			t.Skipf("cannot build the Redis image here (%v)", err)
		}
		t.Fatalf("build the Redis image: %v", err)
	}
	return img
}

// staticHello builds a static program that prints its arguments and
// whether a shell and redis-server are in its image.
func staticHello(t *testing.T, ctx context.Context, greeting string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	prog := `package main

import (
	"fmt"
	"os"
)

func main() {
	_, sh := os.Stat("/bin/sh")
	_, rs := os.Stat("/usr/bin/redis-server")
	fmt.Println("` + greeting + `", os.Args[1:], "sh:", sh == nil, "redis-server:", rs == nil)
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tumbler")
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, src)
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBuildLocal: the harness image is the binary on tumbler's Redis
// image, as its entrypoint; a second build keeps it, a new binary or force
// rebuilds it, and a dynamic binary is refused.
func TestBuildLocal(t *testing.T) {
	t.Parallel()
	base := serverImage(t) // builds tumbler's Redis image once, or skips
	if base != Tag(redis{}) {
		t.Skipf("%s=%s: the harness image is built on tumbler's own image only", redisImageEnv, base)
	}
	ctx := testCtx(t, 3*time.Minute)
	cli, err := Docker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tag := "tumbler/harness-local-test:" + randHex(4)
	t.Cleanup(func() {
		_, _ = cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})

	if _, err := BuildLocal(ctx, Local{Server: redis{}, Binary: "/bin/true", Harness: tag}); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamic binary: %v, want an error naming CGO_ENABLED=0", err)
	}
	if _, err := BuildLocal(ctx, Local{Server: redis{}, Binary: filepath.Join(t.TempDir(), "none"), Harness: tag}); err == nil {
		t.Error("a missing binary was accepted")
	}

	bin := staticHello(t, ctx, "hello")
	built, err := BuildLocal(ctx, Local{Server: redis{}, Binary: bin, Harness: tag})
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != 2 || built[0].Tag != Tag(redis{}) || built[0].Built || built[1].Tag != tag || !built[1].Built {
		t.Fatalf("first build = %+v, want the Redis image kept and %s built", built, tag)
	}
	first := imageID(t, ctx, cli, tag)
	if out := runImage(t, ctx, cli, tag, "a", "b"); !strings.Contains(out, "hello [a b] sh: true redis-server: true") {
		t.Fatalf("container output %q", out)
	}

	again, err := BuildLocal(ctx, Local{Server: redis{}, Binary: bin, Harness: tag})
	if err != nil || again[1].Built || imageID(t, ctx, cli, tag) != first {
		t.Fatalf("second build = %+v, %v: the up-to-date image was rebuilt", again, err)
	}

	// A new binary rebuilds, and the replaced image goes.
	bin2 := staticHello(t, ctx, "bonjour")
	changed, err := BuildLocal(ctx, Local{Server: redis{}, Binary: bin2, Harness: tag})
	if err != nil || !changed[1].Built {
		t.Fatalf("build with a new binary = %+v, %v", changed, err)
	}
	second := imageID(t, ctx, cli, tag)
	if second == first {
		t.Fatal("a new binary left the image as it was")
	}
	if _, err := cli.ImageInspect(ctx, first); err == nil {
		t.Errorf("the replaced image %s is still there", first)
	}
	if out := runImage(t, ctx, cli, tag); !strings.Contains(out, "bonjour") {
		t.Fatalf("container output %q", out)
	}

	// Force rebuilds the harness (the Redis image's forced rebuild is the
	// same Build, not repeated here: 40 s of debootstrap).
	b2, _ := os.ReadFile(bin2)
	forced, err := buildHarnessImageOn(ctx, cli, base, tag, b2, true)
	if err != nil || !forced {
		t.Fatalf("forced build = %v, %v", forced, err)
	}
	if imageID(t, ctx, cli, tag) == second {
		t.Error("force left the image as it was")
	}
}

func imageID(t *testing.T, ctx context.Context, cli *testcontainers.DockerClient, tag string) string {
	t.Helper()
	img, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	return img.ID
}

// runImage runs image with args to its end and returns its output.
func runImage(t *testing.T, ctx context.Context, cli *testcontainers.DockerClient, image string, args ...string) string {
	t.Helper()
	ctr, err := testcontainers.Run(ctx, image, testcontainers.WithCmd(args...))
	// Removed on return: a container keeps its image from being replaced.
	defer func() {
		if ctr != nil {
			_, _ = cli.ContainerRemove(context.Background(), ctr.GetContainerID(), client.ContainerRemoveOptions{Force: true})
		}
	}()
	if err != nil {
		t.Fatal(err)
	}
	wait := cli.ContainerWait(ctx, ctr.GetContainerID(), client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case res := <-wait.Result:
		if res.StatusCode != 0 {
			t.Errorf("exit status %d", res.StatusCode)
		}
	case err := <-wait.Error:
		t.Fatal(err)
	}
	logs, err := ctr.Logs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	b, _ := io.ReadAll(io.LimitReader(logs, 4096))
	return string(b)
}

// TestServeToxiproxy: the toxiproxy the harness image serves creates the
// config's proxies, answers the client API, and stops with its context.
func TestServeToxiproxy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	api := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "toxiproxy.json")
	if err := os.WriteFile(cfg, []byte(`[{"name": "c0_n1", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:1", "enabled": true}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"name": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ServeToxiproxy(context.Background(), api, bad, os.Stderr); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("a broken config: %v, want an error naming it", err)
	}
	if err := ServeToxiproxy(context.Background(), "nowhere", "", os.Stderr); err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("a bad address: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ServeToxiproxy(ctx, api, cfg, io.Discard) }()
	tc := toxiclient.NewClient("http://" + api)
	var proxies map[string]*toxiclient.Proxy
	deadline := time.Now().Add(10 * time.Second)
	for proxies, err = tc.Proxies(); err != nil && time.Now().Before(deadline); proxies, err = tc.Proxies() {
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("toxiproxy API: %v", err)
	}
	if p := proxies["c0_n1"]; p == nil || p.Upstream != "127.0.0.1:1" || !p.Enabled {
		t.Fatalf("proxies = %+v, want c0_n1 from the config", proxies)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop with its context")
	}
	if _, err := http.Get("http://" + api + "/version"); err == nil {
		t.Error("the API still answers after the stop")
	}
}
