//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// isolate gives the test its own home, Claude directory and working directory.
func isolate(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("STANDIN_REQUIRE_AUTH", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("CLAUDE_CODE_OAUTH_TOKEN", "")
	wd := filepath.Join(home, "work")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	return wd
}

// claude runs the stand-in in-process.
func claude(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// events parses stream-json output.
func events(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stream-json line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(o options) bool
	}{
		{"prompt after flags", []string{"-p", "--output-format", "stream-json", "--verbose", "echo hi"}, "",
			func(o options) bool {
				return o.print && o.verbose && o.outputFormat == "stream-json" && o.prompt == "echo hi"
			}},
		{"prompt after --", []string{"--print", "--", "-not-a-flag"}, "",
			func(o options) bool { return o.prompt == "-not-a-flag" }},
		{"inline values", []string{"-p", "--output-format=json", "--model=m", "x"}, "",
			func(o options) bool { return o.outputFormat == "json" && o.model == "m" }},
		{"variadic mcp-config", []string{"-p", "--mcp-config", "a.json", "b.json", "--strict-mcp-config", "--", "x"}, "",
			func(o options) bool { return slices.Equal(o.mcpConfigs, []string{"a.json", "b.json"}) && o.strictMCP }},
		{"ignored real flags", []string{"-p", "--dangerously-skip-permissions", "--max-turns", "3", "x"}, "",
			func(o options) bool { return o.print }},
		{"resume and continue", []string{"-p", "--resume", "abc", "-c", "x"}, "",
			func(o options) bool { return o.resume == "abc" && o.cont }},
		{"unknown flag", []string{"-p", "--frobnicate", "x"}, "error: unknown option '--frobnicate'", nil},
		{"missing value", []string{"-p", "--model"}, "error: option '--model <model>' argument missing", nil},
		{"bad choice", []string{"--output-format", "xml"},
			"error: option '--output-format <format>' argument 'xml' is invalid. Allowed choices are text, json, stream-json.", nil},
		{"variadic swallows prompt", []string{"-p", "--mcp-config", "a.json", "prompt"}, "",
			func(o options) bool { return !o.hasPrompt && len(o.mcpConfigs) == 2 }},
		{"two prompts", []string{"-p", "a", "b"}, "error: too many arguments. Expected 1 argument but got 2.", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseArgs(tc.args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("parseArgs(%q) error = %v, want %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseArgs(%q) = %v", tc.args, err)
			}
			if !tc.check(o) {
				t.Errorf("parseArgs(%q) = %+v", tc.args, o)
			}
		})
	}
}

func TestVersionAndErrors(t *testing.T) {
	isolate(t)
	if out, _, code := claude(t, "--version"); code != 0 || out != "2.1.0 (Claude Code stand-in)\n" {
		t.Errorf("--version = %q, %d", out, code)
	}
	if _, errOut, code := claude(t, "--bogus"); code != 1 || !strings.Contains(errOut, "unknown option '--bogus'") {
		t.Errorf("--bogus = %q, %d; want exit 1 and an unknown-option error", errOut, code)
	}
	if _, errOut, code := claude(t, "-p", "--output-format", "stream-json", "true"); code != 1 ||
		!strings.Contains(errOut, "requires --verbose") {
		t.Errorf("stream-json without --verbose = %q, %d", errOut, code)
	}
	if _, _, code := claude(t, "-p"); code != 1 {
		t.Errorf("-p without a prompt exited %d, want 1", code)
	}
}

func TestStreamJSON(t *testing.T) {
	wd := isolate(t)
	script := `echo one; echo '::tool_use name=Bash input={"command":"ls"}'; echo two >&2; echo three; exit 3`
	out, errOut, code := claude(t, "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", script)
	if code != 3 {
		t.Errorf("exit = %d, want the script's 3", code)
	}
	if errOut != "two\n" {
		t.Errorf("stderr = %q, want the script's stderr", errOut)
	}
	evs := events(t, out)
	var types []string
	for _, ev := range evs {
		types = append(types, fmt.Sprint(ev["type"]))
	}
	if want := []string{"system", "assistant", "user", "assistant", "result"}; !slices.Equal(types, want) {
		t.Fatalf("event types = %v, want %v", types, want)
	}
	initEv, res := evs[0], evs[len(evs)-1]
	if initEv["subtype"] != "init" || initEv["cwd"] != wd || initEv["permissionMode"] != "acceptEdits" {
		t.Errorf("init = %v", initEv)
	}
	tool := evs[1]["message"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if tool["type"] != "tool_use" || tool["name"] != "Bash" {
		t.Errorf("tool_use item = %v", tool)
	}
	text := evs[3]["message"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if text["text"] != "one\nthree" {
		t.Errorf("assistant text = %q, want %q", text["text"], "one\nthree")
	}
	if res["subtype"] != "error_during_execution" || res["is_error"] != true || res["result"] != "one\nthree" ||
		res["session_id"] != initEv["session_id"] || res["num_turns"] != float64(1) {
		t.Errorf("result = %v", res)
	}
}

func TestTextAndJSONFormats(t *testing.T) {
	isolate(t)
	if out, _, code := claude(t, "-p", "echo hello"); code != 0 || out != "hello\n" {
		t.Errorf("text = %q, %d", out, code)
	}
	out, _, code := claude(t, "-p", "--output-format", "json", "echo hello")
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("json = %q, %d, %v", out, code, err)
	}
	if res["type"] != "result" || res["subtype"] != "success" || res["result"] != "hello" {
		t.Errorf("json result = %v", res)
	}
}

func TestSessions(t *testing.T) {
	wd := isolate(t)
	out, _, _ := claude(t, "-p", "--output-format", "json", `echo "new=$STANDIN_SESSION_ID prev=$STANDIN_PREV_SESSION"`)
	var first map[string]any
	_ = json.Unmarshal([]byte(out), &first)
	id := first["session_id"].(string)
	file := filepath.Join(os.Getenv("HOME"), ".claude", "projects", strings.ReplaceAll(wd, "/", "-"), id+".jsonl")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("session file: %v", err)
	}
	if out, _, _ := claude(t, "-p", "--continue", `echo "$STANDIN_PREV_SESSION"`); out != id+"\n" {
		t.Errorf("--continue saw previous session %q, want %q", out, id)
	}
	if out, _, _ := claude(t, "-p", "--resume", id, `echo "$STANDIN_SESSION_ID"`); out != id+"\n" {
		t.Errorf("--resume ran in session %q, want %q", out, id)
	}
	if _, errOut, code := claude(t, "-p", "--resume", "nope", "true"); code != 1 ||
		!strings.Contains(errOut, "No conversation found with session ID: nope") {
		t.Errorf("--resume nope = %q, %d", errOut, code)
	}
	t.Chdir(t.TempDir())
	if _, errOut, code := claude(t, "-p", "--continue", "true"); code != 1 ||
		!strings.Contains(errOut, "No conversation found to continue") {
		t.Errorf("--continue in a fresh directory = %q, %d", errOut, code)
	}
}

func TestRequireAuth(t *testing.T) {
	isolate(t)
	t.Setenv("STANDIN_REQUIRE_AUTH", "1")
	out, _, code := claude(t, "-p", "--output-format", "stream-json", "--verbose", "echo should-not-run")
	evs := events(t, out)
	res := evs[len(evs)-1]
	if code != 1 || res["is_error"] != true || res["result"] != loginMessage {
		t.Errorf("unauthenticated run = %v, exit %d", res, code)
	}
	if strings.Contains(out, "should-not-run") {
		t.Error("the prompt ran without credentials")
	}
	dir := filepath.Join(os.Getenv("HOME"), ".claude")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := claude(t, "-p", "echo ran"); code != 0 || out != "ran\n" {
		t.Errorf("with credentials = %q, %d", out, code)
	}
}

// mcpTestServer serves one echo tool over streamable HTTP behind a bearer token.
func mcpTestServer(t *testing.T, token string) string {
	t.Helper()
	url, _ := mcpCountingServer(t, token)
	return url
}

// mcpCountingServer is mcpTestServer that also counts the DELETEs it receives.
func mcpCountingServer(t *testing.T, token string) (string, *atomic.Int64) {
	t.Helper()
	deletes := &atomic.Int64{}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		if a.Text == "fail" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed"}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodDelete {
			deletes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", deletes
}

func writeMCPConfig(t *testing.T, url, token string) string {
	t.Helper()
	headers := map[string]string{}
	if token != "" {
		headers["Authorization"] = "Bearer ${TEST_TOKEN}"
		t.Setenv("TEST_TOKEN", token)
	}
	cfg := map[string]any{"mcpServers": map[string]any{"abox": map[string]any{"type": "http", "url": url, "headers": headers}}}
	b, _ := json.Marshal(cfg)
	p := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMCPCall(t *testing.T) {
	isolate(t)
	url := mcpTestServer(t, "sekrit")
	good := writeMCPConfig(t, url, "sekrit")
	t.Setenv("STANDIN_MCP_CONFIG", good)
	if out, errOut, code := claude(t, "mcp-call", "list"); code != 0 || !strings.Contains(out, `"name":"echo"`) {
		t.Errorf("list = %q %q %d", out, errOut, code)
	}
	if out, _, code := claude(t, "mcp-call", "call", "echo", `{"text":"hi"}`); code != 0 || !strings.Contains(out, `"text":"hi"`) {
		t.Errorf("call = %q %d", out, code)
	}
	if out, _, code := claude(t, "mcp-call", "call", "echo", `{"text":"fail"}`); code != 1 || !strings.Contains(out, `"isError":true`) {
		t.Errorf("failing call = %q %d, want exit 1 and the result", out, code)
	}
	bad := writeMCPConfig(t, url, "")
	if _, errOut, code := claude(t, "mcp-call", "--mcp-config", bad, "list"); code != 1 || !strings.Contains(errOut, "Unauthorized") {
		t.Logf("stderr: %s", errOut)
		t.Errorf("list without a token = %q %d, want a 401 error", errOut, code)
	}
	out, _, code := claude(t, "mcp-call", "--mcp-config", bad, "raw", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if code != 0 || !strings.Contains(out, `"status":401`) {
		t.Errorf("raw without a token = %q %d, want status 401", out, code)
	}
}

// TestMCPNoDelete: with STANDIN_MCP_NO_DELETE=1 the stand-in leaves its sessions open as Claude
// Code does, both in the start-up probe and in mcp-call; by default the go-sdk client DELETEs.
func TestMCPNoDelete(t *testing.T) {
	isolate(t)
	url, deletes := mcpCountingServer(t, "sekrit")
	cfg := writeMCPConfig(t, url, "sekrit")
	t.Setenv("STANDIN_MCP_CONFIG", cfg)
	for _, tc := range []struct {
		env  string
		want int64
	}{{"1", 0}, {"", 2}} {
		t.Setenv("STANDIN_MCP_NO_DELETE", tc.env)
		deletes.Store(0)
		if _, errOut, code := claude(t, "mcp-call", "list"); code != 0 {
			t.Fatalf("mcp-call list: %d %s", code, errOut)
		}
		if _, errOut, code := claude(t, "-p", "--mcp-config", cfg, "--", "true"); code != 0 {
			t.Fatalf("claude -p: %d %s", code, errOut)
		}
		if got := deletes.Load(); got != tc.want {
			t.Errorf("STANDIN_MCP_NO_DELETE=%q: %d DELETEs, want %d", tc.env, got, tc.want)
		}
	}
}

func TestInitReportsMCPServers(t *testing.T) {
	isolate(t)
	url := mcpTestServer(t, "sekrit")
	good := writeMCPConfig(t, url, "sekrit")
	down := `{"mcpServers":{"down":{"type":"http","url":"http://127.0.0.1:1/mcp"}}}`
	out, _, code := claude(t, "-p", "--output-format", "stream-json", "--verbose", "--mcp-config", good, down, "--", "true")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	initEv := events(t, out)[0]
	servers, _ := json.Marshal(initEv["mcp_servers"])
	if want := `[{"name":"abox","status":"connected"},{"name":"down","status":"failed"}]`; string(servers) != want {
		t.Errorf("mcp_servers = %s, want %s", servers, want)
	}
	if !slices.Contains(toStrings(initEv["tools"]), "mcp__abox__echo") {
		t.Errorf("tools = %v, want mcp__abox__echo among them", initEv["tools"])
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// TestParseProcAddr: /proc/net/udp's addresses are little-endian hex, ports big-endian hex.
func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{"0100007F:3BF9": "127.0.0.1:15353", "0B00007F:0035": "127.0.0.11:53", "06001CAC:9952": "172.28.0.6:39250"} {
		got, err := parseProcAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("parseProcAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "zz00007F:0035", "0100007F:zzzz"} {
		if _, err := parseProcAddr(bad); err == nil {
			t.Errorf("parseProcAddr(%q) = nil error, want one", bad)
		}
	}
}
