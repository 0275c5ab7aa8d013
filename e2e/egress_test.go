//go:build e2e

package e2e

import (
	"maps"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// Egress end to end: the allowlist as netd enforces it in a running sandbox, on the real daemon.
// Every destination is one of the test's own testsrv containers, reached by its network alias
// under .test; netd's upstream resolver is Docker's, which knows those aliases.

func TestEgressTLSBySNI(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	exact := h.StartServer("exact.test")
	wild := h.StartServer("allowed.test", "a.allowed.test")
	// other.test also answers for x.exact.test: a subdomain of an exact entry must not even be
	// asked upstream, or its address would leak.
	other := h.StartServer("other.test", "x.exact.test")
	upProject(t, h, "tls", []string{"exact.test", "*.allowed.test", "ssh.test:2222"}, "")
	res := h.Abox("run", bashLines(
		`echo "exact $(claude net tls exact.test:443 exact.test)"`,
		`echo "sub $(claude net tls a.allowed.test:443 a.allowed.test)"`,
		`echo "apex-dns $(claude net dns 127.0.0.1:53 allowed.test)"`,
		`echo "apex-sni $(claude net tls `+wild.IP+`:443 allowed.test)"`,
		`echo "fronting $(claude net tls `+exact.IP+`:443 other.test)"`,
		`echo "no-sni $(claude net tls `+exact.IP+`:443 -)"`,
		`echo "no-sni-proxy $(claude net tls `+other.IP+`:443 -)"`,
		`echo "forged-host $(claude net tls exact.test:443 exact.test other.test)"`,
		`echo "aimed-elsewhere $(claude net tls `+other.IP+`:443 exact.test)"`,
		`echo "other-port $(claude net tls `+other.IP+`:443 ssh.test)"`,
		`echo "sub-of-exact $(claude net dns 127.0.0.1:53 x.exact.test)"`,
		`echo "suffix-trick $(claude net dns 127.0.0.1:53 exact.test.evil.invalid)"`,
		`echo "escaped-dot $(claude net dns 127.0.0.1:53 'x\.allowed.test')"`,
		`echo "case $(claude net dns 127.0.0.1:53 EXACT.Test)"`,
		`echo "aaaa $(claude net dns 127.0.0.1:53 exact.test AAAA)"`,
		`echo "txt $(claude net dns 127.0.0.1:53 other.test TXT)"`,
		`echo "longest $(claude net dns 127.0.0.1:53 `+longName("evil.invalid")+`)"`,
		`env | grep -E '^(DISABLE_AUTOUPDATER|CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC|ENABLE_CLAUDEAI_MCP_SERVERS)=' | sort`,
	))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	out := agentOutput(res.Stdout)
	got := probes(t, out)
	probesOK(t, got, "exact", "sub", "forged-host", "aimed-elsewhere", "case")
	probesRefused(t, got, "apex-sni", "fronting", "no-sni", "no-sni-proxy", "other-port")
	probesRCode(t, got, "NXDOMAIN", "apex-dns", "sub-of-exact", "suffix-trick", "escaped-dot", "txt", "longest")
	if p := got["aaaa"]; p.RCode != "NOERROR" || len(p.Answers) != 0 {
		t.Errorf("AAAA of an allowed name: %+v, want an empty NOERROR", p)
	}
	// netd connects to the name in the SNI, wherever the agent aimed, and the Host inside the
	// tunnel reaches only that server.
	if r := got["forged-host"].Reply; !strings.Contains(r, "name=exact.test") || !strings.Contains(r, "host=other.test sni=exact.test") {
		t.Errorf("forged Host: reply %q, want exact.test's server naming the Host and SNI it saw", r)
	}
	if r := got["aimed-elsewhere"].Reply; !strings.Contains(r, "name=exact.test") {
		t.Errorf("allowed SNI aimed at other.test's address: reply %q, want exact.test's server", r)
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached: %v", ev)
	}
	// netd refuses a ClientHello without a server name: exact.test, at whose address the
	// no-sni probe aimed (an address netd resolved, so the TLS fast path), never receives one;
	// nor does other.test (the no-sni-proxy probe's, through the SNI proxy: not reached above).
	for _, ev := range h.Events(exact.Container, "tls-hello") {
		if ev.Str("sni") == "" {
			t.Errorf("exact.test received a ClientHello without a server name: %v", ev)
		}
	}
	sawForged := false
	for _, ev := range h.Events(exact.Container, "request") {
		sawForged = sawForged || (ev.Str("host") == "other.test" && ev.Str("sni") == "exact.test")
	}
	if !sawForged {
		t.Errorf("exact.test's log lacks the request with Host other.test and SNI exact.test")
	}
	for _, kv := range []string{"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "ENABLE_CLAUDEAI_MCP_SERVERS=false"} {
		if !strings.Contains("\n"+out+"\n", "\n"+kv+"\n") {
			t.Errorf("agent environment lacks %s:\n%s", kv, out)
		}
	}
	checkConnLog(t, h, exact.IP)
}

// checkConnLog checks netd's connection log of the last run: refusals with their reasons, and
// allowed connections to the address netd resolved: relayed by the SNI proxy, with bytes counted
// both ways, or carried by the kernel after the check of their hello (the TLS fast path), with
// the hello's bytes. Both kinds must be there: the agent's connections to exact.test by name go
// through the fast path, the one aimed at another address through the proxy.
func checkConnLog(t *testing.T, h *harness.H, exactIP string) {
	t.Helper()
	reasons := map[string]string{}
	kinds := map[bool]int{}
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Verdict == policy.Allowed {
			if r.Name != "exact.test" {
				continue
			}
			kinds[r.Kernel]++
			if r.Upstream != exactIP+":443" || r.BytesUp == 0 || (!r.Kernel && r.BytesDown == 0) {
				t.Errorf("allowed connection %+v, want upstream %s:443 and bytes both ways (the hello's, carried by the kernel)", r, exactIP)
			}
			continue
		}
		reasons[r.Name] = r.Reason
		if r.Name == "other.test" && r.OrigDst != exactIP+":443" {
			t.Errorf("fronting attempt %+v, want the address the agent aimed at (%s:443)", r, exactIP)
		}
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("allowed connections to exact.test: %d carried by the kernel, %d relayed; want both", kinds[true], kinds[false])
	}
	want := map[string]string{"allowed.test": "not allowed", "other.test": "not allowed", "": "no sni",
		"ssh.test": "allowed only on port 2222"}
	for name, reason := range want {
		if reasons[name] != reason {
			t.Errorf("conn.jsonl refusal of %q: reason %q, want %q (all: %v)", name, reasons[name], reason, reasons)
		}
	}
}

func TestEgressNonTLSPort(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	git := h.StartServer("git.test", "mirror.test")
	upProject(t, h, "port", []string{"git.test:2222"}, "")
	cmd, wait := startRun(t, h, bashLines(
		`until [ -e go ]; do sleep 0.1; done`,
		`echo "before $(claude net tcp `+git.IP+`:2222 hi)"`,
		`echo "mirror-dns $(claude net dns 127.0.0.1:53 mirror.test)"`,
		`echo "git $(claude net tcp git.test:2222 hi)"`,
		`echo "git-ip $(claude net tcp `+git.IP+`:2222 hi)"`,
		`echo "mirror $(claude net tcp mirror.test:2222 hi)"`,
		`echo "git-2223 $(claude net tcp git.test:2223 hi)"`,
		`echo "git-udp $(claude net udp git.test:2222 hi)"`,
		`echo "git-tls $(claude net tls git.test:443 git.test)"`,
		`touch probed; until [ -e end ]; do sleep 0.1; done`,
	))
	defer cmd.Process.Kill()
	netd := waitRunning(t, h, "netd")
	waitRunning(t, h, "agent")
	if set := agentSet(t, h, netd); strings.Contains(set, git.IP) {
		t.Errorf("agent set before any lookup:\n%s", set)
	}
	touchWorkspace(t, h, "go")
	waitFile(t, h, "probed")
	set := agentSet(t, h, netd)
	touchWorkspace(t, h, "end")
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	probesOK(t, got, "git", "git-ip")
	probesRefused(t, got, "before", "mirror", "git-2223", "git-udp", "git-tls")
	probesRCode(t, got, "NXDOMAIN", "mirror-dns")
	if r := got["git"].Reply; r != "testsrv git.test tcp/2222" {
		t.Errorf("git.test:2222 banner %q", r)
	}
	// The element is the resolved address on the entry's port only, with the DNS TTL as its
	// timeout (Docker answers for container names with 600 s).
	if !strings.Contains(set, git.IP+" . 2222 timeout 10m") || strings.Contains(set, "2223") {
		t.Errorf("agent set after the lookup, want %s . 2222 for 10m and nothing else:\n%s", git.IP, set)
	}
	for _, ev := range h.Events(git.Container, "tcp-connect") {
		if ev.Str("port") != "2222" {
			t.Errorf("git.test saw a connection on %s", ev.Str("port"))
		}
	}
}

func TestEgressPlainHTTP(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	web := h.StartServer("web.test")
	other := h.StartServer("other.test")
	upProject(t, h, "http", []string{"web.test"}, "")
	script := bashLines(
		`echo "updater {\"ok\":true,\"reply\":\"$DISABLE_AUTOUPDATER\"}"`,
		`echo "web $(claude net http web.test:80 web.test)"`,
		`echo "aimed-elsewhere $(claude net http `+other.IP+`:80 web.test)"`,
		`echo "other-host $(claude net http `+web.IP+`:80 other.test)"`,
		`s=$(exec 3<>/dev/tcp/`+web.IP+`/80; printf 'GET / HTTP/1.0\r\n\r\n' >&3; head -1 <&3 | tr -d '\r')`,
		`echo "no-host {\"ok\":$(case "$s" in *" 2"*) echo true;; *) echo false;; esac),\"reply\":\"$s\"}"`,
	)
	run := func(phase string) map[string]probeResult {
		t.Helper()
		res := h.Abox("run", script)
		if !res.OK() {
			t.Fatalf("%s: abox run: %s", phase, res)
		}
		got := probes(t, agentOutput(res.Stdout))
		for name, p := range got {
			if !p.OK && !strings.Contains(p.Reply, "403") {
				t.Errorf("%s: %s: %+v, want netd's 403", phase, name, p)
			}
		}
		return got
	}
	// Not opted in: web.test is allowed on 443 only, so port 80 is refused by Host.
	probesRefused(t, run("443 only"), "web", "aimed-elsewhere", "other-host", "no-host")
	if n := len(h.Events(web.Container, "request")); n != 0 {
		t.Errorf("web.test saw %d requests before port 80 was allowed", n)
	}
	// An explicit entry opts in web.test alone.
	if res := h.Abox("egress", "add", "web.test:80"); !res.OK() {
		t.Fatalf("abox egress add: %s", res)
	}
	got := run("web.test:80")
	probesOK(t, got, "web", "aimed-elsewhere")
	probesRefused(t, got, "other-host", "no-host")
	// egress_ports in config.yaml opts in every entry without a port.
	if res := h.Abox("egress", "rm", "web.test:80"); !res.OK() {
		t.Fatalf("abox egress rm: %s", res)
	}
	// agent_env overrides the switches abox sets by default (the updater's here).
	cfg := h.DefaultConfig()
	env := map[string]string{}
	if harnessEnv, ok := cfg.Extra["agent_env"].(map[string]string); ok {
		maps.Copy(env, harnessEnv)
	}
	env["DISABLE_AUTOUPDATER"] = "0"
	cfg.Extra = map[string]any{"egress_ports": []int{443, 80}, "agent_env": env}
	h.WriteConfig(cfg)
	if res := h.Abox("up", "--yes"); !res.OK() {
		t.Fatalf("abox up: %s", res)
	}
	got = run("egress_ports")
	if r := got["updater"].Reply; r != "0" {
		t.Errorf("DISABLE_AUTOUPDATER = %q in the agent, want agent_env's 0", r)
	}
	probesOK(t, got, "web", "aimed-elsewhere")
	probesRefused(t, got, "other-host", "no-host")
	for _, ev := range h.Events(web.Container, "request") {
		if ev.Str("host") != "web.test" || ev.Str("proto") != "http" {
			t.Errorf("web.test saw %v, want only plain HTTP for Host web.test", ev)
		}
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached: %v", ev)
	}
	var denied []policy.ConnRecord
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Kind == policy.KindHTTP && r.Verdict == policy.Denied && r.Name != policy.SelfTestName {
			denied = append(denied, r)
		}
	}
	if len(denied) != 2 {
		t.Errorf("conn.jsonl holds %d refused HTTP requests in the last run, want 2: %+v", len(denied), denied)
	}
	for _, r := range denied {
		if r.OrigDst != web.IP+":80" {
			t.Errorf("refused HTTP request %+v, want the address the agent aimed at (%s:80)", r, web.IP)
		}
	}
}

// bashLines joins the lines of a prompt script.
func bashLines(l ...string) string { return strings.Join(l, "\n") }

// longName returns a name of exactly 253 characters, the longest DNS carries, ending in suffix.
func longName(suffix string) string {
	var b strings.Builder
	for b.Len()+len(suffix) < 253-63 {
		b.WriteString(strings.Repeat("a", 62) + ".")
	}
	b.WriteString(strings.Repeat("b", 253-b.Len()-len(suffix)-1) + ".")
	return b.String() + suffix
}
