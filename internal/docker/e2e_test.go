//go:build e2e

package docker_test

// These tests drive the real docker CLI against a real daemon, in CI's end-to-end suite:
//
//	go test -tags e2e -run E2E -v ./internal/docker/
//
// They use only the local base image e2e/setup.sh builds ($ABOX_E2E_BASE, default
// abox-e2e-base:bookworm, as for the e2e harness) and never pull; without a daemon or that
// image they fail, as the e2e suite does, rather than skip. Everything they create carries the
// labels abox.test=docker-pkg and abox.test.run=<run id>, and is removed at the end. They
// are kept beside the e2e suite because they pin the client's own contract against the real
// CLI (ErrNotFound per object kind, exit codes, CopyFrom dropping symlinks and FIFOs, what a
// cancelled `docker run` leaves), which the e2e suite reaches only through abox's own uses.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/docker"
)

// e2eEnv is one test's view of the daemon.
type e2eEnv struct {
	t      *testing.T
	c      *docker.Client
	image  string
	run    string            // unique per test, in names and labels
	labels map[string]string // put on everything the test creates
}

// newE2E fails the test unless a daemon answers and the base image is present.
func newE2E(t *testing.T) *e2eEnv {
	t.Helper()
	image := os.Getenv("ABOX_E2E_BASE")
	if image == "" {
		image = "abox-e2e-base:bookworm"
	}
	c := docker.NewClient(&docker.ExecRunner{}, traceTo(t))
	ctx := context.Background()
	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("no docker daemon: %v\n  ↳ run e2e/setup.sh as root (it starts one)", err)
	}
	if ok, err := c.ImageExists(ctx, image); err != nil || !ok {
		t.Fatalf("base image %s is not present locally (%v), and these tests never pull\n  ↳ run e2e/setup.sh as root (it builds it)", image, err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e := &e2eEnv{t: t, c: c, image: image, run: "abox-dockerpkg-" + hex.EncodeToString(b)}
	e.labels = map[string]string{"abox.test": "docker-pkg", "abox.test.run": e.run}
	t.Cleanup(e.cleanup)
	return e
}

// traceTo logs every argv the client runs, so that -v shows the audited commands.
func traceTo(t *testing.T) *bytes.Buffer {
	var b bytes.Buffer
	t.Cleanup(func() { t.Logf("docker commands run:\n%s", b.String()) })
	return &b
}

func (e *e2eEnv) name(s string) string { return e.run + "-" + s }

// labelFlags returns the --label flags for e.labels.
func (e *e2eEnv) labelFlags() []string {
	return []string{"--label", "abox.test=docker-pkg", "--label", "abox.test.run=" + e.run}
}

// cleanup removes every container, network, volume and image labelled with this run.
func (e *e2eEnv) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := e.c.ContainersByLabel(ctx, map[string]string{"abox.test.run": e.run}, true)
	if err != nil {
		e.t.Errorf("cleanup: listing containers: %v", err)
	}
	for _, ct := range list {
		if err := e.c.Remove(ctx, true, true, ct.ID); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	}
	for _, kind := range []string{"network", "volume", "image"} {
		e.removeLabelled(ctx, kind)
	}
}

// removeLabelled removes the networks, volumes or images (kind) labelled with this run,
// including intermediate images left by a failed build.
func (e *e2eEnv) removeLabelled(ctx context.Context, kind string) {
	ls := []string{kind, "ls", "--quiet", "--filter", "label=abox.test.run=" + e.run}
	rm := []string{kind, "rm"}
	if kind == "image" {
		ls = append(ls, "--all")
		rm = append(rm, "--force")
	}
	out, err := e.c.Run(ctx, docker.Invocation{Args: ls})
	if err != nil {
		e.t.Errorf("cleanup: listing %ss: %v", kind, err)
	}
	ids := strings.Fields(string(out.Stdout))
	if len(ids) == 0 {
		return
	}
	if _, err := e.c.Run(ctx, docker.Invocation{Args: append(rm, ids...)}); err != nil {
		e.t.Errorf("cleanup: %v", err)
	}
}

// startSleeper creates and starts a container running cmd (default: sleep) with --init.
func (e *e2eEnv) startSleeper(ctx context.Context, name string, cmd ...string) string {
	e.t.Helper()
	if len(cmd) == 0 {
		cmd = []string{"sleep", "300"}
	}
	argv := append([]string{"create", "--pull", "never", "--init", "--name", name}, e.labelFlags()...)
	argv = append(append(argv, e.image), cmd...)
	id, err := e.c.Create(ctx, argv)
	if err != nil {
		e.t.Fatalf("Create: %v", err)
	}
	if err := e.c.Start(ctx, name); err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	return id
}

func TestE2EVersion(t *testing.T) {
	e := newE2E(t)
	v, err := e.c.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("docker version: %+v", v)
	if v.Server == "" || v.ServerAPI == "" || v.ClientAPI == "" {
		t.Errorf("Version = %+v, want every field", v)
	}
}

func TestE2ENetwork(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	name := e.name("net")
	id, err := e.c.NetworkCreate(ctx, name, e.labels)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.c.NetworkInspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if n.ID != id || n.Driver != "bridge" || n.Internal || n.EnableIPv6 || n.Labels["abox.test.run"] != e.run {
		t.Errorf("NetworkInspect = %+v, want a labelled bridge %s without --internal or IPv6", n, id)
	}
	if _, err := e.c.NetworkCreate(ctx, name, e.labels); err == nil || errors.Is(err, docker.ErrNotFound) {
		t.Errorf("NetworkCreate(existing) = %v, want a plain error", err)
	} else {
		t.Logf("NetworkCreate(existing): %v", err)
	}
	if err := e.c.NetworkRemove(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.NetworkInspect(ctx, name); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("NetworkInspect(removed) = %v, want ErrNotFound", err)
	}
	if err := e.c.NetworkRemove(ctx, name); err != nil {
		t.Errorf("NetworkRemove(removed) = %v, want nil", err)
	}
}

func TestE2EVolume(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	name := e.name("vol")
	if err := e.c.VolumeCreate(ctx, name, e.labels); err != nil {
		t.Fatal(err)
	}
	v, err := e.c.VolumeInspect(ctx, name)
	if err != nil || v.Name != name || v.Driver != "local" || v.Labels["abox.test.run"] != e.run {
		t.Errorf("VolumeInspect = %+v, %v", v, err)
	}
	if err := e.c.VolumeRemove(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := e.c.VolumeRemove(ctx, name); err != nil {
		t.Errorf("VolumeRemove(removed) = %v, want nil", err)
	}
	if _, err := e.c.VolumeInspect(ctx, name); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("VolumeInspect(removed) = %v, want ErrNotFound", err)
	}
}

func TestE2ENotFound(t *testing.T) {
	e := newE2E(t)
	ctx := context.Background()
	missing := e.name("missing")
	checks := map[string]error{}
	_, checks["container inspect"] = e.c.ContainerInspect(ctx, missing)
	_, checks["image inspect"] = e.c.ImageInspect(ctx, missing+":1")
	_, checks["network inspect"] = e.c.NetworkInspect(ctx, missing)
	_, checks["volume inspect"] = e.c.VolumeInspect(ctx, missing)
	checks["start"] = e.c.Start(ctx, missing)
	checks["kill"] = e.c.Kill(ctx, missing, "TERM")
	_, checks["exec"] = e.c.Exec(ctx, missing, "", []string{"true"}, nil)
	_, checks["create --pull never"] = e.c.Create(ctx, []string{"create", "--pull", "never", missing + ":1"})
	for what, err := range checks {
		if !errors.Is(err, docker.ErrNotFound) {
			t.Errorf("%s of a missing object = %v, want ErrNotFound", what, err)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	if ok, err := e.c.ImageExists(ctx, missing+":1"); ok || err != nil {
		t.Errorf("ImageExists(missing) = %v, %v, want false, nil", ok, err)
	}
	if err := e.c.Remove(ctx, false, false, missing); err != nil {
		t.Errorf("Remove(missing) = %v, want nil", err)
	}
	if err := e.c.ImageRemove(ctx, false, missing+":1"); err != nil {
		t.Errorf("ImageRemove(missing) = %v, want nil", err)
	}
}

func TestE2EDaemonUnreachable(t *testing.T) {
	newE2E(t) // only where docker is installed
	c := docker.NewClient(envRunner{&docker.ExecRunner{}, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}}, nil)
	_, err := c.Version(context.Background())
	if !errors.Is(err, docker.ErrDaemonUnreachable) {
		t.Errorf("Version with no daemon = %v, want ErrDaemonUnreachable", err)
	}
	t.Logf("unreachable: %v", err)
}
