package netd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// The model forwarder reads each request body before it spends the credential on it, on every
// path it forwards: a request may ask the API's own servers to run tools (web search, web fetch,
// code execution, a remote MCP server) or to fetch what a content block points at (a URL
// source, a stored file), and those reach hosts past abox's allowlist on the agent's behalf,
// beyond anything netd sees. Unless the user allowed them (claude_code.server_tools: allow),
// such a request is refused (the package doc lists what, and where the API documents it). What
// netd decides on must be what the API reads, so a body two JSON parsers could read differently
// is refused too: one with the same key twice in any object (encoding/json takes the last, other
// parsers the first or an error; refusing every duplicate, not only of the keys netd reads,
// leaves nothing to argue about, and no client sends one), a top-level member spelt in another
// case, one that is not JSON at all, or not UTF-8: a control that cannot be computed fails
// closed.

// maxModelJSONDepth bounds the nesting of a request body: a conversation's tool inputs nest, but
// nowhere near this deep.
const maxModelJSONDepth = 512

// modelBodyRefusal is why netd does not forward a request body, with the status and the API's
// error type it answers.
type modelBodyRefusal struct {
	status  int
	errType string
	reason  string
}

// checkModelBody says why a request body is not forwarded, or returns nil. It reads every body
// the same way, whatever the path it goes to (the Messages API, its token counter, and any path
// forwarded later: the API fetches what a body names on every path that reads one). serverTools
// is the user's opt-in to the API's server-side tools and fetches.
func checkModelBody(body []byte, serverTools bool) *modelBodyRefusal {
	invalid := func(format string, args ...any) *modelBodyRefusal {
		return &modelBodyRefusal{http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(format, args...)}
	}
	if !utf8.Valid(body) {
		return invalid("request body refused: not UTF-8")
	}
	if !json.Valid(body) {
		return invalid("request body refused: not JSON")
	}
	if err := checkJSONKeys(body, maxModelJSONDepth); err != nil {
		return invalid("request body refused: %s", logText(err.Error(), 200))
	}
	obj, ok := jsonMembers(body)
	if !ok {
		return invalid("request body refused: not a JSON object")
	}
	if serverTools {
		return nil
	}
	// A member the API could read as one of these under another spelling is refused: netd
	// reads only the exact one.
	for k := range obj {
		for _, m := range serverMembers {
			if k != m && keyIs([]byte(k), strings.ReplaceAll(m, "_", "")) {
				return invalid("request body refused: member %q", logText(k, 50))
			}
		}
	}
	serverTool := func(what string) *modelBodyRefusal {
		return &modelBodyRefusal{http.StatusForbidden, "permission_error", "server tool " + what +
			" refused: the API's servers would reach hosts past abox's allowlist (claude_code.server_tools: allow lets them)"}
	}
	if _, ok := obj["mcp_servers"]; ok {
		return serverTool("mcp_servers")
	}
	if _, ok := obj["container"]; ok {
		return serverTool("container (the code execution container)")
	}
	if no := checkTools(obj["tools"], invalid, serverTool); no != nil {
		return no
	}
	if f := findFetch(body); f != nil {
		return &modelBodyRefusal{http.StatusForbidden, "permission_error", "request body refused at " + f.path + ": " + f.what +
			", past abox's allowlist (claude_code.server_tools: allow lets it)"}
	}
	return nil
}

// serverMembers are the top-level members that ask the API's servers to act: remote MCP
// servers, the code execution container (an earlier one by id, or skills loaded into it), and
// the tools, read by checkTools.
var serverMembers = []string{"tools", "mcp_servers", "container"}

// checkTools refuses a tools member naming any tool type but custom.
func checkTools(raw []byte, invalid func(string, ...any) *modelBodyRefusal, serverTool func(string) *modelBodyRefusal) *modelBodyRefusal {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	tools, ok := jsonElements(raw)
	if !ok {
		return invalid("request body refused: tools is not an array")
	}
	for i, t := range tools {
		tool, ok := jsonMembers(t)
		if !ok {
			return invalid("request body refused: tools[%d] is not an object", i)
		}
		for k := range tool {
			if k != "type" && keyIs([]byte(k), "type") {
				return invalid("request body refused: tools[%d] member %q", i, logText(k, 50))
			}
		}
		typ, ok := tool["type"]
		if !ok || string(typ) == "null" {
			continue // a custom tool: the agent's client runs it
		}
		var s string
		if len(typ) > 256 || json.Unmarshal(typ, &s) != nil {
			return invalid("request body refused: tools[%d].type is not a string", i)
		}
		// Only the custom type is the client's own for sure; every other type is one the API
		// defines, and new server tools keep appearing: refused unless allowed.
		if s != "custom" {
			return serverTool(fmt.Sprintf("%q (tools[%d])", logText(s, 64), i))
		}
	}
	return nil
}
