package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/termtext"
)

// gatewayProjectScope: the agent can call only this project's tools. The profile's gateway
// serves every project of the profile, and netd narrows it by tool name. With a declared server
// whose tools nobody lists (an Unlisted netd policy) netd lets every name through, and it lets a
// name its narrowing lists through whichever server provides it. Both are safe only while the
// gateway serves nothing but this project's servers, by the profile's registry (what `gateway
// up` starts) and by the running gateway's own --servers.
func gatewayProjectScope(ctx context.Context, e *Env) Finding {
	p, err := e.netdPolicy()
	if err != nil {
		return notRendered(err)
	}
	if p.MCP == nil {
		return skipf("", "the project declares no MCP server")
	}
	profile := e.profile()
	reg, err := gateway.LoadRegistry(e.Paths.Gateway(profile), profile)
	if err != nil {
		return failf("fix or remove the registry; `abox up` in each project of the profile binds it again", "%v", err)
	}
	var running *docker.Container
	if e.daemonUp(ctx) {
		if c, _, err := e.gateway(ctx); err == nil {
			running = c
		}
	}
	l, ok, _ := gateway.ProjectScope(gateway.ScopeInput{Netd: p, Registry: reg, Running: running,
		Catalog: func() (*catalog.Catalog, error) { return e.Catalog, nil }})
	unlisted, foreign, borrowed := l.Unlisted, l.Foreign, l.Borrowed
	switch {
	case ok && len(unlisted) > 0:
		return okf("netd lets any tool name through (%s has no known tool list), but the %s gateway serves only this project's servers",
			strings.Join(unlisted, ", "), profile).with("unlisted", unlisted)
	case ok:
		return okf("netd lets through only the project's %d tools", len(p.MCP.Tools)).with("tools", len(p.MCP.Tools))
	}
	var why []string
	hint := "take the other project's tools out of tools: (`abox mcp add SERVER --tool NAME` replaces a narrowing), " +
		"or move the project to a profile of its own"
	if len(unlisted) > 0 {
		why = append(why, fmt.Sprintf("netd lets any tool name through (%s has no known tool list)", strings.Join(unlisted, ", ")))
		hint = fmt.Sprintf("narrow %s with `abox mcp add %s --tool NAME`, list its tools in custom-servers.yaml, "+
			"or move the project to a profile of its own", unlisted[0], unlisted[0])
	}
	if borrowed == nil {
		borrowed = map[string]string{}
	}
	for _, t := range slices.Sorted(maps.Keys(borrowed)) {
		why = append(why, fmt.Sprintf("tools: lets through %s, a tool of %s", termtext.Line(t), borrowed[t]))
	}
	return failf(hint, "%s, and the %s gateway also serves %s, so the agent can call tools of other projects",
		strings.Join(why, "; "), profile, strings.Join(foreign, ", ")).
		with("unlisted", unlisted).with("borrowed", borrowed).with("foreign", foreign).with("declared_by", l.Owners)
}
