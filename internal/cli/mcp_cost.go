package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/termtext"
)

// toolCost is one tool the agent sees and what its definition costs.
type toolCost struct {
	Tool   string `json:"tool"`
	Server string `json:"server"` // as netd logs it ([policy.MCP.Allows]); "?" if several could provide it
	Tokens int    `json:"tokens"` // the whole definition: per turn when sent upfront, per load when deferred
	// NameTokens is what its name costs per turn while deferred.
	NameTokens int `json:"name_tokens"`
	// AlwaysLoad is set when the tool asks Claude Code never to defer it (_meta
	// "anthropic/alwaysLoad"): its whole definition then costs every turn.
	AlwaysLoad bool `json:"always_load,omitempty"`
}

// serverCost sums a server's tools.
type serverCost struct {
	Server     string  `json:"server"`
	Tools      int     `json:"tools"`
	Tokens     int     `json:"tokens"`
	NameTokens int     `json:"name_tokens"` // of its deferrable tools
	Share      float64 `json:"share"`
	Narrowed   bool    `json:"narrowed"`
	toolNames  []string
}

// costReport is `mcp cost --json`.
type costReport struct {
	// Total is every definition: the per-turn cost when Claude Code sends them all upfront.
	Total int `json:"total_tokens"`
	// Names is the per-turn cost of the deferred tools' names, and Upfront that of the
	// definitions sent even when the rest are deferred (always-load tools).
	Names   int `json:"names_tokens"`
	Upfront int `json:"always_load_tokens"`
	// PerTurn is what the configured Claude Code sends on every turn: Names+Upfront when it
	// defers, Total when it does not.
	PerTurn int          `json:"per_turn_tokens"`
	Client  clientCost   `json:"client"`
	Tools   []toolCost   `json:"tools"`
	Servers []serverCost `json:"servers"`
}

// clientCost is the Claude Code that will run and how it sends MCP tool definitions.
type clientCost struct {
	Version    string `json:"claude_code"`
	ToolSearch string `json:"tool_search"` // deferred, upfront or auto (claudecode.ToolSearch)
	Deferred   bool   `json:"deferred"`    // what applies to these tools
	// Threshold is, in auto mode, the tokens of definitions from which Claude Code defers
	// them, in a context window of contextWindow tokens.
	Threshold int    `json:"threshold_tokens,omitempty"`
	Why       string `json:"why"`
}

// contextWindow is the context window auto mode's threshold is a share of: 200k tokens, the
// window of Anthropic's models by default (a 1M window raises the threshold fivefold).
const contextWindow = 200_000

func newMCPCostCmd(a *App) *cobra.Command {
	var dir string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Token cost of the MCP tools the agent sees, as its Claude Code sends them",
		Long: `Cost asks the running gateway for its tools, keeps those the project's netd lets the agent
see (its own narrowing, as rendered in netd.json), and estimates what they cost the model:
about one token per 4 bytes of compact JSON.

Claude Code defers MCP tools by default (tool search): every turn carries only the tool
names, and one tool's schema is loaded on demand, with its ToolSearch tool, when the model
needs it. Cost reports both figures, the names per turn and each schema per load, and the
full per-turn cost of every schema, which applies when deferral is off; it says which applies
to the configured Claude Code (claude_code.version in config.yaml) and why: the release,
ENABLE_TOOL_SEARCH or ANTHROPIC_BASE_URL in agent_env. It lists tools and servers, most
expensive first, and suggests narrowing the costliest un-narrowed server.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return runMCPCost(c.Context(), a, dir, jsonOut) },
	}
	addDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return cmd
}

func runMCPCost(ctx context.Context, a *App, dir string, jsonOut bool) error {
	p, err := a.loadProject(dir)
	if err != nil {
		return err
	}
	pol, err := readNetdPolicy(p.state.Artifacts())
	if err != nil {
		return err
	}
	if pol.MCP == nil {
		return errorf("declare one with `abox mcp add SERVER`", "%s declares no MCP server", p.manifest.Project)
	}
	if err := a.requireDaemon(ctx); err != nil {
		return err
	}
	res, err := a.probeProfile(ctx, p.manifest.Profile)
	if err != nil {
		return err
	}
	rep := costOf(res.Tools, pol.MCP, p.manifest.Tools)
	rep.price(p.cfg.ClaudeCode.Version, p.cfg.AgentEnv)
	rep.Client.Why += unreadSwitches(p.manifest.EnvSecrets)
	if jsonOut {
		return a.writeJSON(rep)
	}
	a.printCost(rep)
	return nil
}

// readNetdPolicy reads the rendered netd.json: what netd enforces, so what the agent sees.
func readNetdPolicy(artifacts string) (*policy.Netd, error) {
	data, err := os.ReadFile(filepath.Join(artifacts, render.NetdDir, policy.File))
	if err != nil {
		return nil, errorf("run `abox up` to render it", "reading the netd policy: %v", err)
	}
	return policy.Parse(data)
}

// probeProfile lists the tools of the profile's running gateway.
func (a *App) probeProfile(ctx context.Context, profile string) (*gateway.ProbeResult, error) {
	cfg, custom, ps, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	env := a.gatewayEnv(cfg, custom, ps)
	plan, token, err := gateway.LoadPlan(ctx, env, profile, false)
	if err != nil {
		return nil, a.explainGateway(err, profile)
	}
	mgr := a.gatewayManager()
	ct, err := mgr.Inspect(ctx, profile)
	if err != nil {
		return nil, err
	}
	if ct == nil || !ct.State.Running {
		return nil, errorf("start it with `abox up`", "the %s gateway is not running", profile)
	}
	img := gateway.ProbeImage(ctx, env, plan, "")
	if img == "" {
		return nil, errorf("run `abox up` to build the netd image the probe runs in", "no netd image to probe the %s gateway from", profile)
	}
	res, err := mgr.Probe(ctx, profile, cfg.Network, img, plan.Container.Port, token)
	if err != nil {
		return nil, err
	}
	if !res.OK {
		return nil, errorf("see `abox gateway status "+profile+"`", "the %s gateway does not answer: %s", profile, gateway.Redact(res.Error, token))
	}
	return res, nil
}

// costOf keeps the tools netd lets through, exactly as netd decides and attributes them
// ([policy.MCP.Allows]), and prices each at len(compact JSON)/4.
func costOf(tools []json.RawMessage, mcp *policy.MCP, narrowed map[string][]string) costReport {
	rep := costReport{Tools: []toolCost{}, Servers: []serverCost{}}
	by := map[string]*serverCost{}
	for _, raw := range tools {
		var t struct {
			Name string
			Meta map[string]any `json:"_meta"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		server, ok := mcp.Allows(t.Name)
		if !ok {
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, raw) != nil {
			continue
		}
		always, _ := t.Meta[alwaysLoadMeta].(bool)
		tc := toolCost{Tool: t.Name, Server: server, Tokens: buf.Len() / 4, NameTokens: nameTokens(t.Name), AlwaysLoad: always}
		rep.Tools = append(rep.Tools, tc)
		rep.Total += tc.Tokens
		if by[server] == nil {
			_, n := narrowed[server]
			by[server] = &serverCost{Server: server, Narrowed: n}
		}
		if always {
			rep.Upfront += tc.Tokens
		} else {
			rep.Names += tc.NameTokens
			by[server].NameTokens += tc.NameTokens
		}
		by[server].Tools++
		by[server].Tokens += tc.Tokens
		by[server].toolNames = append(by[server].toolNames, t.Name)
	}
	sort.Slice(rep.Tools, func(i, j int) bool {
		a, b := rep.Tools[i], rep.Tools[j]
		return a.Tokens > b.Tokens || a.Tokens == b.Tokens && a.Tool < b.Tool
	})
	for _, s := range by {
		if rep.Total > 0 {
			s.Share = float64(s.Tokens) / float64(rep.Total)
		}
		rep.Servers = append(rep.Servers, *s)
	}
	sort.Slice(rep.Servers, func(i, j int) bool {
		a, b := rep.Servers[i], rep.Servers[j]
		return a.Tokens > b.Tokens || a.Tokens == b.Tokens && a.Server < b.Server
	})
	return rep
}

// alwaysLoadMeta is the _meta key with which an MCP tool asks Claude Code never to defer it.
const alwaysLoadMeta = "anthropic/alwaysLoad"

// nameTokens prices a tool's name as Claude Code lists a deferred tool: mcp__<server>__<tool>,
// the server being the one entry of the agent's mcp.json, one name a line, rounded up.
func nameTokens(tool string) int {
	return (len("mcp__"+render.MCPServerName+"__"+tool+"\n") + 3) / 4
}

// price fills in what the Claude Code version, with the agent environment env, sends on every
// turn ([claudecode.ToolSearchOf]).
func (rep *costReport) price(version string, env map[string]string) {
	ts := claudecode.ToolSearchOf(version, env)
	rep.Client = clientCost{Version: version, ToolSearch: ts.Mode, Why: ts.Why,
		Deferred: ts.Defers(rep.Total-rep.Upfront, contextWindow), Threshold: ts.Threshold(contextWindow)}
	rep.PerTurn = rep.Total
	if rep.Client.Deferred {
		rep.PerTurn = rep.Names + rep.Upfront
	}
}

// unreadSwitches notes the variables that switch tool search which the project sets from a
// secret (env_secrets): their values are not read here, and they may change what applies.
func unreadSwitches(envSecrets map[string]string) string {
	var set []string
	for _, k := range []string{"ENABLE_TOOL_SEARCH", "ANTHROPIC_BASE_URL"} {
		if _, ok := envSecrets[k]; ok {
			set = append(set, k)
		}
	}
	if len(set) == 0 {
		return ""
	}
	return "; env_secrets also sets " + strings.Join(set, " and ") + ", whose value abox does not read here and which may change this"
}

func (a *App) printCost(rep costReport) {
	if len(rep.Tools) == 0 {
		fmt.Fprintln(a.Out, "the agent sees no tools")
		return
	}
	rows := [][]string{{"TOOL", "SERVER", "~TOKENS", "~NAME"}}
	for _, t := range rep.Tools {
		name := fmt.Sprint(t.NameTokens)
		if t.AlwaysLoad {
			name = "always loaded"
		}
		rows = append(rows, []string{termtext.Line(t.Tool), t.Server, fmt.Sprint(t.Tokens), name})
	}
	table(a.Out, rows)
	fmt.Fprintln(a.Out)
	rows = [][]string{{"SERVER", "TOOLS", "~TOKENS", "~NAMES", "SHARE"}}
	for _, s := range rep.Servers {
		rows = append(rows, []string{s.Server, fmt.Sprint(s.Tools), fmt.Sprint(s.Tokens), fmt.Sprint(s.NameTokens), fmt.Sprintf("%.0f%%", 100*s.Share)})
	}
	rows = append(rows, []string{"total", fmt.Sprint(len(rep.Tools)), fmt.Sprint(rep.Total), fmt.Sprint(rep.Names), "100%"})
	table(a.Out, rows)
	fmt.Fprintln(a.Out)
	a.printClientCost(rep)
	for _, s := range rep.Servers {
		if !s.Narrowed && s.Server != "?" && s.Tools > 1 {
			cost := fmt.Sprintf("~%d tokens per turn", s.Tokens)
			if rep.Client.Deferred {
				cost = fmt.Sprintf("~%d tokens per turn in names and ~%d in schemas as they load", s.NameTokens, s.Tokens)
			}
			linef(a.Out, "hint: %s costs %s; narrow it to the tools the agent needs: `abox mcp add %s --tool %s`",
				s.Server, cost, s.Server, strings.Join(s.toolNames[:1], " --tool "))
			break
		}
	}
}

// printClientCost says which cost applies to the Claude Code that will run, and why.
func (a *App) printClientCost(rep costReport) {
	c := rep.Client
	deferrable := rep.Total - rep.Upfront
	threshold := fmt.Sprintf("its threshold of %d tokens (%d%% of a %d-token context window)", c.Threshold, c.Threshold*100/contextWindow, contextWindow)
	switch {
	case c.Deferred:
		linef(a.Out, "Claude Code %s defers MCP tools: %s", c.Version, c.Why)
		if c.ToolSearch == claudecode.Auto {
			linef(a.Out, "  these ~%d tokens of schemas reach %s", deferrable, threshold)
		}
		perTurn := fmt.Sprintf("~%d tokens, the names of %d tools", rep.Names, len(rep.Tools))
		if rep.Upfront > 0 {
			perTurn += fmt.Sprintf(", and ~%d for the schemas of the tools that ask to be always loaded", rep.Upfront)
		}
		linef(a.Out, "  per turn: %s", perTurn)
		linef(a.Out, "  per schema loaded on demand: ~%d to ~%d tokens (~TOKENS) when ToolSearch loads it; it then stays for the rest of the session",
			minTokens(rep.Tools), rep.Tools[0].Tokens)
		linef(a.Out, "  with deferral off (ENABLE_TOOL_SEARCH=false in agent_env): ~%d tokens per turn", rep.Total)
	default:
		why := c.Why
		if c.ToolSearch == claudecode.Auto {
			why += fmt.Sprintf("; these ~%d tokens stay below %s", deferrable, threshold)
		}
		linef(a.Out, "Claude Code %s sends every MCP tool schema on every turn: %s", c.Version, why)
		linef(a.Out, "  per turn: ~%d tokens", rep.Total)
		if claudecode.CompareVersions(c.Version, claudecode.ToolSearchFrom) >= 0 {
			linef(a.Out, "  deferred (ENABLE_TOOL_SEARCH=true in agent_env): ~%d tokens per turn, and each schema (~TOKENS) when ToolSearch loads it",
				rep.Names+rep.Upfront)
		}
	}
	fmt.Fprintln(a.Out)
}

// minTokens is the cheapest definition's cost.
func minTokens(tools []toolCost) int {
	m := tools[0].Tokens
	for _, t := range tools {
		m = min(m, t.Tokens)
	}
	return m
}
