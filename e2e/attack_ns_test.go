//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
	"github.com/aboxhq/abox/internal/policy"
	"github.com/aboxhq/abox/internal/render"
	"github.com/aboxhq/abox/internal/telemetry"
)

// Attacks on what the agent shares with netd: its network namespace. The agent (uid 1000, no
// capabilities) sees netd's loopback, port space and conntrack table, so these tests aim at
// netd's own traffic — its upstream DNS queries, the gateway connection and its token, the
// addresses it opens in the ruleset's sets, the flows it already let through — rather than at
// the allowlist. Each attack is also run where the control is absent, to show that the test
// can fail.

// aliases returns n names under zone: a1.zone … an.zone.
func aliases(zone string, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("a%d.%s", i, zone))
	}
	return out
}

// TestAttackUpstreamDNSSpoof: the agent binds Docker's resolver address (127.0.0.11:53, and a
// port of its own there) and sprays 127.0.0.1's ephemeral ports from it, every second, to plant
// the conntrack entries that once made netd's upstream queries its own; meanwhile it asks netd
// for allowed names, over DNS, TLS and an allowed non-TLS port, each name fresh, with every
// spoofed answer naming a test host that is on no allowlist. The bind of port 53 is refused by
// the namespace's port setting, every datagram from 127.0.0.11 by the ruleset (counted), no
// query of netd's reaches the agent, every answer is the real one, and the forbidden host sees
// nothing. TestAttackNamespaceControl runs the same attack without the controls.
func TestAttackUpstreamDNSSpoof(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	names := aliases("allowed.test", 6)
	srv := h.StartServer(names...)
	other := h.StartServer("other.test")
	upProject(t, h, "spoof", []string{"*.allowed.test", "*.allowed.test:2222"}, "")
	script := []string{`claude net spoof-dns ` + other.IP + ` 25 > /tmp/spoof.json &`, `sleep 3`}
	for i, n := range names {
		script = append(script,
			fmt.Sprintf(`echo "dns-%d $(claude net dns 127.0.0.1:53 %s)"`, i, n),
			fmt.Sprintf(`echo "tls-%d $(claude net tls 127.0.0.1:443 %s)"`, i, n),
			fmt.Sprintf(`echo "tcp-%d $(claude net tcp %s:2222 hello)"`, i, n))
	}
	script = append(script, `wait`, `echo "spoof $(cat /tmp/spoof.json)"`)
	_, got := attackRun(t, h, script...)
	checkSpoofHeld(t, got["spoof"])
	for i := range names {
		if p := got[fmt.Sprintf("dns-%d", i)]; !p.OK || strings.Join(p.Answers, ",") != srv.IP {
			t.Errorf("dns-%d: %+v, want the real answer %s", i, p, srv.IP)
		}
		probesOK(t, got, fmt.Sprintf("tls-%d", i))
		if p := got[fmt.Sprintf("tcp-%d", i)]; !p.OK || !strings.Contains(p.Reply, "testsrv "+srv.Name) {
			t.Errorf("tcp-%d: %+v, want the allowed server's banner", i, p)
		}
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("the host on no allowlist was reached: %v", ev)
	}
	if n := lastCounter(t, h, "docker dns as a source refused"); n == 0 {
		t.Error(`netd's counters show no datagram from 127.0.0.11 refused ("docker dns as a source refused")`)
	}
}

// checkSpoofHeld: the spoofer could not bind port 53, every datagram it sent from Docker's
// resolver address was refused, and no query reached it.
func checkSpoofHeld(t *testing.T, p probeResult) {
	t.Helper()
	if p.OK || len(p.Queries) != 0 {
		t.Errorf("the spoofer answered netd's queries: %+v", p)
	}
	if !strings.Contains(strings.Join(p.BindRefused, " "), "127.0.0.11:53") {
		t.Errorf("the spoofer bound 127.0.0.11:53: %+v", p)
	}
	if len(p.Bound) == 0 || p.Sent != 0 || p.SendErrors == 0 || !strings.Contains(p.FirstSendError, "operation not permitted") {
		t.Errorf("spoofer %+v: want it bound to a high port of 127.0.0.11 and every datagram refused", p)
	}
}

// lastCounter returns the packets of a rule of netd's counters, harvested from the last run.
func lastCounter(t *testing.T, h *harness.H, comment string) int64 {
	t.Helper()
	runs := runRecords(t, h)
	hv, err := telemetry.ReadHarvest(filepath.Join(runs[len(runs)-1]["run_dir"].(string), "netd"))
	if err != nil || hv.Counters == nil {
		t.Fatalf("harvest: %v (counters %v)", err, hv)
	}
	for _, r := range hv.Counters.Rules {
		if r.Comment == comment {
			return r.Packets
		}
	}
	t.Fatalf("netd's counters have no rule %q", comment)
	return 0
}

// nsVariant is a network namespace made like netd's, with some of its controls left out.
type nsVariant struct {
	name   string
	drop   []string // comments of rules removed from the shipped ruleset
	ports  bool     // ports below 1024 privileged, as netd's container sets it
	insert []string // rules added before the shipped one commented "established"
}

// TestAttackNamespaceControl: the upstream-DNS attack against namespaces made like netd's —
// netd's own image loads the ruleset, a uid-990 process asks Docker's resolver what netd's
// resolver asks it — with each control removed in turn. With neither the port setting nor the
// ruleset's source rules the attacker answers the queries, which is the attack that once voided
// the allowlist and would have named the gateway; with either alone, and as shipped, it gets
// nothing.
func TestAttackNamespaceControl(t *testing.T) {
	h := harness.Setup(t)
	names := aliases("allowed.test", 8)
	srv := h.StartServer(names...)
	other := h.StartServer("other.test")
	upProject(t, h, "nsctl", []string{"*.allowed.test"}, "")
	image := runSpec(t, h).Netd.Image
	sourceRules := []string{"docker dns as a source refused", "netd ports as a source refused"}
	for _, v := range []nsVariant{
		{name: "as shipped", ports: true},
		{name: "ruleset only", drop: nil, ports: false},
		{name: "port setting only", drop: sourceRules, ports: true},
		{name: "neither", drop: sourceRules, ports: false},
	} {
		t.Run(v.name, func(t *testing.T) {
			ns := startNamespace(t, h, image, v)
			inNamespace(t, h, ns, "1000", true, "claude net spoof-dns "+other.IP+" 20")
			time.Sleep(3 * time.Second) // the spray has covered the ephemeral ports
			var script []string
			for i, n := range names {
				script = append(script, fmt.Sprintf(`echo "q%d $(claude net dns 127.0.0.11:53 %s)"; sleep 0.3`, i, n))
			}
			got := probes(t, inNamespace(t, h, ns, "990", false, strings.Join(script, "\n")))
			spoofed, real := 0, 0
			for i := range names {
				switch strings.Join(got[fmt.Sprintf("q%d", i)].Answers, ",") {
				case other.IP:
					spoofed++
				case srv.IP:
					real++
				}
			}
			if v.name == "neither" {
				if spoofed == 0 {
					t.Errorf("no query of uid 990 was answered by the attacker (%v): the control proves nothing", got)
				}
				return
			}
			if spoofed != 0 || real != len(names) {
				t.Errorf("%d of %d queries answered by the attacker, %d real: %v", spoofed, len(names), real, got)
			}
		})
	}
}

// startNamespace starts a namespace owner from netd's image that loads the shipped ruleset less
// v.drop and with v.insert, with the port setting when v.ports, and returns its name.
func startNamespace(t *testing.T, h *harness.H, image string, v nsVariant) string {
	t.Helper()
	rs := string(policy.Ruleset(policy.NetdUID))
	for _, c := range v.drop {
		var kept []string
		for _, l := range strings.Split(rs, "\n") {
			if !strings.HasSuffix(l, `comment "`+c+`"`) {
				kept = append(kept, l)
			}
		}
		if len(kept) == len(strings.Split(rs, "\n")) {
			t.Fatalf("the ruleset has no rule %q to drop", c)
		}
		rs = strings.Join(kept, "\n")
	}
	if len(v.insert) > 0 {
		const at = "\t\tct state established,related counter accept"
		if !strings.Contains(rs, at) {
			t.Fatal("the ruleset has no established rule to insert before")
		}
		rs = strings.Replace(rs, at, "\t\t"+strings.Join(v.insert, "\n\t\t")+"\n"+at, 1)
	}
	slug := strings.ReplaceAll(v.name, " ", "-")
	file := filepath.Join(h.Dir, "ns-"+slug+".nft")
	writeFile(t, file, rs)
	name := "abox-e2e-ns-" + h.ID + "-" + slug
	args := []string{"run", "-d", "--name", name, "--network", h.Network, "--init", "--cap-drop", "ALL", "--cap-add", "NET_ADMIN"}
	for k, val := range h.Labels() {
		args = append(args, "--label", k+"="+val)
	}
	if v.ports {
		args = append(args, "--sysctl", fmt.Sprintf("%s=%d", policy.UnprivilegedPortSysctl, policy.UnprivilegedPortStart))
	}
	args = append(args, "-v", file+":/p.nft:ro", "--entrypoint", "sh", image, "-c", "nft -f /p.nft && exec sleep 600")
	h.MustDocker(args...)
	if !pollUntil(30*time.Second, func() bool { return h.Docker("exec", name, "nft", "list", "table", "inet", "abox").OK() }) {
		t.Fatalf("namespace %s never loaded its ruleset: %s", name, h.Docker("logs", name))
	}
	return name
}

// inNamespace runs a bash script with the stand-in claude in ns's network namespace as uid, with
// no capabilities: detached (it is left running, removed with the test) or to its end, returning
// its output.
func inNamespace(t *testing.T, h *harness.H, ns, uid string, detach bool, script string) string {
	t.Helper()
	args := []string{"run", "--init", "--network", "container:" + ns, "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--user", uid + ":" + uid,
		"-v", harness.StandinBinary(t) + ":/usr/local/bin/claude:ro"}
	for k, val := range h.Labels() {
		args = append(args, "--label", k+"="+val)
	}
	if detach {
		args = append(args, "-d")
	} else {
		args = append(args, "--rm")
	}
	args = append(args, harness.ClientImage(t), "bash", "-c", script)
	res := h.Docker(args...)
	if !res.OK() {
		t.Fatalf("docker run in %s: %s", ns, res)
	}
	return res.Stdout
}

// runSpec reads the project's runspec.json.
func runSpec(t *testing.T, h *harness.H) render.RunSpec {
	t.Helper()
	var rs render.RunSpec
	readJSON(t, filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts", render.RunSpecFile), &rs)
	return rs
}

// TestAttackNamespaceSockets: what a process without capabilities may open or bind in the
// namespace it shares with netd. Ports below 1024 (DNS, TLS, HTTP) on any address, netd's own
// ports (in use, and not shareable with SO_REUSEPORT across uids), a datagram from Docker's
// resolver address or from an address not its own, raw and packet sockets, conntrack dumps and
// events, and a route change are all refused; a dev server on 8080 and on udp 5353 binds.
func TestAttackNamespaceSockets(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	other := h.StartServer("other.test")
	upProject(t, h, "sockets", nil, "")
	bind := func(name, addr, proto, extra string) string {
		return fmt.Sprintf(`echo "%s $(claude net bind %s %s %s)"`, name, addr, proto, extra)
	}
	refused := []string{}
	var script []string
	add := func(name, line string) { refused = append(refused, name); script = append(script, line) }
	add("bind-docker-dns", bind("bind-docker-dns", "127.0.0.11:53", "udp", ""))
	add("bind-dns-any", bind("bind-dns-any", "0.0.0.0:53", "udp", ""))
	add("bind-dns-tcp", bind("bind-dns-tcp", "127.0.0.1:53", "tcp", ""))
	add("bind-https", bind("bind-https", "0.0.0.0:443", "tcp", ""))
	add("bind-http", bind("bind-http", "127.0.0.1:80", "tcp", ""))
	for _, p := range []struct {
		name  string
		port  int
		proto string
	}{{"netd-dns", policy.DNSPort, "udp"}, {"netd-dns-tcp", policy.DNSPort, "tcp"}, {"netd-sni", policy.SNIPort, "tcp"},
		{"netd-http", policy.HTTPPort, "tcp"}, {"netd-mcp", policy.MCPPort, "tcp"}, {"netd-model", policy.ModelPort, "tcp"}} {
		add("bind-"+p.name, bind("bind-"+p.name, fmt.Sprintf("127.0.0.1:%d", p.port), p.proto, ""))
		add("reuse-"+p.name, bind("reuse-"+p.name, fmt.Sprintf("127.0.0.1:%d", p.port), p.proto, "reuse"))
		add("any-"+p.name, bind("any-"+p.name, fmt.Sprintf("0.0.0.0:%d", p.port), p.proto, "reuse"))
	}
	add("send-from-docker-dns", `echo "send-from-docker-dns $(claude net send-from 127.0.0.11:5300 127.0.0.1:9)"`)
	add("send-from-foreign", `echo "send-from-foreign $(claude net send-from `+other.IP+`:5300 127.0.0.1:9)"`)
	for _, k := range []string{"raw-icmp", "raw-tcp", "raw-udp", "packet", "ct-dump", "ct-events", "route-add"} {
		add("socket-"+k, `echo "socket-`+k+` $(claude net socket `+k+`)"`)
	}
	script = append(script, bind("dev-tcp", "127.0.0.1:8080", "tcp", ""), bind("dev-udp", "0.0.0.0:5353", "udp", ""))
	_, got := attackRun(t, h, script...)
	probesRefused(t, got, refused...)
	probesOK(t, got, "dev-tcp", "dev-udp")
	for _, n := range []string{"bind-docker-dns", "bind-dns-any", "bind-https"} {
		if !strings.Contains(got[n].Error, "permission denied") {
			t.Errorf("%s: %+v, want it refused by the namespace's port setting", n, got[n])
		}
	}
	if !strings.Contains(got["send-from-docker-dns"].Error, "operation not permitted") {
		t.Errorf("send-from-docker-dns: %+v, want the ruleset's refusal", got["send-from-docker-dns"])
	}
	if ev := h.Traffic(other.Container); len(ev) != 0 {
		t.Errorf("other.test saw traffic: %v", ev)
	}
}

// TestAttackGatewayTokenCapture: the agent listens on the gateway's port on every address of the
// namespace and answers every name netd might ask with 127.0.0.1, then uses its MCP tools. netd
// dials the gateway's container address, which abox read from Docker for this run, so the tools
// work, the listener sees no connection and no token, and netd's argv names that address.
func TestAttackGatewayTokenCapture(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	mcpCustomServers(t, h)
	h.WriteManifest("version: 1\nproject: tokencap\nprofile: " + h.Profile + "\nservers: [echo]\n")
	mustAbox(t, h, "up", "--yes")
	port := gatewayPort(t, h)
	out, got := attackRun(t, h,
		fmt.Sprintf(`claude net capture 0.0.0.0:%d 15 > /tmp/cap.json &`, port),
		`claude net spoof-dns 127.0.0.1 15 > /tmp/spoof.json &`,
		`sleep 3`,
		`echo "list $(claude mcp-call list)"`,
		`echo "echo $(claude mcp-call call echo '{"text":"through netd"}')"`,
		`wait`,
		`echo "capture $(cat /tmp/cap.json)"`,
		`echo "spoof $(cat /tmp/spoof.json)"`,
	)
	if p := got["capture"]; p.Conns != 0 || p.Authorization {
		t.Errorf("the agent's listener on the gateway's port got %+v", p)
	}
	checkSpoofHeld(t, got["spoof"])
	calls := prefixed(out)
	if names := toolNames(t, calls["list"]); names != "echo" {
		t.Errorf("tools/list through netd = %q, want echo", names)
	}
	if !strings.Contains(calls["echo"], "through netd") {
		t.Errorf("echo through netd = %q", calls["echo"])
	}
	gwIP := h.IP(gateway.Name(h.Profile))
	argv := lastArgv(t, h)[0]
	if want := []string{policy.GatewayAddrFlag, fmt.Sprintf("%s:%d", gwIP, port)}; strings.Join(argv[len(argv)-2:], " ") != strings.Join(want, " ") {
		t.Errorf("netd's argv ends %q, want %q", argv[len(argv)-2:], want)
	}
}

// gatewayPort is the gateway port of the project's netd policy.
func gatewayPort(t *testing.T, h *harness.H) int {
	t.Helper()
	var p policy.Netd
	readJSON(t, filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts", render.NetdDir, policy.File), &p)
	var port int
	if p.MCP == nil {
		t.Fatal("the netd policy has no MCP section")
	}
	if _, err := fmt.Sscanf(p.MCP.Upstream[strings.LastIndex(p.MCP.Upstream, ":")+1:], "%d/mcp", &port); err != nil {
		t.Fatalf("gateway port of %q: %v", p.MCP.Upstream, err)
	}
	return port
}

// lastArgv reads argv.json of the project's last run: netd's argv, then the agent's.
func lastArgv(t *testing.T, h *harness.H) [][]string {
	t.Helper()
	runs := runRecords(t, h)
	var argv [][]string
	readJSON(t, filepath.Join(runs[len(runs)-1]["run_dir"].(string), "argv.json"), &argv)
	if len(argv) != 2 {
		t.Fatalf("argv.json holds %d argvs", len(argv))
	}
	return argv
}

// TestAttackEgressRmCutsFlow: the agent holds TCP echo connections to two allowed non-TLS
// ports; `abox egress rm` of one cuts its established connection within seconds (conntrack
// alone would let it run on), while the other keeps going. TestAttackRevokedRuleControl shows
// the flow surviving without the ruleset's rule.
func TestAttackEgressRmCutsFlow(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("hold.test")
	h.StartServer("keep.test")
	upProject(t, h, "egressrm", []string{"hold.test:2222", "keep.test:2222"}, "")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", bashLines(
		`claude net hold hold.test:2222 20 /workspace/held-hold > /tmp/hold.json &`,
		`claude net hold keep.test:2222 20 /workspace/held-keep > /tmp/keep.json &`,
		`wait`,
		`echo "hold $(cat /tmp/hold.json)"`,
		`echo "keep $(cat /tmp/keep.json)"`))
	waitWorkspaceFile(t, h.Workspace, "held-hold")
	waitWorkspaceFile(t, h.Workspace, "held-keep")
	time.Sleep(time.Second) // a few rounds on both
	if res := h.Abox("egress", "rm", "hold.test:2222"); !res.OK() {
		t.Fatalf("abox egress rm: %s", res)
	}
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	got := probes(t, agentOutput(res.Stdout))
	if p := got["hold"]; p.OK || p.BrokeAfter > 8 {
		t.Errorf("hold.test after egress rm: %+v, want the connection cut within a few seconds", p)
	}
	if p := got["keep"]; !p.OK {
		t.Errorf("keep.test: %+v, want its connection untouched", p)
	}
	if n := lastCounter(t, h, "revoked"); n == 0 {
		t.Error(`netd's counters show no packet reset by the "revoked" rule`)
	}
}

// TestAttackRevokedRuleControl: in namespaces made like netd's, an agent connection established
// through an agent-set element keeps flowing after the element is deleted unless the element
// also goes into the revoked set and the ruleset holds the rule that resets such flows.
func TestAttackRevokedRuleControl(t *testing.T) {
	h := harness.Setup(t)
	srv := h.StartServer("hold.test")
	upProject(t, h, "revctl", []string{"hold.test:2222"}, "")
	image := runSpec(t, h).Netd.Image
	for _, v := range []nsVariant{
		{name: "as shipped", ports: true},
		{name: "without the revoked rules", drop: []string{"revoked", "in revoked"}, ports: true},
	} {
		t.Run(v.name, func(t *testing.T) {
			ns := startNamespace(t, h, image, v)
			elem := srv.IP + " . 2222"
			h.MustDocker("exec", ns, "nft", "add", "element", "inet", policy.Table, policy.SetAgent, "{ "+elem+" }")
			marker := "/tmp/held"
			agent := inNamespace(t, h, ns, "1000", true, "claude net hold "+srv.IP+":2222 12 "+marker)
			agent = strings.TrimSpace(agent)
			if !pollUntil(30*time.Second, func() bool { return h.Docker("exec", agent, "test", "-e", marker).OK() }) {
				t.Fatalf("the connection never came up: %s", h.Docker("logs", agent))
			}
			time.Sleep(time.Second)
			// What netd's set manager does on `abox egress rm`, in one transaction.
			batch := fmt.Sprintf("delete element inet %[1]s %[2]s { %[4]s }\nadd element inet %[1]s %[3]s { %[4]s timeout 3600s }\n",
				policy.Table, policy.SetAgent, policy.SetRevoked, elem)
			batchFile := filepath.Join(h.Dir, "revoke-"+strings.ReplaceAll(v.name, " ", "-")+".nft")
			writeFile(t, batchFile, batch)
			if res := h.Docker("cp", batchFile, ns+":/tmp/revoke.nft"); !res.OK() {
				t.Fatal(res)
			}
			h.MustDocker("exec", ns, "nft", "-f", "/tmp/revoke.nft")
			h.MustDocker("wait", agent)
			var p probeResult
			json.Unmarshal([]byte(strings.TrimSpace(h.Docker("logs", agent).Stdout)), &p)
			if v.name == "as shipped" && (p.OK || p.Rounds == 0) {
				t.Errorf("the established flow survived its revocation: %+v", p)
			}
			if v.name != "as shipped" && !p.OK {
				t.Errorf("without the rule the flow was cut anyway (%+v): the control proves nothing", p)
			}
		})
	}
}

// TestAttackSetExhaustion: the agent resolves hundreds of names under an allowed wildcard whose
// zone (a test resolver) answers 32 addresses each, and one name whose addresses change with
// every query. netd opens no more than 64 addresses for one name and no more than its budget in
// the agent's set, logs every refusal, and its own connections still work afterwards.
func TestAttackSetExhaustion(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	zone := h.StartServerWith(harness.ServerOptions{Aliases: []string{"zone.test"}, Args: []string{"-dns-spread", "32", "-dns-ttl", "600"}})
	h.StartServer("ok.test")
	resolv := filepath.Join(h.Dir, "resolv.conf")
	writeFile(t, resolv, "nameserver "+zone.IP+"\n")
	env := append(h.Env(), "ABOX_RESOLV_CONF="+resolv)
	h.WriteConfig(h.DefaultConfig())
	h.WriteManifest("version: 1\nproject: exhaust\nprofile: " + h.Profile + "\negress:\n  - \"*.flood.test:2222\"\n  - ok.test\n")
	if _, wait := startAbox(t, h, h.Workspace, env, "up", "--yes"); !wait().OK() {
		t.Fatal("abox up failed")
	}
	const names = 300 // × 32 addresses > the agent set's budget
	_, wait := startAbox(t, h, h.Workspace, env, "run", bashLines(
		`for i in 1 2 3 4; do claude net dns 127.0.0.1:53 rot.flood.test >/dev/null; done`,
		fmt.Sprintf(`seq %d | xargs -P 16 -I{} claude net dns 127.0.0.1:53 n{}.flood.test >/dev/null`, names),
		`echo "after-dns $(claude net dns 127.0.0.1:53 ok.test)"`,
		`echo "after-tls $(claude net tls 127.0.0.1:443 ok.test)"`))
	res := wait()
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	probesOK(t, probes(t, agentOutput(res.Stdout)), "after-dns", "after-tls")
	opened, budget, perName := 0, 0, 0
	seen := map[string]int{} // verdict and reason, for the failure message
	for _, r := range harvested[policy.DNSRecord](t, h, policy.DNSLog) {
		seen[r.Verdict+": "+r.Reason]++
		switch {
		case r.Verdict == policy.Allowed && strings.HasPrefix(r.Name, "n") && strings.HasSuffix(r.Name, ".flood.test."):
			opened++
		case r.Verdict == policy.Error && strings.Contains(r.Reason, "budget"):
			budget++
		case r.Verdict == policy.Error && strings.Contains(r.Reason, "more than 64"):
			perName++
		}
	}
	if max := (8192 - 64) / 32; opened > max || budget < names-max {
		t.Errorf("%d flood names opened, %d refused for the set's budget; want at most %d opened (the rotating name holds 64) and the rest refused and logged", opened, budget, max)
	}
	if perName != 2 {
		t.Errorf("%d lookups of the rotating name refused for its per-name bound, want the 3rd and 4th", perName)
	}
	if t.Failed() {
		t.Logf("netd's DNS decisions: %v", seen)
	}
}
