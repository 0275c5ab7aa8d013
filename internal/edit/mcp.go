package edit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/project"
)

// AlreadyRemoteError refuses to declare Server from a catalog: the project declares it as a
// remote server, whose tools only narrowing can change.
type AlreadyRemoteError struct{ Server string }

func (e *AlreadyRemoteError) Error() string {
	return fmt.Sprintf("%q is already declared as a remote server", e.Server)
}

// RemoteError refuses to undeclare Server as a catalog server: it is a remote one.
type RemoteError struct{ Server string }

func (e *RemoteError) Error() string { return fmt.Sprintf("%q is a remote server", e.Server) }

// NotDeclaredError is a server the project does not declare (Remote: as a remote server).
type NotDeclaredError struct {
	Server string
	Remote bool
}

func (e *NotDeclaredError) Error() string {
	if e.Remote {
		return fmt.Sprintf("%q is not a remote server of this project", e.Server)
	}
	return fmt.Sprintf("%q is not declared in agentbox.yaml", e.Server)
}

// Declared is what [AddServer] did.
type Declared struct {
	// Remote is set when a declared remote server was narrowed.
	Remote bool
	// Already is set when the server was declared and no narrowing was asked: nothing was
	// edited.
	Already bool
	// Entry is the catalog's entry of a catalog server, with the secrets it reads.
	Entry catalog.Entry
}

// AddServer declares server, narrowed to tools (none: all of them). A declared remote server
// can only be narrowed ([*AlreadyRemoteError] without tools); any other must be known to the
// catalogs or custom-servers.yaml ([catalog.Catalog.Declarable]'s errors). Tools the catalog
// entry does not list are kept, with a warning: the catalog may be behind the server.
func AddServer(ctx context.Context, p *project.Project, env Env, server string, tools []string) (*Declared, error) {
	if err := checkApproved(p); err != nil {
		return nil, err
	}
	if _, remote := p.Manifest.RemoteServers[server]; remote {
		return narrowRemote(ctx, p, env, server, tools)
	}
	cat, err := catalog.Load(env.MCPHome, p.Custom)
	if err != nil {
		return nil, err
	}
	d, err := cat.Declarable(p.Manifest, server, tools)
	switch {
	case err != nil:
		return nil, err
	case d.Already:
		return &Declared{Already: true, Entry: d.Entry}, nil
	}
	for _, t := range d.Unlisted {
		env.Warn("%s's catalog entry does not list a tool %q (it lists %s)", server, t, strings.Join(d.Entry.Tools, ", "))
	}
	if _, _, err := Apply(ctx, p, env, func(doc *manifest.Doc) error { return doc.DeclareServer(server, tools) }); err != nil {
		return nil, err
	}
	return &Declared{Entry: d.Entry}, nil
}

// narrowRemote sets the narrowing of a declared remote server: its tools are known only from
// what the project lists.
func narrowRemote(ctx context.Context, p *project.Project, env Env, server string, tools []string) (*Declared, error) {
	if len(tools) == 0 {
		return nil, &AlreadyRemoteError{Server: server}
	}
	if _, _, err := Apply(ctx, p, env, func(d *manifest.Doc) error { return d.NarrowServer(server, tools) }); err != nil {
		return nil, err
	}
	return &Declared{Remote: true}, nil
}

// RemoveServer undeclares the catalog server server, with its tools: and server_network:
// entries. A remote server is a [*RemoteError], one not declared a [*NotDeclaredError].
func RemoveServer(ctx context.Context, p *project.Project, env Env, server string) error {
	if err := checkApproved(p); err != nil {
		return err
	}
	if _, remote := p.Manifest.RemoteServers[server]; remote {
		return &RemoteError{Server: server}
	}
	if !slices.Contains(p.Manifest.Servers, server) {
		return &NotDeclaredError{Server: server}
	}
	_, _, err := Apply(ctx, p, env, func(d *manifest.Doc) error {
		d.UndeclareServer(server)
		return nil
	})
	return err
}

// SetRemote declares the remote server name as r, replacing any of that name.
func SetRemote(ctx context.Context, p *project.Project, env Env, name string, r manifest.RemoteServer) error {
	_, _, err := Apply(ctx, p, env, func(d *manifest.Doc) error { return d.SetRemoteServer(name, r) })
	return err
}

// RemoveRemote undeclares the remote server name with its tools: entry; one the project does
// not declare is a [*NotDeclaredError].
func RemoveRemote(ctx context.Context, p *project.Project, env Env, name string) error {
	if err := checkApproved(p); err != nil {
		return err
	}
	if _, ok := p.Manifest.RemoteServers[name]; !ok {
		return &NotDeclaredError{Server: name, Remote: true}
	}
	_, _, err := Apply(ctx, p, env, func(d *manifest.Doc) error {
		d.RemoveRemoteServer(name)
		return nil
	})
	return err
}

// HostImports inventories the MCP servers this host already uses — the Toolkit's registry.yaml
// under mcpHome, and Claude Code's global servers and those of p's workspace in claudeConfig —
// and classifies each for p ([catalog.Catalog.ClassifyImports]). A file that does not parse is a
// [*catalog.HostConfigError].
func HostImports(p *project.Project, mcpHome, claudeConfig string) ([]catalog.HostServer, error) {
	cat, err := catalog.Load(mcpHome, p.Custom)
	if err != nil {
		return nil, err
	}
	found, err := catalog.HostServers(mcpHome, claudeConfig, p.Workspace)
	if err != nil {
		return nil, err
	}
	return cat.ClassifyImports(found, p.Manifest), nil
}

// Import declares the importable rows of [HostImports] ([catalog.ApplyImports]).
func Import(ctx context.Context, p *project.Project, env Env, rows []catalog.HostServer) error {
	_, _, err := Apply(ctx, p, env, func(d *manifest.Doc) error { return catalog.ApplyImports(d, rows) })
	return err
}
