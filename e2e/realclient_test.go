//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
)

// The real-client group: the real Claude Code (harness.RealClaudeVersion, installed by abox
// itself with claude_code.source: npm) in the sandbox, against the Messages API stand-in
// (e2e/messagesapi) and the mcpstub gateway. The stand-in claude proves the boundary in the
// attack suite; these prove that the client abox ships for runs in it: its Bash and MCP tool
// calls, the tools it offers the model, its sessions, the managed settings, its exit status.
//
// Every prompt is a script for the stand-in (bash:, mcp:, search:, say:, fail:), and the final
// answer quotes each tool result as "[<tool>] <result>", so the run's result shows what reached
// the model.

// apiAlias is the Messages API stand-in's name; the manifests allow it as egress.
const apiAlias = "api.messages.test"

// realClient is one project with the real Claude Code: echo and math on the gateway, math
// narrowed to multiply (which the stub does not have), so the agent may use echo only.
type realClient struct {
	h   *harness.H
	api *harness.MessagesAPI
	gw  string // the gateway's container
}

// realClientUp serialises the group's first `abox up`: the tests run in parallel, and the first
// builds the agent image (minutes, cold) that every other then finds.
var realClientUp sync.Mutex

// upRealClient starts the stand-in, writes the config and manifest and runs `abox up`. Every
// test uses the same project name, so the agent image (tagged by a hash of its Dockerfile) is
// the same and built once. The tests of the group run in parallel with each other: each has
// its own network, project and gateway profile, and all they share is that image.
func upRealClient(t *testing.T) *realClient {
	t.Helper()
	t.Parallel()
	h := harness.Setup(t)
	rc := &realClient{h: h, api: h.StartMessagesAPI(apiAlias), gw: gateway.Name(h.Profile)}
	h.WriteConfig(h.RealClaudeConfig(rc.api))
	mcpCustomServers(t, h)
	h.WriteManifest("version: 1\nproject: realclient\nprofile: " + h.Profile + "\negress: [" + apiAlias + "]\n" +
		"servers: [echo, math]\ntools:\n  math: [multiply]\nrun:\n  permission_mode: bypassPermissions\n")
	realClientUp.Lock()
	defer realClientUp.Unlock()
	mustAbox(t, h, "up", "--yes")
	h.KeepRealClientImage(agentImage(t, h))
	return rc
}

// streamResult is the stream-json result event of a run.
type streamResult struct {
	Subtype   string `json:"subtype"`
	IsError   bool   `json:"is_error"`
	Result    string `json:"result"`
	SessionID string `json:"session_id"`
	NumTurns  int    `json:"num_turns"`
}

// initEvent is the stream-json system/init event.
type initEvent struct {
	Tools      []string `json:"tools"`
	MCPServers []struct {
		Name, Status string
	} `json:"mcp_servers"`
	Version string `json:"claude_code_version"`
}

// events returns the run's system/init and result events.
func events(t *testing.T, stdout string) (initEvent, streamResult) {
	t.Helper()
	var in initEvent
	var res streamResult
	var seenInit, seenResult bool
	for _, l := range strings.Split(stdout, "\n") {
		var ev struct{ Type, Subtype string }
		if json.Unmarshal([]byte(l), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "system" && ev.Subtype == "init":
			seenInit = json.Unmarshal([]byte(l), &in) == nil
		case ev.Type == "result":
			seenResult = json.Unmarshal([]byte(l), &res) == nil
		}
	}
	if !seenInit || !seenResult {
		t.Fatalf("the run printed no init or no result event (init %v, result %v):\n%s", seenInit, seenResult, stdout)
	}
	return in, res
}

// run runs a prompt (a script for the stand-in) and returns abox's result and the client's
// events.
func (rc *realClient) run(t *testing.T, args ...string) (harness.Result, initEvent, streamResult) {
	t.Helper()
	res := rc.h.Abox(append([]string{"run"}, args...)...)
	in, out := events(t, res.Stdout)
	return res, in, out
}

// mcpReached lists what is wrong with the MCP path of the last run: the client must report
// server abox connected and offer mcp__abox__echo, the gateway must have run echo with want,
// and every request that reached it must have carried netd's token (the agent has none).
func (rc *realClient) mcpReached(t *testing.T, in initEvent, want string) []string {
	t.Helper()
	var problems []string
	connected := false
	for _, s := range in.MCPServers {
		connected = connected || s.Name == "abox" && s.Status == "connected"
	}
	if !connected {
		problems = append(problems, fmt.Sprintf("the client reports MCP servers %+v, want abox connected", in.MCPServers))
	}
	if !contains(in.Tools, "mcp__abox__echo") {
		problems = append(problems, fmt.Sprintf("the client's tools %v lack mcp__abox__echo", in.Tools))
	}
	found := false
	for _, ev := range rc.h.Events(rc.gw, "call") {
		args, _ := json.Marshal(ev["args"])
		found = found || ev.Str("tool") == "echo" && strings.Contains(string(args), want)
	}
	if !found {
		problems = append(problems, fmt.Sprintf("the gateway logged no echo call with %q: %v", want, rc.h.Events(rc.gw, "call")))
	}
	for _, ev := range rc.h.Events(rc.gw, "http") {
		if ev.Str("path") != "/health" && !refusedAuthProbe(ev) && ev.Str("auth") != "ok" {
			problems = append(problems, fmt.Sprintf("the gateway saw a request with auth %q: %v", ev.Str("auth"), ev))
		}
	}
	return problems
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRealClientHeadless: one headless run end to end. The model asks for a Bash command, which
// runs in the sandbox as the agent and whose output comes back to the model; then it loads the
// MCP tool echo with ToolSearch (the client defers MCP schemas) and calls it, through netd's
// forwarder to the gateway, which gets netd's token; the narrowed-away add is nowhere in what
// the client offers the model, ToolSearch cannot find it, and a call of it never reaches the
// gateway. The run exits 0 and abox's summary counts the MCP call.
func TestRealClientHeadless(t *testing.T) {
	rc := upRealClient(t)
	h := rc.h
	res, in, out := rc.run(t, strings.Join([]string{
		`bash: echo "marker-$((6*7)) uid=$(id -u) cwd=$PWD" | tee bash-ran.txt`,
		`mcp: mcp__abox__echo {"text":"through netd"}`,
		`search: select:mcp__abox__add`,
		`mcp: mcp__abox__add {"a":1,"b":2}`,
		`say: finished`,
	}, "\n"))
	if !res.OK() || out.IsError || out.Subtype != "success" {
		t.Fatalf("abox run: exit %d, result %+v\n%s", res.ExitCode, out, res)
	}
	if in.Version != harness.RealClaudeVersion() {
		t.Errorf("the client reports version %q, want %s", in.Version, harness.RealClaudeVersion())
	}

	// Bash ran in the sandbox, as the agent in /workspace, and its output reached the model.
	if data, err := os.ReadFile(filepath.Join(h.Workspace, "bash-ran.txt")); err != nil ||
		strings.TrimSpace(string(data)) != "marker-42 uid=1000 cwd=/workspace" {
		t.Errorf("the Bash tool wrote %q (%v), want its output in the workspace", data, err)
	}
	conv := rc.api.Conversation(t)
	if len(conv) < 2 || !strings.Contains(string(conv[1].Body), "marker-42 uid=1000 cwd=/workspace") {
		t.Errorf("the request after the Bash tool use does not carry its output (%d conversation requests)", len(conv))
	}
	if !strings.Contains(out.Result, "[Bash] marker-42 uid=1000") || !strings.Contains(out.Result, "[mcp__abox__echo] through netd") {
		t.Errorf("the final answer %q does not quote the Bash and echo results", out.Result)
	}

	kinds := map[string]int{}
	for _, r := range rc.api.Requests(t) {
		kinds[r.Kind+" "+r.Method+" "+r.Path]++
	}
	t.Logf("requests to the Messages API: %v", kinds)

	// MCP through netd and the gateway, with netd's token only.
	for _, p := range rc.mcpReached(t, in, "through netd") {
		t.Error(p)
	}
	token := readToken(t, h)
	for _, r := range rc.api.Requests(t) {
		if strings.Contains(string(r.Body), token) || strings.Contains(fmt.Sprint(r.Headers), token) {
			t.Errorf("a request to the model carries the gateway token: %s %s", r.Method, r.Path)
		}
	}
	if !strings.Contains(res.Stderr, "mcp tool calls: 1 (1 allowed)") {
		t.Errorf("the run summary does not count one allowed MCP call:\n%s", res.Stderr)
	}

	// Narrowing as the model sees it: echo deferred by name, add nowhere; ToolSearch finds no
	// add, and the client refuses the call itself.
	if contains(in.Tools, "mcp__abox__add") {
		t.Errorf("the client's tools %v include the narrowed-away add", in.Tools)
	}
	for i, r := range conv {
		// A client that defers tools names them in a list; one that does not sends the schema.
		offered := append(strings.Fields(deferredList(r.Body)), r.ToolNames()...)
		if !contains(offered, "mcp__abox__echo") {
			t.Errorf("conversation request %d offers no mcp__abox__echo, deferred or not", i)
		}
		if contains(offered, "mcp__abox__add") {
			t.Errorf("conversation request %d offers the narrowed-away mcp__abox__add", i)
		}
	}
	checkCostModel(t, h, in.Version, conv)
	t.Logf("the final answer: %q", out.Result)
	if strings.Contains(out.Result, "tool_reference:mcp__abox__add") {
		t.Errorf("ToolSearch found the narrowed-away add: %q", out.Result)
	}
	if calls := stubCalls(t, h, rc.gw); strings.Join(calls, ",") != "echo" {
		t.Errorf("the gateway ran %v, want echo only", calls)
	}
}

// checkCostModel: `abox mcp cost` says whether the client defers MCP schemas, and the client's
// first request shows it: a deferring client names echo in its deferred list and sends no schema
// of it (until ToolSearch loads it, after which the schema stays); one that does not sends
// echo's schema from the start.
func checkCostModel(t *testing.T, h *harness.H, version string, conv []harness.APIRequest) {
	t.Helper()
	res := h.Abox("mcp", "cost", "--json")
	var cost struct {
		Client struct {
			Version  string `json:"claude_code"`
			Deferred bool   `json:"deferred"`
			Why      string `json:"why"`
		} `json:"client"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &cost); !res.OK() || err != nil {
		t.Fatalf("abox mcp cost --json: %v\n%s", err, res)
	}
	if cost.Client.Version != version {
		t.Errorf("mcp cost models Claude Code %q, the client is %s", cost.Client.Version, version)
	}
	if len(conv) == 0 {
		t.Fatal("no conversation request reached the Messages API")
	}
	first := conv[0]
	deferred := contains(strings.Fields(deferredList(first.Body)), "mcp__abox__echo") && !contains(first.ToolNames(), "mcp__abox__echo")
	if deferred != cost.Client.Deferred {
		t.Errorf("the client's first request deferred echo: %v; abox mcp cost says %v (%s)", deferred, cost.Client.Deferred, cost.Client.Why)
	}
}

// TestRealClientContinueResume: --continue and --resume carry the earlier run's messages to
// the model. A fresh run in between starts a conversation of its own, which --continue would
// pick up and --resume of the first session does not.
func TestRealClientContinueResume(t *testing.T) {
	rc := upRealClient(t)
	const first = "bash: echo first-run-$((40+2))\nsay: one"
	// sent runs a prompt and returns the conversation requests it made, joined.
	sent := func(args ...string) (streamResult, string) {
		t.Helper()
		before := len(rc.api.Conversation(t))
		res, _, out := rc.run(t, args...)
		if !res.OK() || out.IsError {
			t.Fatalf("abox run %s: exit %d, result %+v\n%s", strings.Join(args, " "), res.ExitCode, out, res)
		}
		var b strings.Builder
		for _, r := range rc.api.Conversation(t)[before:] {
			b.Write(r.Body)
		}
		return out, b.String()
	}
	a, _ := sent(first)
	if !strings.Contains(a.Result, "[Bash] first-run-42") || a.SessionID == "" {
		t.Fatalf("the first run answered %q in session %q", a.Result, a.SessionID)
	}
	_, body := sent("--continue", "say: continued")
	if !strings.Contains(body, "first-run-42") || !strings.Contains(body, "bash: echo first-run-$((40+2))") {
		t.Errorf("--continue: the model was not sent the first run's prompt and Bash result")
	}
	_, body = sent("say: fresh-b")
	if strings.Contains(body, "first-run-42") {
		t.Errorf("a fresh run sent the model the first run's messages")
	}
	_, body = sent("--resume", a.SessionID, "say: resumed")
	if !strings.Contains(body, "first-run-42") || strings.Contains(body, "fresh-b") {
		t.Errorf("--resume %s: the model got the first run's messages %v, the fresh run's %v; want only the first's",
			a.SessionID, strings.Contains(body, "first-run-42"), strings.Contains(body, "fresh-b"))
	}
}

// plantedHooks is a project settings file with a hook on every event a headless run with a
// Bash tool use goes through, each writing a marker into the workspace.
const plantedHooks = `{"hooks": {
  "SessionStart": [{"hooks": [{"type": "command", "command": "touch /workspace/.hook-SessionStart"}]}],
  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch /workspace/.hook-UserPromptSubmit"}]}],
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "touch /workspace/.hook-PreToolUse"}]}],
  "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "touch /workspace/.hook-PostToolUse"}]}],
  "Stop": [{"hooks": [{"type": "command", "command": "touch /workspace/.hook-Stop"}]}]
}}
`

// hookMarkers returns the hook markers in dir.
func hookMarkers(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".hook-*"))
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// TestRealClientProjectHookRefused: hooks planted in the workspace's .claude/settings.json and
// settings.local.json never run under abox's managed settings (allowManagedHooksOnly), while
// the Bash tool they watch does. Control: the same client in the same image on a copy of the
// workspace, without abox's settings, runs them.
func TestRealClientProjectHookRefused(t *testing.T) {
	rc := upRealClient(t)
	h := rc.h
	h.WriteFile(".claude/settings.json", plantedHooks)
	h.WriteFile(".claude/settings.local.json", plantedHooks)
	const prompt = "bash: echo hooks-watched\nsay: done"
	res, _, out := rc.run(t, prompt)
	if !res.OK() || !strings.Contains(out.Result, "[Bash] hooks-watched") {
		t.Fatalf("abox run: exit %d, result %q\n%s", res.ExitCode, out.Result, res)
	}
	if m := hookMarkers(h.Workspace); len(m) > 0 {
		t.Errorf("planted project hooks ran under abox: %v", m)
	}

	control := filepath.Join(h.Dir, "control")
	if err := os.MkdirAll(filepath.Join(control, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(control, ".claude", "settings.json"), plantedHooks)
	if err := filepath.Walk(control, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Chown(p, 1000, 1000)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	env := []string{"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	for k, v := range h.RealClaudeConfig(rc.api).Extra["agent_env"].(map[string]string) {
		env = append(env, k+"="+v)
	}
	ctl := h.Run(harness.RunOptions{Image: agentImage(t, h), User: "1000:1000", Workdir: "/workspace", Env: env,
		Mounts: []string{control + ":/workspace"},
		Cmd:    []string{"claude", "-p", "--output-format", "json", "--permission-mode", "bypassPermissions", prompt}})
	if !ctl.OK() || !strings.Contains(ctl.Stdout, "hooks-watched") {
		t.Fatalf("control run without abox's settings: %s", ctl)
	}
	if m := hookMarkers(control); !contains(m, ".hook-PreToolUse") {
		t.Errorf("control: without abox's settings the planted hooks ran %v, want PreToolUse among them", m)
	} else {
		t.Logf("control: without abox's settings the planted hooks ran: %v", m)
	}
}

// TestRealClientExitCodes: abox run exits with the client's status: 1 when the API refuses the
// request (the client reports is_error), recorded in runs.jsonl; and 4, over the client's 0,
// when run.on_exec_change is fail and the client's Bash tool changed a watched file.
func TestRealClientExitCodes(t *testing.T) {
	rc := upRealClient(t)
	h := rc.h
	res, _, out := rc.run(t, "fail: scripted refusal")
	if res.ExitCode != 1 || !out.IsError || !strings.Contains(out.Result, "scripted refusal") {
		t.Errorf("a refused request: exit %d, result %+v; want exit 1 and the API's error\n%s", res.ExitCode, out, res)
	}
	runs := runRecords(t, h)
	if code := runs[len(runs)-1]["exit_code"]; code != float64(1) {
		t.Errorf("runs.jsonl records exit code %v, want 1", code)
	}

	h.WriteManifest("version: 1\nproject: realclient\nprofile: " + h.Profile + "\negress: [" + apiAlias + "]\n" +
		"servers: [echo, math]\ntools:\n  math: [multiply]\nrun:\n  permission_mode: bypassPermissions\n  on_exec_change: fail\n")
	mustAbox(t, h, "up", "--yes")
	res, _, out = rc.run(t, "bash: printf 'all:\\n\\ttrue\\n' > Makefile && echo planted\nsay: done")
	if res.ExitCode != 4 || out.IsError || !strings.Contains(out.Result, "[Bash] planted") {
		t.Errorf("a run whose Bash tool wrote the Makefile: exit %d, result %+v; want exit 4 over the client's success\n%s",
			res.ExitCode, out, res)
	}
	if !strings.Contains(res.Stderr, "Makefile") {
		t.Errorf("the summary does not name the Makefile:\n%s", res.Stderr)
	}
}

// TestRealClientMCPControl shows that TestRealClientHeadless's MCP assertion can fail. An
// mcp.json pointed elsewhere behind abox's back is refused before the client starts (exit 3);
// and with the client's mcp.json naming no server (a project without servers), the same
// script runs to its end but the assertion reports that nothing reached the gateway.
func TestRealClientMCPControl(t *testing.T) {
	rc := upRealClient(t)
	h := rc.h
	const prompt = `mcp: mcp__abox__echo {"text":"control"}` + "\nsay: done"
	mcpJSON := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts", "agent", "mcp.json")
	data, err := os.ReadFile(mcpJSON)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(mcpJSON, 0o644)
	writeFile(t, mcpJSON, strings.ReplaceAll(string(data), "127.0.0.1:15811", "127.0.0.1:1"))
	if res := h.Abox("run", prompt); res.ExitCode != 3 || !strings.Contains(res.Stderr, "artifacts differ") {
		t.Errorf("a run with mcp.json pointed elsewhere: exit %d, want 3 (artifacts differ)\n%s", res.ExitCode, res)
	}

	h.WriteManifest("version: 1\nproject: realclient\nprofile: " + h.Profile + "\negress: [" + apiAlias + "]\n" +
		"run:\n  permission_mode: bypassPermissions\n")
	mustAbox(t, h, "up", "--yes")
	res, in, out := rc.run(t, prompt)
	if !res.OK() {
		t.Fatalf("abox run without servers: %s", res)
	}
	problems := rc.mcpReached(t, in, "control")
	if len(problems) == 0 {
		t.Errorf("with no MCP server the MCP assertion passed; final answer %q", out.Result)
	}
	t.Logf("the MCP assertion without a server reports: %v; the final answer: %q", problems, out.Result)
}

// deferredList returns the client's list of deferred tools from a request body: the lines after
// "The following deferred tools are now available via ToolSearch" (in a system reminder of the
// first user message, in 2.1.332) up to the next blank line.
func deferredList(body []byte) string {
	var v any
	json.Unmarshal(body, &v)
	var find func(any) string
	find = func(v any) string {
		switch v := v.(type) {
		case string:
			if _, rest, ok := strings.Cut(v, "The following deferred tools are now available via ToolSearch"); ok {
				_, rest, _ = strings.Cut(rest, "\n")
				list, _, _ := strings.Cut(rest, "\n\n")
				return list
			}
		case []any:
			for _, x := range v {
				if l := find(x); l != "" {
					return l
				}
			}
		case map[string]any:
			for _, x := range v {
				if l := find(x); l != "" {
					return l
				}
			}
		}
		return ""
	}
	return find(v)
}
