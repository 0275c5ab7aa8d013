package docker

import (
	"context"
	"errors"
)

// Network is the part of `docker network inspect` that abox reads.
//
// The CLI re-encodes the daemon's answer through its own types before `{{json .}}` prints it, so
// a field the daemon does not know shows as its zero value: CLI 28 prints "EnableIPv4": false for
// every network of a 20.10 daemon. Only fields that API 1.41 returns are decoded here.
type Network struct {
	ID         string `json:"Id"`
	Name       string
	Driver     string // "bridge" for abox's networks
	Scope      string
	Internal   bool
	EnableIPv6 bool
	Labels     map[string]string
	IPAM       struct {
		Config []struct{ Subnet, Gateway string }
	}
	// Containers is keyed by container ID.
	Containers map[string]NetworkEndpoint
}

// NetworkEndpoint is one container attached to a [Network].
type NetworkEndpoint struct {
	Name        string
	IPv4Address string // CIDR form, "172.18.0.2/16"
}

// NetworkInspect returns the named network, or an error matching [ErrNotFound].
func (c *Client) NetworkInspect(ctx context.Context, name string) (*Network, error) {
	var n Network
	if err := c.inspectJSON(ctx, &n, networkInspectArgs(name)...); err != nil {
		return nil, err
	}
	return &n, nil
}

func networkInspectArgs(name string) []string {
	return []string{"network", "inspect", "--format", "{{json .}}", name}
}

// NetworkCreate creates a bridge network with labels and returns its ID. The network is not
// --internal (the gateway and netd need egress) and has no IPv6.
func (c *Client) NetworkCreate(ctx context.Context, name string, labels map[string]string) (string, error) {
	args := networkCreateArgs(name, labels)
	out, err := c.output(ctx, args...)
	if err != nil {
		return "", err
	}
	return idFrom(args, out)
}

// EnsureNetwork creates the bridge network name with labels unless a network of that name
// exists.
func (c *Client) EnsureNetwork(ctx context.Context, name string, labels map[string]string) error {
	_, err := c.NetworkInspect(ctx, name)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return err
	}
	_, err = c.NetworkCreate(ctx, name, labels)
	return err
}

func networkCreateArgs(name string, labels map[string]string) []string {
	args := []string{"network", "create", "--driver", "bridge"}
	args = append(args, labelArgs(labels)...)
	return append(args, name)
}

// NetworkConnect attaches container to network, reachable there under each alias as well as its
// name.
func (c *Client) NetworkConnect(ctx context.Context, network, container string, aliases ...string) error {
	return c.run(ctx, networkConnectArgs(network, container, aliases)...)
}

func networkConnectArgs(network, container string, aliases []string) []string {
	args := []string{"network", "connect"}
	for _, a := range aliases {
		args = append(args, "--alias", a)
	}
	return append(args, network, container)
}

// NetworkRemove removes the named network. A network that does not exist is not an error; one
// that still has containers attached is.
func (c *Client) NetworkRemove(ctx context.Context, name string) error {
	return ignoreNotFound(c.run(ctx, "network", "rm", name))
}

// ignoreNotFound returns nil for an [*ExitError] whose every error line says that something does
// not exist, and err otherwise.
func ignoreNotFound(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) && onlyNotFound(ee.Stderr) {
		return nil
	}
	return err
}
