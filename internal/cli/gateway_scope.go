package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/paths"
)

// One gateway serves the union of every project on its profile, and each project's netd narrows
// that union to the project's own tools, by name. A project that declares an un-narrowed server
// whose tools nobody lists has an Unlisted netd policy: netd passes every tool name it does not
// know. abox refuses that combination wherever it sees the union: `gateway up` (and so `abox
// up`) refuses to start a gateway whose servers such a project does not all declare, and a run's
// preflight refuses to start such a project's sandbox while its gateway serves, or would serve,
// other projects' servers.

// checkLeaks refuses a gateway plan under which a bound project's netd would pass other
// projects' tools.
func (a *App) checkLeaks(plan *gateway.Plan) error {
	if len(plan.Leaks) == 0 {
		return nil
	}
	var lines []string
	for _, l := range plan.Leaks {
		lines = append(lines, leakLine(l.Project, l.Unlisted, l.Foreign, l.Owners))
	}
	first := plan.Leaks[0]
	return errorf(leakHint(first.Project, first.Unlisted),
		"the %s gateway would give a project other projects' tools:\n- %s", plan.Profile, strings.Join(lines, "\n- "))
}

// leakLine says why one project's netd would pass other projects' tools.
func leakLine(project string, unlisted, foreign, owners []string) string {
	of := ""
	if len(owners) > 0 {
		of = " of " + strings.Join(owners, ", ")
	}
	return fmt.Sprintf("project %s declares %s, whose tools nobody lists, so its netd lets any tool name through; "+
		"the gateway also serves %s%s", project, strings.Join(unlisted, ", "), strings.Join(foreign, ", "), of)
}

// leakHint names the three ways out: make the tools known, narrow the server, or give the
// project a gateway of its own.
func leakHint(project string, unlisted []string) string {
	s := unlisted[0]
	return fmt.Sprintf("list %s's tools (tools:) in custom-servers.yaml, narrow it in %s with `abox mcp add %s --tool NAME`, "+
		"or move %s to a profile of its own (profile: in its agentbox.yaml, then `abox up`)", s, project, s, project)
}

// checkMCPScope refuses to run a project whose netd would pass other projects' tools: its
// rendered, verified netd policy is Unlisted, and the profile's gateway serves servers the
// project does not declare, by the registry (what `gateway up` starts) or by the running
// container's own --servers (what it serves now).
func (a *App) checkMCPScope(ctx context.Context, p *project, profile string) error {
	np, err := readNetdPolicy(p.state.Artifacts())
	if err != nil {
		return err
	}
	if np.MCP == nil || !np.MCP.Unlisted {
		return nil
	}
	serving, reg, err := a.gatewayServing(ctx, p.paths, profile)
	if err != nil {
		return err
	}
	foreign := gateway.ForeignServers(np.MCP.Servers, serving)
	if len(foreign) == 0 {
		return nil
	}
	unlisted := gateway.UnlistedServers(np.MCP)
	return boundary(errorf(leakHint(np.Project, unlisted), "refusing to run: %s on profile %s",
		leakLine(np.Project, unlisted, foreign, reg.Declaring(foreign)), profile))
}

// gatewayServing returns the servers the profile's gateway serves or would serve: the union of
// its registry and the running container's --servers. It returns the registry too.
func (a *App) gatewayServing(ctx context.Context, ps paths.Paths, profile string) ([]string, *gateway.Registry, error) {
	reg, err := gateway.LoadRegistry(ps.Gateway(profile), profile)
	if err != nil {
		return nil, nil, err
	}
	serving := reg.Union().All()
	ct, err := a.gatewayManager().Inspect(ctx, profile)
	if err != nil {
		return nil, nil, err
	}
	if ct != nil {
		serving = append(serving, gateway.ServersOf(ct)...)
	}
	slices.Sort(serving)
	return slices.Compact(serving), reg, nil
}
