//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// The smoke tests prove the harness itself: the test network, testsrv behind aliases with
// certificates from the test CA, the stand-in claude in a container, and the gateway stub.

func TestSmokeHTTPSToAlias(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("allowed.test", "other.test")
	for _, host := range []string{"allowed.test", "other.test"} {
		res := h.Run(harness.RunOptions{Cmd: []string{"curl", "-sS", "--max-time", "10", "https://" + host + "/hello"}})
		want := "testsrv name=allowed.test proto=https host=" + host + " sni=" + host + " path=/hello\n"
		if !res.OK() || res.Stdout != want {
			t.Errorf("curl https://%s = %s; want body %q", host, res, want)
		}
	}
	reqs := h.Events(srv.Container, "request")
	if len(reqs) != 2 || reqs[0].Str("sni") != "allowed.test" || reqs[1].Str("host") != "other.test" {
		t.Errorf("testsrv logged %v, want the two requests", reqs)
	}
	// A name outside the certificate fails verification. --resolve keeps the lookup off Docker's
	// embedded DNS, which would forward an unknown name to the host's resolver.
	curl := []string{"curl", "-sS", "--max-time", "10", "--resolve", "nosuch.test:443:" + srv.IP, "https://nosuch.test/"}
	if res := h.Run(harness.RunOptions{Cmd: curl}); res.ExitCode != 60 {
		t.Errorf("curl https://nosuch.test = %s, want exit 60 (certificate mismatch)", res)
	}
}

func TestSmokeOtherProtocols(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	srv := h.StartServer("svc.test")
	idle := h.StartServer("idle.test")
	script := `set -e
curl -sS --max-time 10 http://svc.test/plain
curl -sS --max-time 10 -o /dev/null -w '%{size_download}\n' https://svc.test/bytes/1000000
dig +short +time=3 +tries=1 @svc.test exfil.example.com
printf 'ping\n' | nc -q 1 svc.test 2222
printf 'dgram' | nc -u -w 1 svc.test 2222; echo`
	res := h.Run(harness.RunOptions{Cmd: []string{"bash", "-c", script}})
	want := strings.Join([]string{
		"testsrv name=svc.test proto=http host=svc.test sni= path=/plain",
		"1000000",
		srv.IP,
		"testsrv svc.test tcp/2222", "ping",
		"testsrv svc.test udp/2222: dgram",
	}, "\n") + "\n"
	if !res.OK() || res.Stdout != want {
		t.Errorf("protocols:\n%s\nwant stdout:\n%s", res, want)
	}
	if dns := h.Events(srv.Container, "dns"); len(dns) != 1 || dns[0].Str("name") != "exfil.example.com" {
		t.Errorf("dns log = %v, want the one query", dns)
	}
	if got := h.Traffic(idle.Container); len(got) != 0 {
		t.Errorf("idle.test saw traffic: %v", got)
	}
	if got := h.Traffic(srv.Container); len(got) < 6 {
		t.Errorf("svc.test traffic = %v, want every probe", got)
	}
}

// standin mounts the stand-in claude into a client container run as the agent user.
func standin(t *testing.T, extraMounts []string, cmd ...string) harness.RunOptions {
	return harness.RunOptions{
		User: "1000:1000", Workdir: "/home/agent", Env: []string{"HOME=/home/agent"},
		Mounts: append([]string{harness.StandinBinary(t) + ":/usr/local/bin/claude:ro"}, extraMounts...),
		Cmd:    cmd,
	}
}

func TestSmokeStandinInContainer(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	if res := h.Run(standin(t, nil, "claude", "--version")); res.Stdout != "2.1.0 (Claude Code stand-in)\n" {
		t.Errorf("claude --version = %s", res)
	}
	script := "echo hello; id -u; echo '::tool_use name=Bash input={\"command\":\"id\"}'; exit 7"
	res := h.Run(standin(t, nil, "claude", "-p", "--output-format", "stream-json", "--verbose", "--", script))
	if res.ExitCode != 7 {
		t.Errorf("exit = %d, want the script's 7\n%s", res.ExitCode, res)
	}
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stream-json line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) < 3 || evs[0]["subtype"] != "init" || evs[0]["cwd"] != "/home/agent" {
		t.Fatalf("events = %v, want init first, in /home/agent", evs)
	}
	last := evs[len(evs)-1]
	if last["type"] != "result" || last["result"] != "hello\n1000" || last["is_error"] != true {
		t.Errorf("result = %v, want the script's output as uid 1000 and is_error", last)
	}
	if !strings.Contains(res.Stdout, `"type":"tool_use"`) {
		t.Errorf("no tool_use item in %s", res.Stdout)
	}
}

func TestSmokeGatewayThroughStandin(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	gw := h.StartGateway(harness.GatewayOptions{Args: []string{"--servers=echo,math", "--verify-signatures", "--log-calls"}})
	cfg := t.TempDir()
	if err := os.Chmod(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, withToken := range map[string]bool{"mcp.json": true, "noauth.json": false} {
		if err := os.WriteFile(filepath.Join(cfg, name), []byte(gw.MCPConfig(withToken)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mcpCall := func(config string, args ...string) harness.Result {
		cmd := append([]string{"claude", "mcp-call", "--mcp-config", "/cfg/" + config}, args...)
		return h.Run(standin(t, []string{cfg + ":/cfg:ro"}, cmd...))
	}
	if res := mcpCall("mcp.json", "call", "echo", `{"text":"hi from the agent"}`); !res.OK() ||
		!strings.Contains(res.Stdout, `"text":"hi from the agent"`) {
		t.Errorf("call echo = %s", res)
	}
	res := mcpCall("mcp.json", "list")
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal([]byte(res.Stdout), &list); err != nil || !res.OK() {
		t.Fatalf("list = %s (%v)", res, err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"add", "echo"}) {
		t.Errorf("tools = %v, want --servers=echo,math to leave add and echo", names)
	}
	if res := mcpCall("noauth.json", "list"); res.OK() || !strings.Contains(res.Stderr, "Unauthorized") {
		t.Errorf("list without the token = %s, want a 401 failure", res)
	}
	if res := mcpCall("noauth.json", "raw", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); !strings.Contains(res.Stdout, `"status":401`) {
		t.Errorf("raw without the token = %s, want status 401", res)
	}
	calls := h.Events(gw.Container, "call")
	if len(calls) != 1 || calls[0].Str("tool") != "echo" {
		t.Errorf("gateway logged calls %v, want exactly the one echo", calls)
	}
	var refused int
	for _, ev := range h.Events(gw.Container, "http") {
		if ev.Str("auth") == "missing" && ev.Str("status") == "401" {
			refused++
		}
	}
	if refused < 2 {
		t.Errorf("gateway logged %d refused requests, want at least 2", refused)
	}
}

func TestSmokeAboxBinary(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	res := h.Abox("--version")
	if !res.OK() || !strings.HasPrefix(res.Stdout, "abox ") {
		t.Errorf("abox --version = %s", res)
	}
}
