package gateway

import (
	"context"
	"io"

	"github.com/aboxhq/abox/internal/docker"
)

// desktop is what `docker info` says the operating system of Docker Desktop's daemon is.
const desktop = "Docker Desktop"

// DesktopOnlyError refuses OAuth on a daemon that is not Docker Desktop's (OS is what it runs
// on): Docker Engine has no OAuth broker, so a remote server takes a token header from a secret
// instead.
type DesktopOnlyError struct{ OS string }

func (e *DesktopOnlyError) Error() string {
	return "OAuth for hosted MCP servers needs Docker Desktop; this daemon runs on " + e.OS
}

// OAuth lists the OAuth apps Docker Desktop holds for hosted MCP servers, or authorizes
// provider when it is not "" (a browser opens): it talks to the user, on out and errw, on a
// terminal when tty is set. Any other daemon is a [*DesktopOnlyError], and nothing is asked of
// its mcp plugin.
func OAuth(ctx context.Context, d *docker.Client, provider string, tty bool, out, errw io.Writer) error {
	os, err := d.OperatingSystem(ctx)
	if err != nil {
		return err
	}
	if os != desktop {
		return &DesktopOnlyError{OS: os}
	}
	return d.MCPOAuth(ctx, provider, tty, out, errw)
}
