package cli

import (
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
)

// leakHint names the ways out of a [gateway.Leak]: make the tools known, narrow the server (or
// correct the narrowing), or give the project a gateway of its own.
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

// checkMCPScope refuses to run a project whose rendered, verified netd policy np would pass
// other projects' tools from the profile's gateway gw (nil when there is none), by
// [gateway.ProjectScope], the rule doctor's gateway.project-scope applies too.
func (a *App) checkMCPScope(p *project.Project, profile string, np *policy.Netd, gw *docker.Container) error {
	if np.MCP == nil {
		return nil
	}
	reg, err := gateway.LoadRegistry(p.Paths.Gateway(profile), profile)
	if err != nil {
		return err
	}
	l, ok, err := gateway.ProjectScope(gateway.ScopeInput{Netd: np, Registry: reg, Running: gw, Custom: p.Custom,
		Catalog: func() (*catalog.Catalog, error) { return catalog.Load(a.mcpHome(), p.Custom) }})
	if err != nil || ok {
		return err
	}
	return boundary(errorf(leakHint(l), "refusing to run on profile %s: %s", profile, strings.Join(l.Lines(), "; and ")))
}
