package cli

import (
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/project"
	"github.com/aboxhq/abox/internal/remedy"
)

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
	return boundary(errorf(remedy.Leak(l), "refusing to run on profile %s: %s", profile, strings.Join(l.Lines(), "; and ")))
}
