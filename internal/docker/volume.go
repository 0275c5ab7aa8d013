package docker

import (
	"context"
	"strings"
)

// Volume is the part of `docker volume inspect` that abox reads.
type Volume struct {
	Name       string
	Driver     string
	Mountpoint string // path on the daemon's host
	Labels     map[string]string
	CreatedAt  string // RFC 3339, as the daemon prints it
}

// VolumeCreate creates a local volume with labels. Creating a volume that already exists
// succeeds and leaves it as it is (the daemon's behaviour), so callers that care about its
// labels should inspect it.
func (c *Client) VolumeCreate(ctx context.Context, name string, labels map[string]string) error {
	return c.run(ctx, volumeCreateArgs(name, labels)...)
}

func volumeCreateArgs(name string, labels map[string]string) []string {
	args := []string{"volume", "create", "--driver", "local"}
	args = append(args, labelArgs(labels)...)
	return append(args, name)
}

// VolumeInspect returns the named volume, or an error matching [ErrNotFound].
func (c *Client) VolumeInspect(ctx context.Context, name string) (*Volume, error) {
	var v Volume
	if err := c.inspectJSON(ctx, &v, "volume", "inspect", "--format", "{{json .}}", name); err != nil {
		return nil, err
	}
	return &v, nil
}

// VolumeRemove removes the named volume. A volume that does not exist is not an error; one in
// use by a container is.
func (c *Client) VolumeRemove(ctx context.Context, name string) error {
	return ignoreNotFound(c.run(ctx, "volume", "rm", name))
}

// VolumesNamed lists the volumes whose name starts with prefix.
func (c *Client) VolumesNamed(ctx context.Context, prefix string) ([]string, error) {
	out, err := c.output(ctx, "volume", "ls", "--quiet", "--filter", "name="+prefix)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, prefix) { // the daemon's filter matches anywhere in the name
			names = append(names, name)
		}
	}
	return names, nil
}
