package render_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// claudeSettings is the part of settings.json the tests read.
type claudeSettings struct {
	HooksOnly       *bool             `json:"allowManagedHooksOnly"`
	PermissionsOnly *bool             `json:"allowManagedPermissionRulesOnly"`
	Env             map[string]string `json:"env"`
	Sandbox         struct {
		Enabled *bool `json:"enabled"`
	} `json:"sandbox"`
	Hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type, Command string
		} `json:"hooks"`
	} `json:"hooks"`
}

// checkSettings requires settings.json to be the agent's managed settings as well as its
// command-line settings: bound read-only at the managed path, keeping only its own hooks and
// permission rules, Claude Code's sandbox off, the switches of the agent's environment repeated,
// and rtk's hook exactly when rtk is on.
func checkSettings(t *testing.T, arts []render.Artifact, rtk, injected bool) {
	t.Helper()
	var s claudeSettings
	if err := json.Unmarshal(artifactData(t, arts, render.AgentDir+"/settings.json"), &s); err != nil {
		t.Fatalf("settings.json: %v", err)
	}
	if s.Sandbox.Enabled == nil || *s.Sandbox.Enabled {
		t.Error("settings.json does not set sandbox.enabled to false")
	}
	if s.HooksOnly == nil || !*s.HooksOnly || s.PermissionsOnly == nil || !*s.PermissionsOnly {
		t.Error("settings.json does not keep hooks and permission rules to the managed scope")
	}
	rs := runSpecOf(t, arts)
	env := map[string]string{}
	for _, kv := range flagValues(rs.Agent.Args, "--env") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k := range config.DefaultAgentEnv() {
		if got, ok := s.Env[k]; !ok || got != env[k] {
			t.Errorf("settings env %s = %q, the agent's environment %q", k, got, env[k])
		}
	}
	want := len(config.DefaultAgentEnv())
	if injected {
		want += 2 // the forwarder and the placeholder, which checkCredential checks
	}
	if len(s.Env) != want {
		t.Errorf("settings env %v holds more than the switches", s.Env)
	}
	hooked := len(s.Hooks) == 1 && len(s.Hooks["PreToolUse"]) == 1 && s.Hooks["PreToolUse"][0].Matcher == "Bash" &&
		len(s.Hooks["PreToolUse"][0].Hooks) == 1 && s.Hooks["PreToolUse"][0].Hooks[0].Command == render.RTKPath+" hook claude"
	if rtk != hooked || (!rtk && s.Hooks != nil) {
		t.Errorf("settings hooks %+v with rtk %v", s.Hooks, rtk)
	}
	managed := "target=" + render.ManagedSettings + ",readonly"
	var found bool
	for _, m := range flagValues(rs.Agent.Args, "--mount") {
		if strings.Contains(m, render.ManagedSettings) {
			found = strings.HasSuffix(m, "/"+render.AgentDir+"/settings.json,"+managed) && strings.HasPrefix(m, "type=bind,")
		}
	}
	if !found {
		t.Errorf("the agent does not bind settings.json read-only at %s", render.ManagedSettings)
	}
}

// TestConnectorsArgv: run.connectors changes exactly the connectors switch, --strict-mcp-config
// and the connectors host, nothing else of either container.
func TestConnectorsArgv(t *testing.T) {
	off := loadSpec(t, "minimal")
	on := loadSpec(t, "minimal")
	on.Manifest.Run.Connectors = true
	rsOff, rsOn := runSpecOf(t, mustRender(t, off)), runSpecOf(t, mustRender(t, on))
	if diff := cmp.Diff(rsOff.Netd.Argv(), rsOn.Netd.Argv()); diff != "" {
		t.Errorf("netd argv changed with connectors (-off +on):\n%s", diff)
	}
	swap := func(a []string) []string {
		out := slices.Clone(a)
		for i, v := range out {
			if v == "ENABLE_CLAUDEAI_MCP_SERVERS=false" {
				out[i] = "ENABLE_CLAUDEAI_MCP_SERVERS=true"
			}
		}
		return slices.DeleteFunc(out, func(v string) bool { return v == "--strict-mcp-config" })
	}
	if !slices.Contains(rsOff.Agent.Command, "--strict-mcp-config") || slices.Contains(rsOn.Agent.Command, "--strict-mcp-config") {
		t.Errorf("--strict-mcp-config: off %q, on %q", rsOff.Agent.Command, rsOn.Agent.Command)
	}
	if !slices.Contains(rsOn.Agent.Args, "ENABLE_CLAUDEAI_MCP_SERVERS=true") {
		t.Errorf("connectors on: agent env lacks ENABLE_CLAUDEAI_MCP_SERVERS=true: %q", rsOn.Agent.Args)
	}
	if diff := cmp.Diff(swap(rsOff.Agent.Argv()), rsOn.Agent.Argv()); diff != "" {
		t.Errorf("agent argv differs in more than the connectors switch (-off, switched +on):\n%s", diff)
	}
	hosts := func(s render.Spec) []string {
		var p policy.Netd
		if err := json.Unmarshal(artifactData(t, mustRender(t, s), render.NetdDir+"/"+policy.File), &p); err != nil {
			t.Fatal(err)
		}
		return p.Egress
	}
	if got := hosts(on); !slices.Contains(got, config.ConnectorsHost) || slices.Contains(hosts(off), config.ConnectorsHost) {
		t.Errorf("egress with connectors %q, want %s only then", got, config.ConnectorsHost)
	}
}
