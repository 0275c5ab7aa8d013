//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/hostprobe"
	"github.com/aboxhq/abox/internal/images"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/render"
)

// TestImagesBuildAgent: internal/images builds a project's agent image on the real daemon from
// the context it stages (the rendered Dockerfile, the test and host CAs, the stand-in claude
// checked against its sha256), and the image carries abox's labels and that binary byte for
// byte. A file whose sha256 is not the configured one is refused, and no image is built.
func TestImagesBuildAgent(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg, err := config.Load(h.WriteConfig(h.DefaultConfig()))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": h.Home, "ABOX_CONFIG_HOME": h.ConfigHome, "ABOX_STATE_HOME": h.StateHome}
	ps, err := paths.FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	p := images.Project{Name: "images", Config: cfg, Paths: ps, State: ps.Project(h.Workspace)}
	tag := "abox-agent-images:" + h.Profile
	t.Cleanup(func() { h.Docker("image", "rm", "--force", tag) })
	b := &images.Builder{Docker: docker.NewClient(&docker.ExecRunner{}, nil), Home: h.Home, Progress: t.Logf}

	bad := *cfg
	bad.ClaudeCode.SHA256 = strings.Repeat("0", 64)
	refused := p
	refused.Config = &bad
	renderAgentDockerfile(t, h, refused) // as abox renders it: the Dockerfile checks the same wrong sha256
	var ie *images.Error
	if err := b.Agent(ctx, refused, tag); !errors.As(err, &ie) || !ie.Refused || !strings.Contains(err.Error(), "but claude_code.sha256 is "+bad.ClaudeCode.SHA256) {
		t.Fatalf("Agent with a wrong sha256 = %v, want a refusal", err)
	}
	if res := h.Docker("image", "inspect", tag); res.OK() {
		t.Fatalf("an image was built from a refused file: %s", res)
	}

	renderAgentDockerfile(t, h, p)
	if err := b.Agent(ctx, p, tag); err != nil {
		t.Fatalf("Agent = %v", err)
	}
	labels := h.MustDocker("image", "inspect", "--format", `{{index .Config.Labels "abox.managed"}} {{index .Config.Labels "abox.project"}}`, tag)
	if labels != "true images" {
		t.Errorf("image labels = %q, want abox.managed=true and abox.project=images", labels)
	}
	standin, err := os.ReadFile(cfg.ClaudeCode.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(standin)
	got := h.MustDocker("run", "--rm", "--network", "none", "--entrypoint", "sha256sum", tag, "/usr/local/bin/claude")
	if !strings.HasPrefix(got, hex.EncodeToString(sum[:])+"  ") {
		t.Errorf("the image's claude has %q, want the stand-in's %x", got, sum)
	}
}

// renderAgentDockerfile renders p's agent Dockerfile as `abox render` does, from the inputs
// images reads on this host, and writes it where a build reads it.
func renderAgentDockerfile(t *testing.T, h *harness.H, p images.Project) {
	t.Helper()
	m, err := manifest.Parse([]byte("version: 1\nproject: images\nprofile: "+h.Profile+"\n"), manifest.FileName)
	if err != nil {
		t.Fatal(err)
	}
	in, err := images.RenderInputs(context.Background(), p.Config, h.Home, hostprobe.System{})
	if err != nil {
		t.Fatal(err)
	}
	arts, err := render.Render(render.Spec{
		Version: "e2e", Manifest: m, Config: p.Config, Paths: p.Paths, Project: p.State, Home: h.Home,
		CACerts: in.CACerts, NPMRegistry: in.NPMRegistry, Agent: render.Identity{UID: 1000, GID: 1000},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arts {
		if a.Name == render.AgentDockerfile {
			if err := os.MkdirAll(p.State.Artifacts(), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p.State.Artifacts(), a.Name), a.Data, 0o600); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no agent Dockerfile rendered")
}
