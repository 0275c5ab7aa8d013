package render

// mcpJSON renders the agent's mcp.json: one HTTP server, netd's forwarder on loopback, with no
// Authorization header. The credential is added by netd, which the agent cannot read.
func (m *model) mcpJSON() []byte {
	type server struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	servers := map[string]server{}
	if len(m.m.DeclaredServers()) > 0 {
		servers["abox"] = server{Type: "http", URL: mcpURL}
	}
	b, err := marshalJSON(map[string]any{"mcpServers": servers})
	if err != nil {
		panic(err) // plain data
	}
	return b
}

// settingsJSON renders the settings passed with claude --settings from the read-only artifacts
// directory, so the agent cannot edit the hooks and permissions that wrap its own commands.
// Claude Code's own sandbox is switched off: it needs user namespaces, which a container with
// no capabilities cannot create, and abox's container and netd are the boundary.
func (m *model) settingsJSON() []byte {
	settings := map[string]any{
		"sandbox": map[string]any{"enabled": false},
	}
	if m.c.RTK.Enabled {
		settings["hooks"] = map[string]any{
			"PreToolUse": []any{map[string]any{
				"matcher": "Bash",
				"hooks":   []any{map[string]any{"type": "command", "command": "/usr/local/bin/rtk hook claude"}},
			}},
		}
	}
	b, err := marshalJSON(settings)
	if err != nil {
		panic(err) // plain data
	}
	return b
}
