//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
)

// More attacks on the namespace the agent shares with netd (issue 14), beyond the conntrack
// planting of attack_ns_test.go: forging the source of a datagram to any loopback address with
// IP_PKTINFO (no capability needed) so that it matches the reply direction of a flow of netd's,
// planting conntrack entries that send netd's upstream queries back into netd, DNS answers that
// point into the sandbox's own network, flows that outlive `abox egress rm`, and a reload raced
// by the agent. The tools are in e2e/standin/ns2.go.

// zoneEnv starts a test resolver that answers every A query with answer (and the names of
// -dns-map from its file /dnsmap, see [setZoneMap]) and returns it with abox's environment
// naming it as the host's only resolver: netd asks it for every name Docker's resolver does not
// know.
func zoneEnv(t *testing.T, h *harness.H, answer string) (*harness.Server, []string) {
	t.Helper()
	zone := h.StartServerWith(harness.ServerOptions{Aliases: []string{"zone.test"},
		Args: []string{"-dns-answer", answer, "-dns-ttl", "600", "-dns-map", "/dnsmap"}})
	resolv := filepath.Join(h.Dir, "resolv.conf")
	writeFile(t, resolv, "nameserver "+zone.IP+"\n")
	return zone, append(h.Env(), "ABOX_RESOLV_CONF="+resolv)
}

// setZoneMap points names at addresses in the zone's resolver from now on.
func setZoneMap(t *testing.T, h *harness.H, zone *harness.Server, names map[string]string) {
	t.Helper()
	var b strings.Builder
	for n, a := range names {
		fmt.Fprintf(&b, "%s %s\n", n, a)
	}
	file := filepath.Join(h.Dir, "dnsmap")
	writeFile(t, file, b.String())
	if res := h.Docker("cp", file, zone.Container+":/dnsmap"); !res.OK() {
		t.Fatalf("docker cp the zone's map: %s", res)
	}
}

// upWith is upProject with an environment of the test's (nil: the harness's).
func upWith(t *testing.T, h *harness.H, env []string, project string, egress []string, extra string) {
	t.Helper()
	h.WriteConfig(h.DefaultConfig())
	var m strings.Builder
	m.WriteString("version: 1\nproject: " + project + "\nprofile: " + h.Profile + "\n")
	if len(egress) > 0 {
		m.WriteString("egress:\n")
		for _, e := range egress {
			m.WriteString("  - \"" + e + "\"\n")
		}
	}
	m.WriteString(extra)
	h.WriteManifest(m.String())
	if _, wait := startAbox(t, h, h.Workspace, env, "up", "--yes"); !wait().OK() {
		t.Fatal("abox up failed")
	}
}

// runWith runs a prompt with env (nil: the harness's) that must exit 0 and returns the agent's
// output and its probes.
func runWith(t *testing.T, h *harness.H, env []string, script ...string) (string, map[string]probeResult) {
	t.Helper()
	_, wait := startAbox(t, h, h.Workspace, env, "run", bashLines(script...))
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	out := agentOutput(res.Stdout)
	return out, probes(t, out)
}

// forgeResult is what spoof-race printed.
type forgeResult struct {
	OK           bool   `json:"ok"`
	Error        string `json:"error"`
	DockerPort   int    `json:"docker_port"`
	SprayedPorts []int  `json:"sprayed_ports"`
	Sent         int64  `json:"sent"`
	SendErrors   int64  `json:"send_errors"`
	FirstError   string `json:"first_send_error"`
}

// forgeResults decodes the output lines "name {json}" whose name starts with prefix.
func forgeResults(out, prefix string) map[string]forgeResult {
	got := map[string]forgeResult{}
	for _, l := range strings.Split(out, "\n") {
		name, js, ok := strings.Cut(l, " {")
		if !ok || !strings.HasPrefix(name, prefix) {
			continue
		}
		var f forgeResult
		if json.Unmarshal([]byte("{"+js), &f) == nil {
			got[name] = f
		}
	}
	return got
}

// forgeLoop is a prompt's loop of up to tries attempts: each forges NAME → ANSWER in the
// background (spoof-race), meanwhile runs probe against a fresh name under zone, and prints the
// probe as "<tag>-<i>" and the forger's report as "forge-<tag>-<i>"; it stops at the first probe
// whose output contains stop.
func forgeLoop(tag, zone, answer, probe, stop string, tries int) string {
	return fmt.Sprintf(`for i in $(seq %[6]d); do n=%[1]s$i.%[2]s
  claude net spoof-race $n %[3]s 3 > /tmp/forge-%[1]s-$i.json &
  sleep 0.3
  r=$(%[4]s)
  wait
  echo "%[1]s-$i $r"
  echo "forge-%[1]s-$i $(cat /tmp/forge-%[1]s-$i.json)"
  case "$r" in *%[5]s*) break;; esac
done`, tag, zone, answer, probe, stop, tries)
}

// TestAttackForgedUpstreamAnswer: netd asks Docker's resolver (127.0.0.11:53) for every allowed
// name, and Docker never answers a name it would have to forward, so each such query waits 800 ms
// before netd asks the host's resolvers. The agent reads the query's local port in
// /proc/net/udp, Docker's real port on 127.0.0.11 there too, and answers the query with every
// DNS id from 127.0.0.11:<that port> — a source address it may use on loopback with IP_PKTINFO,
// on a socket bound to another loopback address. The forged datagrams match the reply direction
// of netd's own conntrack entry, so the ruleset's "established" accepts them before "docker dns
// as a source refused" is reached, and netd takes the one with its id as Docker's answer: an
// allowed name resolves to a host on no allowlist. It must not: no answer names that host, the
// TLS proxy never connects there, the agent cannot reach it on the name's non-TLS port, and the
// host sees nothing.
func TestAttackForgedUpstreamAnswer(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("real.test")
	other := h.StartServer("other.test")
	_, env := zoneEnv(t, h, srv.IP)
	upWith(t, h, env, "forge", []string{"*.wild.test", "*.wild.test:2222", "real.test"}, "")
	out, got := runWith(t, h, env,
		forgeLoop("dns", "wild.test", other.IP, `claude net dns 127.0.0.1:53 $n`, other.IP, 8),
		`echo "direct $(claude net tcp `+other.IP+`:2222 forged)"`,
		forgeLoop("tls", "wild.test", other.IP, `claude net tls 127.0.0.1:443 $n`, "name=other.test", 8),
		`echo "live-dns $(claude net dns 127.0.0.1:53 real.test)"`,
		`echo "live-tls $(claude net tls 127.0.0.1:443 real.test)"`)
	checkForgedRefused(t, got, out, srv.IP, other.IP)
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("the host on no allowlist was reached through a forged answer: %v", ev)
	}
}

// checkForgedRefused: the forger ran against netd's queries, yet no DNS answer is the forged
// one and no TLS connection landed on the forged host, and the forged address was not opened.
// The zone's own answers for the wildcard are the real host's, which is on the sandbox's
// network, so netd drops them as rebinding (a public name never points there): the names
// resolve to nothing. A name Docker knows (real.test) resolves and connects throughout.
func checkForgedRefused(t *testing.T, got map[string]probeResult, out, real, forged string) {
	t.Helper()
	forges := forgeResults(out, "forge-")
	if f := forges["forge-dns-1"]; len(f.SprayedPorts) == 0 || f.DockerPort == 0 {
		t.Fatalf("the forger saw no query of netd's to answer (%+v): the attack did not run", f)
	}
	for name, p := range got {
		switch {
		case strings.HasPrefix(name, "dns-"):
			if len(p.Answers) != 0 {
				t.Errorf("%s: %+v, want no address: not the forged one, nor the zone's answer into the sandbox's network (forger: %+v)", name, p, forges["forge-"+name])
			}
		case strings.HasPrefix(name, "tls-"):
			if strings.Contains(p.Reply, "name=other.test") || p.OK {
				t.Errorf("%s: %+v, want no connection (forger: %+v)", name, p, forges["forge-"+name])
			}
		}
	}
	if p := got["direct"]; p.OK {
		t.Errorf("the forged address %s was opened on the allowed name's port: %+v", forged, p)
	}
	if p := got["live-dns"]; strings.Join(p.Answers, ",") != real {
		t.Errorf("live-dns: %+v, want real.test's %s", p, real)
	}
	if p := got["live-tls"]; !strings.Contains(p.Reply, "name=real.test") {
		t.Errorf("live-tls: %+v, want the real host", p)
	}
}

// forgedSourceRules are one fix TestAttackUpstreamFlowControl tries, ahead of "established": a
// datagram from Docker's resolver address that Docker (root) did not send, or one from netd's
// ports that netd did not send, is dropped whatever conntrack thinks of it. It closes forged
// answers, not the reuse of netd's flows.
var forgedSourceRules = []string{
	`ip saddr 127.0.0.11 meta skuid != 0 counter drop comment "forged docker dns"`,
	fmt.Sprintf(`meta skuid != %d ip saddr 127.0.0.0/8 meta l4proto { tcp, udp } th sport { %d, %d, %d, %d } counter drop comment "forged netd ports"`,
		policy.NetdUID, policy.DNSPort, policy.SNIPort, policy.HTTPPort, policy.MCPPort),
}

// flowOwnerComments name the ruleset's flow-ownership rules (internal/policy): every flow is
// marked by who opened it, and a packet of a flow is dropped when the wrong side sends it —
// another uid in netd's flow (reuse), anyone but Docker (root) answering netd on loopback
// (forgery), netd or root sending in a flow the agent opened (planted entries).
var flowOwnerComments = []string{"netd's new flow", "another uid's new flow", "netd's flow, another sender",
	"netd's flow, a forged reply", "another uid's flow, root sending", "another uid's flow, netd sending"}

// TestAttackUpstreamFlowControl: the attacks of TestAttackForgedUpstreamAnswer and
// TestAttackReusedUpstreamFlow against namespaces made like netd's, where a uid-990 process asks
// what netd asks — Docker's resolver for a name it never answers (each query waits 3 s) while
// the agent's uid answers by every DNS id from 127.0.0.11:<Docker's port>, then a slow resolver
// on the bridge (opened in netd's set) while the agent waits to reuse each query's flow. As
// shipped neither works, and Docker's and the resolver's own answers still arrive; without the
// ruleset's flow-ownership rules both do (the control), and forgedSourceRules alone, the
// narrower fix, stops the forgery only.
func TestAttackUpstreamFlowControl(t *testing.T) {
	h := harness.Setup(t)
	srv := h.StartServer("allowed.test")
	other := h.StartServer("other.test")
	zone := h.StartServerWith(harness.ServerOptions{Aliases: []string{"zone.test"}, Args: []string{"-dns-answer", srv.IP, "-dns-delay", "300ms"}})
	upProject(t, h, "flowctl", []string{"allowed.test"}, "")
	image := runSpec(t, h).Netd.Image
	for _, c := range []struct {
		v             nsVariant
		forged, reuse bool // whether the variant lets each attack through
	}{
		{nsVariant{name: "as shipped", ports: true}, false, false},
		// the controls: without the shipped flow-ownership rules both attacks work, and the
		// narrower forged-source rules alone stop only the forgery
		{nsVariant{name: "without the flow-ownership rules", ports: true, drop: flowOwnerComments}, true, true},
		{nsVariant{name: "with only the forged-source rules", ports: true, drop: flowOwnerComments, insert: forgedSourceRules}, false, true},
	} {
		t.Run(c.v.name, func(t *testing.T) {
			ns := startNamespace(t, h, image, c.v)
			h.MustDocker("exec", ns, "nft", "add", "element", "inet", policy.Table, policy.SetNetd, "{ "+zone.IP+" . 53 }")
			before := probes(t, inNamespace(t, h, ns, "990", false, `echo "docker $(claude net dns 127.0.0.11:53 allowed.test)"`+"\n"+
				`echo "zone $(claude net dns `+zone.IP+`:53 allowed.test)"`))
			for _, k := range []string{"docker", "zone"} {
				if p := before[k]; strings.Join(p.Answers, ",") != srv.IP {
					t.Fatalf("uid 990 asking %s for allowed.test: %+v, want %s", k, p, srv.IP)
				}
			}
			forged := checkForgery(t, h, ns, other.IP)
			reused := checkReuse(t, h, ns, zone, "reuse-"+strings.ReplaceAll(c.v.name, " ", "-")+".test")
			if forged != c.forged || reused != c.reuse {
				t.Errorf("forged answer taken: %v (want %v); netd's flow reused: %v (want %v)", forged, c.forged, reused, c.reuse)
			}
		})
	}
}

// checkForgery runs the forger against four of uid 990's queries to Docker's resolver and
// reports whether one took the forged answer.
func checkForgery(t *testing.T, h *harness.H, ns, forged string) bool {
	t.Helper()
	forger := strings.TrimSpace(inNamespace(t, h, ns, "1000", true, "claude net spoof-race x.unknown.test "+forged+" 14"))
	time.Sleep(time.Second)
	var script []string
	for i := range 4 {
		script = append(script, fmt.Sprintf(`echo "q%d $(claude net dns 127.0.0.11:53 x.unknown.test)"`, i))
	}
	got := probes(t, inNamespace(t, h, ns, "990", false, strings.Join(script, "\n")))
	h.MustDocker("wait", forger)
	defer func() { t.Logf("forger: %s; queries: %v", h.Docker("logs", forger).Stdout, got) }()
	var f forgeResult
	json.Unmarshal([]byte(strings.TrimSpace(h.Docker("logs", forger).Stdout)), &f)
	if len(f.SprayedPorts) == 0 || f.Sent+f.SendErrors == 0 {
		t.Errorf("the forger answered no query (%+v): the attack did not run", f)
	}
	taken := false
	for i := range 4 {
		if p := got[fmt.Sprintf("q%d", i)]; strings.Contains(strings.Join(p.Answers, ","), forged) {
			taken = true
		}
	}
	return taken
}

// checkReuse lets uid 990 ask the slow resolver five times while the agent waits to reuse each
// query's flow for name, and reports whether the resolver heard the agent.
func checkReuse(t *testing.T, h *harness.H, ns string, zone *harness.Server, name string) bool {
	t.Helper()
	reuser := strings.TrimSpace(inNamespace(t, h, ns, "1000", true, "claude net reuse-flow "+name+" 8"))
	time.Sleep(500 * time.Millisecond)
	inNamespace(t, h, ns, "990", false, `for i in 1 2 3 4 5; do claude net dns `+zone.IP+`:53 allowed.test > /dev/null; sleep 0.5; done`)
	h.MustDocker("wait", reuser)
	var p probeResult
	json.Unmarshal([]byte(strings.TrimSpace(h.Docker("logs", reuser).Stdout)), &p)
	heard := false
	for _, ev := range h.Events(zone.Container, "dns") {
		if ev.Str("name") == name {
			heard = true
		}
	}
	if heard != p.OK {
		t.Errorf("the reuser reports %+v, the resolver heard it: %v", p, heard)
	}
	return heard
}

// TestAttackEgressRmCutsHTTP: the agent holds long plain-HTTP exchanges through netd's HTTP
// proxy — a slow download and a slow upload from and to hold.test, a slow download from
// keep.test — and `abox egress rm hold.test:80` must cut both of hold.test's within seconds, as
// it cuts a TLS tunnel or a direct non-TLS flow, while keep.test's goes on: the proxy decided on
// the Host once, at the start of each, and conntrack would keep netd's upstream flow open.
func TestAttackEgressRmCutsHTTP(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	hold := h.StartServer("hold.test")
	h.StartServer("keep.test")
	upProject(t, h, "httprm", []string{"hold.test:80", "keep.test:80"}, "")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", bashLines(
		`claude net http-stream drip 127.0.0.1:80 hold.test 20 /workspace/held-down > /tmp/down.json &`,
		`claude net http-stream sink 127.0.0.1:80 hold.test 20 /workspace/held-up > /tmp/up.json &`,
		`claude net http-stream drip 127.0.0.1:80 keep.test 20 /workspace/held-keep > /tmp/keep.json &`,
		`wait`,
		`echo "down $(cat /tmp/down.json)"`,
		`echo "up $(cat /tmp/up.json)"`,
		`echo "keep $(cat /tmp/keep.json)"`))
	for _, m := range []string{"held-down", "held-up", "held-keep"} {
		waitWorkspaceFile(t, h.Workspace, m)
	}
	time.Sleep(time.Second)
	if res := h.Abox("egress", "rm", "hold.test:80"); !res.OK() {
		t.Fatalf("abox egress rm: %s", res)
	}
	removed := time.Now()
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	for _, n := range []string{"down", "up"} {
		if p := got[n]; p.OK || p.Rounds == 0 || p.BrokeAfter > 10 {
			t.Errorf("%s (hold.test) after egress rm: %+v, want it cut within a few seconds", n, p)
		}
	}
	if p := got["keep"]; !p.OK {
		t.Errorf("keep.test: %+v, want its download untouched", p)
	}
	late := 0
	for _, ev := range h.Events(hold.Container, "http-data") {
		if ts, err := time.Parse(time.RFC3339Nano, ev.Str("time")); err == nil && ts.After(removed.Add(3*time.Second)) {
			late++
		}
	}
	if late > 0 {
		t.Errorf("hold.test received %d lines of the upload more than 3 s after egress rm", late)
	}
}

// TestAttackPlantedUpstreamLoop: the agent sends one byte from every ephemeral port of 127.0.0.1
// to 127.0.0.11:53. The ruleset redirects each to netd's resolver and conntrack keeps the
// entry, so a later query of netd's own from one of those ports to Docker's resolver follows the
// agent's entry into netd's resolver, which asks again from another planted port, and so on:
// netd's upstream is redirected by the agent and every lookup multiplies. It must not be: each
// of the agent's lookups is one decision of netd's, answered for real.
func TestAttackPlantedUpstreamLoop(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("allowed.test")
	upProject(t, h, "plant", []string{"allowed.test"}, "")
	const lookups = 3
	script := []string{`claude net plant 12 > /tmp/plant.json &`, `sleep 3`,
		// A lookup whose own datagram the kernel refused (EPERM: its ephemeral port's tuple
		// clashes with an entry the planter made) never reached netd, so it is tried again from
		// another port, twice at most: the agent denying itself a lookup is no breach. A timeout
		// is not retried: that is what a loop through netd's resolver would look like.
		`again() { local r n=0; r=$("$@"); while [ $n -lt 2 ]; do case "$r" in *"write: operation not permitted"*) n=$((n+1)); r=$("$@");; *) break;; esac; done; echo "$r"; }`}
	for i := range lookups {
		script = append(script, fmt.Sprintf(`echo "q%d $(again claude net dns 127.0.0.1:53 allowed.test)"`, i))
	}
	_, got := attackRun(t, h, append(script, `wait`, `echo "plant $(cat /tmp/plant.json)"`)...)
	if p := got["plant"]; !p.OK || p.Sent < 20000 {
		t.Fatalf("the planter: %+v, want datagrams from most ephemeral ports", p)
	}
	for i := range lookups {
		if p := got[fmt.Sprintf("q%d", i)]; strings.Join(p.Answers, ",") != srv.IP {
			t.Errorf("q%d: %+v, want the real answer %s", i, p, srv.IP)
		}
	}
	decisions, timeouts := int64(0), int64(0)
	for _, r := range harvested[policy.DNSRecord](t, h, policy.DNSLog) {
		if r.Name == "allowed.test." {
			decisions += r.Decisions()
			if strings.Contains(r.Reason, "i/o timeout") {
				timeouts += r.Decisions()
			}
		}
	}
	if decisions > 2*lookups {
		t.Errorf("netd made %d decisions (%d of them upstream timeouts) for %d lookups of allowed.test: its own upstream queries came back to it",
			decisions, timeouts, lookups)
	}
}

// rebindCase is a name of the rebinding zone, the address it answers, and the port the agent
// then tries directly (0: none).
type rebindCase struct {
	name, addr string
	port       int
	refused    bool // netd must never open or dial the address, whatever the name
}

// TestAttackDNSRebinding: an allowed wildcard whose zone the attacker controls (the host's
// resolver here) answers names with addresses the sandbox must never reach through a name: the
// gateway, the sandbox's own address, loopback, Docker's resolver, link-local (cloud metadata)
// — netd refuses each, for the TLS proxy's dial and on the name's non-TLS ports — and the host
// (its bridge address, where the test listens) and another container of the sandbox's network,
// which netd once reached: a rebinding zone turned an allowed name into a way onto the
// sandbox's own network and into the host.
func TestAttackDNSRebinding(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("real.test")
	other := h.StartServer("other.test")
	zone, env := zoneEnv(t, h, srv.IP)
	host := bridgeGateway(h)
	ln, err := net.Listen("tcp4", host+":0")
	if err != nil {
		t.Fatalf("listening on the host's bridge address: %v", err)
	}
	defer ln.Close()
	hostPort := ln.Addr().(*net.TCPAddr).Port
	var hostConns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hostConns.Add(1)
			c.Close()
		}
	}()
	h.WriteConfig(h.DefaultConfig())
	mcpCustomServers(t, h)
	upWith(t, h, env, "rebind", []string{"*.rebind.test", "*.rebind.test:2222", fmt.Sprintf("*.rebind.test:%d", hostPort),
		"*.rebind.test:8811"}, "servers: [echo]\n")
	gw := h.IP(gateway.Name(h.Profile))
	cases := []rebindCase{
		{"gw", gw, 8811, true}, {"own", "", 2222, true}, {"lo", "127.0.0.1", 2222, true},
		{"dns", "127.0.0.11", 0, true}, {"meta", "169.254.169.254", 0, true},
		{"host", host, hostPort, true}, {"peer", other.IP, 2222, true},
	}
	script := []string{`while [ ! -e /workspace/go ]; do sleep 0.2; done`}
	for _, c := range cases {
		n := c.name + ".rebind.test"
		script = append(script,
			fmt.Sprintf(`a=$(claude net dns 127.0.0.1:53 %s | sed -n 's/.*"answers":\["\([0-9.]*\)".*/\1/p'); echo "dns-%s {\"ok\":true,\"reply\":\"$a\"}"`, n, c.name),
			fmt.Sprintf(`echo "tls-%s $(claude net tls 127.0.0.1:443 %s)"`, c.name, n))
		if c.port != 0 {
			script = append(script, fmt.Sprintf(`echo "direct-%s $(claude net tcp $a:%d rebound)"`, c.name, c.port))
		}
	}
	_, wait := startAbox(t, h, h.Workspace, env, "run", bashLines(script...))
	netd := ""
	if !pollUntil(time.Minute, func() bool {
		netd = strings.TrimSpace(h.Docker("ps", "--filter", "name=abox-netd-rebind", "--format", "{{.Names}}").Stdout)
		return netd != ""
	}) {
		t.Fatal("netd never started")
	}
	own := h.IP(netd)
	names := map[string]string{}
	for i, c := range cases {
		if c.name == "own" {
			cases[i].addr = own
		}
		names[c.name+".rebind.test"] = cases[i].addr
	}
	setZoneMap(t, h, zone, names)
	workspaceFile(t, h.Workspace, "go", "")
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	conns := map[string][]policy.ConnRecord{}
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		conns[strings.TrimSuffix(r.Name, ".rebind.test")] = append(conns[strings.TrimSuffix(r.Name, ".rebind.test")], r)
	}
	_, subnet, err := net.ParseCIDR(strings.TrimSpace(h.MustDocker("network", "inspect", "-f", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", h.Network)))
	if err != nil {
		t.Fatalf("the test network's subnet: %v", err)
	}
	local := func(a string) bool { // the sandbox's network: the public zone's answers never point there
		ip := net.ParseIP(a)
		return ip != nil && subnet.Contains(ip)
	}
	for _, c := range cases {
		want := c.addr
		if local(c.addr) {
			want = ""
		}
		if p := got["dns-"+c.name]; p.Reply != want {
			t.Errorf("%s.rebind.test resolved to %q, want %q (the zone answers %s)", c.name, p.Reply, want, c.addr)
			continue
		}
		if p := got["tls-"+c.name]; p.OK {
			t.Errorf("tls to %s.rebind.test (%s) got through: %+v", c.name, c.addr, p)
		}
		for _, r := range conns[c.name] {
			// refused after resolving, or, for the sandbox's network, resolved to nothing
			if r.Upstream != "" || !strings.Contains(r.Reason, "no address netd may connect to") && !strings.Contains(r.Reason, "no IPv4 address") {
				t.Errorf("netd's TLS proxy for %s.rebind.test (%s): %+v, want it to refuse the address without dialing", c.name, c.addr, r)
			}
		}
		if p, ok := got["direct-"+c.name]; ok && p.OK {
			t.Errorf("the agent reached %s.rebind.test's address %s:%d directly: %+v", c.name, c.addr, c.port, p)
		}
	}
	if n := hostConns.Load(); n != 0 {
		t.Errorf("the host's bridge address saw %d connections from the sandbox", n)
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("another container of the sandbox's network was reached through a rebound name: %v", ev)
	}
}

// TestAttackReloadRace: the agent uses rm.test as fast as it can — DNS, TLS through netd, and
// its non-TLS port directly — while `abox egress rm` removes first its TLS entry, then its
// non-TLS one. After each reload netd logged, nothing it removed is allowed again: no allowed
// decision for rm.test later than a second after it, no new connection at rm.test; every
// later attempt is logged as denied; keep.test works throughout.
func TestAttackReloadRace(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	rm := h.StartServer("rm.test")
	h.StartServer("keep.test")
	upProject(t, h, "reload", []string{"rm.test", "rm.test:2222", "keep.test"}, "")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", bashLines(
		`touch /workspace/looping`,
		`round=0`,
		`while [ ! -e /workspace/stop ] && [ $SECONDS -lt 150 ]; do`,
		`  claude net dns 127.0.0.1:53 rm.test >/dev/null`,
		`  claude net tls 127.0.0.1:443 rm.test >/dev/null`,
		`  claude net tcp `+rm.IP+`:2222 x >/dev/null`,
		`  claude net tls 127.0.0.1:443 keep.test >/dev/null && echo keep-ok`,
		`  round=$((round+1)); echo $round > /workspace/rounds`,
		`done | sort | uniq -c`))
	waitWorkspaceFile(t, h.Workspace, "looping")
	// Each step waits for rounds of the agent's own, not for a time: on a loaded machine a
	// round can take seconds, and the race must run after each reload's grace.
	waitRounds(t, h.Workspace, 3)
	for _, e := range []string{"rm.test", "rm.test:2222"} {
		if res := h.Abox("egress", "rm", e); !res.OK() {
			t.Fatalf("abox egress rm %s: %s", e, res)
		}
		time.Sleep(time.Second + 100*time.Millisecond) // the grace below
		waitRounds(t, h.Workspace, 3)
	}
	workspaceFile(t, h.Workspace, "stop", "")
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	if !strings.Contains(agentOutput(res.Stdout), "keep-ok") {
		t.Errorf("keep.test never answered during the race: %s", agentOutput(res.Stdout))
	}
	var reloads []time.Time
	for _, ev := range harvested[policy.Event](t, h, policy.EventLog) {
		if ev.Event == policy.EventReload {
			reloads = append(reloads, mustTime(t, ev.TS))
		}
	}
	if len(reloads) != 2 {
		t.Fatalf("netd logged %d reloads, want 2", len(reloads))
	}
	const grace = time.Second
	tlsCut, portCut := reloads[0].Add(grace), reloads[1].Add(grace)
	before, after := 0, 0
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Name != "rm.test" {
			continue
		}
		switch ts := mustTime(t, r.TS); {
		case ts.Before(reloads[0]) && r.Verdict == policy.Allowed:
			before++
		case ts.After(tlsCut) && r.Verdict == policy.Allowed:
			t.Errorf("a TLS connection to rm.test allowed %v after its removal: %+v", ts.Sub(reloads[0]), r)
		case ts.After(tlsCut) && r.Verdict == policy.Denied:
			after++
		}
	}
	for _, r := range harvested[policy.DNSRecord](t, h, policy.DNSLog) {
		if r.Name == "rm.test." && r.Verdict == policy.Allowed && mustTime(t, r.TS).After(portCut) {
			t.Errorf("rm.test resolved %v after its last entry was removed: %+v", mustTime(t, r.TS).Sub(reloads[1]), r)
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("%d TLS connections to rm.test allowed before its removal, %d denied after: want both (the race did not run)", before, after)
	}
	for _, ev := range h.Traffic(rm.Container) {
		ts := mustTime(t, ev.Str("time"))
		switch ev.Msg() {
		case "tls-hello":
			if ts.After(tlsCut) {
				t.Errorf("rm.test got a TLS connection %v after its removal: %v", ts.Sub(reloads[0]), ev)
			}
		case "tcp-connect":
			if ts.After(portCut) {
				t.Errorf("rm.test got a connection on 2222 %v after its removal: %v", ts.Sub(reloads[1]), ev)
			}
		}
	}
}

// waitRounds waits until the agent of TestAttackReloadRace has finished n more rounds of its
// loop (it writes their count to /workspace/rounds).
func waitRounds(t *testing.T, ws string, n int) {
	t.Helper()
	count := func() int {
		k, _ := strconv.Atoi(strings.TrimSpace(readWorkspace(ws, "rounds")))
		return k
	}
	want := count() + n
	if !pollUntil(90*time.Second, func() bool { return count() >= want }) {
		t.Fatalf("the agent finished %d rounds, want %d", count(), want)
	}
}

// mustTime parses an RFC 3339 timestamp of a log.
func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return ts
}

// minuteSecs is how long TestAttackSharedNamespaceMinute's agent attacks.
const minuteSecs = 50

// TestAttackSharedNamespaceMinute: a hostile agent that, for most of a minute, runs every attack
// on the shared namespace at once — the conntrack spray from Docker's resolver address, a
// listener on the gateway's port, conntrack entries planted on every ephemeral port, forged
// answers to netd's upstream queries, netd's finished queries reused, binds of privileged and
// netd's ports, datagrams forged from netd's ports — while it uses allowed names (DNS, TLS, a non-TLS port, MCP) and tries
// forbidden ones (DNS, TLS, HTTP, a direct connection, an allowed name aimed at a forbidden
// address). No byte reaches the forbidden host, the listener never sees the token, every allowed
// use works, every forbidden attempt that reaches netd is in its logs as denied, and its
// counters show the ruleset's refusals.
func TestAttackSharedNamespaceMinute(t *testing.T) {
	h := harness.Setup(t)
	srv := h.StartServer("allowed.test")
	other := h.StartServer("other.test")
	zone, env := zoneEnv(t, h, srv.IP)
	h.WriteConfig(h.DefaultConfig())
	mcpCustomServers(t, h)
	upWith(t, h, env, "minute", []string{"allowed.test", "allowed.test:2222", "*.wild.test"}, "servers: [echo]\n")
	port := gatewayPort(t, h)
	o := other.IP
	out, got := runWith(t, h, env,
		fmt.Sprintf(`end=$((SECONDS+%d))`, minuteSecs),
		fmt.Sprintf(`claude net spoof-dns %s %d > /tmp/spoof.json &`, o, minuteSecs),
		fmt.Sprintf(`claude net capture 0.0.0.0:%d %d > /tmp/cap.json &`, port, minuteSecs+2),
		fmt.Sprintf(`claude net plant %d > /tmp/plant.json &`, minuteSecs-5),
		fmt.Sprintf(`claude net reuse-flow deny-reuse.test %d > /tmp/reuse.json &`, minuteSecs),
		`( k=0; while [ $SECONDS -lt $end ]; do k=$((k+1))`,
		`    claude net spoof-race f$k.wild.test `+o+` 2 > /dev/null & sleep 0.3`,
		`    echo "f-dns-$k $(claude net dns 127.0.0.1:53 f$k.wild.test)"; wait`,
		`    claude net spoof-race t$k.wild.test `+o+` 2 > /dev/null & sleep 0.3`,
		`    echo "f-tls-$k $(claude net tls 127.0.0.1:443 t$k.wild.test)"; wait`,
		`  done > /tmp/forge.out ) &`,
		// A lookup or connection that timed out, or whose datagram its own conntrack entries
		// clashed with (EPERM), is tried once more: the planter's bursts fill netd's resolver's
		// socket buffer and hold the reply tuples of the agent's own ports, so the agent can
		// deny itself a lookup, which is no breach. Twice at most (a new ephemeral port can clash
		// again); every retry counts against the bound below.
		`again() { local r n=0; r=$("$@"); while [ $n -lt 2 ]; do case "$r" in *"i/o timeout"*|*"operation not permitted"*) echo x >> /tmp/retries; n=$((n+1)); r=$("$@");; *) break;; esac; done; echo "$r"; }`,
		`i=0`,
		`while [ $SECONDS -lt $end ]; do i=$((i+1))`,
		`  echo "a-dns-$i $(again claude net dns 127.0.0.1:53 allowed.test)"`,
		`  echo "a-tls-$i $(again claude net tls 127.0.0.1:443 allowed.test)"`,
		`  echo "a-tcp-$i $(again claude net tcp allowed.test:2222 hi-$i)"`,
		`  echo "a-aimed-$i $(again claude net tls `+o+`:443 allowed.test)"`,
		`  r=$(claude mcp-call call echo "{\"text\":\"minute-$i\"}")`,
		`  case "$r" in *minute-$i*) echo "a-mcp-$i {\"ok\":true}";; *) echo "a-mcp-$i {\"ok\":false}";; esac`,
		`  echo "d-dns-$i $(again claude net dns 127.0.0.1:53 deny-$i.test)"`,
		`  echo "d-tls-$i $(claude net tls 127.0.0.1:443 deny-$i.test)"`,
		`  echo "d-http-$i $(claude net http 127.0.0.1:80 deny-$i.test)"`,
		`  echo "d-tcp-$i $(claude net tcp `+o+`:2222 hi)"`,
		`  echo "d-bind-$i $(claude net bind 127.0.0.11:53 udp)"`,
		fmt.Sprintf(`  echo "d-netdport-$i $(claude net pktinfo-send 127.0.0.2:%d 127.0.0.1 127.0.0.1:9)"`, policy.DNSPort),
		`done`,
		`wait`,
		`echo "spoof $(cat /tmp/spoof.json)"`,
		`echo "capture $(cat /tmp/cap.json)"`,
		`echo "plant $(cat /tmp/plant.json)"`,
		`echo "reuse $(cat /tmp/reuse.json)"`,
		`cat /tmp/forge.out`,
		`echo "retries {\"ok\":true,\"sent\":$(cat /tmp/retries 2>/dev/null | wc -l)}"`)
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("the forbidden host was reached: %d events, first %v", len(ev), ev[0])
	}
	if p := got["capture"]; p.Conns != 0 || p.Authorization {
		t.Errorf("the listener on the gateway's port got %+v", p)
	}
	checkSpoofHeld(t, got["spoof"])
	if p := got["plant"]; !p.OK {
		t.Errorf("the planter did not run: %+v", p)
	}
	if p := got["reuse"]; p.OK {
		t.Errorf("the agent asked a resolver along netd's flows: %+v", p)
	}
	var heard []harness.Event
	for _, ev := range h.Events(zone.Container, "dns") {
		if strings.HasPrefix(ev.Str("name"), "deny-") {
			heard = append(heard, ev)
		}
	}
	if len(heard) > 0 {
		t.Errorf("the host's resolver heard %d queries of names that are not allowed, first %v", len(heard), heard[0])
	}
	rounds, forged := minuteRounds(t, got, srv.IP, o)
	denied := minuteDenials(t, h, rounds)
	retries := got["retries"].Sent
	t.Logf("%d rounds, %d forging rounds, %d allowed uses tried again after a timeout; netd logged as denied: %v", rounds, forged, retries, denied)
	if retries*4 > int64(rounds) {
		t.Errorf("%d allowed uses timed out once in %d rounds: more than the agent's own floods explain", retries, rounds)
	}
	for _, rule := range []string{"docker dns as a source refused", "netd ports as a source refused", "refused tcp"} {
		if n := lastCounter(t, h, rule); n == 0 {
			t.Errorf("netd's counters show nothing refused by %q", rule)
		}
	}
	if t.Failed() {
		t.Logf("agent output:\n%s", out)
	}
}

// minuteRounds checks each round of the minute's probes: the allowed uses worked, the forbidden
// ones were refused, no forged answer was taken. It returns how many rounds and forging rounds
// ran.
func minuteRounds(t *testing.T, got map[string]probeResult, real, forbidden string) (rounds, forged int) {
	t.Helper()
	for ; ; rounds++ {
		i := rounds + 1
		if _, ok := got[fmt.Sprintf("d-netdport-%d", i)]; !ok {
			break
		}
		probesOK(t, got, fmt.Sprintf("a-dns-%d", i), fmt.Sprintf("a-tls-%d", i), fmt.Sprintf("a-tcp-%d", i),
			fmt.Sprintf("a-aimed-%d", i), fmt.Sprintf("a-mcp-%d", i))
		if p := got[fmt.Sprintf("a-aimed-%d", i)]; !strings.Contains(p.Reply, "name=allowed.test") {
			t.Errorf("a-aimed-%d: %+v, want the allowed host whatever address the agent aimed at", i, p)
		}
		probesRefused(t, got, fmt.Sprintf("d-tls-%d", i), fmt.Sprintf("d-http-%d", i), fmt.Sprintf("d-tcp-%d", i),
			fmt.Sprintf("d-bind-%d", i), fmt.Sprintf("d-netdport-%d", i))
		probesRCode(t, got, "NXDOMAIN", fmt.Sprintf("d-dns-%d", i))
	}
	for ; ; forged++ {
		k := forged + 1
		d, ok := got[fmt.Sprintf("f-dns-%d", k)]
		if !ok {
			break
		}
		if strings.Join(d.Answers, ",") == forbidden {
			t.Errorf("f-dns-%d: netd answered with the forged address %s", k, forbidden)
		}
		if p := got[fmt.Sprintf("f-tls-%d", k)]; strings.Contains(p.Reply, "name=other.test") {
			t.Errorf("f-tls-%d: netd's TLS proxy connected to the forged address: %+v", k, p)
		}
	}
	if rounds < 5 || forged < 3 {
		t.Errorf("%d rounds and %d forging rounds in %d s: the agent hardly ran", rounds, forged, minuteSecs)
	}
	return rounds, forged
}

// minuteDenials checks that netd logged each forbidden attempt of every round as denied — the
// lookup, the TLS connection and the HTTP request of deny-<i>.test — and returns the counts.
func minuteDenials(t *testing.T, h *harness.H, rounds int) map[string]int {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range harvested[policy.DNSRecord](t, h, policy.DNSLog) {
		if r.Verdict == policy.Denied {
			seen["dns "+strings.TrimSuffix(r.Name, ".")] = true
		}
	}
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if r.Verdict == policy.Denied {
			seen[r.Kind+" "+r.Name] = true
		}
	}
	counts := map[string]int{}
	for i := 1; i <= rounds; i++ {
		for _, kind := range []string{"dns", policy.KindTLS, policy.KindHTTP} {
			if key := fmt.Sprintf("%s deny-%d.test", kind, i); seen[key] {
				counts[kind]++
			} else {
				t.Errorf("netd's logs have no denial for %s", key)
			}
		}
	}
	return counts
}

// TestAttackNetdSetExhaustion: the agent opens TLS connections to hundreds of names under an
// allowed wildcard whose zone answers 32 addresses each (none of which answers), so that netd
// asks for every address to be opened in its own set, the one its uid connects through. The
// set's budget must not let that deny service: a TLS connection to another allowed name, not
// used before, still works afterwards.
func TestAttackNetdSetExhaustion(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	zone := h.StartServerWith(harness.ServerOptions{Aliases: []string{"zone.test"}, Args: []string{"-dns-spread", "32", "-dns-ttl", "600"}})
	h.StartServer("ok.test")
	resolv := filepath.Join(h.Dir, "resolv.conf")
	writeFile(t, resolv, "nameserver "+zone.IP+"\n")
	env := append(h.Env(), "ABOX_RESOLV_CONF="+resolv)
	upWith(t, h, env, "netdset", []string{"*.flood.test", "ok.test"}, "")
	const names = 300 // × 32 addresses > the set's budget of 8192
	_, got := runWith(t, h, env,
		fmt.Sprintf(`seq %d | xargs -P 64 -I{} sh -c 'claude net tls 127.0.0.1:443 n{}.flood.test >/dev/null 2>&1; true'`, names),
		`echo "after $(claude net tls 127.0.0.1:443 ok.test)"`)
	probesOK(t, got, "after")
	budget := 0
	for _, r := range harvested[policy.ConnRecord](t, h, policy.ConnLog) {
		if strings.HasSuffix(r.Name, ".flood.test") && strings.Contains(r.Reason, "budget") {
			budget++
		}
	}
	t.Logf("%d TLS connections to flood names refused for the set's budget", budget)
}

// TestAttackMCPForwarderSteering: the agent listens on 127.0.0.1:9000 and on the gateway's port
// on every address, and sends netd's MCP forwarder raw requests that try to name another
// upstream: an absolute-form URI and a Host naming its listener, CONNECT, a request smuggled
// behind a Content-Length and Transfer-Encoding conflict, and an h2c upgrade. netd dials only
// the gateway's address abox gave it, so the listeners see nothing and the token goes nowhere
// else: the two requests naming the listener are answered by the gateway.
func TestAttackMCPForwarderSteering(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	mcpCustomServers(t, h)
	h.WriteManifest("version: 1\nproject: steer\nprofile: " + h.Profile + "\nservers: [echo]\n")
	mustAbox(t, h, "up", "--yes")
	port := gatewayPort(t, h)
	const body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	head := `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n`
	reqs := map[string]string{
		"absolute": `POST http://127.0.0.1:9000/mcp HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n` + head + fmt.Sprintf(`Content-Length: %d\r\n\r\n%s`, len(body), body),
		"host":     `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n` + head + fmt.Sprintf(`Content-Length: %d\r\n\r\n%s`, len(body), body),
		"connect":  `CONNECT 127.0.0.1:9000 HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n\r\n`,
		"smuggle": `POST /mcp HTTP/1.1\r\nHost: x\r\n` + head + `Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n` +
			`POST http://127.0.0.1:9000/mcp HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n` + head + fmt.Sprintf(`Content-Length: %d\r\n\r\n%s`, len(body), body),
		"h2c": `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:9000\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`,
	}
	script := []string{
		`claude net capture 127.0.0.1:9000 12 > /tmp/cap1.json &`,
		fmt.Sprintf(`claude net capture 0.0.0.0:%d 12 > /tmp/cap2.json &`, port),
		`sleep 1`,
	}
	for name, raw := range reqs {
		script = append(script, fmt.Sprintf(`r=$( (exec 3<>/dev/tcp/127.0.0.1/%d; printf '%s' >&3; timeout 3 cat <&3) | head -1 | tr -d '\r"\\'); echo "%s {\"ok\":true,\"reply\":\"$r\"}"`,
			policy.MCPPort, raw, name))
	}
	script = append(script, `wait`, `echo "cap1 $(cat /tmp/cap1.json)"`, `echo "cap2 $(cat /tmp/cap2.json)"`)
	_, got := attackRun(t, h, script...)
	for _, c := range []string{"cap1", "cap2"} {
		if p := got[c]; p.Conns != 0 || p.Authorization {
			t.Errorf("%s: the agent's listener got %+v", c, p)
		}
	}
	for name := range reqs {
		if p, ok := got[name]; !ok || p.Reply == "" {
			t.Errorf("%s: no answer from netd's forwarder: %+v", name, p)
		}
	}
	for _, name := range []string{"absolute", "host"} {
		if p := got[name]; !strings.Contains(p.Reply, " 200 ") {
			t.Errorf("%s: %q, want the gateway's 200", name, p.Reply)
		}
	}
	if p := got["connect"]; !strings.Contains(p.Reply, " 404 ") {
		t.Errorf("CONNECT: %q, want 404 (there is only /mcp)", p.Reply)
	}
	for name := range reqs {
		t.Logf("%s: %s", name, got[name].Reply)
	}
}

// TestAttackForgedSourceNewFlows: what IP_PKTINFO lets the agent forge when no flow of netd's
// is waiting for it. A datagram from Docker's resolver address or from one of netd's ports (the
// socket bound to another loopback address on that port) is refused by the ruleset's source
// rules, and a foreign source cannot be routed at all; without the source rules both forgeries
// are sent. Nothing in a sandbox's namespace listens on an abstract unix socket (which the
// namespace would share with the agent).
func TestAttackForgedSourceNewFlows(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	other := h.StartServer("other.test")
	upProject(t, h, "forgenew", nil, "")
	image := runSpec(t, h).Netd.Image
	script := strings.Join([]string{
		`echo "from-docker-dns $(claude net pktinfo-send 127.0.0.20:5300 127.0.0.11 127.0.0.1:9)"`,
		fmt.Sprintf(`echo "from-netd-port $(claude net pktinfo-send 127.0.0.20:%d 127.0.0.1 127.0.0.1:9)"`, policy.DNSPort),
		`echo "from-foreign $(claude net pktinfo-send 127.0.0.20:5301 ` + other.IP + ` 127.0.0.1:9)"`,
		`echo "from-loopback $(claude net pktinfo-send 127.0.0.20:5302 127.0.0.1 127.0.0.1:9)"`,
	}, "\n")
	// In a real sandbox, beside netd and Docker's resolver: no abstract unix socket at all.
	_, got := attackRun(t, h, `n=$(awk 'NR > 1 && $8 ~ /^@/' /proc/net/unix | wc -l); u=$(awk 'NR > 1' /proc/net/unix | wc -l)`,
		`echo "abstract {\"ok\":$([ $n -gt 0 ] && echo true || echo false),\"reply\":\"$n of $u\"}"`)
	if p := got["abstract"]; p.OK || p.Reply == "" {
		t.Errorf("abstract unix sockets in the namespace: %+v", p)
	}
	for _, v := range []nsVariant{
		{name: "as shipped", ports: true},
		{name: "without the source rules", ports: true, drop: []string{"docker dns as a source refused", "netd ports as a source refused"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			ns := startNamespace(t, h, image, v)
			got := probes(t, inNamespace(t, h, ns, "1000", false, script))
			probesOK(t, got, "from-loopback")
			probesRefused(t, got, "from-foreign")
			if v.drop == nil {
				probesRefused(t, got, "from-docker-dns", "from-netd-port")
				return
			}
			probesOK(t, got, "from-docker-dns", "from-netd-port")
		})
	}
}

// TestAttackReusedUpstreamFlow: once one of netd's DNS queries is answered and its socket closed,
// conntrack keeps the flow for half a minute or more. The agent binds the same address and port
// (its local port is in /proc/net/udp) and asks the same server — Docker's resolver, or the
// host's, which only netd's uid may reach — for a name that is not allowed: the datagram is
// "established" for the ruleset. It must not get through: no answer comes back, and the host's
// resolver never hears the name.
func TestAttackReusedUpstreamFlow(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("real.test")
	h.StartServer("other.test")
	zone, env := zoneEnv(t, h, srv.IP)
	upWith(t, h, env, "reuse", []string{"*.wild.test"}, "")
	_, got := runWith(t, h, env,
		`claude net reuse-flow other.test 12 > /tmp/reuse.json &`,
		`sleep 0.5`,
		`for i in 1 2 3 4 5; do claude net dns 127.0.0.1:53 w$i.wild.test > /dev/null; sleep 1; done`,
		`wait`,
		`echo "reuse $(cat /tmp/reuse.json)"`)
	p := got["reuse"]
	if p.OK || len(p.Answers) != 0 {
		t.Errorf("the agent asked a resolver only netd may reach along netd's own flow: %+v", p)
	}
	for _, ev := range h.Events(zone.Container, "dns") {
		if ev.Str("name") == "other.test" {
			t.Errorf("the host's resolver was asked a name that is not allowed: %v", ev)
		}
	}
}
