//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/paths"
	"github.com/aboxhq/abox/internal/policy"
)

// Network position: what sits next to a sandbox on the same bridge and profile. Project beta
// runs a long sandbox whose agent listens on every interface; project alpha's agent, a plain
// container on the bridge (where the gateway's MCP servers live) and the host itself try to
// reach beta's agent and netd on every port netd uses. Nothing answers, nothing is published,
// and the plain container shows what is outside the sandbox: ordinary egress.

// netdPorts are every port netd listens on, and the ports a neighbour would try first.
var netdPorts = []int{policy.DNSPort, policy.SNIPort, policy.HTTPPort, policy.MCPPort, 53, 80, 443, 8080, 9090, 22, 2375}

// listenerPerl accepts on 0.0.0.0:8080 and 127.0.0.1:9090 and records every peer in
// accepted.log; it runs as beta's agent until the file "stop" appears.
const listenerPerl = `use strict; use IO::Socket::INET; use IO::Select;
my @l = map { IO::Socket::INET->new(LocalAddr => $_, Listen => 5, ReuseAddr => 1) or die "listen $_: $!" } ('0.0.0.0:8080', '127.0.0.1:9090');
my $sel = IO::Select->new(@l);
open(my $log, '>>', 'accepted.log') or die; $log->autoflush(1);
open(my $r, '>', 'listening') or die; close $r;
until (-e 'stop') { for my $s ($sel->can_read(0.2)) { my $c = $s->accept or next; print $log "accepted ", $c->peerhost, "\n"; close $c } }
`

func TestAttackNetworkPosition(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("a.test")
	h.StartServer("b.test")
	outside := h.StartServer("outside.test")
	upProject(t, h, "alpha", []string{"a.test"}, "")
	beta := attackWorkspace(t, h, "beta")
	workspaceFile(t, beta, "agentbox.yaml", "version: 1\nproject: beta\nprofile: "+h.Profile+"\negress: [b.test]\n")
	workspaceFile(t, beta, "listen.pl", listenerPerl)
	if res := h.AboxIn(beta, "up", "--yes"); !res.OK() {
		t.Fatalf("abox up (beta): %s", res)
	}
	_, wait := startAbox(t, h, beta, nil, "run", "perl listen.pl")
	if !pollUntil(2*time.Minute, func() bool { return fileExists(beta, "listening") }) {
		t.Fatal("beta's agent never listened")
	}
	betaNetd := strings.TrimSpace(h.MustDocker("ps", "--filter", "label=abox.hash="+paths.Hash(beta),
		"--filter", "label=abox.role=netd", "--format", "{{.Names}}"))
	betaIP := h.IP(betaNetd)

	t.Run("agent-to-agent", func(t *testing.T) {
		script := []string{
			`echo "by-name $(claude net dns 127.0.0.1:53 ` + betaNetd + `)"`,
			`echo "tls-443 $(claude net tls ` + betaIP + `:443 b.test)"`,
			`echo "http-80 $(claude net http ` + betaIP + `:80 b.test)"`,
			`echo "dns-53 $(claude net dns ` + betaIP + `:53 b.test)"`,
			`echo "dns-udp $(claude net dns ` + betaIP + `:` + strconv.Itoa(policy.DNSPort) + ` b.test)"`,
		}
		for _, p := range netdPorts {
			if p != 53 && p != 80 && p != 443 {
				script = append(script, fmt.Sprintf(`echo "tcp-%d $(claude net tcp %s:%d)"`, p, betaIP, p))
			}
		}
		_, got := attackRun(t, h, script...)
		probesRefused(t, got, "by-name", "tls-443", "http-80", "dns-53", "dns-udp")
		refusedWithPrefix(t, got, "tcp-")
	})
	t.Run("bridge-to-netd", func(t *testing.T) {
		var sh []string
		for _, p := range netdPorts {
			sh = append(sh, fmt.Sprintf("(nc -z -w 3 %s %d && echo open-tcp-%d) &", betaIP, p, p))
		}
		sh = append(sh, fmt.Sprintf("(claude net dns %s:%d b.test | grep -q '\"ok\":true' && echo open-udp-dns) &", betaIP, policy.DNSPort))
		sh = append(sh, fmt.Sprintf("(claude net tls %s:%d b.test | grep -q '\"ok\":true' && echo open-sni-proxy) &", betaIP, policy.SNIPort))
		sh = append(sh, "wait; echo done")
		res := h.Run(harness.RunOptions{Mounts: []string{harness.StandinBinary(t) + ":/usr/local/bin/claude:ro"},
			Cmd: []string{"bash", "-c", strings.Join(sh, "\n")}})
		if strings.Contains(res.Stdout, "open-") || !strings.Contains(res.Stdout, "done") {
			t.Errorf("a container on the bridge reached beta's sandbox:\n%s", res)
		}
	})
	t.Run("host-to-netd", func(t *testing.T) {
		open := make(chan int, len(netdPorts))
		for _, p := range netdPorts {
			go func() {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(betaIP, strconv.Itoa(p)), 2*time.Second)
				if err == nil {
					c.Close()
					open <- p
					return
				}
				open <- 0
			}()
		}
		for range netdPorts {
			if p := <-open; p != 0 {
				t.Errorf("the host connected to beta's sandbox on port %d", p)
			}
		}
	})
	t.Run("nothing-published", func(t *testing.T) {
		for _, role := range []string{"netd", "agent"} {
			name := strings.TrimSpace(h.MustDocker("ps", "--filter", "label=abox.hash="+paths.Hash(beta),
				"--filter", "label=abox.role="+role, "--format", "{{.Names}}"))
			var c struct {
				HostConfig struct {
					PortBindings    map[string]any
					PublishAllPorts bool
				}
				NetworkSettings struct{ Ports map[string][]any }
			}
			if err := json.Unmarshal([]byte(h.MustDocker("inspect", "--format", "{{json .}}", name)), &c); err != nil {
				t.Fatal(err)
			}
			for port, b := range c.NetworkSettings.Ports {
				if len(b) > 0 {
					t.Errorf("%s publishes %s: %v", role, port, b)
				}
			}
			if len(c.HostConfig.PortBindings) > 0 || c.HostConfig.PublishAllPorts {
				t.Errorf("%s has port bindings %v (publish all %v)", role, c.HostConfig.PortBindings, c.HostConfig.PublishAllPorts)
			}
		}
	})
	// What the gateway spawns sits here, outside every sandbox: its egress is not abox's to limit.
	t.Run("mcp-server-egress", func(t *testing.T) {
		res := h.Run(harness.RunOptions{Cmd: []string{"curl", "-sS", "--max-time", "10", "https://outside.test/from-a-server"}})
		if !res.OK() || len(h.Events(outside.Container, "request")) == 0 {
			t.Errorf("a container beside the gateway could not reach outside.test: %s", res)
		}
	})

	workspaceFile(t, beta, "stop", "")
	if res := wait(); !res.OK() {
		t.Errorf("beta's run: %s", res)
	}
	if got := readWorkspace(beta, "accepted.log"); got != "" {
		t.Errorf("beta's agent accepted connections:\n%s", got)
	}
}

// attackWorkspace makes another project directory the agent (uid 1000) can write, and removes
// the containers and the ~/.claude volume abox makes for it, which the harness does not know.
func attackWorkspace(t *testing.T, h *harness.H, name string) string {
	t.Helper()
	ws := filepath.Join(h.Dir, name)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	hash := paths.Hash(ws)
	t.Cleanup(func() {
		if ids := strings.Fields(h.Docker("ps", "-aq", "--filter", "label=abox.hash="+hash).Stdout); len(ids) > 0 {
			h.Docker(append([]string{"rm", "-f", "-v"}, ids...)...)
		}
		h.Docker("volume", "rm", "-f", "abox-claude-"+hash)
	})
	return ws
}
