package toolcost

import (
	"fmt"
	"io"
	"strings"

	"github.com/aboxhq/abox/internal/claudecode"
	"github.com/aboxhq/abox/internal/termtext"
)

// WriteText prints the report for a person, as `abox mcp cost` shows it: the tools and the
// servers, most expensive first, which cost applies to the configured Claude Code and why, and
// a hint to narrow the costliest un-narrowed server. Tool names come from the servers: every
// line and cell is escaped.
func (rep Report) WriteText(w io.Writer) {
	if len(rep.Tools) == 0 {
		fmt.Fprintln(w, "the agent sees no tools")
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
	termtext.Table(w, rows)
	fmt.Fprintln(w)
	rows = [][]string{{"SERVER", "TOOLS", "~TOKENS", "~NAMES", "SHARE"}}
	for _, s := range rep.Servers {
		rows = append(rows, []string{s.Server, fmt.Sprint(s.Tools), fmt.Sprint(s.Tokens), fmt.Sprint(s.NameTokens), fmt.Sprintf("%.0f%%", 100*s.Share)})
	}
	rows = append(rows, []string{"total", fmt.Sprint(len(rep.Tools)), fmt.Sprint(rep.Total), fmt.Sprint(rep.Names), "100%"})
	termtext.Table(w, rows)
	fmt.Fprintln(w)
	rep.writeClient(w)
	if s, ok := rep.NarrowCandidate(); ok {
		cost := fmt.Sprintf("~%d tokens per turn", s.Tokens)
		if rep.Client.Deferred {
			cost = fmt.Sprintf("~%d tokens per turn in names and ~%d in schemas as they load", s.NameTokens, s.Tokens)
		}
		termtext.Linef(w, "hint: %s costs %s; narrow it to the tools the agent needs: `abox mcp add %s --tool %s`",
			s.Server, cost, s.Server, strings.Join(s.ToolNames[:1], " --tool "))
	}
}

// writeClient says which cost applies to the Claude Code that will run, and why.
func (rep Report) writeClient(w io.Writer) {
	c := rep.Client
	deferrable := rep.Deferrable()
	threshold := fmt.Sprintf("its threshold of %d tokens (%d%% of a %d-token context window)", c.Threshold, c.Threshold*100/ContextWindow, ContextWindow)
	switch {
	case c.Deferred:
		termtext.Linef(w, "Claude Code %s defers MCP tools: %s", c.Version, c.Why)
		if c.ToolSearch == claudecode.Auto {
			termtext.Linef(w, "  these ~%d tokens of schemas reach %s", deferrable, threshold)
		}
		perTurn := fmt.Sprintf("~%d tokens, the names of %d tools", rep.Names, len(rep.Tools))
		if rep.Upfront > 0 {
			perTurn += fmt.Sprintf(", and ~%d for the schemas of the tools that ask to be always loaded", rep.Upfront)
		}
		termtext.Linef(w, "  per turn: %s", perTurn)
		termtext.Linef(w, "  per schema loaded on demand: ~%d to ~%d tokens (~TOKENS) when ToolSearch loads it; it then stays for the rest of the session",
			rep.MinTokens(), rep.Tools[0].Tokens)
		termtext.Linef(w, "  with deferral off (ENABLE_TOOL_SEARCH=false in agent_env): ~%d tokens per turn", rep.Total)
	default:
		why := c.Why
		if c.ToolSearch == claudecode.Auto {
			why += fmt.Sprintf("; these ~%d tokens stay below %s", deferrable, threshold)
		}
		termtext.Linef(w, "Claude Code %s sends every MCP tool schema on every turn: %s", c.Version, why)
		termtext.Linef(w, "  per turn: ~%d tokens", rep.Total)
		if claudecode.CompareVersions(c.Version, claudecode.ToolSearchFrom) >= 0 {
			termtext.Linef(w, "  deferred (ENABLE_TOOL_SEARCH=true in agent_env): ~%d tokens per turn, and each schema (~TOKENS) when ToolSearch loads it",
				rep.Names+rep.Upfront)
		}
	}
	fmt.Fprintln(w)
}
