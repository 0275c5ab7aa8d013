package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/render"
)

const runToken = "tok3n-of-the-run-check-0123456789abcdef"

// authFixture is a project on profile default whose gateway container gw0001 runs; the probe
// from the netd image answers probe.
func authFixture(t *testing.T, probe string) (*App, *dockertest.Fake, *project.Project, *render.RunSpec, *docker.Container) {
	t.Helper()
	fake := dockertest.New(t)
	if probe != "" {
		fake.On("run --rm --interactive", docker.Result{Stdout: []byte(probe)})
	}
	a := &App{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}, Now: func() time.Time { return time.Unix(1e9, 0) }}
	a.dockerClient = docker.NewClient(fake, nil)
	ps := paths.Paths{Config: t.TempDir(), State: t.TempDir()}
	a.paths = &ps
	p := &project.Project{Config: config.Default(), Paths: ps}
	if err := os.MkdirAll(ps.Gateway("default"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ps.Gateway("default"), "token"), []byte(runToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := &render.RunSpec{Profile: "default", Network: "abox-net", Netd: render.RunCommand{Image: "abox-netd:1"}}
	return a, fake, p, rs, &docker.Container{ID: "gw0001", Image: "sha256:1"}
}

// TestRunRefusesAnOpenGateway: `abox run` starts no agent behind a gateway it has not seen
// refuse requests without its token (exit 3, with the `abox gateway update` hint); a gateway
// that refuses them is recorded, so the next run does not probe the same container again.
func TestRunRefusesAnOpenGateway(t *testing.T) {
	ctx := context.Background()
	t.Run("open", func(t *testing.T) {
		a, fake, p, rs, gw := authFixture(t, `{"ok":true,"tools":[],"auth":{"no_token":200,"wrong_token":200}}`)
		err := a.checkGatewayAuth(ctx, p, rs, gw)
		if code := explicitExit(err); code != ExitBoundary || !strings.Contains(err.Error(), "does not enforce its token") ||
			!strings.Contains(hintOf(err), "`abox gateway update`") {
			t.Fatalf("checkGatewayAuth = %v (hint %q), want exit 3 with the gateway update hint", err, hintOf(err))
		}
		if gateway.AuthProven(p.Paths.Gateway("default"), gw) {
			t.Error("an open gateway was recorded as proven")
		}
		if strings.Contains(fake.ArgvText(), runToken) {
			t.Error("the token reached an argv")
		}
	})
	t.Run("refused with another token", func(t *testing.T) {
		a, _, p, rs, gw := authFixture(t, `{"ok":false,"status":401,"error":"initialize: the gateway refused the token (HTTP 401)","tools":[]}`)
		err := a.checkGatewayAuth(ctx, p, rs, gw)
		if explicitExit(err) != ExitBoundary || !strings.Contains(hintOf(err), "holds another token") {
			t.Errorf("checkGatewayAuth = %v (hint %q)", err, hintOf(err))
		}
	})
	t.Run("enforced, then remembered", func(t *testing.T) {
		a, fake, p, rs, gw := authFixture(t, `{"ok":true,"tools":[],"auth":{"no_token":401,"wrong_token":401}}`)
		if err := a.checkGatewayAuth(ctx, p, rs, gw); err != nil {
			t.Fatalf("checkGatewayAuth = %v", err)
		}
		if err := a.checkGatewayAuth(ctx, p, rs, gw); err != nil {
			t.Fatalf("second checkGatewayAuth = %v", err)
		}
		if n := len(fake.Calls()); n != 1 {
			t.Errorf("%d probes, want 1: the proof stands for the same container", n)
		}
		other := &docker.Container{ID: "gw0002", Image: "sha256:1"}
		if err := a.checkGatewayAuth(ctx, p, rs, other); err != nil || len(fake.Calls()) != 2 {
			t.Errorf("checkGatewayAuth of a recreated gateway = %v after %d probes, want a new probe", err, len(fake.Calls()))
		}
	})
	t.Run("no token", func(t *testing.T) {
		a, _, p, rs, gw := authFixture(t, "")
		if err := os.Remove(filepath.Join(p.Paths.Gateway("default"), "token")); err != nil {
			t.Fatal(err)
		}
		if err := a.checkGatewayAuth(ctx, p, rs, gw); explicitExit(err) != ExitBoundary || !strings.Contains(hintOf(err), "abox up") {
			t.Errorf("checkGatewayAuth = %v (hint %q)", err, hintOf(err))
		}
	})
}
