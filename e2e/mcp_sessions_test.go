//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
)

// closedReason starts the reason of netd's own closes in mcp.jsonl (internal/netd's
// reasonClosed).
const closedReason = "netd closed the session at stop"

// TestMCPSessionsClosedAtTeardown: the profile's gateway keeps every MCP session until a DELETE,
// and the agent, like Claude Code, sends none: the stand-in's start-up probe and `claude mcp-call
// list` both initialize, list tools and exit leaving the session open (STANDIN_MCP_NO_DELETE).
// After several runs the stub gateway has no session open, because netd closed each one at
// teardown, and each run's mcp.jsonl shows the closes. A session the agent DELETEd itself is not
// closed again.
func TestMCPSessionsClosedAtTeardown(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	cfg := h.DefaultConfig()
	cfg.Extra["agent_env"] = map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "e2e-stand-in", "STANDIN_MCP_NO_DELETE": "1"}
	h.WriteConfig(cfg)
	mcpCustomServers(t, h)
	h.WriteManifest("version: 1\nproject: sessions\nprofile: " + h.Profile + "\nservers: [echo]\n")
	mustAbox(t, h, "up", "--yes")
	gw := gateway.Name(h.Profile)
	baseOpens, baseCloses, _ := stubSessions(t, h, gw, 0) // abox up probes the gateway, and closes

	const runs = 3
	for i := range runs {
		script := `echo "list $(claude mcp-call list)"`
		if i == 0 { // one session the agent closes itself, as the go-sdk client does
			script += "\n" + `STANDIN_MCP_NO_DELETE= claude mcp-call list >/dev/null && echo "deleted yes"`
		}
		res := h.Abox("run", script)
		out := prefixed(agentOutput(res.Stdout))
		if !res.OK() || toolNames(t, out["list"]) != "echo" || (i == 0 && out["deleted"] != "yes") {
			t.Fatalf("run %d: tools/list through netd = %q, deleted %q\n%s", i, out["list"], out["deleted"], res)
		}
		// The probe's session and mcp-call's: the one the agent DELETEd is not among them.
		checkSessionCloses(t, h, i, 2)
	}

	const want = 2*runs + 1
	opens, closes, open := stubSessions(t, h, gw, baseOpens+want)
	if opens-baseOpens != want || closes-baseCloses != want || open != 0 {
		t.Errorf("during the runs the gateway logged %d sessions opened and %d closed, %d now open; want %d, all closed",
			opens-baseOpens, closes-baseCloses, open, want)
	}
	for _, ev := range h.Events(gw, "http") {
		if ev.Str("method") == "DELETE" && ev.Str("status") != "204" {
			t.Errorf("a DELETE of a session that was not open reached the gateway: %v", ev)
		}
	}
}

// checkSessionCloses: the last run's mcp.jsonl holds want closes by netd, each a DELETE the
// gateway accepted (204).
func checkSessionCloses(t *testing.T, h *harness.H, run, want int) {
	t.Helper()
	res := h.Abox("logs", "--gateway", "--json", "--limit", "1")
	var lines []struct {
		Method, Verdict, Reason string
		Status                  int
	}
	if err := json.Unmarshal([]byte(res.Stdout), &lines); err != nil {
		t.Fatalf("abox logs --gateway --json: %v\n%s", err, res)
	}
	n := 0
	for _, l := range lines {
		if !strings.HasPrefix(l.Reason, closedReason) {
			continue
		}
		n++
		if l.Method != "DELETE" || l.Verdict != "allowed" || l.Status != 204 {
			t.Errorf("run %d: netd's close logged as %+v, want DELETE allowed 204", run, l)
		}
	}
	if n != want {
		t.Errorf("run %d: mcp.jsonl holds %d closes by netd, want %d: %+v", run, n, want, lines)
	}
}

// stubSessions counts the gateway stub's session events, waiting up to 5 s for at least
// wantOpens opens and as many closes, and returns the opens, the closes and the number the last
// event reports open.
func stubSessions(t *testing.T, h *harness.H, gw string, wantOpens int) (opens, closes, open int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		opens, closes, open = 0, 0, -1
		for _, ev := range h.Events(gw, "session") {
			switch ev.Str("event") {
			case "open":
				opens++
			case "close":
				closes++
			}
			if n, ok := ev["open"].(float64); ok {
				open = int(n)
			}
		}
		if (opens >= wantOpens && closes >= opens) || time.Now().After(deadline) {
			return opens, closes, open
		}
	}
}
