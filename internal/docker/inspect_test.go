package docker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/docker"
)

// The fixtures in testdata were printed by CLI 28.2.2 against Docker Engine 20.10.24 for a
// container run with most of the isolation flags abox uses (see the e2e test for the recipe).

func TestContainerInspect(t *testing.T) {
	f, c := newFake(t)
	f.On("container inspect --format {{json .}} probe-x", docker.Result{Stdout: fixture(t, "container-inspect.json")})
	ct, err := c.ContainerInspect(context.Background(), "probe-x")
	if err != nil {
		t.Fatal(err)
	}
	pids := int64(100)
	want := &docker.Container{
		ID:      "498f61492ee9f2b275aae89785bfe65cc2d1839c5ff24e1826f841b95dd960ce",
		Name:    "/probe-x",
		Created: "2026-11-29T10:38:18.316351753Z",
		Image:   "sha256:e8c0457d0e743ec90c9924bcf68ac02a198f0e5017fbe496c7d8a04bb1fc13f5",
		Args:    []string{"600"},
		State:   docker.ContainerState{Status: "running", Running: true, Pid: 12382, StartedAt: "2026-11-29T10:38:19.678166615Z"},
		Config: docker.ContainerConfig{
			Image: "abox-test-base:bookworm", User: "1000:1000", Env: []string{"FOO=bar"},
			Cmd: []string{"600"}, Entrypoint: []string{"sleep"},
			Labels: map[string]string{"abox.test": "docker-pkg", "weird": "a,b"},
		},
		HostConfig: docker.HostConfig{
			CapAdd: []string{"CAP_NET_ADMIN"}, CapDrop: []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			NetworkMode:    "probe-net",
			Runtime:        "runc",
			PortBindings:   map[string][]docker.PortBinding{"80/tcp": {{HostIP: "127.0.0.1", HostPort: "18080"}}},
			Binds:          []string{"probe-vol:/v", "/tmp/probe-bind:/b:ro"},
			Mounts:         []docker.Mount{{Type: "tmpfs", Target: "/t"}},
			ReadonlyRootfs: true,
			PidsLimit:      &pids,
			Memory:         256 << 20,
		},
		Mounts: []docker.MountPoint{
			{Type: "volume", Name: "probe-vol", Source: "/var/lib/docker/volumes/probe-vol/_data", Destination: "/v", Mode: "z", RW: true},
			{Type: "bind", Source: "/tmp/probe-bind", Destination: "/b", Mode: "ro"},
			{Type: "tmpfs", Destination: "/t", RW: true},
		},
	}
	if diff := cmp.Diff(want, ct, cmp.FilterPath(func(p cmp.Path) bool {
		return p.String() == "NetworkSettings"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("ContainerInspect (-want +got):\n%s", diff)
	}
	net := ct.NetworkSettings.Networks["probe-net"]
	if net.IPAddress != "172.21.0.2" || !cmp.Equal(net.Aliases, []string{"px", "498f61492ee9"}) {
		t.Errorf("Networks[probe-net] = %+v", net)
	}
	if got := ct.NetworkSettings.Ports["80/tcp"]; len(got) != 1 || got[0].HostPort != "18080" {
		t.Errorf("Ports[80/tcp] = %+v, want one binding to 18080", got)
	}
}

func TestContainerInspectNotFound(t *testing.T) {
	f, c := newFake(t)
	f.On("container inspect", docker.Result{Stdout: []byte("[]\n"),
		Stderr: []byte("Error response from daemon: No such container: x\n"), ExitCode: 1})
	if _, err := c.ContainerInspect(context.Background(), "x"); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("ContainerInspect = %v, want ErrNotFound", err)
	}
}

func TestContainersByLabel(t *testing.T) {
	f, c := newFake(t)
	f.On("ps --no-trunc --format {{json .}} --all --filter label=abox.run --filter label=abox.test=docker-pkg",
		docker.Result{Stdout: fixture(t, "ps.jsonl")})
	got, err := c.ContainersByLabel(context.Background(), map[string]string{"abox.test": "docker-pkg", "abox.run": ""}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []docker.ContainerSummary{
		{ID: "a91784a1dc372b44595367d73a4da841ce8b3cbac69e9570d2ae5c180d305dc9", Names: []string{"probe-y"},
			Image: "abox-test-base:bookworm", Labels: map[string]string{"abox.test": "docker-pkg"},
			State: "created", Status: "Created"},
		{ID: "498f61492ee9f2b275aae89785bfe65cc2d1839c5ff24e1826f841b95dd960ce", Names: []string{"probe-x"},
			Image: "abox-test-base:bookworm", Labels: map[string]string{"abox.test": "docker-pkg", "weird": "a,b"},
			State: "running", Status: "Up Less than a second"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ContainersByLabel (-want +got):\n%s", diff)
	}
}

func TestNetworkInspect(t *testing.T) {
	f, c := newFake(t)
	f.On("network inspect --format {{json .}} probe-net", docker.Result{Stdout: fixture(t, "network-inspect.json")})
	n, err := c.NetworkInspect(context.Background(), "probe-net")
	if err != nil {
		t.Fatal(err)
	}
	if n.ID != "e62a440c4f463f5a999b72a1cb4a0ca31cde78f5549a64ed68aaaaa03434fe75" || n.Driver != "bridge" ||
		n.Internal || n.EnableIPv6 || n.Labels["abox.test"] != "docker-pkg" {
		t.Errorf("NetworkInspect = %+v", n)
	}
	if len(n.IPAM.Config) != 1 || n.IPAM.Config[0].Subnet != "172.21.0.0/16" {
		t.Errorf("IPAM = %+v", n.IPAM)
	}
	ep := n.Containers["498f61492ee9f2b275aae89785bfe65cc2d1839c5ff24e1826f841b95dd960ce"]
	if ep.Name != "probe-x" || ep.IPv4Address != "172.21.0.2/16" {
		t.Errorf("endpoint = %+v", ep)
	}
}

func TestVolumeInspect(t *testing.T) {
	f, c := newFake(t)
	f.On("volume inspect --format {{json .}} probe-vol", docker.Result{Stdout: fixture(t, "volume-inspect.json")})
	v, err := c.VolumeInspect(context.Background(), "probe-vol")
	if err != nil {
		t.Fatal(err)
	}
	want := &docker.Volume{Name: "probe-vol", Driver: "local", Mountpoint: "/var/lib/docker/volumes/probe-vol/_data",
		Labels: map[string]string{"abox.test": "docker-pkg"}, CreatedAt: "2026-11-29T10:38:18Z"}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("VolumeInspect (-want +got):\n%s", diff)
	}
}

func TestImageInspect(t *testing.T) {
	f, c := newFake(t)
	f.On("image inspect --format {{json .}} abox-test-base:bookworm", docker.Result{Stdout: fixture(t, "image-inspect.json")})
	f.On("image inspect --format {{json .}} labelled", docker.Result{Stdout: []byte(
		`{"Id":"sha256:ab","RepoTags":["labelled:1"],"RepoDigests":["labelled@sha256:cd"],` +
			`"Created":"2026-01-02T03:04:05Z","Config":{"Labels":{"abox.role":"agent"}}}`)})
	img, err := c.ImageInspect(context.Background(), "abox-test-base:bookworm")
	if err != nil {
		t.Fatal(err)
	}
	want := &docker.Image{
		ID:          "sha256:e8c0457d0e743ec90c9924bcf68ac02a198f0e5017fbe496c7d8a04bb1fc13f5",
		RepoTags:    []string{"abox-test-base:bookworm"},
		RepoDigests: []string{},
		Created:     time.Date(2026, 11, 29, 10, 25, 17, 880685231, time.UTC),
	}
	if diff := cmp.Diff(want, img); diff != "" {
		t.Errorf("ImageInspect (-want +got):\n%s", diff)
	}
	img, err = c.ImageInspect(context.Background(), "labelled")
	if err != nil || img.Labels["abox.role"] != "agent" || img.RepoDigests[0] != "labelled@sha256:cd" {
		t.Errorf("ImageInspect(labelled) = %+v, %v", img, err)
	}
}

func TestImageExists(t *testing.T) {
	f, c := newFake(t)
	f.On("image inspect --format {{json .}} yes", docker.Result{Stdout: []byte(`{"Id":"sha256:ab"}`)})
	f.On("image inspect --format {{json .}} no", docker.Result{
		Stderr: []byte("Error response from daemon: no such image: no: No such image: no\n"), ExitCode: 1})
	f.On("image inspect --format {{json .}} down", docker.Result{
		Stderr: []byte("Cannot connect to the Docker daemon at unix:///x. Is the docker daemon running?\n"), ExitCode: 1})
	for _, tc := range []struct {
		ref     string
		want    bool
		wantErr bool
	}{{"yes", true, false}, {"no", false, false}, {"down", false, true}} {
		got, err := c.ImageExists(context.Background(), tc.ref)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ImageExists(%q) = %v, %v, want %v, error %v", tc.ref, got, err, tc.want, tc.wantErr)
		}
	}
}
