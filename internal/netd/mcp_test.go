package netd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const gatewayToken = "gw-secret-0123456789"

// gateway is a stand-in for docker/mcp-gateway: an MCP go-sdk streamable server behind a bearer
// check, recording what reaches it.
type gateway struct {
	port    int
	release chan struct{} // lets slow_tool finish

	mu       sync.Mutex
	headers  []http.Header
	calls    map[string]int
	requests int
}

func startGateway(t *testing.T, jsonResponse bool) *gateway {
	t.Helper()
	g := &gateway{calls: map[string]int{}, release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-gateway", Version: "1"}, nil)
	for _, name := range []string{"allowed_tool", "other_tool"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				g.count(name)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + name}}}, nil
			})
	}
	srv.AddTool(&mcp.Tool{Name: "slow_tool", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g.count("slow_tool")
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "half way"})
			select {
			case <-g.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow done"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		JSONResponse: jsonResponse,
		// The real gateway is reached on its bridge address; here a name resolves to loopback.
		DisableLocalhostProtection: true,
	})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.headers = append(g.headers, r.Header.Clone())
		g.requests++
		g.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+gatewayToken {
			w.Header().Set("WWW-Authenticate", `Bearer realm="MCP Gateway"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(g.release) })
	g.port = ts.Listener.Addr().(*net.TCPAddr).Port
	return g
}

func (g *gateway) count(tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls[tool]++
}

func (g *gateway) seen() (headers []http.Header, calls map[string]int, requests int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.headers), maps.Clone(g.calls), g.requests
}

type mcpFixture struct {
	url string
	log *syncBuffer
}

// startForwarder runs a forwarder to the gateway, named abox-gw-test in the upstream URL and
// reached at the address the supervisor hands the child (here the test gateway's, on loopback).
func startForwarder(t *testing.T, g *gateway, m *policy.MCP, token string) *mcpFixture {
	t.Helper()
	if m != nil && m.Upstream == "" {
		m.Upstream = fmt.Sprintf("http://abox-gw-test:%d/mcp", g.port)
	}
	f := &mcpFixture{log: &syncBuffer{}}
	gw := fmt.Sprintf("127.0.0.1:%d", g.port)
	fw := newMCPForwarder(testConfig(t, []string{"api.example.com"}, m, token, gw), newJSONL(f.log, maxLogBytes))
	ts := httptest.NewServer(fw)
	t.Cleanup(ts.Close)
	f.url = ts.URL + mcpPath
	return f
}

func projectMCP() *policy.MCP {
	return &policy.MCP{Servers: []string{"srv-a"}, Tools: map[string]string{"allowed_tool": "srv-a", "slow_tool": "srv-a"}}
}

// agentHeaders is what a hostile agent adds to every request.
type agentHeaders struct{ base http.RoundTripper }

func (a agentHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer agent-guess")
	r.Header.Set("Origin", "http://evil.example")
	return a.base.RoundTrip(r)
}

func connect(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, opts)
	hc := &http.Client{Transport: agentHeaders{http.DefaultTransport}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting through netd: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestMCPForwarder(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonResponse), func(t *testing.T) {
			g := startGateway(t, jsonResponse)
			f := startForwarder(t, g, projectMCP(), gatewayToken)
			cs := connect(t, f.url, nil)
			ctx := context.Background()

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if slices.Sort(names); !slices.Equal(names, []string{"allowed_tool", "slow_tool"}) {
				t.Errorf("tools/list through netd = %v, want only the project's tools", names)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "allowed_tool"})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "ran allowed_tool" {
				t.Errorf("calling allowed_tool: %v, %v", res, err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "other_tool"}); err == nil || !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("calling other_tool: %v, want a refusal", err)
			}
			if _, calls, _ := g.seen(); calls["other_tool"] != 0 || calls["allowed_tool"] != 1 {
				t.Errorf("gateway ran %v, want allowed_tool once and other_tool never", calls)
			}
			checkMCPLog(t, f.log)
		})
	}
}

// checkMCPLog expects the log of TestMCPForwarder's session.
func checkMCPLog(t *testing.T, log *syncBuffer) {
	t.Helper()
	var denied, allowed *policy.MCPRecord
	// A call's record is written when its response stream ends, which may be after the client
	// has its result.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && (denied == nil || allowed == nil); {
		time.Sleep(10 * time.Millisecond)
		for _, r := range logRecords[policy.MCPRecord](t, log) {
			if r.Method == methodToolsCall && r.Tool == "other_tool" {
				denied = &r
			}
			if r.Method == methodToolsCall && r.Tool == "allowed_tool" {
				allowed = &r
			}
		}
	}
	if denied == nil || denied.Verdict != policy.Denied || !strings.Contains(denied.Reason, "not allowed") {
		t.Errorf("other_tool logged as %+v, want denied", denied)
	}
	if allowed == nil || allowed.Verdict != policy.Allowed || allowed.Server != "srv-a" || allowed.Status != 200 {
		t.Errorf("allowed_tool logged as %+v, want allowed, server srv-a, status 200", allowed)
	}
}

func TestMCPForwarderAddsTokenAndStripsAgentHeaders(t *testing.T) {
	g := startGateway(t, false)
	f := startForwarder(t, g, projectMCP(), gatewayToken)
	cs := connect(t, f.url, nil)
	cs.ListTools(context.Background(), nil)
	headers, _, _ := g.seen()
	if len(headers) < 2 {
		t.Fatalf("gateway saw %d requests", len(headers))
	}
	for i, h := range headers {
		if got := h.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+gatewayToken {
			t.Errorf("request %d reached the gateway with Authorization %q", i, got)
		}
		if h.Get("Origin") != "" {
			t.Errorf("request %d reached the gateway with Origin %q", i, h.Get("Origin"))
		}
	}
	if strings.Contains(f.log.String(), gatewayToken) {
		t.Error("the gateway token appears in netd's MCP log")
	}
}

// TestMCPForwarderStreams fails if netd buffers an event stream: the tool finishes only after
// the agent has received its progress notification.
func TestMCPForwarderStreams(t *testing.T) {
	g := startGateway(t, false)
	f := startForwarder(t, g, projectMCP(), gatewayToken)
	progress := make(chan string, 1)
	cs := connect(t, f.url, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		progress <- r.Params.Message
	}})
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "slow_tool"}
		p.SetProgressToken("p1")
		_, err := cs.CallTool(context.Background(), p)
		done <- err
	}()
	select {
	case msg := <-progress:
		if msg != "half way" {
			t.Errorf("progress = %q", msg)
		}
	case <-time.After(5 * time.Second):
		g.release <- struct{}{} // let the call end, so the servers can close
		t.Fatal("no progress notification while the tool runs: the stream is buffered")
	}
	g.release <- struct{}{}
	if err := <-done; err != nil {
		t.Errorf("slow_tool: %v", err)
	}
}

func TestMCPForwarderRefusesWithoutForwarding(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		status int
		want   string // in the response body
	}{
		{"batch with a refused call", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed_tool"}},{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"other_tool"}}]`,
			200, `[{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"abox: batch refused: it holds a message that is not allowed"}},{"jsonrpc":"2.0","id":"b","error":{"code":-32602,"message":"abox: tool \"other_tool\" is not allowed for this project"}}]`},
		{"refused notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"other_tool"}}`, 202, ""},
		{"resources are not forwarded", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///secret"}}`, 200, `method \"resources/read\" is not forwarded`},
		{"prompts are not forwarded", `{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"p"}}`, 200, `method \"prompts/get\" is not forwarded`},
		{"completions are not forwarded", `{"jsonrpc":"2.0","id":9,"method":"completion/complete"}`, 200, "is not forwarded"},
		{"not json", `{"jsonrpc":`, 400, `"code":-32700`},
		{"case variant of method", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"other_tool"}}`, 400, `unknown member \"Method\"`},
		{"case variant of name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed_tool","Name":"other_tool"}}`, 400, `params member \"Name\"`},
		{"duplicate name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed_tool","name":"other_tool"}}`, 400, `duplicate key \"name\"`},
		{"escaped duplicate", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"allowed_tool","n\u0061me":"other_tool"}}`, 400, "duplicate key"},
		{"empty batch", `[]`, 400, "batch"},
		{"no version", `{"id":1,"method":"tools/list"}`, 400, "jsonrpc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, false)
			f := startForwarder(t, g, projectMCP(), gatewayToken)
			status, body := postMCP(t, f.url, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("POST = %d %s, want %d with %s", status, body, tc.status, tc.want)
			}
			if _, _, n := g.seen(); n != 0 {
				t.Errorf("gateway received %d requests, want none", n)
			}
			if r := waitRecords[policy.MCPRecord](t, f.log, 1)[0]; r.Verdict != policy.Denied {
				t.Errorf("logged %+v, want denied", r)
			}
		})
	}
}

// TestMCPForwarderAnswersDiscover: server/discover, which Claude Code sends before initialize,
// is answered by netd with JSON-RPC's "method not found" (-32601) and never forwarded, and is
// logged as answered, not denied: it is routine, not an attempt on anything.
func TestMCPForwarderAnswersDiscover(t *testing.T) {
	g := startGateway(t, false)
	f := startForwarder(t, g, projectMCP(), gatewayToken)
	body := `{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	status, got := postMCP(t, f.url, body)
	var reply struct {
		ID    int `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &reply); err != nil || status != http.StatusOK || reply.Error.Code != -32601 || reply.ID != 0 {
		t.Errorf("POST server/discover = %d %s, want 200 with error -32601 for id 0", status, got)
	}
	if _, _, n := g.seen(); n != 0 {
		t.Errorf("gateway received %d requests, want none", n)
	}
	if r := waitRecords[policy.MCPRecord](t, f.log, 1)[0]; r.Method != "server/discover" || r.Verdict != policy.Answered || r.Reason == "" {
		t.Errorf("logged %+v, want server/discover answered with a reason", r)
	}
}

// TestMCPForwarderAttributesUnlisted: a custom server with no tool list, the project's only
// server, is Unlisted; its tools are logged under it, not under "?".
func TestMCPForwarderAttributesUnlisted(t *testing.T) {
	g := startGateway(t, false)
	f := startForwarder(t, g, &policy.MCP{Servers: []string{"notes"}, Tools: map[string]string{}, Unlisted: true}, gatewayToken)
	cs := connect(t, f.url, nil)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "other_tool"}); err != nil {
		t.Fatal(err)
	}
	var call *policy.MCPRecord
	for deadline := time.Now().Add(5 * time.Second); call == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, r := range logRecords[policy.MCPRecord](t, f.log) {
			if r.Method == methodToolsCall {
				call = &r
			}
		}
	}
	if call == nil || call.Verdict != policy.Allowed || call.Server != "notes" {
		t.Errorf("other_tool logged as %+v, want allowed under server notes", call)
	}
}

func postMCP(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMCPForwarderUnavailable(t *testing.T) {
	g := startGateway(t, false)
	tests := []struct {
		name   string
		mcp    *policy.MCP
		token  string
		path   string
		method string
		status int
	}{
		{"no mcp policy", nil, gatewayToken, mcpPath, http.MethodPost, 503},
		{"no token", projectMCP(), "", mcpPath, http.MethodPost, 503},
		{"other path", projectMCP(), gatewayToken, "/sse", http.MethodPost, 404},
		{"other method", projectMCP(), gatewayToken, mcpPath, http.MethodPut, 405},
		{"token refused by the gateway", projectMCP(), "wrong-token", mcpPath, http.MethodPost, 502},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startForwarder(t, g, tc.mcp, tc.token)
			url := strings.TrimSuffix(f.url, mcpPath) + tc.path
			req, _ := http.NewRequest(tc.method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("WWW-Authenticate") != "" {
				t.Errorf("status = %d (WWW-Authenticate %q), want %d and none", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.status)
			}
		})
	}
}

// TestMCPForwarderDialsOnlyTheGateway: the token goes to the gateway's address as the
// supervisor gave it, and nowhere else. The upstream URL here names a listener of "the agent"
// on loopback, as a spoofed answer for the gateway's name once did; it never sees a connection.
// Without an address the forwarder refuses and dials nothing.
func TestMCPForwarderDialsOnlyTheGateway(t *testing.T) {
	g := startGateway(t, false)
	trap, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer trap.Close()
	caught := make(chan struct{}, 1)
	go func() {
		if c, err := trap.Accept(); err == nil {
			caught <- struct{}{}
			c.Close()
		}
	}()
	m := projectMCP()
	m.Upstream = "http://" + trap.Addr().String() + "/mcp"
	gw := fmt.Sprintf("127.0.0.1:%d", g.port)
	for _, tc := range []struct {
		name, gateway string
		want          int
	}{{"to the gateway's address", gw, http.StatusOK}, {"no address", "", http.StatusServiceUnavailable}} {
		t.Run(tc.name, func(t *testing.T) {
			log := &syncBuffer{}
			var gwArg []string
			if tc.gateway != "" {
				gwArg = []string{tc.gateway}
			}
			ts := httptest.NewServer(newMCPForwarder(testConfig(t, nil, m, gatewayToken, gwArg...), newJSONL(log, maxLogBytes)))
			defer ts.Close()
			_, _, before := g.seen()
			status, body := postMCP(t, ts.URL+mcpPath, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			_, _, after := g.seen()
			if status != tc.want {
				t.Errorf("status = %d (%s), want %d", status, body, tc.want)
			}
			if n := after - before; (tc.gateway != "") != (n > 0) {
				t.Errorf("the gateway saw %d requests", n)
			}
		})
	}
	select {
	case <-caught:
		t.Error("the forwarder connected to the host its upstream URL names")
	case <-time.After(100 * time.Millisecond):
	}
}
