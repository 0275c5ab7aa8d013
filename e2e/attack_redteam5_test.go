//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// The fifth red team: attacks on the model forwarder's body walk and spend records, on the
// listeners' bounds, and on the Encrypted ClientHello refusal.

// checkNetdSurvived fails t when the run ended with netd dead: the run's exit, its summary and
// its record.
func checkNetdSurvived(t *testing.T, h *harness.H, res harness.Result, out string) {
	t.Helper()
	if !res.OK() || strings.Contains(res.Stderr, "netd exited") {
		t.Errorf("the attack ended the run: exit %d\n%s\n%s", res.ExitCode, out, res.Stderr)
	}
	runs := allRunRecords(t, h)
	if len(runs) == 0 {
		t.Fatal("no run record")
	}
	if runs[0].Outcome != "exited" {
		t.Errorf("run outcome %q, want exited", runs[0].Outcome)
	}
}

// TestAttackRedTeam5MCPBodyMemory: the agent opens 64 connections to netd's MCP forwarder (its
// bound) and on each posts a JSON-RPC body announced as 8 MiB (the forwarder's limit per
// request), sends all of it but the last byte, and waits. The forwarder reads each body whole
// into memory (io.ReadAll) before it looks at it, with no deadline on the body and no budget
// across requests as the model forwarder has (C17, C23): 64 x 8 MiB is twice netd's 256 MiB.
// Safe: netd keeps serving (a DNS query after the flood is answered) and the run ends normally.
// Now: within 2 s the kernel's memory cgroup kills netd's serving child (anon-rss ~250 MB,
// "Memory cgroup out of memory" in dmesg), and the run ends netd-died with no counters. The same
// script with the flood left out (the control) ends normally.
func TestAttackRedTeam5MCPBodyMemory(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("exact.test")
	h.WriteConfig(h.DefaultConfig())
	mcpCustomServers(t, h)
	h.WriteManifest("version: 1\nproject: mcpmem\nprofile: " + h.Profile + "\negress: [exact.test]\nservers: [echo]\n")
	mustAbox(t, h, "up", "--yes")
	mcp := "http://127.0.0.1:" + strconv.Itoa(policy.MCPPort) + "/mcp"
	dns := "127.0.0.1:" + strconv.Itoa(policy.DNSPort)
	script := bashLines(
		`echo "before $(claude net dns `+dns+` exact.test)"`,
		`head -c 8388607 /dev/zero | tr '\0' ' ' > /tmp/body`,
		`for i in $(seq 64); do curl -s -o /dev/null -m 40 -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' `+
			`-H 'expect:' -H 'content-length: 8388608' --data-binary @/tmp/body `+mcp+` & done`,
		`sleep 25`,
		`echo "after $(claude net dns `+dns+` exact.test)"`,
		`wait`)
	res := h.Abox("run", script)
	out := agentOutput(res.Stdout)
	checkNetdSurvived(t, h, res, out)
	got := probes(t, out)
	probesOK(t, got, "before", "after")
}

// TestAttackRedTeam5DNSUDPFlood: the agent floods netd's resolver over UDP with 20,000 A
// queries a second, for 15 s, for one allowed name that Docker's resolver does not know (as
// every internet name is: Docker forwards it as root, which the ruleset refuses, and netd asks
// the host's resolvers after 0.8 s), without waiting for the answers. The UDP listener has no
// bound (R18 bounds the TCP one only): miekg/dns starts a goroutine per datagram, and each
// holds its upstream socket and state for the 0.8 s and more that the question takes upstream.
// Safe: netd keeps serving (a query after the flood is answered) and the run ends normally.
// Now: within 6 s the kernel's memory cgroup kills netd's serving child and the run ends
// netd-died. The same flood of a name Docker answers at once (exact.test), or of nowhere.test at
// 5,000 a second, leaves netd alive (the agent's own queries time out during the flood).
func TestAttackRedTeam5DNSUDPFlood(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("exact.test")
	upProject(t, h, "dnsflood5", []string{"exact.test", "nowhere.test"}, "")
	dns := "127.0.0.1:" + strconv.Itoa(policy.DNSPort)
	res := h.Abox("run", bashLines(
		`echo "before $(claude net dns `+dns+` exact.test)"`,
		`echo "flood $(claude net rt5-udpflood `+dns+` nowhere.test 20000 15)"`,
		`sleep 5`,
		`echo "after $(claude net dns `+dns+` exact.test)"`))
	out := agentOutput(res.Stdout)
	checkNetdSurvived(t, h, res, out)
	probesOK(t, probes(t, out), "before", "flood", "after")
}

// TestAttackRedTeam5SpendThenKillNetd: in injected mode the agent sends a long non-streamed
// request (the stand-in answers it after 30 s), then kills netd itself with the resolver flood
// of TestAttackRedTeam5DNSUDPFlood while the upstream works on it, to spend the credential with
// no record. The in-flight record written before the request left is in netd's log volume:
// the run's summary and `abox logs --runs --json` count the request as may have been billed,
// whether the flood kills netd (today) or not (then the agent's curl gives up first, which is
// the same record).
func TestAttackRedTeam5SpendThenKillNetd(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "spendkill", "egress: [nowhere.test]\n")
	dns := "127.0.0.1:" + strconv.Itoa(policy.DNSPort)
	body := `{"model":"claude-test-slow","max_tokens":64000,"messages":[{"role":"user","content":"write a very long essay"}]}`
	res := h.Abox("run", bashLines(
		`curl -s -m 25 -o /dev/null -H 'content-type: application/json' --data-binary '`+body+`' http://127.0.0.1:`+
			strconv.Itoa(policy.ModelPort)+`/v1/messages &`,
		`sleep 3`,
		`claude net rt5-udpflood `+dns+` nowhere.test 20000 15`,
		`wait`))
	reached := false
	for _, r := range api.Requests(t) {
		reached = reached || strings.HasPrefix(r.Answer, "received")
	}
	if !reached {
		t.Fatalf("the API never received the request: the test proves nothing\n%s", res.Stderr)
	}
	if !strings.Contains(res.Stderr, "1 sent with no usage seen: may have been billed") {
		t.Errorf("the run summary does not count the request as spent:\n%s", res.Stderr)
	}
	runs := allRunRecords(t, h)
	if len(runs) != 1 || runs[0].Model == nil || runs[0].Model.Requests != 1 || runs[0].Model.MayHaveBeenBilled != 1 {
		t.Errorf("logs --runs --json: %+v; want 1 request that may have been billed", runs)
	}
	t.Logf("outcome %s", runs[0].Outcome)
}
