package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// Claude Code inside the sandbox: the settings that wrap its commands, the hook rtk adds, the
// switches of its environment, and what it keeps from one run to the next. All of it is read
// from the rendered artifacts, which are what runs.

// claudeSettings is the part of the rendered settings.json doctor reads.
type claudeSettings struct {
	HooksOnly       bool              `json:"allowManagedHooksOnly"`
	PermissionsOnly bool              `json:"allowManagedPermissionRulesOnly"`
	Env             map[string]string `json:"env"`
	Sandbox         struct {
		Enabled *bool `json:"enabled"`
	} `json:"sandbox"`
	Hooks map[string][]struct {
		Matcher string `json:"matcher"`
		Hooks   []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		} `json:"hooks"`
	} `json:"hooks"`
}

// rtkHook is the one hook abox renders: rtk before every Bash command.
const rtkHook = render.RTKPath + " hook claude"

func (e *Env) claudeSettings() (*claudeSettings, error) {
	data, err := e.artifactFile(render.AgentDir + "/settings.json")
	if err != nil {
		return nil, err
	}
	var s claudeSettings
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("settings.json does not decode: %w", err)
	}
	return &s, nil
}

// hooks lists the settings' hooks as "Event/matcher: command".
func (s *claudeSettings) hooks() []string {
	var out []string
	for _, event := range slices.Sorted(maps.Keys(s.Hooks)) {
		for _, m := range s.Hooks[event] {
			for _, h := range m.Hooks {
				out = append(out, event+"/"+m.Matcher+": "+h.Command)
			}
		}
	}
	return out
}

// rtkOn reports whether the settings hold rtk's hook.
func (s *claudeSettings) rtkOn() bool { return slices.Contains(s.hooks(), "PreToolUse/Bash: "+rtkHook) }

// agentClaudeSettings: Claude Code reads abox's settings.json both with --settings and, bound
// read-only, as managed settings, which keep every hook and permission rule the agent could
// write elsewhere (its ~/.claude volume, the workspace) out; its own sandbox is off, since abox
// is the boundary; and the only hook is rtk's, with rtk installed and checksummed in the image.
func agentClaudeSettings(_ context.Context, e *Env) Finding {
	s, err := e.sandboxArgs()
	if err != nil {
		return notRendered(err)
	}
	set, err := e.claudeSettings()
	if err != nil {
		return failf("run `abox render`", "%v", err)
	}
	var bad []string
	if v := flagValue(s.rs.Agent.Command, "--settings"); v != render.AgentArtifacts+"/settings.json" {
		bad = append(bad, fmt.Sprintf("claude gets --settings %q", v))
	}
	if !slices.ContainsFunc(s.agent.mounts, func(m mountArg) bool { return m.target == render.ManagedSettings && m.readOnly }) {
		bad = append(bad, "settings.json is not bound read-only at "+render.ManagedSettings)
	}
	if !set.HooksOnly || !set.PermissionsOnly {
		bad = append(bad, "hooks and permission rules of other settings scopes are not shut out")
	}
	if set.Sandbox.Enabled == nil || *set.Sandbox.Enabled {
		bad = append(bad, "Claude Code's own sandbox is not switched off (it cannot start without capabilities)")
	}
	for _, h := range set.hooks() {
		if h != "PreToolUse/Bash: "+rtkHook {
			bad = append(bad, "unexpected hook "+h)
		}
	}
	if set.rtkOn() && e.rtkInstall() == "" {
		bad = append(bad, "rtk's hook is rendered but the Dockerfile does not install a checksummed rtk")
	}
	detail := "managed and read-only: only abox's hooks and permission rules apply; Claude Code's sandbox off (the container is the boundary)"
	if set.rtkOn() {
		detail += "; rtk hooks every Bash command"
	}
	return problems(bad, invariantHint, detail).with("rtk", set.rtkOn())
}

var (
	rtkFileRe    = regexp.MustCompile(`(?m)^COPY rtk ` + regexp.QuoteMeta(render.RTKPath) + `$`)
	rtkNativeRe  = regexp.MustCompile(`releases/download/v([0-9A-Za-z.+-]+)/rtk-`)
	rtkSHA256Re  = regexp.MustCompile(`echo "([0-9a-f]{64})  (?:/tmp/rtk\.tar\.gz|` + regexp.QuoteMeta(render.RTKPath) + `)" \| sha256sum -c -`)
	truthyValues = []string{"1", "true", "yes", "on"}
)

// rtkInstall describes how the rendered Dockerfile installs rtk ("0.43.0 from its release,
// sha256 0123456789ab…"), or "" when it does not install a checksummed rtk.
func (e *Env) rtkInstall() string {
	data, err := e.artifactFile(render.AgentDockerfile)
	if err != nil {
		return ""
	}
	sum := rtkSHA256Re.FindSubmatch(data)
	if sum == nil {
		return ""
	}
	short := string(sum[1][:12]) + "…"
	switch v := rtkNativeRe.FindSubmatch(data); {
	case v != nil:
		return fmt.Sprintf("%s from its release, sha256 %s", v[1], short)
	case rtkFileRe.Match(data):
		return "from a local file, sha256 " + short
	}
	return ""
}

// rtkRisk: rtk is another program in the agent's command path, off unless asked for.
func (e *Env) rtkRisk() Risk {
	r := Risk{ID: "risk.rtk-hook", Title: "rtk in the agent's command path", Data: map[string]any{"enabled": false},
		Detail: "off: no hook wraps the agent's commands", Hint: "nothing to do; rtk.enabled in config.yaml turns it on"}
	set, err := e.claudeSettings()
	if err != nil || !set.rtkOn() {
		return r
	}
	install := e.rtkInstall()
	r.Applies, r.Data = true, map[string]any{"enabled": true, "install": install}
	r.Detail = fmt.Sprintf("rtk %s runs before every Bash command as a PreToolUse hook (read-only managed settings): "+
		"it sees each command and its output, and what it returns is what the model reads", install)
	r.Hint = "it is third-party code trusted like Claude Code itself; set rtk.enabled: false in config.yaml, then `abox up`, to take it out"
	return r
}

// switchHosts are the hosts each of Claude Code's switches keeps it from reaching.
var switchHosts = map[string][]string{
	"DISABLE_AUTOUPDATER":                      {"downloads.claude.ai"},
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": {"http-intake.logs.us5.datadoghq.com", "http-intake.logs.datadoghq.com"},
	"ENABLE_CLAUDEAI_MCP_SERVERS":              {config.ConnectorsHost},
}

// switchOff reports whether value keeps the switch's traffic off: DISABLE_* and the
// non-essential-traffic switch are off when truthy, the connectors switch when not.
func switchOff(name, value string) bool {
	truthy := slices.Contains(truthyValues, strings.ToLower(value))
	if name == "ENABLE_CLAUDEAI_MCP_SERVERS" {
		return !truthy
	}
	return truthy
}

// agentEnvRisk: agent_env can switch back on what abox switches off, and can hand the agent a
// credential in plain text; each override is stated with the host it needs.
func (e *Env) agentEnvRisk() Risk {
	r := Risk{ID: "risk.agent-env", Title: "claude code's environment",
		Detail: "abox's defaults hold: auto-updater, non-essential traffic and claude.ai connectors off",
		Hint:   "nothing to do", Data: map[string]any{"overrides": []string{}}}
	s, err := e.sandboxArgs()
	if err != nil {
		r.Detail = "not rendered: cannot tell"
		return r
	}
	env := map[string]string{}
	for _, kv := range s.agent.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	allowed := map[string]bool{}
	if p, err := e.netdPolicy(); err == nil {
		for _, h := range p.Egress {
			allowed[h] = true
		}
	}
	var parts, overrides, hints []string
	for _, k := range slices.Sorted(maps.Keys(switchHosts)) {
		if switchOff(k, env[k]) || (k == "ENABLE_CLAUDEAI_MCP_SERVERS" && s.rs.Connectors) {
			continue
		}
		overrides = append(overrides, k+"="+env[k])
		var missing []string
		for _, h := range switchHosts[k] {
			if !allowed[h] {
				missing = append(missing, h)
			}
		}
		part := fmt.Sprintf("%s=%s needs %s", k, env[k], strings.Join(switchHosts[k], ", "))
		if k == "ENABLE_CLAUDEAI_MCP_SERVERS" {
			part += ", outside run.connectors (--strict-mcp-config is still passed)"
			hints = append(hints, "use run.connectors in agentbox.yaml for claude.ai connectors")
		}
		if len(missing) > 0 {
			part += " (not allowed: refused and queued for review)"
			hints = append(hints, "add "+strings.Join(missing, ", ")+" to defaults.egress_mandatory")
		}
		parts = append(parts, part)
	}
	var creds []string
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"} {
		if env[k] != "" && env[k] != policy.CredentialPlaceholder { // the placeholder is worth nothing
			creds = append(creds, k)
		}
	}
	if len(creds) > 0 {
		// agent_env reaches the agent as --env KEY=VALUE in its docker argv (render's
		// containerArgs), so the value is written wherever that argv is: runspec.json (the
		// rendered argv), each run's argv.json (the sandbox's record of what it ran) and the
		// `+ docker create …` line --verbose prints (docker.Client's trace). Attached secrets
		// travel in an env file on stdin instead, and appear in none of them.
		parts = append(parts, strings.Join(creds, ", ")+" from agent_env: a credential in plain text in config.yaml, "+
			"and from there in runspec.json, in each run's argv.json and in the docker argv that --verbose prints")
		hints = append(hints, "attach it with `abox secrets attach` instead")
	}
	r.Data = map[string]any{"overrides": overrides, "credentials": creds}
	if len(parts) == 0 {
		return r
	}
	r.Applies, r.Detail = true, "agent_env overrides: "+strings.Join(parts, "; ")
	r.Hint = strings.Join(slices.Compact(hints), "; ") + "; or remove the override from agent_env in config.yaml; then `abox up`"
	return r
}

// persistenceRisk: the ~/.claude volume is all that outlives a run, and the agent writes it.
func (e *Env) persistenceRisk() Risk {
	vol := render.ClaudeVolume(e.Project.Hash)
	r := Risk{ID: "risk.agent-persistence", Title: "what the agent keeps between runs", Applies: true,
		Detail: fmt.Sprintf("%s (%s, and %s linked into it) keeps the login, sessions, memory (CLAUDE.md), commands, agents "+
			"and skills for this project's later runs; the agent writes all of it, so one run can leave instructions for "+
			"the next (hooks and permission rules there are ignored); the rest of its home starts fresh each run",
			vol, render.AgentClaudeDir, render.ClaudeJSON),
		Hint: "look at it from `abox shell` after a run you doubt; `abox nuke` removes the volume, and the login with it",
		Data: map[string]any{"volume": vol, "paths": []string{render.AgentClaudeDir, render.ClaudeJSON}}}
	if caches := e.cacheVolumes(); len(caches) > 0 {
		var names []string
		for _, c := range caches {
			names = append(names, c.source+" at "+c.target)
		}
		r.Detail += fmt.Sprintf("; the toolchain caches (mounts.caches) keep what its installs and builds wrote — packages, "+
			"modules, build outputs — and later runs use them again, unchecked: %s", strings.Join(names, ", "))
		r.Hint += "; drop mounts.caches, or `abox nuke`, to start the caches empty"
		r.Data["caches"] = names
	}
	return r
}

// cacheVolumes are the agent's toolchain cache volumes, as runspec.json mounts them.
func (e *Env) cacheVolumes() []mountArg {
	s, err := e.sandboxArgs()
	if err != nil {
		return nil
	}
	var out []mountArg
	for _, m := range s.agent.mounts {
		if m.typ == "volume" && strings.HasPrefix(m.source, "abox-cache-") {
			out = append(out, m)
		}
	}
	return out
}
