package netd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// The model forwarder reads each request body before it spends the credential on it: a Messages
// request may ask the API's own servers to run tools (web search, web fetch, code execution, a
// remote MCP server), and those reach hosts past abox's allowlist on the agent's behalf, beyond
// anything netd sees. Unless the user allowed them (claude_code.server_tools: allow), such a
// request is refused. What netd decides on must be what the API reads, so a body two JSON
// parsers could read differently (duplicate keys, a member spelt in another case) is refused
// too, as is one that is not JSON at all: a control that cannot be computed fails closed.

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

// checkModelBody says why the body of a POST to path is not forwarded, or returns nil.
// serverTools is the user's opt-in to the API's server-side tools.
func checkModelBody(path string, body []byte, serverTools bool) *modelBodyRefusal {
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
	if path != "/v1/messages" || serverTools {
		return nil
	}
	for k := range obj {
		for _, m := range []string{"tools", "mcp_servers"} {
			if k != m && strings.EqualFold(k, m) {
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
	raw, ok := obj["tools"]
	if !ok || string(raw) == "null" {
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
			if k != "type" && strings.EqualFold(k, "type") {
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
