package docker

import (
	"context"
	"errors"
	"time"
)

// Image is the part of `docker image inspect` that abox reads.
type Image struct {
	ID          string // "sha256:…"
	RepoTags    []string
	RepoDigests []string // empty for images built or imported locally
	Labels      map[string]string
	Created     time.Time
}

// imageJSON mirrors the inspect output, where labels sit under Config.
type imageJSON struct {
	ID          string `json:"Id"`
	RepoTags    []string
	RepoDigests []string
	Created     time.Time
	Config      *struct{ Labels map[string]string }
}

// ImageInspect returns the image ref names, or an error matching [ErrNotFound].
func (c *Client) ImageInspect(ctx context.Context, ref string) (*Image, error) {
	var j imageJSON
	if err := c.inspectJSON(ctx, &j, "image", "inspect", "--format", "{{json .}}", ref); err != nil {
		return nil, err
	}
	img := &Image{ID: j.ID, RepoTags: j.RepoTags, RepoDigests: j.RepoDigests, Created: j.Created}
	if j.Config != nil {
		img.Labels = j.Config.Labels
	}
	return img, nil
}

// ImageExists reports whether ref names a local image. It never pulls.
func (c *Client) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := c.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	default:
		return false, err
	}
}

// Pull pulls ref from its registry. abox pins images by digest, so ref is normally
// "name@sha256:…".
func (c *Client) Pull(ctx context.Context, ref string) error {
	return c.run(ctx, "pull", "--quiet", ref)
}

// ImageRemove removes images. An image that does not exist is not an error; one used by a
// container is, unless force is set.
func (c *Client) ImageRemove(ctx context.Context, force bool, refs ...string) error {
	if len(refs) == 0 {
		return nil
	}
	args := []string{"image", "rm"}
	if force {
		args = append(args, "--force")
	}
	return ignoreNotFound(c.run(ctx, append(args, refs...)...))
}
