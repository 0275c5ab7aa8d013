package render

import "github.com/aboxhq/abox/internal/config"

// MCPServerName is the one server of the agent's mcp.json. Claude Code names each of its tools
// mcp__<server>__<tool>, so every tool the agent sees is mcp__abox__<tool>.
const MCPServerName = "abox"

// mcpJSON renders the agent's mcp.json: one HTTP server, netd's forwarder on loopback, with no
// Authorization header. The credential is added by netd, which the agent cannot read.
func (m *model) mcpJSON() []byte {
	type server struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	servers := map[string]server{}
	if len(m.m.DeclaredServers()) > 0 {
		servers[MCPServerName] = server{Type: "http", URL: mcpURL}
	}
	b, err := marshalJSON(map[string]any{"mcpServers": servers})
	if err != nil {
		panic(err) // plain data
	}
	return b
}

// settingsJSON renders Claude Code's settings for the agent. The one file, in the read-only
// artifacts directory, is read twice: as command-line settings (claude --settings) and, bound
// read-only at [ManagedSettings], as managed settings — the one scope nothing overrides.
//
// Every other scope is the agent's to write: user settings live in the ~/.claude volume, project
// and local settings in /workspace. Rule lists and hooks merge across scopes, so without the
// managed scope a run could plant allow rules, hooks or `disableAllHooks` there for the next
// run. As managed settings, allowManagedHooksOnly and allowManagedPermissionRulesOnly make
// Claude Code ignore every hook and permission rule but these, and the scalars set here (the
// sandbox, the switches in env) win over any other scope. Deny rules would not do it: they bind
// Claude's own file tools, not a shell command writing the same file.
//
// Claude Code's own sandbox is off: it needs user namespaces, which a container with no
// capabilities cannot create, and abox's container and netd are the boundary.
func (m *model) settingsJSON() []byte {
	settings := map[string]any{
		"allowManagedHooksOnly":           true,
		"allowManagedPermissionRulesOnly": true,
		"env":                             m.claudeSwitches(),
		"sandbox":                         map[string]any{"enabled": false},
	}
	if m.c.RTK.Enabled {
		settings["hooks"] = map[string]any{
			"PreToolUse": []any{map[string]any{
				"matcher": "Bash",
				"hooks":   []any{map[string]any{"type": "command", "command": RTKPath + " hook claude"}},
			}},
		}
	}
	b, err := marshalJSON(settings)
	if err != nil {
		panic(err) // plain data
	}
	return b
}

// claudeSwitches are the agent environment's values of the variables that switch off Claude
// Code's auto-updater, non-essential traffic and claude.ai connectors (after agent_env and
// run.connectors). The settings repeat them because settings env overrides the process's own:
// a user settings file in the volume could otherwise switch them back on for the next run.
func (m *model) claudeSwitches() map[string]string {
	env := m.agentEnv()
	out := map[string]string{}
	for k := range config.DefaultAgentEnv() {
		out[k] = env[k]
	}
	// In injected mode the forwarder and the placeholder are fixed here too, so a settings file
	// in the volume cannot point Claude Code elsewhere.
	for k, v := range m.injectedEnv() {
		out[k] = v
	}
	return out
}
