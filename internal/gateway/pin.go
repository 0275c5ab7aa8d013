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

// ImageUpdate is a change of the pinned gateway image: from Old, config.yaml's gateway.image,
// to New, the reference the tag resolves to now.
type ImageUpdate struct{ Old, New string }

// UpdateImage re-resolves tag ([Manager.ResolveImage]) and, unless config.yaml (file, loaded as
// cfg) pins that digest already, pins it as gateway.image once approve, shown the change, returns
// nil; an error of approve is returned and nothing is written. Every other key and comment of
// the file stays ([config.EditFile]). Running gateways keep their image until they are
// recreated.
func (m *Manager) UpdateImage(ctx context.Context, file string, cfg *config.Config, tag string, approve func(ImageUpdate) error) (ImageUpdate, error) {
	pinned, err := m.ResolveImage(ctx, tag)
	if err != nil {
		return ImageUpdate{}, err
	}
	u := ImageUpdate{Old: cfg.Gateway.Image, New: pinned}
	if u.Old == u.New {
		return u, nil
	}
	if err := approve(u); err != nil {
		return u, err
	}
	_, err = config.EditFile(file, cfg, func(d *config.Doc) error { return d.SetGatewayImage(pinned) })
	return u, err
}
