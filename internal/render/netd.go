package render

import (
	"fmt"
	"slices"
	"sort"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/policy"
)

// mcpURL is the agent's only MCP endpoint: netd's forwarder on loopback, which adds the gateway
// credential the agent never holds.
var mcpURL = fmt.Sprintf("http://127.0.0.1:%d/mcp", policy.MCPPort)

// netdPolicy renders netd.json.
func (m *model) netdPolicy() []byte {
	entries, mandatory := m.egressList()
	p := &policy.Netd{
		Version:      policy.Version,
		Project:      m.m.Project,
		Egress:       entries,
		Mandatory:    mandatory,
		DefaultPorts: append([]int{}, m.c.EgressPorts...),
		MCP:          m.mcpPolicy(),
		Resolvers:    append([]string{}, m.s.Resolvers...),
		LogLimit:     m.c.Limits.NetdLogBytes(),
	}
	if m.c.ClaudeCode.Injected() {
		p.Model = &policy.ModelAPI{Upstream: m.c.ClaudeCode.Upstream(), ServerTools: m.c.ClaudeCode.AllowsServerTools()}
	}
	if uid := m.netdUID(); uid != policy.NetdUID {
		p.NetdUID = uid
	}
	if len(p.Resolvers) == 0 {
		p.Resolvers = nil
	}
	if p.Egress == nil {
		p.Egress = []string{}
	}
	if p.Mandatory == nil {
		p.Mandatory = []string{}
	}
	return p.Marshal()
}

// mcpPolicy is the forwarder's configuration, or nil when the project declares no server.
func (m *model) mcpPolicy() *policy.MCP {
	servers := m.m.DeclaredServers()
	if len(servers) == 0 {
		return nil
	}
	port := m.c.Profiles[m.m.Profile].Port
	p := &policy.MCP{
		Upstream: fmt.Sprintf("http://%s:%d/mcp", GatewayName(m.m.Profile), port),
		Servers:  servers,
		Tools:    map[string]string{},
	}
	for _, server := range servers {
		tools, known := m.serverTools(server)
		if !known {
			p.Unlisted = true
			if prefix := m.catalogPrefix(server); prefix != "" {
				if p.Prefixes == nil {
					p.Prefixes = map[string]string{}
				}
				p.Prefixes[server] = prefix
			}
		}
		for _, t := range tools {
			p.Tools[t] = server
		}
	}
	return p
}

// catalogPrefix is the prefix the catalog entry of server gives its tools, "" for none. A
// custom server shadows a catalog entry of the same name and has no prefix.
func (m *model) catalogPrefix(server string) string {
	if _, custom := m.s.Custom[server]; custom || m.s.Catalog == nil {
		return ""
	}
	e, _ := m.s.Catalog.Server(server)
	return e.Prefix
}

// serverTools returns the tools the project may use from server; see [ServerTools].
func (m *model) serverTools(server string) (tools []string, known bool) {
	return ServerTools(server, m.m.Tools, m.s.Custom, m.s.Catalog)
}

// ServerTools returns the tools a project may use from server: its narrowing (narrowing[server])
// if any, else the tools custom-servers.yaml or the catalog documents. known is false when none
// says: netd then cannot tell that server's tools from any other's, and lets every tool name it
// does not know through ([policy.MCP.Unlisted]). That is safe only while the profile's gateway
// serves nothing but the project's own servers, which abox checks where it sees the profile's
// union (`gateway up`, the run's preflight) with the same answer from this function.
func ServerTools(server string, narrowing map[string][]string, custom config.CustomServers, cat Catalog) (tools []string, known bool) {
	if narrowed, ok := narrowing[server]; ok {
		return narrowed, true
	}
	if cs, ok := custom[server]; ok {
		// "*" anywhere in the list means every tool, as in the gateway's --tools grammar.
		if len(cs.Tools) == 0 || slices.Contains(cs.Tools, "*") {
			return nil, false
		}
		return cs.Tools, true
	}
	if cat != nil {
		if e, ok := cat.Server(server); ok && len(e.Tools) > 0 {
			t := append([]string{}, e.Tools...)
			sort.Strings(t)
			return t, true
		}
	}
	return nil, false
}

// ruleset renders netpolicy.nft. It depends on no project value but netd's uid, which differs
// from the agent's: the allowlist lives in netd.json, so `abox egress add` never needs a new
// ruleset, and the loaded one can be compared with a baseline from the netd image.
func (m *model) ruleset() []byte { return policy.Ruleset(m.netdUID()) }

// netdUID is the uid of netd's serving process beside this project's agent.
func (m *model) netdUID() int { return policy.NetdUIDFor(m.s.agent().UID) }
