package netd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
)

// serverToolsForwarder serves a model forwarder for up with the server-tools opt-in set to allow.
func serverToolsForwarder(t *testing.T, up *modelUpstreamStub, allow bool) (string, *syncBuffer) {
	t.Helper()
	p := policy.Netd{Version: policy.Version, Project: "test", Model: &policy.ModelAPI{Upstream: up.srv.URL, ServerTools: allow}}
	cfg, err := newConfig(p.Marshal(), "", testAPIKey, "")
	if err != nil {
		t.Fatal(err)
	}
	var cur current
	cur.set(cfg)
	log := &syncBuffer{}
	dial := &upstreamDialer{timeout: 5 * time.Second}
	srv := httptest.NewServer(newModelForwarder(&cur, dial.dial, up.trusting(), newJSONL(log, policy.DefaultLogLimit)))
	t.Cleanup(srv.Close)
	return srv.URL, log
}

// claudeCodeTool is a tool as Claude Code declares its own: a custom tool, no type.
const claudeCodeTool = `{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}`

// TestModelForwarderRefusesServerTools: a Messages request that asks the API's servers to run a
// tool of their own (web search, web fetch, code execution, any type but custom, or MCP servers)
// never reaches the upstream unless the user allowed server tools; neither does a body netd
// cannot read unambiguously (not JSON, not UTF-8, a duplicate or case-variant member). Each
// refusal is an API error naming the tool, logged as denied. Custom tools pass.
func TestModelForwarderRefusesServerTools(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base, log := serverToolsForwarder(t, up, false)
	msg := func(extra string) string {
		return `{"model":"claude-test-1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	type refusal struct {
		name, body string
		status     int
		names      string // in the error message and the log's reason
	}
	refused := []refusal{
		{"web search", msg(`,"tools":[` + claudeCodeTool + `,{"type":"web_search_20250305","name":"web_search","max_uses":5}]`), 403, "web_search_20250305"},
		{"web fetch", msg(`,"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]`), 403, "web_fetch_20250910"},
		{"code execution", msg(`,"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`), 403, "code_execution_20250825"},
		{"a type netd does not know", msg(`,"tools":[{"type":"url_context_20990101","name":"x"}]`), 403, "url_context_20990101"},
		{"mcp servers", msg(`,"mcp_servers":[{"type":"url","url":"https://mcp.example.com/sse","name":"x"}]`), 403, "mcp_servers"},
		{"mcp servers, empty", msg(`,"mcp_servers":[]`), 403, "mcp_servers"},
		{"tools twice, the first with a server tool", msg(`,"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}],"tools":[]`), 400, `duplicate key \"tools\"`},
		{"type twice", msg(`,"tools":[{"name":"x","type":"custom","type":"web_fetch_20250910"}]`), 400, `duplicate key \"type\"`},
		{"Tools in another case", msg(`,"Tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]`), 400, `member \"Tools\"`},
		{"MCP_Servers in another case", msg(`,"MCP_Servers":[]`), 400, `member \"MCP_Servers\"`},
		{"Type in another case", msg(`,"tools":[{"name":"x","TYPE":"web_fetch_20250910"}]`), 400, `member \"TYPE\"`},
		{"tools not an array", msg(`,"tools":{"type":"web_fetch_20250910"}`), 400, "tools is not an array"},
		{"a tool not an object", msg(`,"tools":["web_fetch"]`), 400, "tools[0] is not an object"},
		{"type not a string", msg(`,"tools":[{"name":"x","type":["web_fetch_20250910"]}]`), 400, "tools[0].type is not a string"},
		{"not JSON", `{"model":"claude-test-1","tools":[{"type":"web_fetch_20250910"`, 400, "not JSON"},
		{"empty", ``, 400, "not JSON"},
		{"not an object", `[` + msg("") + `]`, 400, "not a JSON object"},
		{"data after the object", msg("") + `{"tools":[{"type":"web_fetch_20250910"}]}`, 400, "not JSON"},
		{"not UTF-8", msg(",\"tools\xff\":[]"), 400, "not UTF-8"},
		{"nested too deeply", msg(`,"metadata":` + strings.Repeat("[", 600) + strings.Repeat("]", 600)), 400, "nested too deeply"},
	}
	// The token counter reads the same bodies: the API fetches what they name to count it.
	refused = append(refused,
		refusal{"count_tokens: web search", msg(`,"tools":[{"type":"web_search_20250305","name":"web_search"}]`), 403, "web_search_20250305"},
		refusal{"count_tokens: mcp servers", msg(`,"mcp_servers":[{"type":"url","url":"https://mcp.example.com/sse","name":"x"}]`), 403, "mcp_servers"})
	pathOf := func(name string) string {
		if strings.HasPrefix(name, "count_tokens") {
			return "/v1/messages/count_tokens"
		}
		return "/v1/messages"
	}
	for _, c := range refused {
		resp := agentRequest(t, "POST", base+pathOf(c.name), c.body)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var apiErr struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		if resp.StatusCode != c.status || json.Unmarshal(body, &apiErr) != nil || apiErr.Type != "error" ||
			!strings.Contains(strings.ReplaceAll(apiErr.Error.Message, `"`, `\"`), c.names) {
			t.Errorf("%s: status %d, body %s; want %d, an API error naming %s", c.name, resp.StatusCode, body, c.status, c.names)
		}
	}
	if seen := up.requests(); len(seen) != 0 {
		t.Errorf("the upstream received %d refused requests, the first: %s", len(seen), seen[0].Body)
	}
	recs := modelRecords(t, log)
	if len(recs) != len(refused) {
		t.Fatalf("%d records for %d refusals", len(recs), len(refused))
	}
	for i, r := range recs {
		if r.Verdict != policy.Denied || r.Status != refused[i].status || !strings.Contains(strings.ReplaceAll(r.Reason, `"`, `\"`), refused[i].names) {
			t.Errorf("%s: record %+v, want denied %d naming %s", refused[i].name, r, refused[i].status, refused[i].names)
		}
	}

	// What passes: custom tools (no type, or type custom), no tools, null tools, and the token
	// counter with custom tools.
	passed := []struct{ path, body string }{
		{"/v1/messages", msg(`,"tools":[` + claudeCodeTool + `,{"type":"custom","name":"y","input_schema":{"type":"object"}},{"name":"z","type":null}]`)},
		{"/v1/messages", msg("")},
		{"/v1/messages", msg(`,"tools":null`)},
		{"/v1/messages/count_tokens", msg(`,"tools":[` + claudeCodeTool + `]`)},
	}
	for _, p := range passed {
		resp := agentRequest(t, "POST", base+p.path, p.body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("POST %s %s: status %d, want 200", p.path, p.body, resp.StatusCode)
		}
	}
	if n := len(up.requests()); n != len(passed) {
		t.Errorf("the upstream received %d requests, want the %d allowed", n, len(passed))
	}

	// Allowed by the user: server tools are forwarded, but a body netd cannot read still is not.
	toolShape := map[string]bool{"Tools in another case": true, "MCP_Servers in another case": true, "Type in another case": true,
		"tools not an array": true, "a tool not an object": true, "type not a string": true}
	up2 := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") })
	base2, _ := serverToolsForwarder(t, up2, true)
	for _, c := range refused {
		resp := agentRequest(t, "POST", base2+pathOf(c.name), c.body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// With server tools allowed, the tools' shape is the API's business; what netd cannot
		// read unambiguously is still refused.
		want := c.status
		if want == 403 || toolShape[c.name] {
			want = 200
		}
		if resp.StatusCode != want {
			t.Errorf("server tools allowed, %s: status %d, want %d", c.name, resp.StatusCode, want)
		}
	}
}

// TestModelForwarderBoundsBodyReading: a request whose body trickles in (here: stops after a
// few bytes) is answered 408 once the body's own deadline passes, logged as denied, forwards
// nothing and gives its slot back; the deadline covers the body only, not the upstream's answer
// that follows it, which may take longer.
func TestModelForwarderBoundsBodyReading(t *testing.T) {
	up := newModelUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(600 * time.Millisecond) // longer than the body's deadline
		io.WriteString(w, "{}")
	})
	base, log, f := modelTestForwarderLimit(t, up.srv.URL, testAPIKey, up.trusting(), policy.DefaultLogLimit)
	f.bodyTimeout = 300 * time.Millisecond

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to the stalled upload within 5s: %v; log %s", err, log.String())
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || took > 3*time.Second {
		t.Errorf("stalled upload: status %d after %v, want 408 after about 300ms", resp.StatusCode, took)
	}

	// The slot is free again, and a request whose answer takes longer than the body's deadline
	// gets it whole.
	ok := agentRequest(t, "POST", base+"/v1/messages", `{"model":"claude-test-1","max_tokens":1,"messages":[]}`)
	io.Copy(io.Discard, ok.Body)
	ok.Body.Close()
	if ok.StatusCode != 200 {
		t.Errorf("a request after the stalled one: status %d, want 200", ok.StatusCode)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("the upstream received %d requests, want only the complete one", n)
	}
	recs := modelRecords(t, log)
	if len(recs) != 2 || recs[0].Verdict != policy.Denied || recs[0].Status != http.StatusRequestTimeout ||
		!strings.Contains(recs[0].Reason, "not received within") || recs[1].Status != 200 {
		t.Errorf("records %+v, want the stalled upload denied 408, then the complete one", recs)
	}
	if len(f.slots) != 0 {
		t.Errorf("%d slots still held", len(f.slots))
	}
}
