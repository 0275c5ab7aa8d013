package gateway

import (
	"context"
	"errors"
	"testing"

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
