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

// The TLS fast path (internal/netd, "The TLS fast path"): the agent's connections to an address
// netd resolved for a name allowed on 443 are carried by the kernel once netd has read their
// ClientHello, and held until then. These attacks try to get a byte past the check.

// TestAttackTLSFastPath: against servers on addresses netd opened for allowed names, the agent
// sends its ClientHello in 300-byte pieces (allowed: reassembled), the same pieces naming a
// server that is not allowed (reset), a hello in 40-byte pieces (more packets than a client can
// send unacknowledged: reset at once), the first 100 bytes of a hello and then nothing (reset
// after the hello's deadline), a hello in the SYN (TCP Fast Open: reset), and more stalled hellos
// at once than netd holds (those past the bound refused at once), and a second connection from
// the local port of an allowed one, naming a server that is not allowed; a plain connection works
// before and after. raw.test logs every byte it receives: not one arrives from a flow that was not allowed,
// and every refusal is in netd's connection log with its reason.
func TestAttackTLSFastPath(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	exact := h.StartServer("exact.test")
	raw := h.StartServerWith(harness.ServerOptions{Aliases: []string{"raw.test"}, Args: []string{"-https-port", "0", "-raw-ports", "443"}})
	other := h.StartServer("other.test")
	peer := h.StartServer("peer.test")
	upProject(t, h, "tlsgate", []string{"exact.test", "raw.test", "peer.test"}, "")
	res := h.Abox("run", bashLines(
		`echo "before $(claude net tls exact.test:443 exact.test)"`,
		`getent hosts peer.test >/dev/null`, // netd opens peer.test's address to the fast path
		`echo "aimed-at-peer $(claude net tls `+peer.IP+`:443 exact.test)"`,
		`echo "split $(claude net tls-split exact.test:443 exact.test 300 20)"`,
		`echo "split-other $(claude net tls-split exact.test:443 other.test 300 5)"`,
		`echo "split-fine $(claude net tls-split exact.test:443 exact.test 40 5)"`,
		`echo "stall $(claude net hello-stall raw.test:443 raw.test 100 20)"`,
		`echo "tfo $(claude net tfo raw.test:443 raw.test)"`,
		fmt.Sprintf(`echo "hold $(claude net hello-hold raw.test:443 raw.test %d 3)"`, 400),
		`echo "after $(claude net tls exact.test:443 exact.test)"`,
		`echo "reuse $(claude net tls-reuse exact.test:443 exact.test other.test 41234)"`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	probesOK(t, got, "before", "split", "after", "aimed-at-peer")
	// An allowed name sent to the address of another allowed name reaches that address (row
	// E34): the kernel carries the flow where the agent aimed, which netd opened for peer.test.
	if r := got["aimed-at-peer"].Reply; !strings.Contains(r, "name=peer.test") || !strings.Contains(r, "sni=exact.test") {
		t.Errorf("exact.test's name aimed at peer.test's address: reply %q, want peer.test's server seeing sni exact.test", r)
	}
	for _, n := range []string{"split-other", "split-fine", "stall", "tfo", "reuse"} {
		if p := got[n]; p.OK {
			t.Errorf("%s: %+v, want the connection refused", n, p)
		}
	}
	// The second connection from the port of an allowed one must be judged anew: netd once took
	// the five-tuple's earlier verdict for it.
	if p := got["reuse"]; !strings.HasPrefix(p.Error, "second:") || strings.Contains(p.Error, "in use") || strings.Contains(p.Error, "not available") {
		t.Errorf("reuse: %+v, want the first connection through and the second, from the same port, refused", p)
	}
	if r := got["split"].Reply; !strings.Contains(r, "name=exact.test") {
		t.Errorf("split hello: reply %q, want exact.test's server", r)
	}
	var held, reset, refused int
	fmt.Sscanf(got["hold"].Reply, "held %d reset %d refused %d", &held, &reset, &refused)
	if held > 256 || held+reset+refused != 400 || reset+refused < 400-256 {
		t.Errorf("hello-hold: %q, want at most 256 held and the rest refused", got["hold"].Reply)
	}
	if ev := h.Events(raw.Container, "raw-data"); len(ev) != 0 {
		t.Errorf("raw.test received bytes of flows netd never allowed: %v", ev[:min(3, len(ev))])
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached: %v", ev)
	}
	for _, ev := range h.Events(exact.Container, "tls-hello") {
		if ev.Str("sni") != "exact.test" {
			t.Errorf("exact.test received a ClientHello for %q", ev.Str("sni"))
		}
	}
	reasons := map[string]int{}
	kernelAllowed := 0
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if !r.Kernel {
			continue
		}
		if r.Verdict == policy.Allowed {
			kernelAllowed += int(r.Decisions())
			continue
		}
		reasons[r.Reason] += int(r.Decisions())
	}
	if kernelAllowed < 4 {
		t.Errorf("netd logged %d allowed flows carried by the kernel, want the four allowed probes'", kernelAllowed)
	}
	for _, want := range []string{"not allowed", "no whole client hello within 10s", "data in the syn (tcp fast open)",
		"too many tls flows waiting for their client hello", "closed before its client hello was whole", "client hello in more than 8 packets"} {
		if reasons[want] == 0 {
			t.Errorf("conn.jsonl has no kernel refusal %q (refusals: %v)", want, reasons)
		}
	}
}

// TestAttackTLSFlowRevoked: keep.test and drop.test are one server, so one address; the agent
// holds a TLS connection to each through the fast path, and `abox egress rm drop.test` resets
// drop.test's within seconds while keep.test's goes on: the address stays open for keep.test,
// and conntrack would carry the established flow, so the cut is by flow (revoked_flow).
func TestAttackTLSFlowRevoked(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("keep.test", "drop.test")
	upProject(t, h, "tlsrm", []string{"keep.test", "drop.test"}, "")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", bashLines(
		`claude net tls-hold drop.test:443 drop.test 20 /workspace/held-drop > /tmp/drop.json &`,
		`claude net tls-hold keep.test:443 keep.test 20 /workspace/held-keep > /tmp/keep.json &`,
		`wait`,
		`echo "drop $(cat /tmp/drop.json)"`,
		`echo "keep $(cat /tmp/keep.json)"`))
	waitWorkspaceFile(t, h.Workspace, "held-drop")
	waitWorkspaceFile(t, h.Workspace, "held-keep")
	time.Sleep(time.Second)
	if res := h.Abox("egress", "rm", "drop.test"); !res.OK() {
		t.Fatalf("abox egress rm: %s", res)
	}
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	if p := got["drop"]; p.OK || p.Rounds == 0 || p.BrokeAfter > 10 {
		t.Errorf("drop.test after egress rm: %+v, want its established connection cut within a few seconds", p)
	}
	if p := got["keep"]; !p.OK {
		t.Errorf("keep.test: %+v, want its connection untouched", p)
	}
	kernel := 0
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Kernel && r.Verdict == policy.Allowed {
			kernel++
		}
	}
	if kernel != 2 {
		t.Errorf("%d allowed flows carried by the kernel, want both held connections", kernel)
	}
	if n := lastCounter(t, h, "revoked tls flow"); n == 0 {
		t.Error(`netd's counters show no packet reset by the "revoked tls flow" rule`)
	}
}

// TestAttackTLSQueueRuleGone: the agent opens a connection to an address netd opened for an
// allowed name (its SYN and ACK pass the gate), then the queue rule vanishes from netd's
// namespace (here the host flushes it; nothing in the sandbox can), and the agent sends its
// hello. The flow is still marked held, so the ruleset drops every packet of it that comes
// without a verdict: raw.test receives nothing. The queue is only a way for packets to be
// judged; the ruleset never lets an unjudged one out.
func TestAttackTLSQueueRuleGone(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	raw := h.StartServerWith(harness.ServerOptions{Aliases: []string{"raw.test"}, Args: []string{"-https-port", "0", "-raw-ports", "443"}})
	upProject(t, h, "qgone", []string{"raw.test"}, "")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", bashLines(
		`echo "late $(claude net connect-then-hello raw.test:443 raw.test /workspace/connected /workspace/go)"`))
	waitWorkspaceFile(t, h.Workspace, "connected")
	netd := waitRunning(t, h, "netd")
	h.MustDocker("exec", "--user", "0", netd, "iptables-nft", "-t", "mangle", "-F", "OUTPUT")
	workspaceFile(t, h.Workspace, "go", "")
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	if p := probes(t, agentOutput(res.Stdout))["late"]; p.OK {
		t.Errorf("the hello sent after the queue rule was gone: %+v, want no answer", p)
	}
	if ev := h.Events(raw.Container, "raw-data"); len(ev) != 0 {
		t.Errorf("raw.test received bytes of a flow nobody judged: %v", ev)
	}
	if n := lastCounter(t, h, "tls held or pinned, not judged"); n == 0 {
		t.Error(`netd's counters show no packet dropped by the "tls held or pinned, not judged" rule`)
	}
}
