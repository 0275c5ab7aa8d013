package toolcost

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
)

// Tool is one tool the agent sees and what its definition costs.
type Tool struct {
	Tool   string `json:"tool"`
	Server string `json:"server"` // as netd logs it ([policy.MCP.Allows]); "?" if several could provide it
	Tokens int    `json:"tokens"` // the whole definition: per turn when sent upfront, per load when deferred
	// NameTokens is what its name costs per turn while deferred.
	NameTokens int `json:"name_tokens"`
	// AlwaysLoad is set when the tool asks Claude Code never to defer it (_meta
	// "anthropic/alwaysLoad"): its whole definition then costs every turn.
	AlwaysLoad bool `json:"always_load,omitempty"`
}

// Server sums a server's tools.
type Server struct {
	Server     string   `json:"server"`
	Tools      int      `json:"tools"`
	Tokens     int      `json:"tokens"`
	NameTokens int      `json:"name_tokens"` // of its deferrable tools
	Share      float64  `json:"share"`
	Narrowed   bool     `json:"narrowed"`
	ToolNames  []string `json:"-"` // in the order the gateway listed them
}

// Report is `mcp cost --json`.
type Report struct {
	// Total is every definition: the per-turn cost when Claude Code sends them all upfront.
	Total int `json:"total_tokens"`
	// Names is the per-turn cost of the deferred tools' names, and Upfront that of the
	// definitions sent even when the rest are deferred (always-load tools).
	Names   int `json:"names_tokens"`
	Upfront int `json:"always_load_tokens"`
	// PerTurn is what the configured Claude Code sends on every turn: Names+Upfront when it
	// defers, Total when it does not.
	PerTurn int      `json:"per_turn_tokens"`
	Client  Client   `json:"client"`
	Tools   []Tool   `json:"tools"`
	Servers []Server `json:"servers"`
}

// Client is the Claude Code that will run and how it sends MCP tool definitions.
type Client struct {
	Version    string `json:"claude_code"`
	ToolSearch string `json:"tool_search"` // deferred, upfront or auto (claudecode.ToolSearch)
	Deferred   bool   `json:"deferred"`    // what applies to these tools
	// Threshold is, in auto mode, the tokens of definitions from which Claude Code defers
	// them, in a context window of ContextWindow tokens.
	Threshold int    `json:"threshold_tokens,omitempty"`
	Why       string `json:"why"`
}

// ContextWindow is the context window auto mode's threshold is a share of: 200k tokens, the
// window of Anthropic's models by default (a 1M window raises the threshold fivefold).
const ContextWindow = 200_000

// Of keeps the tools netd lets through, exactly as netd decides and attributes them
// ([policy.MCP.Allows]), and prices each at len(compact JSON)/4.
func Of(tools []json.RawMessage, mcp *policy.MCP, narrowed map[string][]string) Report {
	rep := Report{Tools: []Tool{}, Servers: []Server{}}
	by := map[string]*Server{}
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
		tc := Tool{Tool: t.Name, Server: server, Tokens: buf.Len() / 4, NameTokens: nameTokens(t.Name), AlwaysLoad: always}
		rep.Tools = append(rep.Tools, tc)
		rep.Total += tc.Tokens
		if by[server] == nil {
			_, n := narrowed[server]
			by[server] = &Server{Server: server, Narrowed: n}
		}
		if always {
			rep.Upfront += tc.Tokens
		} else {
			rep.Names += tc.NameTokens
			by[server].NameTokens += tc.NameTokens
		}
		by[server].Tools++
		by[server].Tokens += tc.Tokens
		by[server].ToolNames = append(by[server].ToolNames, t.Name)
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

// Price fills in what the Claude Code version, with the agent environment env, sends on every
// turn ([claudecode.ToolSearchOf]).
func (rep *Report) Price(version string, env map[string]string) {
	ts := claudecode.ToolSearchOf(version, env)
	rep.Client = Client{Version: version, ToolSearch: ts.Mode, Why: ts.Why,
		Deferred: ts.Defers(rep.Deferrable(), ContextWindow), Threshold: ts.Threshold(ContextWindow)}
	rep.PerTurn = rep.Total
	if rep.Client.Deferred {
		rep.PerTurn = rep.Names + rep.Upfront
	}
}

// UnreadSwitches notes the variables that switch tool search which the project sets from a
// secret (env_secrets): their values are not read here, and they may change what applies.
func UnreadSwitches(envSecrets map[string]string) string {
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

// MinTokens is the cheapest definition's cost; 0 without tools.
func (rep *Report) MinTokens() int {
	if len(rep.Tools) == 0 {
		return 0
	}
	m := rep.Tools[0].Tokens
	for _, t := range rep.Tools {
		m = min(m, t.Tokens)
	}
	return m
}

// Deferrable is what the definitions Claude Code may defer cost: all but the always-load
// ones. Auto mode defers them once this reaches its threshold.
func (rep *Report) Deferrable() int { return rep.Total - rep.Upfront }

// NarrowCandidate is the server worth narrowing first: the costliest (Servers are most
// expensive first) that the project has not narrowed, whose tools netd could attribute, and
// that has more than one tool to choose from. false when there is none.
func (rep *Report) NarrowCandidate() (Server, bool) {
	for _, s := range rep.Servers {
		if !s.Narrowed && s.Server != "?" && s.Tools > 1 {
			return s, true
		}
	}
	return Server{}, false
}
