package gateway

import (
	"context"
	"fmt"

	"github.com/aboxhq/abox/internal/config"
)

// DefaultImageTag is the tag `abox gateway update` re-resolves. It moves on every merge
// upstream, which is why abox runs the digest, never the tag.
const DefaultImageTag = "docker/mcp-gateway:v2"

// PullError is a gateway image tag docker could not pull.
type PullError struct{ Err error }

func (e *PullError) Error() string { return e.Err.Error() }
func (e *PullError) Unwrap() error { return e.Err }

// NoDigestError is an image pulled under a tag that carries no registry digest, so there is
// nothing to pin: it was built or loaded on this machine.
type NoDigestError struct{ Tag string }

func (e *NoDigestError) Error() string { return fmt.Sprintf("%s has no registry digest", e.Tag) }

// ResolveImage pulls tag and returns the pinned reference (repo@sha256:…) the registry gave it
// ([config.RepoDigest]): what gateway.image in config.yaml may hold. The error is a
// [*PullError] when the pull fails and a [*NoDigestError] when the image has no registry digest.
func (m *Manager) ResolveImage(ctx context.Context, tag string) (string, error) {
	m.progressf("pulling %s", tag)
	if err := m.Docker.Pull(ctx, tag); err != nil {
		return "", &PullError{Err: err}
	}
	img, err := m.Docker.ImageInspect(ctx, tag)
	if err != nil {
		return "", err
	}
	pinned := config.RepoDigest(tag, img.RepoDigests)
	if pinned == "" {
		return "", &NoDigestError{Tag: tag}
	}
	return pinned, nil
}
