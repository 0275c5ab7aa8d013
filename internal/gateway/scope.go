package gateway

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/termtext"
)

// ScopeInput is what [ProjectScope] decides from.
type ScopeInput struct {
	// Netd is the project's rendered, verified netd policy: what its netd lets through.
	Netd *policy.Netd
	// Registry is the profile's registry: what `gateway up` starts.
	Registry *Registry
	// Running is the profile's gateway container, whose --servers say what it serves now; nil
	// when there is none (or it cannot be asked).
	Running *docker.Container
	Custom  config.CustomServers
	// Catalog loads the catalogs. It is called only when the gateway serves a server the
	// project does not declare, so a broken catalog cannot stop a project that needs none.
	Catalog func() (*catalog.Catalog, error)
}

// ProjectScope decides whether a project's agent can call only the project's own tools
// through its profile's gateway. One gateway serves every project of the profile and each
// project's netd narrows it by tool name: with a declared server whose tools nobody lists (an
// Unlisted policy) netd lets every name through, and it lets a name its narrowing lists through
// whichever server provides it. Both are safe only while the gateway serves nothing but the
// project's servers, by the registry and by the running container's own --servers.
//
// The returned Leak always holds the project's Unlisted and Foreign servers, and when there
// are foreign ones the tools it Borrows and the projects that declare them (Owners). ok is
// false when the agent can reach another project's tool: a run refuses to start, doctor fails.
// A policy without MCP cannot reach the gateway at all.
func ProjectScope(in ScopeInput) (l Leak, ok bool, err error) {
	np := in.Netd
	if np.MCP == nil {
		return Leak{Project: np.Project}, true, nil
	}
	l = Leak{Project: np.Project}
	if np.MCP.Unlisted {
		l.Unlisted = UnlistedServers(np.MCP)
	}
	serving := in.Registry.Union().All()
	if in.Running != nil {
		serving = append(serving, ServersOf(in.Running)...)
	}
	var cat *catalog.Catalog
	if len(ForeignServers(np.MCP.Servers, serving)) > 0 && in.Catalog != nil {
		if cat, err = in.Catalog(); err != nil {
			return l, false, err
		}
	}
	allowed := slices.Sorted(maps.Keys(np.MCP.Tools))
	return l, !in.Registry.leak(&l, np.MCP.Servers, allowed, serving, in.Custom, cat), nil
}

// Lines say why the project's netd would pass other projects' tools, one line per way.
func (l Leak) Lines() []string {
	of := ""
	if len(l.Owners) > 0 {
		of = " of " + strings.Join(l.Owners, ", ")
	}
	var out []string
	if len(l.Unlisted) > 0 {
		out = append(out, fmt.Sprintf("project %s declares %s, whose tools nobody lists, so its netd lets any tool name through; "+
			"the gateway also serves %s%s", l.Project, strings.Join(l.Unlisted, ", "), strings.Join(l.Foreign, ", "), of))
	}
	if len(l.Borrowed) > 0 {
		var tools []string
		for _, t := range slices.Sorted(maps.Keys(l.Borrowed)) {
			tools = append(tools, fmt.Sprintf("%s (a tool of %s)", termtext.Line(t), l.Borrowed[t]))
		}
		out = append(out, fmt.Sprintf("project %s's tools: lets through %s, a server it does not declare",
			l.Project, strings.Join(tools, ", ")))
	}
	return out
}
