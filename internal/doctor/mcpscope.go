package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/aboxhq/abox/internal/gateway"
)

// gatewayProjectScope: the agent can call only this project's tools. The profile's gateway
// serves every project of the profile, and netd narrows it by tool name. With a declared server
// whose tools nobody lists (an Unlisted netd policy) netd lets every name through, which is
// safe only while the gateway serves nothing but this project's servers, by the profile's
// registry (what `gateway up` starts) and by the running gateway's own --servers.
func gatewayProjectScope(ctx context.Context, e *Env) Finding {
	p, err := e.netdPolicy()
	if err != nil {
		return notRendered(err)
	}
	if p.MCP == nil {
		return skipf("", "the project declares no MCP server")
	}
	if !p.MCP.Unlisted {
		return okf("netd lets through only the project's %d tools", len(p.MCP.Tools)).with("tools", len(p.MCP.Tools))
	}
	unlisted := gateway.UnlistedServers(p.MCP)
	profile := e.profile()
	reg, err := gateway.LoadRegistry(e.Paths.Gateway(profile), profile)
	if err != nil {
		return failf("fix or remove the registry; `abox up` in each project of the profile binds it again", "%v", err)
	}
	serving := reg.Union().All()
	if e.daemonUp(ctx) {
		if c, _, err := e.gateway(ctx); err == nil {
			serving = append(serving, gateway.ServersOf(c)...)
		}
	}
	foreign := gateway.ForeignServers(p.MCP.Servers, serving)
	if len(foreign) == 0 {
		return okf("netd lets any tool name through (%s has no known tool list), but the %s gateway serves only this project's servers",
			strings.Join(unlisted, ", "), profile).with("unlisted", unlisted)
	}
	hint := fmt.Sprintf("narrow %s with `abox mcp add %s --tool NAME`, list its tools in custom-servers.yaml, "+
		"or move the project to a profile of its own", unlisted[0], unlisted[0])
	return failf(hint, "netd lets any tool name through (%s has no known tool list), and the %s gateway also serves %s, "+
		"so the agent can call tools of other projects", strings.Join(unlisted, ", "), profile, strings.Join(foreign, ", ")).
		with("unlisted", unlisted).with("foreign", foreign).with("declared_by", reg.Declaring(foreign))
}
