package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/termtext"
)

// One gateway serves the union of every project on its profile, and each project's netd narrows
// that union to the project's own tools, by name. A project that declares an un-narrowed server
// whose tools nobody lists has an Unlisted netd policy: netd passes every tool name it does not
// know; and netd allows a name its narrowing lists whichever server provides it. abox refuses
// both wherever it sees the union: `gateway up` (and so `abox up`) refuses to start a gateway
// that serves a project servers it does not declare while the project's netd would pass their
// tools, and a run's preflight refuses to start such a project's sandbox while its gateway
// serves, or would serve, them.

// checkLeaks refuses a gateway plan under which a bound project's netd would pass other
// projects' tools.
func (a *App) checkLeaks(plan *gateway.Plan) error {
	if len(plan.Leaks) == 0 {
		return nil
	}
	var lines []string
	for _, l := range plan.Leaks {
		lines = append(lines, leakLines(l)...)
	}
	return errorf(leakHint(plan.Leaks[0]),
		"the %s gateway would give a project other projects' tools:\n- %s", plan.Profile, strings.Join(lines, "\n- "))
}

// leakLines say why one project's netd would pass other projects' tools.
func leakLines(l gateway.Leak) []string {
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

// leakHint names the ways out: make the tools known, narrow the server (or correct the
// narrowing), or give the project a gateway of its own.
func leakHint(l gateway.Leak) string {
	move := fmt.Sprintf("move %s to a profile of its own (profile: in its agentbox.yaml, then `abox up`)", l.Project)
	if len(l.Unlisted) == 0 {
		return fmt.Sprintf("take the other project's tools out of %s's tools: (`abox mcp add SERVER --tool NAME` replaces a narrowing), or %s",
			l.Project, move)
	}
	s := l.Unlisted[0]
	return fmt.Sprintf("list %s's tools (tools:) in custom-servers.yaml, narrow it in %s with `abox mcp add %s --tool NAME`, or %s",
		s, l.Project, s, move)
}

// checkMCPScope refuses to run a project whose netd would pass other projects' tools: the
// profile's gateway serves servers the project does not declare, by the registry (what
// `gateway up` starts) or by the running container's own --servers (what it serves now), and
// its rendered, verified netd policy is Unlisted or allows a tool one of them documents.
func (a *App) checkMCPScope(p *project, profile string, np *policy.Netd, gw *docker.Container) error {
	if np.MCP == nil {
		return nil
	}
	serving, reg, err := gatewayServing(p.paths, profile, gw)
	if err != nil {
		return err
	}
	l := gateway.Leak{Project: np.Project, Foreign: gateway.ForeignServers(np.MCP.Servers, serving)}
	if len(l.Foreign) == 0 {
		return nil
	}
	cat, err := catalog.Load(a.mcpHome(), p.custom)
	if err != nil {
		return err
	}
	if np.MCP.Unlisted {
		l.Unlisted = gateway.UnlistedServers(np.MCP)
	}
	l.Borrowed = reg.Union().BorrowedTools(slices.Collect(maps.Keys(np.MCP.Tools)), l.Foreign, p.custom, cat)
	if len(l.Unlisted) == 0 && len(l.Borrowed) == 0 {
		return nil
	}
	l.Owners = reg.Declaring(l.Foreign)
	return boundary(errorf(leakHint(l), "refusing to run on profile %s: %s", profile, strings.Join(leakLines(l), "; and ")))
}

// gatewayServing returns the servers the profile's gateway serves or would serve: the union of
// its registry and the --servers of its container gw (nil when there is none). It returns the
// registry too.
func gatewayServing(ps paths.Paths, profile string, gw *docker.Container) ([]string, *gateway.Registry, error) {
	reg, err := gateway.LoadRegistry(ps.Gateway(profile), profile)
	if err != nil {
		return nil, nil, err
	}
	serving := reg.Union().All()
	if gw != nil {
		serving = append(serving, gateway.ServersOf(gw)...)
	}
	slices.Sort(serving)
	return slices.Compact(serving), reg, nil
}
