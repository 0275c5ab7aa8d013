package catalog

import (
	"fmt"
	"slices"

	"github.com/aboxhq/abox/internal/manifest"
)

// BadNameError is a server name the manifest cannot hold.
type BadNameError struct{ Server string }

func (e *BadNameError) Error() string { return fmt.Sprintf("%q is not a valid server name", e.Server) }

// UnknownServerError is a server neither a catalog nor custom-servers.yaml knows.
type UnknownServerError struct{ Server string }

func (e *UnknownServerError) Error() string { return fmt.Sprintf("unknown MCP server %q", e.Server) }

// Declaration is what declaring a catalog server in a manifest would do ([Catalog.Declarable]).
type Declaration struct {
	Entry Entry
	// Already is set when m declares the server and no narrowing was asked: nothing to edit.
	Already bool
	// Unlisted are the tools asked for that the entry does not document; none when it
	// documents no tools. They are kept (the catalog may be behind the server), but said.
	Unlisted []string
}

// Declarable checks server, narrowed to tools (none: all), for `abox mcp add` in the manifest
// m: its name must be one the manifest can hold ([*BadNameError]) and a known server's
// ([*UnknownServerError]).
func (c *Catalog) Declarable(m *manifest.Manifest, server string, tools []string) (Declaration, error) {
	e, ok := c.Lookup(server)
	switch {
	case !manifest.IsServerName(server):
		return Declaration{}, &BadNameError{Server: server}
	case !ok:
		return Declaration{}, &UnknownServerError{Server: server}
	}
	d := Declaration{Entry: e, Already: slices.Contains(m.Servers, server) && len(tools) == 0}
	for _, t := range tools {
		if len(e.Tools) > 0 && !slices.Contains(e.Tools, t) {
			d.Unlisted = append(d.Unlisted, t)
		}
	}
	return d, nil
}
