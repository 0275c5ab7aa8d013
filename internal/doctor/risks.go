package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/docker"
	"github.com/aboxhq/abox/internal/render"
)

// Risk is a residual risk: known, not prevented, and stated on every run with what this
// machine shows, so the sandbox never looks tighter than it is.
type Risk struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Applies is false when this machine shows the risk does not stand for the project (no MCP
	// server declared, no secret attached, connectors off); it is still stated.
	Applies bool           `json:"applies"`
	Detail  string         `json:"detail"`
	Hint    string         `json:"hint"`
	Data    map[string]any `json:"data"`
}

// Risks states the residual risks of the project's sandbox.
func Risks(ctx context.Context, e *Env) []Risk {
	domains := e.allowedCount()
	return []Risk{
		e.mcpEgressRisk(),
		e.gatewayRisk(ctx),
		e.credentialRisk(domains),
		e.secretsRisk(domains),
		e.secretsStoreRisk(ctx),
		e.connectorsRisk(),
		e.workspaceRisk(),
		e.persistenceRisk(),
		e.agentEnvRisk(),
		e.rtkRisk(),
	}
}

// allowedCount is the number of allowlist entries netd enforces, or -1 when unknown.
func (e *Env) allowedCount() int {
	if p, err := e.netdPolicy(); err == nil {
		return len(p.Egress)
	}
	return -1
}

func domainsText(n int) string {
	if n < 0 {
		return "any allowed domain"
	}
	return fmt.Sprintf("any of the %d allowed domains", n)
}

// mcpEgressRisk: MCP servers run in the gateway's containers, outside netd's policy; only
// --network none (server_network: none) closes it, per server.
func (e *Env) mcpEgressRisk() Risk {
	r := Risk{ID: "risk.mcp-egress", Title: "mcp tool egress", Applies: true,
		Hint: "set server_network: none for every server that needs no internet, then run `abox up`"}
	pol, err := e.netdPolicy()
	if err != nil || pol.MCP == nil {
		r.Detail, r.Data, r.Applies = "no MCP server declared: no tool can reach the network", map[string]any{}, false
		return r
	}
	reg, _ := e.renderedCatalog()
	var network, none, remote []string
	for _, s := range pol.MCP.Servers {
		entry := reg[s]
		switch {
		case entry["type"] == "remote":
			url, _ := entry["remote"].(map[string]any)
			remote = append(remote, fmt.Sprintf("%s (%v)", s, url["url"]))
		case entry["disableNetwork"] == true:
			none = append(none, s)
		default:
			network = append(network, s)
		}
	}
	var parts []string
	if len(network) > 0 {
		verb := "have"
		if len(network) == 1 {
			verb = "has"
		}
		parts = append(parts, fmt.Sprintf("%s %s network outside netd's policy: a tool call carrying a URL reaches it", strings.Join(network, ", "), verb))
	}
	if len(none) > 0 {
		parts = append(parts, strings.Join(none, ", ")+" run with --network none")
	}
	if len(remote) > 0 {
		parts = append(parts, "remote, reached by the gateway: "+strings.Join(remote, ", "))
	}
	r.Detail, r.Applies = strings.Join(parts, "; "), len(network)+len(remote) > 0
	r.Data = map[string]any{"network": network, "network_none": none, "remote": remote}
	return r
}

// gatewayRisk: the gateway mounts docker.sock; abox pins it and cannot audit it.
func (e *Env) gatewayRisk(ctx context.Context) Risk {
	name := render.GatewayName(e.profile())
	r := Risk{ID: "risk.gateway-trusted", Title: "the gateway is trusted code", Applies: true, Data: map[string]any{"container": name},
		Hint: "keep it pinned; review the diff before `abox gateway update`"}
	if !e.needsGateway() {
		r.Detail, r.Applies = "no MCP server declared: the agent reaches no gateway", false
		return r
	}
	image := "its pinned image"
	if e.Config != nil {
		image = e.Config.Gateway.Image
	}
	r.Detail = fmt.Sprintf("%s runs %s with the docker socket: one parsing bug on a request netd forwards is root on the host", name, image)
	if c, _, err := e.gateway(ctx); err == nil {
		sock := slices.ContainsFunc(c.Mounts, func(m docker.MountPoint) bool { return dockerSocket(m.Type, m.Source, m.Destination) })
		r.Data["running"], r.Data["docker_sock"] = c.State.Running, sock
	}
	return r
}

// credentialRisk: the agent can read its project's Claude credential; with connectors on, the
// credential reaches whatever the account's connectors reach.
func (e *Env) credentialRisk(domains int) Risk {
	vol := render.ClaudeVolume(e.Project.Hash)
	if pol, err := e.netdPolicy(); err == nil && pol.Model != nil {
		secret := ""
		if e.Config != nil {
			secret = e.Config.ClaudeCode.Credential
		}
		tools := "server tools (web search, web fetch, code execution, MCP servers) are refused: the API's servers reach no host for the agent"
		serverTools := config.ServerToolsRefuse
		if pol.Model.ServerTools {
			tools = "server tools are allowed (claude_code.server_tools: allow): through web search, web fetch, code execution and MCP servers, " +
				"the API's servers reach hosts past the allowlist for the agent, absent from netd's logs"
			serverTools = config.ServerToolsAllow
		}
		return Risk{ID: "risk.claude-credential", Title: "the agent can spend the claude credential", Applies: true,
			Detail: fmt.Sprintf("injected: netd holds the credential (secret %q) and adds it to the agent's model requests to %s; "+
				"the agent can spend the credential through netd while it runs, and cannot take it away (it holds a placeholder); %s",
				secret, pol.Model.Upstream, tools),
			Hint: "`abox logs --runs` shows what each run spent; if " + vol + " still holds an earlier login, log it out in `abox shell` (`claude /logout`)",
			Data: map[string]any{"mode": "injected", "secret": secret, "upstream": pol.Model.Upstream, "volume": vol, "server_tools": serverTools}}
	}
	r := Risk{ID: "risk.claude-credential", Title: "the agent holds a claude credential", Applies: true,
		Detail: fmt.Sprintf("%s is mounted at %s, readable by the agent, which can send it to %s", vol, render.AgentClaudeDir, domainsText(domains)),
		Hint: "keep the allowlist tight (`abox egress list`), or let netd inject the credential (claude_code.credential); " +
			"the volume is per project, so a compromise yields this project's session only",
		Data: map[string]any{"mode": "login-volume", "volume": vol, "allowed_domains": domains, "connectors": e.connectorsOn()}}
	if e.connectorsOn() {
		r.Detail += "; with run.connectors on, it also reaches whatever the account's claude.ai connectors reach, " +
			"through " + config.ConnectorsHost + " and absent from `abox logs --gateway`"
	}
	return r
}

// connectorsOn reports whether the rendered runspec turns claude.ai connectors on.
func (e *Env) connectorsOn() bool {
	rs, err := e.runSpec()
	return err == nil && rs.Connectors
}

// secretsRisk: attached secrets are the agent's to read and send.
func (e *Env) secretsRisk(domains int) Risk {
	att := e.attachedSecrets()
	r := Risk{ID: "risk.env-secrets", Title: "attached secrets", Applies: len(att) > 0, Data: map[string]any{"attached": att},
		Hint: "`abox secrets detach <ENV>` takes one back; the egress allowlist is their only boundary"}
	if len(att) == 0 {
		r.Detail = "none attached: the agent's environment holds no secret"
		return r
	}
	r.Detail = fmt.Sprintf("%d attached: %s; the agent can read them and send them to %s, and they show in `docker inspect`",
		len(att), strings.Join(att, ", "), domainsText(domains))
	return r
}

// connectorsRisk: claude.ai connectors are a second MCP path that abox does not mediate.
func (e *Env) connectorsRisk() Risk {
	r := Risk{ID: "risk.connectors", Title: "claude.ai connectors",
		Hint: "set run.connectors: false in agentbox.yaml, then `abox up`"}
	on := e.connectorsOn()
	r.Data, r.Applies = map[string]any{"connectors": on}, on
	if on {
		r.Detail = "on: a second MCP path beside netd's forwarder — the account's connectors, through " + config.ConnectorsHost +
			", neither mediated nor logged by abox; without --strict-mcp-config Claude Code also reads MCP servers from files the agent can write (they run as the agent)"
	} else {
		r.Detail = "off: no second MCP path"
		r.Hint = "nothing to do; they stay off unless run.connectors is set"
	}
	return r
}

// workspaceRisk: /workspace is a live bind; what the agent writes runs elsewhere later.
func (e *Env) workspaceRisk() Risk {
	_, masks := e.watchPatterns()
	patterns := e.watchScope().Patterns
	return Risk{ID: "risk.workspace-live", Title: "/workspace is live", Applies: true,
		Detail: fmt.Sprintf("%s is bound read-write: files the agent writes run later in CI, make, editors; %d pattern(s) watched (each run reports what it changed, after the fact), %d masked",
			e.Project.Workspace, len(patterns), len(masks)),
		Hint: "add paths you can spare to mounts.mask; `abox doctor` reports changes to watched ones",
		Data: map[string]any{"workspace": e.Project.Workspace, "watched": patterns, "masked": masks}}
}
