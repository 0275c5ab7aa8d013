//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startGateway runs a stub gateway for args on an httptest server and returns its URL and log.
func startGateway(t *testing.T, args ...string) (string, *syncBuffer) {
	t.Helper()
	t.Setenv("MCP_GATEWAY_AUTH_TOKEN", "tok")
	f, err := parseGatewayFlags(append([]string{"--transport=streaming"}, args...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	g, err := newGateway(f, slog.New(slog.NewJSONHandler(&logs, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.handler())
	t.Cleanup(srv.Close)
	return srv.URL, &logs
}

// syncBuffer is a bytes.Buffer the test may read while the gateway's goroutines log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestGatewayToolsAndCallLog(t *testing.T) {
	url, logs := startGateway(t)
	cs, err := connect(t, url, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolNames(t, cs), []string{"add", "echo", "note_read", "note_search", "secret_env", "whoami"}; !slices.Equal(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if got, _ := callText(t, cs, "echo", map[string]any{"text": "hi"}); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	if got, _ := callText(t, cs, "add", map[string]any{"a": 2, "b": 3}); got != "5" {
		t.Errorf("add = %q", got)
	}
	who, _ := callText(t, cs, "whoami", nil)
	var w map[string]string
	if err := json.Unmarshal([]byte(who), &w); err != nil || !strings.HasPrefix(w["remote"], "127.0.0.1:") {
		t.Errorf("whoami = %q", who)
	}
	if n := strings.Count(logs.String(), `"msg":"call"`); n != 3 {
		t.Errorf("logged %d calls, want 3:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), `"tool":"echo","args":{"text":"hi"}`) {
		t.Errorf("call log lacks the echo call:\n%s", logs)
	}
}

func TestGatewayAuth(t *testing.T) {
	url, logs := startGateway(t)
	if _, err := connect(t, url, "wrong"); err == nil {
		t.Error("connect with a wrong token succeeded")
	}
	tests := []struct {
		name, path, auth string
		want             int
	}{
		{"health needs no token", "/health", "", 200},
		{"mcp without token", "/mcp", "", 401},
		{"lowercase bearer", "/mcp", "bearer tok", 401},
		{"other path without token", "/", "", 401},
		{"other path redirects", "/", "Bearer tok", 307},
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range tests {
		req, _ := http.NewRequest("GET", url+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: GET %s = %d, want %d", tc.name, tc.path, resp.StatusCode, tc.want)
		}
		if tc.want == 401 && resp.Header.Get("WWW-Authenticate") != `Bearer realm="MCP Gateway"` {
			t.Errorf("%s: WWW-Authenticate = %q", tc.name, resp.Header.Get("WWW-Authenticate"))
		}
	}
	req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 415 {
		t.Errorf("POST with a charset = %v, %v; want 415", resp, err)
	}
	if !strings.Contains(logs.String(), `"auth":"bad"`) || !strings.Contains(logs.String(), `"auth":"missing"`) {
		t.Errorf("http log lacks the refused requests:\n%s", logs)
	}
}

// TestGatewayOpenBuild: the deliberately open build serves MCP without a token and with a wrong
// one, token or not, but only in a container (DOCKER_MCP_IN_CONTAINER=1), like the real
// gateway before v0.43.1.
func TestGatewayOpenBuild(t *testing.T) {
	t.Setenv(OpenEnv, "off")
	t.Run("outside a container", func(t *testing.T) {
		url, _ := startGateway(t)
		if _, err := connect(t, url, "wrong"); err == nil {
			t.Error("connect with a wrong token succeeded outside a container")
		}
	})
	t.Run("in a container", func(t *testing.T) {
		t.Setenv("DOCKER_MCP_IN_CONTAINER", "1")
		url, logs := startGateway(t)
		for _, tok := range []string{"wrong", "tok"} {
			if _, err := connect(t, url, tok); err != nil {
				t.Errorf("connect with token %q: %v, want served", tok, err)
			}
		}
		if !strings.Contains(logs.String(), `"msg":"auth","off":`) {
			t.Errorf("the log does not say auth is off: %s", logs)
		}
	})
}

func TestGatewayNarrowing(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--servers=echo,math"}, []string{"add", "echo"}},
		{[]string{"--servers", "echo", "--servers", "whoami"}, []string{"echo", "whoami"}},
		{[]string{"--servers=echo,math", "--tools=math:add"}, []string{"add"}},
		{[]string{"--tools=math:*,echo"}, []string{"add", "echo"}},
		{[]string{"--servers=nosuch"}, nil},
	}
	for _, tc := range tests {
		url, _ := startGateway(t, tc.args...)
		cs, err := connect(t, url, "tok")
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(t, cs); !slices.Equal(got, tc.want) {
			t.Errorf("%v: tools = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestGatewayAcceptsRealFlags(t *testing.T) {
	args := []string{"--transport=streaming", "--port=8811", "--servers=echo", "--tools=echo:echo",
		"--catalog=abox.yaml", "--additional-catalog=more.yaml", "--secrets=/run/secrets/mcp",
		"--verify-signatures", "--log-calls", "--block-secrets", "--watch=false", "--cpus=1", "--memory=2Gb",
		"--config=/c.yaml", "--long-lived", "--verbose=false"}
	if _, err := parseGatewayFlags(args, io.Discard); err != nil {
		t.Errorf("parseGatewayFlags(real argv) = %v", err)
	}
	for _, bad := range [][]string{{"--transport=stdio"}, {"--transport=streaming", "--nope"}, {"--transport=streaming", "--profile=x"}} {
		if _, err := parseGatewayFlags(bad, io.Discard); err == nil {
			t.Errorf("parseGatewayFlags(%q) = nil, want an error", bad)
		}
	}
}

func TestGatewaySecretsAndCatalog(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cats := filepath.Join(home, ".docker", "mcp", "catalogs")
	if err := os.MkdirAll(cats, 0o755); err != nil {
		t.Fatal(err)
	}
	catalogYAML := "registry:\n  secrets:\n    image: x\n    secrets: [{name: gh.token, env: GH_TOKEN}, {name: gh.missing, env: MISSING}]\n" +
		"    env: [{name: PLAIN, value: plain}]\n"
	if err := os.WriteFile(filepath.Join(cats, "abox.yaml"), []byte(catalogYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	secretsFile := filepath.Join(t.TempDir(), "mcp_secret")
	if err := os.WriteFile(secretsFile, []byte("# comment\ngh.token=\"s3cr=t\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url, _ := startGateway(t, "--servers=secrets", "--catalog=abox.yaml", "--secrets=docker-desktop:/nonexistent:"+secretsFile)
	cs, err := connect(t, url, "tok")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"GH_TOKEN": `"s3cr=t"`, "MISSING": "<UNKNOWN>", "PLAIN": "plain"} {
		if got, isErr := callText(t, cs, "secret_env", map[string]any{"name": name}); got != want || isErr {
			t.Errorf("secret_env(%s) = %q, %v; want %q", name, got, isErr, want)
		}
	}
	if _, isErr := callText(t, cs, "secret_env", map[string]any{"name": "MCP_GATEWAY_AUTH_TOKEN"}); !isErr {
		t.Error("secret_env exposed the gateway's own environment")
	}
	f, _ := parseGatewayFlags([]string{"--transport=streaming", "--catalog=/etc/passwd"}, io.Discard)
	if _, err := newGateway(f, slog.New(slog.NewJSONHandler(io.Discard, nil)), io.Discard); err == nil {
		t.Error("a catalog outside ~/.docker/mcp/catalogs was accepted")
	}
}

func TestStdioServer(t *testing.T) {
	t.Setenv("STUB_TEST_VAR", "v1")
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := newStdioServer(serverOptions{}, io.Discard).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got, _ := callText(t, cs, "env", map[string]any{"name": "STUB_TEST_VAR"}); got != "v1" {
		t.Errorf("env = %q, want v1", got)
	}
	if got, _ := callText(t, cs, "echo", map[string]any{"text": "x"}); got != "x" {
		t.Errorf("echo = %q", got)
	}
}

// TestGatewaySessions: sessions are opened by initialize and closed only by DELETE, each logged
// with the number then open; a closed or unknown session gets the go-sdk handler's 404.
func TestGatewaySessions(t *testing.T) {
	url, logs := startGateway(t)
	a, err := connect(t, url, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, url, "tok"); err != nil {
		t.Fatal(err)
	}
	id := a.ID()
	if err := a.Close(); err != nil { // the go-sdk client sends the DELETE
		t.Fatal(err)
	}
	var events []string
	for deadline := time.Now().Add(5 * time.Second); len(events) < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		events = sessionEvents(t, logs.String())
	}
	if want := []string{"open 1", "open 2", "close 1"}; !slices.Equal(events, want) {
		t.Errorf("session events = %q, want %q", events, want)
	}
	for _, method := range []string{http.MethodDelete, http.MethodGet} {
		for _, sid := range []string{id, "never-issued"} {
			req, _ := http.NewRequest(method, url+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer tok")
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "session not found") {
				t.Errorf("%s of session %q = %d %q, want 404 session not found", method, sid, resp.StatusCode, body)
			}
		}
	}
}

// sessionEvents returns the stub's session log lines as "<event> <open>".
func sessionEvents(t *testing.T, logs string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var ev struct {
			Msg, Event string
			Open       int
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if ev.Msg == "session" {
			out = append(out, fmt.Sprintf("%s %d", ev.Event, ev.Open))
		}
	}
	return out
}
