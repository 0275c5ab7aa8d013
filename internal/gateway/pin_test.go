package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/docker/dockertest"
)

// TestResolveImage: the tag is pulled and its registry digest returned; a failed pull and an
// image without a registry digest are told apart, and neither pins anything.
func TestResolveImage(t *testing.T) {
	ctx := context.Background()
	const tag = "docker/mcp-gateway:v2"
	const want = "docker/mcp-gateway@sha256:2222222222222222222222222222222222222222222222222222222222222222"

	fake := dockertest.New(t)
	fake.On("pull --quiet "+tag, docker.Result{})
	fake.On("image inspect", okJSON(`{"Id":"sha256:9","RepoDigests":["other/repo@sha256:3333333333333333333333333333333333333333333333333333333333333333","`+want+`"]}`))
	var progress []string
	m := newManager(fake)
	m.Progress = func(format string, args ...any) { progress = append(progress, format) }
	got, err := m.ResolveImage(ctx, tag)
	if err != nil || got != want {
		t.Fatalf("ResolveImage = %q, %v; want %q", got, err, want)
	}
	if len(progress) != 1 {
		t.Errorf("progress = %q, want one line for the pull", progress)
	}

	fake = dockertest.New(t)
	fake.On("pull", docker.Result{ExitCode: 1, Stderr: []byte("Error response from daemon: manifest unknown\n")})
	var pe *PullError
	if got, err := newManager(fake).ResolveImage(ctx, tag); got != "" || !errors.As(err, &pe) {
		t.Errorf("ResolveImage of a tag that does not pull = %q, %v; want a *PullError", got, err)
	}

	fake = dockertest.New(t)
	fake.On("pull", docker.Result{})
	fake.On("image inspect", okJSON(`{"Id":"sha256:9","RepoDigests":[]}`))
	var nd *NoDigestError
	if got, err := newManager(fake).ResolveImage(ctx, tag); got != "" || !errors.As(err, &nd) || nd.Tag != tag {
		t.Errorf("ResolveImage of a local image = %q, %v; want a *NoDigestError", got, err)
	}
}

// TestUpdateImage: a new digest is shown to approve and, approved, pinned in config.yaml with
// its other keys and comments kept; refused, nothing is written; a digest pinned already asks
// nothing and writes nothing.
func TestUpdateImage(t *testing.T) {
	ctx := context.Background()
	const tag = "docker/mcp-gateway:v2"
	const old = "docker/mcp-gateway@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const pinned = "docker/mcp-gateway@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	const yaml = "# keep this comment\nnetwork: lab-net\ngateway:\n  image: " + old + "\n"
	setup := func(t *testing.T) (*Manager, string, *config.Config) {
		fake := dockertest.New(t)
		fake.On("pull --quiet "+tag, docker.Result{})
		fake.On("image inspect", okJSON(`{"Id":"sha256:9","RepoDigests":["`+pinned+`"]}`))
		file := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		return newManager(fake), file, cfg
	}

	m, file, cfg := setup(t)
	var shown []ImageUpdate
	u, err := m.UpdateImage(ctx, file, cfg, tag, func(u ImageUpdate) error { shown = append(shown, u); return nil })
	want := ImageUpdate{Old: old, New: pinned}
	if err != nil || u != want || len(shown) != 1 || shown[0] != want {
		t.Fatalf("UpdateImage = %+v, %v after showing %+v; want %+v", u, err, shown, want)
	}
	data, _ := os.ReadFile(file)
	if got := string(data); !strings.Contains(got, "  image: "+pinned+"\n") || !strings.Contains(got, "# keep this comment\nnetwork: lab-net\n") {
		t.Errorf("config.yaml = %q, want the new digest and everything else kept", got)
	}

	m, file, cfg = setup(t)
	refused := errors.New("not now")
	if _, err := m.UpdateImage(ctx, file, cfg, tag, func(ImageUpdate) error { return refused }); !errors.Is(err, refused) {
		t.Errorf("UpdateImage refused = %v, want the refusal", err)
	}
	if data, _ := os.ReadFile(file); string(data) != yaml {
		t.Errorf("a refused update wrote %q", data)
	}

	m, file, cfg = setup(t)
	cfg.Gateway.Image = pinned
	u, err = m.UpdateImage(ctx, file, cfg, tag, func(ImageUpdate) error { t.Error("asked about no change"); return nil })
	if err != nil || u.Old != u.New {
		t.Errorf("UpdateImage of the pinned digest = %+v, %v; want no change", u, err)
	}
	if data, _ := os.ReadFile(file); string(data) != yaml {
		t.Errorf("an update to the pinned digest wrote %q", data)
	}
}
