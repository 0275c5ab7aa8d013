package netd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// The MCP forwarder reads the agent's JSON-RPC itself, so that what it decides on is what the
// gateway will read. It therefore refuses anything two JSON parsers could read differently:
// duplicate keys, keys that differ only in case from the protocol's (Go's encoding/json matches
// struct fields case-insensitively), unknown top-level members, deep nesting.

// errInvalidJSON marks a body that is not JSON at all, answered with a JSON-RPC parse error.
var errInvalidJSON = errors.New("invalid JSON")

// rpcMessage is what the forwarder needs of one JSON-RPC message from the agent.
type rpcMessage struct {
	id     json.RawMessage // nil for a notification
	method string          // "" for a response to a server request
	tool   string          // the tool of a tools/call
}

const (
	methodToolsCall = "tools/call"
	maxJSONDepth    = 64
)

// rpcMembers are the only members a JSON-RPC 2.0 message may have.
var rpcMembers = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// parseRPC checks and decodes a POST body: one message, or a non-empty batch of them.
func parseRPC(body []byte) (msgs []rpcMessage, batch bool, err error) {
	if err := checkJSON(body); err != nil {
		return nil, false, err
	}
	// A fresh slice: unmarshalling into one holding body would overwrite body in place.
	var raw []json.RawMessage
	if batch = bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")); batch {
		if err := json.Unmarshal(body, &raw); err != nil || len(raw) == 0 {
			return nil, true, errors.New("batch is not a non-empty array")
		}
	} else {
		raw = []json.RawMessage{body}
	}
	for i, r := range raw {
		m, err := parseMessage(r)
		if err != nil {
			return nil, batch, fmt.Errorf("message %d: %w", i, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, batch, nil
}

// parseMessage decodes one message, refusing members JSON-RPC does not define.
func parseMessage(raw json.RawMessage) (rpcMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return rpcMessage{}, errors.New("not a JSON object")
	}
	for k := range obj {
		if !rpcMembers[k] {
			return rpcMessage{}, fmt.Errorf("unknown member %q", k)
		}
	}
	var version string
	if json.Unmarshal(obj["jsonrpc"], &version) != nil || version != "2.0" {
		return rpcMessage{}, errors.New(`"jsonrpc" is not "2.0"`)
	}
	m := rpcMessage{id: obj["id"]}
	if raw, ok := obj["method"]; ok {
		if json.Unmarshal(raw, &m.method) != nil || m.method == "" {
			return rpcMessage{}, errors.New(`"method" is not a non-empty string`)
		}
	}
	if m.method == methodToolsCall {
		tool, err := toolName(obj["params"])
		if err != nil {
			return rpcMessage{}, err
		}
		m.tool = tool
	}
	return m, nil
}

// toolName returns params.name of a tools/call; no other member of params may spell "name"
// in another case.
func toolName(params json.RawMessage) (string, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil || p == nil {
		return "", errors.New("tools/call without params object")
	}
	for k := range p {
		if k != "name" && strings.EqualFold(k, "name") {
			return "", fmt.Errorf("tools/call params member %q", k)
		}
	}
	var name string
	if json.Unmarshal(p["name"], &name) != nil || name == "" {
		return "", errors.New("tools/call without a tool name")
	}
	return name, nil
}

// checkJSON verifies that data is one JSON value, nested at most maxJSONDepth deep, with no
// object holding the same key twice.
func checkJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := checkValue(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the value", errInvalidJSON)
	}
	return nil
}

func checkValue(dec *json.Decoder, depth int) error {
	if depth > maxJSONDepth {
		return errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalidJSON, err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %v", errInvalidJSON, err)
			}
			k := key.(string)
			if seen[k] {
				return fmt.Errorf("duplicate key %q", k)
			}
			seen[k] = true
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := checkValue(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalidJSON, err)
	}
	return nil
}

// filterTools removes the tools the project may not use from every JSON-RPC response in body (a
// message or a batch) whose result lists tools. It reports whether it removed anything; body is
// returned unchanged if not, or if it is not JSON-RPC it understands.
func filterTools(body []byte, allowed func(name string) bool) ([]byte, bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if !bytes.HasPrefix(trimmed, []byte("[")) {
		return filterOne(body, allowed)
	}
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil {
		return body, false
	}
	changed := false
	for i, m := range batch {
		if out, ok := filterOne(m, allowed); ok {
			batch[i], changed = out, true
		}
	}
	if !changed {
		return body, false
	}
	out, err := json.Marshal(batch)
	if err != nil {
		return body, false
	}
	return out, true
}

// filterOne filters result.tools of one message. Members are matched as a Go client decoding
// into structs matches them, case-insensitively ("Result", "TOOLS", "ſesult"), and every match is
// filtered, so no spelling or duplicate of a member carries a tool past the filter.
func filterOne(msg []byte, allowed func(string) bool) ([]byte, bool) {
	return filterMembers(msg, "result", func(result []byte) ([]byte, bool) {
		return filterMembers(result, "tools", func(list []byte) ([]byte, bool) {
			return filterList(list, allowed)
		})
	})
}

// filterMembers applies filter to every member of the JSON object obj whose name folds to name,
// and returns the object re-encoded if filter changed any of them.
func filterMembers(obj []byte, name string, filter func([]byte) ([]byte, bool)) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || m == nil {
		return obj, false
	}
	changed := false
	for k, v := range m {
		if !strings.EqualFold(k, name) {
			continue
		}
		if out, ok := filter(v); ok {
			m[k], changed = out, true
		}
	}
	if !changed {
		return obj, false
	}
	out, err := json.Marshal(m)
	if err != nil {
		return obj, false
	}
	return out, true
}

// filterList keeps the tools of a JSON array that the project may use.
func filterList(list []byte, allowed func(string) bool) ([]byte, bool) {
	var tools []json.RawMessage
	if json.Unmarshal(list, &tools) != nil || tools == nil {
		return list, false
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		if toolAllowed(t, allowed) {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(tools) {
		return list, false
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return list, false
	}
	return out, true
}

// toolAllowed reports whether a tool object names a tool the project may use: it has a name,
// and every member that a client could read as its name is a string naming an allowed tool.
func toolAllowed(tool []byte, allowed func(string) bool) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(tool, &m) != nil {
		return false
	}
	named := false
	for k, v := range m {
		if !strings.EqualFold(k, "name") {
			continue
		}
		var name *string
		if json.Unmarshal(v, &name) != nil || name == nil || !allowed(*name) {
			return false
		}
		named = true
	}
	return named
}

// JSON-RPC error codes netd answers with.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
)

// rpcErrorMsg is a JSON-RPC error response.
type rpcErrorMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// rpcError renders a JSON-RPC error response to the request id (null if it has none).
func rpcError(id json.RawMessage, code int, message string) json.RawMessage {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(rpcErrorMsg{JSONRPC: "2.0", ID: id, Error: rpcErrorBody{code, message}})
	return b
}
