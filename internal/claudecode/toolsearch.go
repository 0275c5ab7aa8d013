package claudecode

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// How Claude Code sends MCP tool definitions to the model, as far as abox can tell before a run
// (what `abox mcp cost` prices). The facts it rests on, from Claude Code's changelog and its
// documentation (code.claude.com/docs/en/mcp, "Scale with MCP Tool Search" and "Configure tool
// search"; code.claude.com/docs/en/env-vars):
//
//   - Before 2.1.7 every MCP tool's definition went with every request.
//   - 2.1.7 (January 2026) turned tool search on for everyone in a threshold mode: MCP tool
//     definitions were deferred, and found through a search tool (then MCPSearch, later renamed
//     ToolSearch), once they would take more than 10% of the context window; below that they
//     were all sent. 2.1.9 added ENABLE_TOOL_SEARCH=auto:N for another percentage.
//   - The documentation changed on 2026-03-13, when 2.1.74 was the latest release: with
//     ENABLE_TOOL_SEARCH unset, every MCP tool is deferred, whatever its size. Only the names
//     (and server instructions) are sent at session start, and ToolSearch loads one tool's
//     schema when the model needs it; a loaded schema then stays in the conversation. The
//     changelog names no release for the switch, so abox models 2.1.75 and later as deferring
//     by default and 2.1.7 to 2.1.74 as the threshold mode.
//   - ENABLE_TOOL_SEARCH=true defers always, false never (every schema upfront), auto and auto:N
//     choose the threshold mode with 10% or N% of the context window.
//   - With ENABLE_TOOL_SEARCH unset, an ANTHROPIC_BASE_URL that names a host other than
//     Anthropic's API switches tool search off, because most proxies do not pass on the
//     tool_reference blocks it needs; setting ENABLE_TOOL_SEARCH (2.1.72 fixed this) keeps it.
//     Measured here, that no longer holds for 2.1.332: pointed at e2e's stand-in of the
//     Messages API, it names its MCP tools in the deferred list and loads them with ToolSearch
//     (e2e.TestRealClientHeadless checks this against `abox mcp cost`). abox models the
//     exception up to [BaseURLDefersFrom], the first release seen deferring through another host.
//   - A server entry with alwaysLoad: true in the MCP configuration, or a tool whose _meta holds
//     "anthropic/alwaysLoad": true, is sent upfront even when the rest are deferred. abox's
//     mcp.json sets no alwaysLoad, so only the gateway's tools can ask for it.
//
// Issue 18 of this project observed it on the real client: Claude Code 2.1.332 through netd and
// the gateway sent the 16 tool names, about 124 tokens, where every schema came to 2,103.
//
// What abox does not model: the model (tool search needs one that accepts tool_reference
// blocks; older Haiku models do not), providers other than Anthropic's API, and settings the
// agent could write into its own ~/.claude volume for a later run.

// Tool search modes.
const (
	// Deferred sends the tool names on every turn and a schema when ToolSearch loads it.
	Deferred = "deferred"
	// Upfront sends every schema on every turn.
	Upfront = "upfront"
	// Auto sends every schema while they stay below a share of the context window, and defers
	// them all from there.
	Auto = "auto"
)

// Releases that changed how tool search defaults; see the notes above.
const (
	ToolSearchFrom = "2.1.7"
	DeferByDefault = "2.1.75"
	// BaseURLDefersFrom is the first release seen deferring with ANTHROPIC_BASE_URL on another
	// host than Anthropic's API (the real-client e2e group); earlier ones follow the docs.
	BaseURLDefersFrom = "2.1.332"
	autoPercent       = 10
	toolSearchVar     = "ENABLE_TOOL_SEARCH"
	baseURLVar        = "ANTHROPIC_BASE_URL"
	firstPartyHost    = "api.anthropic.com"
	defaultBaseNote   = "and agent_env sets neither ENABLE_TOOL_SEARCH nor ANTHROPIC_BASE_URL"
)

// ToolSearch is how a Claude Code release, in the environment abox gives it, sends MCP tool
// definitions.
type ToolSearch struct {
	Mode string // Deferred, Upfront or Auto
	// Percent is Auto's threshold: definitions are deferred once they take this share of the
	// context window.
	Percent int
	// Why says what decided, naming the release or the variable, for the user.
	Why string
}

// ToolSearchOf returns how Claude Code version, with the agent environment env, sends MCP tool
// definitions.
func ToolSearchOf(version string, env map[string]string) ToolSearch {
	if CompareVersions(version, ToolSearchFrom) < 0 {
		// Earlier releases had it only as an experiment, which abox does not model.
		return ToolSearch{Mode: Upfront, Why: fmt.Sprintf("%s predates tool search (%s)", version, ToolSearchFrom)}
	}
	if v, set := env[toolSearchVar]; set {
		return explicitToolSearch(version, v)
	}
	if base := env[baseURLVar]; base != "" && !firstParty(base) && CompareVersions(version, BaseURLDefersFrom) < 0 {
		return ToolSearch{Mode: Upfront, Why: fmt.Sprintf("agent_env points %s at another host than %s, which switches tool search off unless %s is set",
			baseURLVar, firstPartyHost, toolSearchVar)}
	}
	if base := env[baseURLVar]; base != "" && !firstParty(base) {
		return ToolSearch{Mode: Deferred, Why: fmt.Sprintf("from %s tool search defers every MCP tool by default even with %s on another host than %s (measured), and agent_env does not set %s",
			BaseURLDefersFrom, baseURLVar, firstPartyHost, toolSearchVar)}
	}
	if CompareVersions(version, DeferByDefault) >= 0 {
		return ToolSearch{Mode: Deferred, Why: fmt.Sprintf("tool search defers every MCP tool by default from %s, %s", DeferByDefault, defaultBaseNote)}
	}
	return ToolSearch{Mode: Auto, Percent: autoPercent,
		Why: fmt.Sprintf("tool search's default from %s to 2.1.74 is its threshold mode, %s", ToolSearchFrom, defaultBaseNote)}
}

// explicitToolSearch reads ENABLE_TOOL_SEARCH: true, false, auto or auto:N, and 1 and 0.
func explicitToolSearch(version, v string) ToolSearch {
	set := fmt.Sprintf("agent_env sets %s=%s", toolSearchVar, v)
	switch strings.ToLower(v) {
	case "true", "1":
		return ToolSearch{Mode: Deferred, Why: set}
	case "false", "0":
		return ToolSearch{Mode: Upfront, Why: set}
	case "auto":
		return ToolSearch{Mode: Auto, Percent: autoPercent, Why: set}
	}
	if n, ok := strings.CutPrefix(strings.ToLower(v), "auto:"); ok {
		if p, err := strconv.Atoi(n); err == nil && p >= 0 && p <= 100 {
			return ToolSearch{Mode: Auto, Percent: p, Why: set}
		}
	}
	d := ToolSearchOf(version, nil)
	d.Why = set + ", which is none of true, false, auto and auto:N; abox assumes the default: " + d.Why
	return d
}

// firstParty reports whether an ANTHROPIC_BASE_URL names Anthropic's own API.
func firstParty(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), firstPartyHost)
}

// Defers reports whether definitions worth tokens of a context window of window tokens are
// deferred: always for Deferred, never for Upfront, and for Auto once they reach Percent of it.
func (t ToolSearch) Defers(tokens, window int) bool {
	switch t.Mode {
	case Deferred:
		return true
	case Auto:
		return tokens*100 >= t.Percent*window
	}
	return false
}

// Threshold is the tokens at which Auto starts deferring in a context window of window tokens;
// 0 for the other modes.
func (t ToolSearch) Threshold(window int) int {
	if t.Mode != Auto {
		return 0
	}
	return t.Percent * window / 100
}
