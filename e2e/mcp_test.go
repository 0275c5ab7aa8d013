//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/gateway"
)

// The agent's side of MCP, end to end on the real daemon: the stand-in claude is the MCP client,
// netd's forwarder on 127.0.0.1 its only endpoint, and the mcpstub gateway (gateway.image of the
// harness's config) serves the union of two projects on one profile. Its built-in servers are
// custom servers here, so the catalog knows their tools: echo (echo), math (add, and a multiply
// the stub does not implement), whoami (whoami).

// mcpCustomServers declares the stub's built-in servers in custom-servers.yaml.
func mcpCustomServers(t *testing.T, h *harness.H) {
	t.Helper()
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	var b strings.Builder
	for _, s := range []struct{ name, tools string }{{"echo", "[echo]"}, {"math", "[add, multiply]"}, {"whoami", "[whoami]"}} {
		b.WriteString(s.name + ":\n  image: " + stub + "\n  pin: false\n  tools: " + s.tools + "\n")
	}
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"), b.String())
}

// secondWorkspace makes another project directory the agent (uid 1000) can write, and removes
// the ~/.claude volume abox makes for it, which the harness does not know.
func secondWorkspace(t *testing.T, h *harness.H, name string) string {
	t.Helper()
	ws := filepath.Join(h.Dir, name)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(ws))
	vol := "abox-claude-" + hex.EncodeToString(sum[:])[:12]
	t.Cleanup(func() { h.Docker("volume", "rm", "-f", vol) })
	return ws
}

// TestMCPThroughNetd: project alpha (echo, and math narrowed to multiply) and project beta (math
// un-narrowed, whoami) share one profile, so the gateway serves echo, add and whoami. Each agent
// lists and calls exactly its own tools through netd; what it may not use is absent from
// tools/list and refused with a JSON-RPC error that netd logs; a forged Authorization header is
// replaced by netd's credential; the token is nowhere the agent can read; the gateway cannot be
// reached directly; the run summary and `abox logs --gateway` show the calls.
func TestMCPThroughNetd(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	mcpCustomServers(t, h)
	h.WriteManifest("version: 1\nproject: alpha\nprofile: " + h.Profile +
		"\nservers: [echo, math]\ntools:\n  math: [multiply]\n")
	mustAbox(t, h, "up", "--yes")
	ws2 := secondWorkspace(t, h, "beta")
	writeFile(t, filepath.Join(ws2, "agentbox.yaml"), "version: 1\nproject: beta\nprofile: "+h.Profile+"\nservers: [math, whoami]\n")
	if res := h.AboxIn(ws2, "up", "--yes"); !res.OK() {
		t.Fatalf("abox up (beta): %s", res)
	}
	gw := gateway.Name(h.Profile)
	if v, _ := gateway.ArgValue(inspectGateway(t, h, gw).Args, "--servers"); v != "echo,math,whoami" {
		t.Fatalf("gateway --servers = %q, want the union echo,math,whoami", v)
	}
	token := readToken(t, h)

	res := h.Abox("run", strings.Join([]string{
		`echo "list $(claude mcp-call list)"`,
		`echo "echo $(claude mcp-call call echo '{"text":"hello through netd"}')"`,
		`echo "add $(claude mcp-call call add '{"a":1,"b":2}' 2>&1)"`,
		`echo "whoami $(claude mcp-call call whoami '{}' 2>&1)"`,
		`echo "raw $(claude mcp-call raw '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}')"`,
	}, "\n"))
	if !res.OK() {
		t.Fatalf("abox run (alpha): %s", res)
	}
	out := prefixed(agentOutput(res.Stdout))
	if got := toolNames(t, out["list"]); got != "echo" {
		t.Errorf("alpha's tools/list = %q, want only echo (add is narrowed out, whoami is beta's)", got)
	}
	if !strings.Contains(out["echo"], "hello through netd") {
		t.Errorf("alpha's echo call = %q, want the echoed text", out["echo"])
	}
	for _, name := range []string{"add", "whoami"} {
		if !strings.Contains(out[name], `tool "`+name+`" is not allowed`) {
			t.Errorf("alpha's %s call = %q, want netd's JSON-RPC refusal", name, out[name])
		}
	}
	if !strings.Contains(out["raw"], `-32602`) {
		t.Errorf("raw tools/call of whoami = %q, want JSON-RPC error -32602", out["raw"])
	}
	if calls := stubCalls(t, h, gw); strings.Join(calls, ",") != "echo" {
		t.Errorf("the gateway ran %v for alpha, want only echo", calls)
	}
	checkMCPLog(t, h, h.Workspace, map[string]string{"echo": "allowed", "add": "denied", "whoami": "denied"})
	for _, want := range []string{"echo:echo", "allowed", "add", "denied"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("run summary lacks %q:\n%s", want, res.Stderr)
		}
	}

	// beta sees add and whoami, never alpha's echo.
	res = h.AboxIn(ws2, "run", strings.Join([]string{
		`echo "list $(claude mcp-call list)"`,
		`echo "whoami $(claude mcp-call call whoami '{}')"`,
		`echo "echo $(claude mcp-call call echo '{"text":"theirs"}' 2>&1)"`,
	}, "\n"))
	if !res.OK() {
		t.Fatalf("abox run (beta): %s", res)
	}
	out = prefixed(agentOutput(res.Stdout))
	if got := toolNames(t, out["list"]); got != "add,whoami" {
		t.Errorf("beta's tools/list = %q, want add,whoami", got)
	}
	if !strings.Contains(out["whoami"], "remote") || !strings.Contains(out["echo"], `is not allowed`) {
		t.Errorf("beta's calls: whoami %q, echo %q; want whoami answered, echo refused", out["whoami"], out["echo"])
	}
	checkMCPLog(t, h, ws2, map[string]string{"whoami": "allowed", "echo": "denied"})
	if calls := stubCalls(t, h, gw); strings.Join(calls, ",") != "echo,whoami" {
		t.Errorf("the gateway ran %v, want alpha's echo and beta's whoami only", calls)
	}

	// A forged bearer, through the go-sdk client and through curl, is replaced by netd's own.
	h.WriteFile("forged.json", `{"mcpServers":{"abox":{"type":"http","url":"http://127.0.0.1:15811/mcp",`+
		`"headers":{"Authorization":"Bearer forged-by-the-agent"}}}}`)
	res = h.Abox("run", strings.Join([]string{
		`echo "forged $(claude mcp-call --mcp-config forged.json call echo '{"text":"forged header"}')"`,
		`echo "curl $(curl -sS -H 'Authorization: Bearer guessed-token' -H 'Content-Type: application/json' ` +
			`-H 'Accept: application/json, text/event-stream' --data '{"jsonrpc":"2.0","id":1,"method":"initialize",` +
			`"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' ` +
			`-o /dev/null -w '%{http_code}' http://127.0.0.1:15811/mcp)"`,
	}, "\n"))
	out = prefixed(agentOutput(res.Stdout))
	if !res.OK() || !strings.Contains(out["forged"], "forged header") || out["curl"] != "200" {
		t.Errorf("forged bearer: go-sdk %q, curl %q; want both through with netd's token\n%s", out["forged"], out["curl"], res)
	}
	checkStubAuth(t, h, gw)

	checkTokenHidden(t, h, token)
	checkGatewayUnreachable(t, h, gw)

	logs := h.Abox("logs", "--gateway")
	for _, want := range []string{"allowed", "echo:echo", "denied", "whoami", "last lines of " + gw} {
		if !strings.Contains(logs.Stdout, want) {
			t.Errorf("abox logs --gateway lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.Stdout+logs.Stderr, token) {
		t.Error("abox logs --gateway printed the token")
	}
}

// prefixed maps the first word of each output line to the rest of it.
func prefixed(output string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(output, "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// toolNames returns the sorted names of a tools/list result printed by `claude mcp-call list`.
func toolNames(t *testing.T, list string) string {
	t.Helper()
	var res struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal([]byte(list), &res); err != nil {
		t.Errorf("tools/list %q: %v", list, err)
		return ""
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, ",")
}

// stubCalls returns the tools the gateway stub ran, in order.
func stubCalls(t *testing.T, h *harness.H, gw string) []string {
	t.Helper()
	var out []string
	for _, ev := range h.Events(gw, "call") {
		out = append(out, ev.Str("tool"))
	}
	return out
}

// checkStubAuth: every request that reached the gateway's MCP endpoint carried exactly the
// profile token (the stub compares it and logs ok, bad or missing), but abox's own probes of
// its token check, which the gateway refused.
func checkStubAuth(t *testing.T, h *harness.H, gw string) {
	t.Helper()
	n := 0
	for _, ev := range h.Events(gw, "http") {
		if ev.Str("path") == "/health" || refusedAuthProbe(ev) {
			continue
		}
		n++
		if ev.Str("auth") != "ok" {
			t.Errorf("the gateway saw a request with auth %q: %v", ev.Str("auth"), ev)
		}
	}
	if n == 0 {
		t.Error("the gateway logged no MCP request")
	}
}

// refusedAuthProbe reports whether a gateway stub's http event is one of the requests abox
// sends without the token, or with a wrong one, to prove the gateway refuses them, and was
// refused.
func refusedAuthProbe(ev harness.Event) bool {
	return ev.Str("user_agent") == gateway.AuthProbeAgent && ev.Str("status") == "401" && ev.Str("auth") != "ok"
}

// checkMCPLog: the last run's harvested mcp.jsonl has each tool's call with the verdict.
func checkMCPLog(t *testing.T, h *harness.H, ws string, want map[string]string) {
	t.Helper()
	res := h.AboxIn(ws, "logs", "--gateway", "--json", "--limit", "1")
	var lines []struct{ Method, Tool, Verdict, Reason string }
	if err := json.Unmarshal([]byte(res.Stdout), &lines); err != nil {
		t.Fatalf("abox logs --gateway --json: %v\n%s", err, res)
	}
	got := map[string]string{}
	for _, l := range lines {
		if l.Method == "tools/call" {
			got[l.Tool] = l.Verdict
		}
	}
	for tool, verdict := range want {
		if got[tool] != verdict {
			t.Errorf("%s: mcp.jsonl has tools/call %s %q, want %q (all: %+v)", filepath.Base(ws), tool, got[tool], verdict, lines)
		}
	}
}

// checkTokenHidden has the agent copy everything it can read that could hold a credential into
// the workspace (its environment, every /proc/*/environ and cmdline it can read, the files under
// /opt/abox, /etc, /home, /workspace, /run, /tmp), then looks for the token in all of it. The
// agent never sees the token, so the search happens here.
func checkTokenHidden(t *testing.T, h *harness.H, token string) {
	t.Helper()
	res := h.Abox("run", strings.Join([]string{
		`mkdir -p .hunt`,
		`env > .hunt/env`,
		`for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; echo; done > .hunt/proc`,
		`tar -cf .hunt/files.tar --exclude=.hunt /opt/abox /etc /home /workspace /run /tmp 2>/dev/null`,
		`cat /run/abox/gateway/token > .hunt/token-file 2>&1`,
		// Readable or not (the test's state is root's, a user's is the agent's uid): nothing
		// of abox's gateway state may be in the agent's container at all.
		`echo "token-path $([ -e /run/abox/gateway/token ] && echo present || echo absent)"`,
		`echo "gateway-mounts $(grep -cE '/gateways[/ ]' /proc/self/mountinfo)"`,
		`echo "mcp.json $(cat /opt/abox/mcp.json | tr -d '\n ')"`,
		`echo "files $(tar -tf .hunt/files.tar | wc -l)"`,
	}, "\n"))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	out := prefixed(agentOutput(res.Stdout))
	if !strings.Contains(out["mcp.json"], `"url":"http://127.0.0.1:15811/mcp"`) || strings.Contains(out["mcp.json"], "headers") {
		t.Errorf("mcp.json = %q, want netd's endpoint and no header", out["mcp.json"])
	}
	if out["files"] == "" || out["files"] == "0" {
		t.Errorf("the agent archived no file: %s", res)
	}
	if out["token-path"] != "absent" || out["gateway-mounts"] != "0" {
		t.Errorf("the agent's container has the token path %s and %s mounts of abox's gateway state, want neither", out["token-path"], out["gateway-mounts"])
	}
	hunt := filepath.Join(h.Workspace, ".hunt")
	filepath.WalkDir(h.Workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(token)) {
			t.Errorf("the token is in %s, which the agent can read", p)
		}
		return nil
	})
	if data, _ := os.ReadFile(filepath.Join(hunt, "token-file")); !bytes.Contains(data, []byte("No such file")) {
		t.Errorf("reading netd's token path in the agent: %q, want no such file", data)
	}
	if strings.Contains(res.Stdout+res.Stderr, token) {
		t.Error("abox run printed the token")
	}
}

// checkGatewayUnreachable: from the agent, the gateway's name does not resolve and its address
// refuses every port; no request without netd's credential reached it.
func checkGatewayUnreachable(t *testing.T, h *harness.H, gw string) {
	t.Helper()
	ip := h.IP(gw)
	lines := []string{
		`echo "dns $(claude net dns 127.0.0.1:53 ` + gw + `)"`,
		`echo "name $(claude net tcp ` + gw + `:8811)"`,
		`echo "dns-53 $(claude net dns ` + ip + `:53 ` + gw + `)"`,
		`echo "curl {\"ok\":$(curl -sS --max-time 5 http://` + ip + `:8811/health >/dev/null && echo true || echo false)}"`,
		`echo "http-80 $(claude net http ` + ip + `:80 ` + gw + `)"`,
		`echo "tls-443 $(claude net tls ` + ip + `:443 ` + gw + `)"`,
	}
	// Port 53 is left out: every port-53 connection lands on netd's resolver (dns-53 above).
	ports := []string{"8811", "22", "2375", "2376", "8080", "1"}
	for _, p := range ports {
		lines = append(lines, `echo "tcp-`+p+` $(claude net tcp `+ip+`:`+p+`)"`)
	}
	res := h.Abox("run", strings.Join(lines, "\n"))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	names := []string{"dns", "name", "dns-53", "curl", "http-80", "tls-443"}
	for _, p := range ports {
		names = append(names, "tcp-"+p)
	}
	for _, n := range names {
		if p, ok := got[n]; !ok || p.OK {
			t.Errorf("%s: %+v (present %v), want it refused", n, p, ok)
		}
	}
	checkStubAuth(t, h, gw)
}

// TestMCPUnlistedServerRefused: gamma declares whoami, whose tools nobody lists, so its netd
// would let any tool name through. Beside alpha's echo on the same profile, `gateway up` refuses
// to start the gateway and names the way out; once gamma narrows whoami, the union is served,
// until alpha's narrowing names gamma's tool.
func TestMCPUnlistedServerRefused(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"),
		"echo:\n  image: "+stub+"\n  pin: false\n  tools: [echo]\nwhoami:\n  image: "+stub+"\n  pin: false\n")
	h.WriteManifest("version: 1\nproject: alpha\nprofile: " + h.Profile + "\nservers: [echo]\n")
	mustAbox(t, h, "render")
	ws2 := secondWorkspace(t, h, "gamma")
	writeFile(t, filepath.Join(ws2, "agentbox.yaml"), "version: 1\nproject: gamma\nprofile: "+h.Profile+"\nservers: [whoami]\n")
	if res := h.AboxIn(ws2, "render"); !res.OK() {
		t.Fatalf("abox render (gamma): %s", res)
	}

	res := h.Abox("gateway", "up")
	if res.OK() || !strings.Contains(res.Stderr, "project gamma declares whoami, whose tools nobody lists") ||
		!strings.Contains(res.Stderr, "also serves echo of alpha") || !strings.Contains(res.Stderr, "`abox mcp add whoami --tool NAME`") {
		t.Errorf("gateway up beside an unlisted server: %s", res)
	}
	countGateways(t, h, 0)

	if res := h.AboxIn(ws2, "mcp", "add", "whoami", "--tool", "whoami"); !res.OK() {
		t.Fatalf("abox mcp add whoami --tool whoami: %s", res)
	}
	res = mustAbox(t, h, "gateway", "up")
	if !strings.Contains(res.Stdout, "started; 2 servers") {
		t.Errorf("gateway up once gamma is narrowed: %s", res)
	}
	countGateways(t, h, 1)

	// alpha's narrowing of echo names gamma's whoami: netd would let it through to whoami.
	mustAbox(t, h, "mcp", "add", "echo", "--tool", "echo", "--tool", "whoami")
	res = h.Abox("gateway", "up")
	if res.OK() || !strings.Contains(res.Stderr, "project alpha's tools: lets through whoami (a tool of whoami)") {
		t.Errorf("gateway up with a borrowed tool: %s", res)
	}
}

// TestMCPUnlistedServerAttributed: a project whose only server is a custom one with no tools:
// list (the stub's notes) has an Unlisted netd policy, and its tools are still attributed to
// notes, never to "?": in the run summary, in `abox logs --gateway` and in `abox mcp cost`, which
// prints what the default Claude Code (deferring MCP tools) sends per turn, what a schema costs
// when it is loaded, the full per-turn cost with deferral off, and a hint naming notes. The
// stand-in's go-sdk client sends server/discover first: netd answers it, logged as answered.
func TestMCPUnlistedServerAttributed(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	// The stand-in is a file source, whose version is only a label: the default's, whose MCP
	// tools Claude Code defers, rather than the stand-in's own, which predates tool search.
	c := h.DefaultConfig()
	c.ClaudeCode.Version = config.DefaultClaudeVersion
	h.WriteConfig(c)
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"), "notes:\n  image: "+stub+"\n  pin: false\n")
	h.WriteManifest("version: 1\nproject: alpha\nprofile: " + h.Profile + "\nservers: [notes]\n")
	mustAbox(t, h, "up", "--yes")

	res := h.Abox("run", `echo "search $(claude mcp-call call note_search '{"text":"todo"}')"`)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	if out := prefixed(agentOutput(res.Stdout)); !strings.Contains(out["search"], "found: todo") {
		t.Errorf("note_search through netd = %q", out["search"])
	}
	if !strings.Contains(res.Stderr, "notes:note_search") || strings.Contains(res.Stderr, "?:note_search") {
		t.Errorf("run summary does not attribute note_search to notes:\n%s", res.Stderr)
	}
	logs := h.Abox("logs", "--gateway")
	if !strings.Contains(logs.Stdout, "notes:note_search") || strings.Contains(logs.Stdout, "?:") {
		t.Errorf("abox logs --gateway does not attribute note_search to notes:\n%s", logs)
	}
	var discover []string
	for _, l := range strings.Split(logs.Stdout, "\n") {
		if strings.Contains(l, "server/discover") {
			discover = append(discover, l)
		}
	}
	if len(discover) == 0 || strings.Contains(strings.Join(discover, "\n"), "denied") || !strings.HasPrefix(discover[0], "answered") {
		t.Errorf("server/discover in abox logs --gateway = %q, want it answered, not denied", discover)
	}

	cost := mustAbox(t, h, "mcp", "cost")
	for _, want := range []string{"Claude Code " + config.DefaultClaudeVersion + " defers MCP tools", "  per turn: ~", "the names of 2 tools",
		"  per schema loaded on demand: ~", "  with deferral off (ENABLE_TOOL_SEARCH=false in agent_env): ~",
		"hint: notes costs ~", "`abox mcp add notes --tool "} {
		if !strings.Contains(cost.Stdout, want) {
			t.Errorf("abox mcp cost lacks %q:\n%s", want, cost)
		}
	}
	if strings.Contains(cost.Stdout, "?") {
		t.Errorf("abox mcp cost shows a tool under ?:\n%s", cost)
	}
	var rep struct {
		Total   int `json:"total_tokens"`
		PerTurn int `json:"per_turn_tokens"`
		Tools   []struct{ Tool, Server string }
	}
	if err := json.Unmarshal([]byte(mustAbox(t, h, "mcp", "cost", "--json").Stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Tools) != 2 || rep.Tools[0].Server != "notes" || rep.Tools[1].Server != "notes" || rep.PerTurn <= 0 || rep.PerTurn >= rep.Total {
		t.Errorf("abox mcp cost --json = %+v, want both tools under notes and the names cheaper than the schemas", rep)
	}
}
