//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// Encrypted Client Hello (internal/netd, "Encrypted ClientHello"): a hello whose outer server
// name is allowed carries, encrypted, another naming a server that is not, and a server holding
// the key (cdn.test here, as a CDN fronting many sites) serves the inner one. netd cannot read
// it, so it refuses every hello with an extension of ECH, on the fast path and in the proxy.

// echVariants are the hand-made hellos the agent sends to raw.test, each with an ECH
// extension: every number netd counts as ECH, outer (as GREASE ECH makes it), inner and empty
// bodies, first, in the middle and last; a TLS 1.2 hello; a hello in 7-byte records; one in 5
// writes (more than one TCP segment).
var echVariants = []string{
	"0xfe0d-outer-last", "0xfe0d-inner-first", "0xfe0d-empty-middle", "0xfd00-outer-middle",
	"0xfe08-outer-last", "0xfe09-outer-last", "0xfe0a-outer-last", "0xfe0b-outer-last", "0xfe0c-outer-last",
	"0xda09-inner-first", "0xff02-outer-last", "0xff03-empty-first", "0xff04-outer-middle", "0xffce-outer-first",
	"tls12", "records", "segments",
}

// TestAttackEncryptedClientHello: the agent encrypts a hello for secret-backend.test, which is
// not allowed, under cdn.test's ECH key and the allowed public name cdn.test, with crypto/tls
// and by hand, aimed at cdn.test's address (the fast path) and at other.test's (the proxy, which
// dials cdn.test): each is refused and logged as an encrypted client hello, and cdn.test's
// server never reads one; the run summary lists them. The variants of echVariants, sent to
// raw.test (which logs every byte) on both paths, are refused too, and raw.test receives
// nothing. A hello trickled in 5 writes 50 ms apart is refused too: by the proxy as ECH, on the
// fast path at the hello's deadline, as the agent's TCP stops sending before the hello is whole
// (row E39). A plain hello to cdn.test works before and after. After a HelloRetryRequest the
// second hello is not netd's to read (row E40): one that adds ECH, or names secret-backend.test
// in the clear, reaches cdn.test, whose crypto/tls takes neither; one pipelined with the first,
// in its record, is refused as malformed on both paths.
func TestAttackEncryptedClientHello(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	cdn := h.StartServerWith(harness.ServerOptions{Aliases: []string{"cdn.test"}, Args: []string{"-ech-public-name", "cdn.test"}})
	raw := h.StartServerWith(harness.ServerOptions{Aliases: []string{"raw.test"}, Args: []string{"-https-port", "0", "-raw-ports", "443"}})
	other := h.StartServer("other.test")
	cfgs := h.Events(cdn.Container, "ech-config")
	if len(cfgs) != 1 {
		t.Fatalf("cdn.test logged %d ECH configs, want one", len(cfgs))
	}
	config := shq(cfgs[0].Str("config_list"))
	upProject(t, h, "ech", []string{"cdn.test", "raw.test"}, "")
	proxy := other.IP + ":443" // never resolved: the TLS proxy's path
	script := []string{
		`echo "plain-before $(claude net tls cdn.test:443 cdn.test)"`,
		`echo "ech-fast $(claude net ech cdn.test:443 ` + config + ` secret-backend.test)"`,
		`echo "ech-proxy $(claude net ech ` + proxy + ` ` + config + ` secret-backend.test)"`,
		`echo "hand-fast $(claude net ech-hrr cdn.test:443 cdn.test ` + config + ` secret-backend.test first)"`,
		`echo "hand-proxy $(claude net ech-hrr ` + proxy + ` cdn.test ` + config + ` secret-backend.test first)"`,
		`echo "hrr-second-fast $(claude net ech-hrr cdn.test:443 cdn.test ` + config + ` secret-backend.test second)"`,
		`echo "hrr-second-proxy $(claude net ech-hrr ` + proxy + ` cdn.test ` + config + ` secret-backend.test second)"`,
		`echo "hrr-rename-fast $(claude net ech-hrr cdn.test:443 cdn.test ` + config + ` secret-backend.test rename)"`,
	}
	for _, v := range echVariants {
		script = append(script,
			fmt.Sprintf(`echo "fast-%s $(claude net ech-hello raw.test:443 raw.test %s 2)"`, v, v),
			fmt.Sprintf(`echo "proxy-%s $(claude net ech-hello %s raw.test %s 2)"`, v, proxy, v))
	}
	script = append(script,
		`echo "fast-pipelined $(claude net ech-hello raw.test:443 raw.test pipelined 2)"`,
		`echo "proxy-pipelined $(claude net ech-hello `+proxy+` raw.test pipelined 2)"`,
		`echo "fast-trickle $(claude net ech-hello raw.test:443 raw.test trickle 12)"`,
		`echo "proxy-trickle $(claude net ech-hello `+proxy+` raw.test trickle 2)"`,
		`echo "plain-after $(claude net tls cdn.test:443 cdn.test)"`)
	res := h.Abox("run", bashLines(script...))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	probesOK(t, got, "plain-before", "plain-after", "hrr-second-fast", "hrr-second-proxy")
	refused := []string{"ech-fast", "ech-proxy", "hand-fast", "hand-proxy", "fast-trickle", "proxy-trickle",
		"fast-pipelined", "proxy-pipelined"}
	for _, v := range echVariants {
		refused = append(refused, "fast-"+v, "proxy-"+v)
	}
	probesRefused(t, got, refused...)
	for _, n := range []string{"plain-before", "plain-after"} {
		if r := got[n].Reply; !strings.Contains(r, "name=cdn.test") || !strings.Contains(r, "sni=cdn.test") {
			t.Errorf("%s: reply %q, want cdn.test's server serving cdn.test", n, r)
		}
	}
	// The second hello reaches cdn.test; crypto/tls takes ECH from the first hello only, and
	// refuses another name in the second (illegal_parameter).
	if p := got["hrr-rename-fast"]; p.OK || p.Error != "after the retry: alert 47" {
		t.Errorf("hrr-rename-fast: %+v, want cdn.test's server to refuse the renamed second hello", p)
	}
	checkECHServer(t, h, cdn, raw, other)
	checkECHLog(t, h, int64(2+len(echVariants)), int64(2+len(echVariants)+1))
	want := fmt.Sprintf("refused encrypted client hellos (outer name): raw.test (x%d), cdn.test (x4)", 2*len(echVariants)+1)
	if !strings.Contains(res.Stderr, want) {
		t.Errorf("the run summary lacks %q:\n%s", want, res.Stderr)
	}
}

// checkECHServer checks that no server read a refused hello: cdn.test chose a certificate only
// for the plain hellos and the second hellos after a retry, all naming cdn.test, and served
// nothing else; raw.test and other.test received nothing.
func checkECHServer(t *testing.T, h *harness.H, cdn, raw, other *harness.Server) {
	t.Helper()
	hellos := h.Events(cdn.Container, "tls-hello")
	for _, ev := range hellos {
		if ev.Str("sni") != "cdn.test" {
			t.Errorf("cdn.test read a hello for %q: %v", ev.Str("sni"), ev)
		}
	}
	// plain-before, plain-after, and the two second hellos that added ECH; the renamed one is
	// refused before a certificate is chosen.
	if len(hellos) != 4 {
		t.Errorf("cdn.test chose a certificate for %d hellos, want 4 (no refused one): %v", len(hellos), hellos)
	}
	for _, ev := range h.Events(cdn.Container, "request") {
		if ev.Str("sni") != "cdn.test" || ev.Str("ech") != "false" {
			t.Errorf("cdn.test served %v", ev)
		}
	}
	if ev := h.Events(raw.Container, "raw-data"); len(ev) != 0 {
		t.Errorf("raw.test received bytes of refused hellos: %v", ev[:min(3, len(ev))])
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test, whose address the proxy probes aimed at, was reached: %v", ev)
	}
}

// checkECHLog checks netd's connection log: the refusals for an encrypted client hello on the
// fast path (logged as carried by the kernel) and in the proxy, each under the outer name, the
// refusals of the pipelined hellos as malformed, and the fast path's refusal of the trickled
// hello at its deadline.
func checkECHLog(t *testing.T, h *harness.H, wantKernel, wantProxied int64) {
	t.Helper()
	var kernel, proxied, late, pipelined int64
	records := harvested[policy.ConnRecord](t, h, policy.ConnLog)
	defer func() {
		if t.Failed() {
			for _, r := range records {
				t.Logf("conn.jsonl: %+v", r)
			}
		}
	}()
	for _, r := range records {
		if r.Kernel && r.Reason == "no whole client hello within 10s" {
			late += r.Decisions()
		}
		if r.Reason == "malformed client hello" { // no name is read from it
			pipelined += r.Decisions()
		}
		if r.Reason != policy.ReasonECH {
			continue
		}
		if r.Verdict != policy.Denied || (r.Name != "cdn.test" && r.Name != "raw.test") {
			t.Errorf("conn.jsonl: %+v, want a denial under the outer name", r)
		}
		if r.Kernel {
			kernel += r.Decisions()
		} else {
			proxied += r.Decisions()
		}
	}
	if kernel != wantKernel || proxied != wantProxied {
		t.Errorf("conn.jsonl has %d refusals %q on the fast path and %d in the proxy, want %d and %d",
			kernel, policy.ReasonECH, proxied, wantKernel, wantProxied)
	}
	if pipelined != 2 {
		t.Errorf("conn.jsonl has %d refusals of a malformed hello, want the two pipelined ones", pipelined)
	}
	if late != 1 {
		t.Errorf("conn.jsonl has %d fast-path refusals of a hello not whole within 10s, want the trickled one", late)
	}
}
