//go:build e2e

package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/telemetry"
)

// TestAttackListenerFlood: issue 35's flood at ten times its size. With an expensive request in
// flight (a non-streamed answer that takes 30 s), the agent opens 120,000 connections to netd's
// model forwarder, 128 at a time, and holds every one netd keeps: the flood of idle connections
// (~12,000 in 11 s) that once took netd's serving child past its memory limit, ended the run as
// netd-died, lost its counters and left the request in flight billed and unrecorded. netd holds
// at most its bound of connections there and resets the rest, each refusal logged
// (aggregated); it keeps serving, so the request in flight is answered and recorded, the
// agent's request after the flood is forwarded, and the run ends normally with netd's counters.
func TestAttackListenerFlood(t *testing.T) {
	t.Parallel()
	h, _ := upInjectedStandin(t, "connflood", "")
	port := strconv.Itoa(policy.ModelPort)
	slow := `{"model":"claude-test-slow","max_tokens":64000,"messages":[{"role":"user","content":"write a very long essay"}]}`
	script := `curl -s -m 60 -o /dev/null -w '%{http_code}' -H 'content-type: application/json' --data-binary '` + slow +
		`' http://127.0.0.1:` + port + `/v1/messages > /tmp/slow.code & sleep 1; ` +
		`echo "flood $(claude net connflood 127.0.0.1:` + port + ` 120000 128)"; ` +
		`echo "after $(curl -s -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:` + port + `/v1/models)"; ` +
		`wait; echo "slow $(cat /tmp/slow.code)"`
	res := h.Abox("run", script)
	out := agentOutput(res.Stdout)
	if !res.OK() || strings.Contains(res.Stderr, "netd exited") {
		t.Fatalf("the flood ended the run: exit %d\n%s\n%s", res.ExitCode, out, res.Stderr)
	}
	p := probes(t, out)["flood"]
	t.Logf("flood: tried %d, held %d, refused %d", p.Tried, p.Held, p.Refused)
	if !p.OK || p.Tried != 120000 || p.Held > 64 || p.Refused < 100000 {
		t.Errorf("flood %+v: want at most 64 connections held (the bound) and the rest refused", p)
	}
	if !strings.Contains(out, "after 404") { // the stand-in API answers the model list 404, through netd
		t.Errorf("the model forwarder does not forward after the flood:\n%s", out)
	}
	if !strings.Contains(out, "slow 200") {
		t.Errorf("the request in flight during the flood was not answered:\n%s", out)
	}
	if !strings.Contains(res.Stderr, "model API: 2 requests") || !strings.Contains(res.Stderr, "claude-test-slow") {
		t.Errorf("the run summary does not record the request in flight during the flood:\n%s", res.Stderr)
	}
	runs := allRunRecords(t, h)
	hv, err := telemetry.ReadHarvest(filepath.Join(runs[0].RunDir, "netd"))
	if err != nil || hv.Counters == nil {
		t.Fatalf("netd's counters were not harvested: %v", err)
	}
	var refused int64
	for _, r := range hv.Conns {
		if r.Kind == policy.KindModel && r.Reason == "too many connections" {
			refused += r.Decisions()
		}
	}
	if refused < 100000 {
		t.Errorf("conn.jsonl counts %d connections refused at the model forwarder's bound, want the flood's", refused)
	}
}
