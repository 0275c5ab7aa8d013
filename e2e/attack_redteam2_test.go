//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// The second red team's attacks on the TLS fast path (internal/netd, "The TLS fast path"). The
// agent's goal in each: a ClientHello naming a server that is not allowed (other.test) reaches
// the allowed address of exact.test, whose testsrv answers any server name and logs each hello.
// The stand-in's probes are in e2e/standin/redteam2.go.

// otherHellos returns the ClientHellos exact.test's server received naming anything but
// exact.test.
func otherHellos(h *harness.H, srv *harness.Server) []string {
	var out []string
	for _, ev := range h.Events(srv.Container, "tls-hello") {
		if sni := ev.Str("sni"); sni != srv.Name {
			out = append(out, sni)
		}
	}
	return out
}

// logKernelFlows logs what netd recorded of the flows it judged on their held packets: the
// evidence of what the audit trail says happened.
func logKernelFlows(t *testing.T, h *harness.H) {
	t.Helper()
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Kernel {
			t.Logf("conn.jsonl: %s %s to %s: %s %s (%d bytes up)", r.Kind, r.Name, r.OrigDst, r.Verdict, r.Reason, r.BytesUp)
		}
	}
}

// TestAttackRedTeam2TupleReuse: the agent makes a TLS connection to exact.test's address naming
// exact.test (allowed), resets it, and connects again from the same local port to the same
// address, naming other.test. The reset ended the conntrack entry, so the second connection is a
// new flow, held again; it must be judged on its own ClientHello and refused — not let through
// because the gate remembers the five-tuple as allowed.
func TestAttackRedTeam2TupleReuse(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	exact := h.StartServer("exact.test")
	upProject(t, h, "rt2reuse", []string{"exact.test"}, "")
	res := h.Abox("run", `echo "reuse $(claude net rt2-reuse exact.test:443 exact.test other.test)"`)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	p, ok := got["reuse"]
	if !ok || (!p.OK && !strings.HasPrefix(p.Error, "second connection")) {
		t.Fatalf("the probe did not get as far as the second connection: %+v\n%s", p, agentOutput(res.Stdout))
	}
	if p.OK {
		t.Errorf("the second flow on the allowed flow's five-tuple went through naming other.test: %+v", p)
	}
	if sni := otherHellos(h, exact); len(sni) != 0 {
		t.Errorf("exact.test's address received ClientHellos naming %v", sni)
	}
	logKernelFlows(t, h)
	refusedOther := false
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Kernel && r.Name == "other.test" && r.Verdict != policy.Allowed {
			refusedOther = true
		}
	}
	if !refusedOther {
		t.Error("conn.jsonl has no refusal of the second flow's hello naming other.test")
	}
}

// TestAttackRedTeam2UrgentByte: a server reading its socket (no SO_OOBINLINE) never sees the
// stream's urgent byte; the gate reassembles packets, urgent byte included. The agent sends one
// urgent byte in the length field of its ClientHello's second record, so that the gate's records
// hold a well-formed hello naming exact.test, and the server's, without that byte, crypto/tls's
// hello naming other.test (e2e/standin/redteam2.go, "The urgent byte"). The flow must be refused.
func TestAttackRedTeam2UrgentByte(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	exact := h.StartServer("exact.test")
	upProject(t, h, "rt2oob", []string{"exact.test"}, "")
	res := h.Abox("run", bashLines(
		`echo "plain $(claude net tls exact.test:443 other.test)"`,
		`echo "oob $(claude net rt2-oob exact.test:443 exact.test other.test)"`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	probesRefused(t, got, "plain")
	if p := got["oob"]; p.OK {
		t.Errorf("a hello naming other.test reached exact.test's address past the gate: %+v", p)
	}
	if sni := otherHellos(h, exact); len(sni) != 0 {
		t.Errorf("exact.test's address received ClientHellos naming %v", sni)
	}
	logKernelFlows(t, h)
}

// TestAttackRedTeam2RewrittenPages: a TCP segment sent with MSG_ZEROCOPY, or with sendfile(2)
// from a file (tmpfs or the workspace), holds the sender's pages, read when the segment leaves
// the namespace, not when it was written. The agent sends the first part of its hello naming
// exact.test that way, waits until netd's supervisor has read it, rewrites the pages (the
// mapping, or the file with pwrite) to name other.test, and sends the rest. The gate decides on
// what it read; the server must not receive a hello naming other.test.
func TestAttackRedTeam2RewrittenPages(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	exact := h.StartServer("exact.test")
	upProject(t, h, "rt2zc", []string{"exact.test"}, "")
	res := h.Abox("run", bashLines(
		`echo "caps $(claude net rt2-caps -)"`,
		`echo "zc $(claude net rt2-zerocopy exact.test:443 exact.test other.test)"`,
		`echo "sendfile-tmp $(claude net rt2-sendfile exact.test:443 exact.test other.test /tmp)"`,
		`echo "sendfile-ws $(claude net rt2-sendfile exact.test:443 exact.test other.test /workspace)"`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	t.Logf("caps: %+v", got["caps"])
	for _, n := range []string{"zc", "sendfile-tmp", "sendfile-ws"} {
		t.Logf("%s: %+v", n, got[n])
		if p := got[n]; p.OK {
			t.Errorf("%s: a hello naming other.test reached exact.test's address past the gate: %+v", n, p)
		}
	}
	if sni := otherHellos(h, exact); len(sni) != 0 {
		t.Errorf("exact.test's address received ClientHellos naming %v", sni)
	}
	logKernelFlows(t, h)
}

// TestAttackRedTeam2RevokeAfterEviction: keep.test and drop.test are one server, so one
// address, which stays open for keep.test when drop.test is removed: only the cut by flow
// (revoked_flow) ends the agent's connection to drop.test, and it is made from the gate's memory
// of the flows it allowed. The agent holds a connection to drop.test, then makes 17000 flows the
// gate refuses at once (data in the SYN), each a decision the gate remembers, more than it keeps
// (maxAllowedFlows); then the user runs `abox egress rm drop.test`. The connection must still
// be cut within seconds.
func TestAttackRedTeam2RevokeAfterEviction(t *testing.T) {
	t.Parallel()
	revokeAfterFlood(t, "rt2evict", "rt2-evict keep.test:443 17000", "refused")
}

// revokeAfterFlood runs a revocation after a flood of flows: the agent holds a connection to
// drop.test (which shares keep.test's address), then runs the flood probe (`claude net FLOOD`,
// whose reply starts with "WORD N"), then the user runs `abox egress rm drop.test`. The flood
// must have made 16,500 flows or more, and the held connection must be cut.
func revokeAfterFlood(t *testing.T, project, flood, word string) {
	h := harness.Setup(t)
	h.StartServer("keep.test", "drop.test")
	upProject(t, h, project, []string{"keep.test", "drop.test"}, "")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", bashLines(
		`claude net tls-hold drop.test:443 drop.test 45 /workspace/held-drop > /tmp/drop.json &`,
		`until [ -e /workspace/held-drop ]; do sleep 0.1; done`,
		`claude net `+flood+` > /tmp/flood.json`,
		`touch /workspace/flooded`,
		`wait`,
		`echo "drop $(cat /tmp/drop.json)"`,
		`echo "flood $(cat /tmp/flood.json)"`))
	waitWorkspaceFile(t, h.Workspace, "flooded")
	if res := h.Abox("egress", "rm", "drop.test"); !res.OK() {
		t.Fatalf("abox egress rm: %s", res)
	}
	rmAt := time.Now()
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	t.Logf("flood: %+v", got["flood"])
	var n int
	fmt.Sscanf(got["flood"].Reply, word+" %d", &n)
	if n < 16500 {
		t.Fatalf("the flood did not make its 17000 flows (%s): %+v", word, got["flood"])
	}
	p := got["drop"]
	t.Logf("drop: %+v", p)
	if p.OK || p.Rounds == 0 {
		t.Errorf("drop.test's connection ran on after `abox egress rm drop.test` (%s ago when the run ended): %+v",
			time.Since(rmAt).Round(time.Second), p)
	}
}

// TestAttackRedTeam2Holds: attacks on the fast path that hold. raw.test (allowed, so its address
// is in tls_dst on 443) logs every byte it receives on tcp/443 and tcp/8443, and echoes udp/443.
// The agent may not set the options that would forge its packets' verdict or state (SO_MARK to
// a verdict mark, TCP_REPAIR, IP_TRANSPARENT); IP_FREEBIND binds an address not the
// namespace's but connects from none; QUIC's udp/443 and another port of the same address are
// not the fast path and stay refused; and a ClientHello naming other.test is reset there, as is
// the same five-tuple again (its conntrack entry, never closed by the reset netd sent, is still
// marked refused). No byte arrives.
func TestAttackRedTeam2Holds(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	raw := h.StartServerWith(harness.ServerOptions{Aliases: []string{"raw.test"},
		Args: []string{"-https-port", "0", "-raw-ports", "443,8443", "-udp-ports", "443"}})
	upProject(t, h, "rt2holds", []string{"raw.test:443"}, "")
	res := h.Abox("run", bashLines(
		`echo "caps $(claude net rt2-caps -)"`,
		`echo "spoof $(claude net rt2-spoof raw.test:443 198.51.100.7)"`,
		`echo "quic $(claude net udp raw.test:443 quic-initial)"`,
		`echo "port $(claude net tcp raw.test:8443 exfil)"`,
		`echo "reuse $(claude net rt2-reuse raw.test:443 other.test other.test any)"`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	probesOK(t, got, "caps")
	probesRefused(t, got, "spoof", "quic", "port", "reuse")
	t.Logf("caps: %s; spoof: %s; reuse: %s", got["caps"].Reply, got["spoof"].Error, got["reuse"].Error)
	if !strings.HasPrefix(got["reuse"].Error, "second connection") {
		t.Errorf("the five-tuple's second flow was not tried: %+v", got["reuse"])
	}
	// A connection's handshake reaches raw.test (the SYN passes at once): its bytes may not.
	for _, msg := range []string{"raw-data", "udp"} {
		if ev := h.Events(raw.Container, msg); len(ev) != 0 {
			t.Errorf("raw.test received: %v", ev[:min(3, len(ev))])
		}
	}
}

// TestAttackRevokeAfterAllowedFlood: TestAttackRedTeam2RevokeAfterEviction with flows the gate
// allows. The agent holds a connection to drop.test, then makes 17000 connections to keep.test
// that the gate allows, each reset once the server answered, more than the gate remembers
// whatever becomes of them (maxAllowedFlows); then the user runs `abox egress rm drop.test`.
// The gate forgets only flows conntrack no longer has, so the connection must still be cut.
func TestAttackRevokeAfterAllowedFlood(t *testing.T) {
	t.Parallel()
	revokeAfterFlood(t, "allowflood", "rt2-evict-allowed keep.test:443 17000 32 keep.test", "answered")
}
