//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// Network attacks below DNS: raw sockets and ICMP, UDP and TCP to arbitrary ports of a test
// container and of this machine's bridge addresses, and netd's own listeners addressed
// directly, on loopback and on the namespace's bridge address.

// icmpPerl pings its argument with a raw ICMP socket and with an ICMP datagram ("ping") socket,
// and tries to open raw TCP, raw IP and packet sockets. It needs only perl-base.
const icmpPerl = `use strict; use warnings; use Socket;
sub out { my ($n, $ok, $e) = @_; $e =~ s/["\\\n]//g; printf "%s {\"ok\":%s,\"error\":\"%s\"}\n", $n, $ok ? 'true' : 'false', $e; }
sub cksum { my $d = shift; $d .= "\0" if length($d) % 2; my $s = 0; $s += $_ for unpack('n*', $d);
  $s = ($s >> 16) + ($s & 0xffff); $s += $s >> 16; return ~$s & 0xffff; }
sub ping { my ($type, $target) = @_;
  socket(my $s, PF_INET, $type, 1) or return (0, "socket: $!");
  my $p = pack('CCnnn', 8, 0, 0, 0x4242, 1) . 'abox-attack';
  substr($p, 2, 2) = pack('n', cksum($p));
  defined(send($s, $p, 0, sockaddr_in(0, inet_aton($target)))) or return (0, "send: $!");
  my $rin = ''; vec($rin, fileno($s), 1) = 1;
  for (1 .. 5) {
    select(my $r = $rin, undef, undef, 2) or return (0, 'no reply');
    defined(recv($s, my $buf, 1500, 0)) or return (0, "recv: $!");
    my $off = $type == SOCK_RAW ? (ord($buf) & 0x0f) * 4 : 0;
    return (1, 'echo reply') if ord(substr($buf, $off, 1)) == 0;
  }
  return (0, 'no echo reply');
}
my $target = shift;
out('raw-icmp', ping(SOCK_RAW, $target));
out('ping-socket', ping(SOCK_DGRAM, $target));
out('raw-tcp', socket(my $a, PF_INET, SOCK_RAW, 6) ? (1, 'created') : (0, "$!"));
out('raw-ip', socket(my $b, PF_INET, SOCK_RAW, 255) ? (1, 'created') : (0, "$!"));
out('packet', socket(my $c, 17, SOCK_RAW, 0x0300) ? (1, 'created') : (0, "$!"));
`

// TestAttackRawSocketsAndICMP: the agent holds no CAP_NET_RAW, so raw and packet sockets cannot
// be opened (no ARP or IP spoofing on the bridge either), and an ICMP echo through a ping
// socket is refused by the ruleset. The control pings the same container as root from a
// container outside the sandbox and gets its reply.
func TestAttackRawSocketsAndICMP(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	target := h.StartServer("ping.test")
	upProject(t, h, "icmp", nil, "")
	workspaceFile(t, h.Workspace, "icmp.pl", icmpPerl)
	_, got := attackRun(t, h, "perl icmp.pl "+target.IP)
	probesRefused(t, got, "raw-icmp", "ping-socket", "raw-tcp", "raw-ip", "packet")
	// gVisor, without its --net-raw, has no raw or packet sockets at all.
	refusal := map[string]string{"runc": "Operation not permitted", "runsc": "Address family not supported by protocol"}[agentRuntime(t)]
	for _, n := range []string{"raw-icmp", "raw-tcp", "raw-ip", "packet"} {
		if !strings.Contains(got[n].Error, refusal) {
			t.Errorf("%s: %q, want the socket refused (%s)", n, got[n].Error, refusal)
		}
	}
	control := h.Run(harness.RunOptions{Mounts: []string{h.Workspace + ":/w:ro"}, Cmd: []string{"perl", "/w/icmp.pl", target.IP}})
	if p := probes(t, control.Stdout); !p["raw-icmp"].OK {
		t.Errorf("control: root outside the sandbox got no echo reply from %s: %s", target.IP, control)
	}
}

// TestAttackPortsAndBridge: UDP and TCP to ports a test container answers on, and every common
// port of this machine's addresses on the test bridge and on docker0. Ports 53, 80 and 443 are
// redirected to netd, so they are probed with DNS, HTTP and TLS and refused by netd's policy;
// every other port is refused by the ruleset. The control reaches the same ports from outside.
func TestAttackPortsAndBridge(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	udpPorts := []string{"2222", "123", "443", "5353", "51820"}
	other := h.StartServerWith(harness.ServerOptions{Aliases: []string{"other.test"},
		Args: []string{"-udp-ports", strings.Join(udpPorts, ","), "-tcp-ports", "2222,2223,25,3306"}})
	upProject(t, h, "ports", nil, "")
	var script []string
	for _, p := range udpPorts {
		script = append(script, fmt.Sprintf(`echo "udp-%s $(claude net udp %s:%s hi)"`, p, other.IP, p))
	}
	for _, p := range []string{"2222", "2223", "25", "3306"} {
		script = append(script, fmt.Sprintf(`echo "tcp-%s $(claude net tcp %s:%s hi)"`, p, other.IP, p))
	}
	hosts := map[string]string{"bridge": bridgeGateway(h)}
	if d := docker0Addr(); d != "" {
		hosts["docker0"] = d
	}
	for name, addr := range hosts {
		script = append(script,
			fmt.Sprintf(`echo "host-%s-dns $(claude net dns %s:53 host.test)"`, name, addr),
			fmt.Sprintf(`echo "host-%s-dns-tcp $(claude net dns %s:53 host.test A tcp)"`, name, addr),
			fmt.Sprintf(`echo "host-%s-http $(claude net http %s:80 %s)"`, name, addr, addr),
			fmt.Sprintf(`echo "host-%s-tls $(claude net tls %s:443 -)"`, name, addr))
		for _, p := range []string{"22", "111", "2375", "2376", "3000", "5000", "8080", "8811", "9000", "10250"} {
			script = append(script, fmt.Sprintf(`echo "host-%s-tcp-%s $(claude net tcp %s:%s)"`, name, p, addr, p))
		}
		for _, p := range []string{"67", "123", "5353"} {
			script = append(script, fmt.Sprintf(`echo "host-%s-udp-%s $(claude net udp %s:%s hi)"`, name, p, addr, p))
		}
	}
	// A listener of this test's own on each of the host's addresses: where nothing listens, a
	// probe of the host is refused whatever the ruleset does, so only this one can show the
	// ruleset's refusal.
	var accepted atomic.Int64
	listeners := map[string]string{}
	for name, addr := range hosts {
		ln, err := net.Listen("tcp4", net.JoinHostPort(addr, "0"))
		if err != nil {
			t.Fatalf("listening on the host's %s address: %v", name, err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		listeners[name] = ln.Addr().String()
		script = append(script, fmt.Sprintf(`echo "host-%s-listener $(claude net tcp %s)"`, name, ln.Addr().String()))
	}
	_, got := attackRun(t, h, script...)
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host's listeners accepted %d connections from the sandbox", n)
	}
	for _, prefix := range []string{"udp-", "tcp-", "host-bridge-"} {
		refusedWithPrefix(t, got, prefix)
	}
	if _, ok := hosts["docker0"]; ok {
		refusedWithPrefix(t, got, "host-docker0-")
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached: %v", ev)
	}
	for _, proto := range []string{"udp", "tcp"} {
		control := h.Run(standin(t, nil, "claude", "net", proto, other.IP+":2222", "hi"))
		if !control.OK() {
			t.Errorf("control: %s to other.test:2222 from outside the sandbox: %s", proto, control)
		}
	}
	before := accepted.Load()
	if control := h.Run(standin(t, nil, "claude", "net", "tcp", listeners["bridge"])); !control.OK() || accepted.Load() == before {
		t.Errorf("control: the host's listener on the bridge (%s) from outside the sandbox: %s", listeners["bridge"], control)
	}
}

// TestAttackNetdListeners: the agent talks to netd's listeners directly instead of through the
// ruleset's redirects. A forged or missing SNI straight to the TLS proxy, a forged Host straight
// to the HTTP proxy and a denied name straight to the resolver get the same refusals; the
// listeners are bound to loopback only, so the namespace's bridge address reaches none of them;
// and nothing else listens (netd has no control port).
func TestAttackNetdListeners(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("allowed.test")
	other := h.StartServer("other.test")
	upProject(t, h, "listeners", []string{"allowed.test"}, "")
	sni, httpp, dns, mcp := strconv.Itoa(policy.SNIPort), strconv.Itoa(policy.HTTPPort), strconv.Itoa(policy.DNSPort), strconv.Itoa(policy.MCPPort)
	script := []string{
		`own=$(hostname -i | awk '{print $1}')`,
		`echo "control $(claude net tls 127.0.0.1:` + sni + ` allowed.test)"`,
		`echo "lo-sni-forged $(claude net tls 127.0.0.1:` + sni + ` other.test)"`,
		`echo "lo-sni-none $(claude net tls 127.0.0.1:` + sni + ` - other.test)"`,
		`echo "lo-sni-ip $(claude net tls 127.0.0.1:` + sni + ` ` + other.IP + `)"`,
		`echo "lo-http-forged $(claude net http 127.0.0.1:` + httpp + ` other.test)"`,
		`echo "lo-dns-direct $(claude net dns 127.0.0.1:` + dns + ` other.test)"`,
		`echo "lo-dns-direct-tcp $(claude net dns 127.0.0.1:` + dns + ` other.test A tcp)"`,
		`echo "lo-mcp-other-path $(claude net http 127.0.0.1:` + mcp + ` other.test)"`,
		`echo "own-sni $(claude net tls $own:` + sni + ` allowed.test)"`,
		`echo "own-http $(claude net http $own:` + httpp + ` allowed.test)"`,
		`echo "own-dns $(claude net dns $own:` + dns + ` allowed.test)"`,
		`echo "own-mcp $(claude net tcp $own:` + mcp + `)"`,
		`for p in 1 22 2019 8080 9090 15000 15354 15444 15812 65535; do echo "lo-port-$p $(claude net tcp 127.0.0.1:$p)"; done`,
		`awk 'NR>1 && $4 == "0A" {print "listen tcp", $2}' /proc/net/tcp /proc/net/tcp6`,
		`awk 'NR>1 && $3 ~ /^0+:0000$/ {print "listen udp", $2}' /proc/net/udp /proc/net/udp6`,
	}
	out, got := attackRun(t, h, script...)
	probesOK(t, got, "control")
	refusedWithPrefix(t, got, "lo-")
	refusedWithPrefix(t, got, "own-")
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test was reached: %v", ev)
	}
	service := map[string]bool{}
	for _, p := range []int{policy.DNSPort, policy.SNIPort, policy.HTTPPort, policy.MCPPort, policy.ModelPort} {
		service[fmt.Sprintf("0100007F:%04X", p)] = true
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		addr, ok := strings.CutPrefix(l, "listen ")
		if !ok {
			continue
		}
		n++
		local := strings.Fields(addr)[1]
		if !service[local] && !strings.HasPrefix(local, "0B00007F:") { // 127.0.0.11 is Docker's resolver
			t.Errorf("something else listens in the sandbox's namespace: %s", addr)
		}
	}
	if n < 3 {
		t.Errorf("saw %d listening sockets, want at least netd's: %s", n, out)
	}
	refused := 0
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Verdict == policy.Denied && r.Name == "other.test" {
			refused++
		}
	}
	if refused < 2 {
		t.Errorf("netd's conn.jsonl holds %d refusals of other.test, want the forged SNI and Host", refused)
	}
}
