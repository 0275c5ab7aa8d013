//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
)

// The tests of this file run the spawning stub as abox's gateway (gateway.image), with the
// chatty server (`mcpstub server --chatty`, which behaves as server-everything does) declared in
// custom-servers.yaml: what issue 36 measured with the real gateway, through abox.

// upSpawnedServer sets up a project whose one MCP server is the chatty one, served by gwImage,
// with the extra server flags.
func upSpawnedServer(t *testing.T, h *harness.H, gwImage, serverFlags string) {
	t.Helper()
	upSpawnedServerWith(t, h, gwImage, serverFlags, nil)
}

// upSpawnedServerWith is upSpawnedServer with the config edited first (cfgEdit nil: none).
func upSpawnedServerWith(t *testing.T, h *harness.H, gwImage, serverFlags string, cfgEdit func(harness.Config) harness.Config) {
	t.Helper()
	cfg := h.DefaultConfig()
	cfg.Gateway.Image = harness.ImageID(t, gwImage)
	if cfgEdit != nil {
		cfg = cfgEdit(cfg)
	}
	h.WriteConfig(cfg)
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"), spawnedServer+":\n  image: "+stub+
		"\n  pin: false\n  command: [server, --chatty"+serverFlags+"]\n  tools: [echo]\n")
	h.WriteManifest("version: 1\nproject: spawned\nprofile: " + h.Profile + "\nservers: [" + spawnedServer + "]\n")
	mustAbox(t, h, "up", "--yes")
	t.Cleanup(func() { // whatever a failed test leaves, so the harness can remove its network
		if ids := serverContainers(h); len(ids) > 0 {
			h.Docker(append([]string{"rm", "-f"}, ids...)...)
		}
	})
}

// benchCalls is the stand-in's report of `claude mcp-call --repeat N call …`.
type benchCalls struct {
	OK    bool    `json:"ok"`
	N     int     `json:"n"`
	LatUS []int64 `json:"lat_us"`
}

// agentCalls runs five calls of echo in one MCP session through netd, as Claude Code makes
// them (no DELETE at its exit: netd closes the session at the run's end), and returns the
// stand-in's report.
func agentCalls(t *testing.T, h *harness.H) benchCalls {
	t.Helper()
	res := h.Abox("run", `STANDIN_MCP_NO_DELETE=1 claude mcp-call --server abox --repeat 5 call echo '{"text":"fast"}'`)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	var rep benchCalls
	for _, line := range strings.Split(agentOutput(res.Stdout), "\n") {
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rep) == nil && rep.N > 0 {
			break
		}
	}
	if !rep.OK || rep.N != 5 {
		t.Fatalf("the agent's calls: %+v\n%s", rep, res)
	}
	return rep
}

// TestMCPServersThroughAbox: a run's five calls of a server that announces changed tools at
// start cost one container start, the first call's: the gateway's own time for each later call
// is under 100 ms (it was ~30 s a call before abox ran servers long-lived). When the run
// returns, netd has closed its session and the server's container is gone within seconds, and
// doctor finds no server container outliving its run.
func TestMCPServersThroughAbox(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upSpawnedServer(t, h, harness.MCPStubSpawnImage(t), "")
	gw := &harness.Gateway{Container: gateway.Name(h.Profile)}
	if args := inspectGateway(t, h, gw.Container).Args; !slices.Contains(args, "--long-lived") {
		t.Fatalf("abox started the gateway without --long-lived: %q", args)
	}

	rep := agentCalls(t, h)
	ended := time.Now()
	ms := callMillis(h, gw)
	if len(ms) != 5 {
		t.Fatalf("the gateway logged %d calls (%v), want 5", len(ms), ms)
	}
	for i, v := range ms[1:] {
		if v >= 100 {
			t.Errorf("call %d took the gateway %.1f ms, want under 100 ms (the calls: %v)", i+2, v, ms)
		}
	}
	t.Logf("gateway ms per call: %v; the agent's µs per call, through netd: %v", ms, rep.LatUS)
	if n := containerEvents(h, gw)["start call"]; n != 1 {
		t.Errorf("the run's calls started %d server containers, want 1 (%v)", n, containerEvents(h, gw))
	}
	waitGone(t, h, 20*time.Second)
	t.Logf("the server's container was gone %.1fs after abox run returned", time.Since(ended).Seconds())
	if f := doctorChecks(t, h)["gateway.servers-ended"]; f.Status != "ok" {
		t.Errorf("doctor's gateway.servers-ended after the run: %s %q", f.Status, f.Detail)
	}
}

// TestMCPServersLeftByTheGatewayRemoved: the gateway loses the run's server container (its
// session's DELETE, sent by netd at the run's end, arrives while the server's tools are being
// listed again, and docker/mcp-gateway never releases it; the stub reproduces that with
// MCPSTUB_RELEASE_DEADLOCK=1). abox's after-run process removes it within seconds of the run.
// A container left with no run live is named by doctor, and `abox gateway up` removes it.
func TestMCPServersLeftByTheGatewayRemoved(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upSpawnedServer(t, h, harness.MCPStubSpawnImageWith(t, "MCPSTUB_RELEASE_DEADLOCK=1"), ", --list-delay, 2s")
	gw := &harness.Gateway{Container: gateway.Name(h.Profile)}

	agentCalls(t, h)
	ended := time.Now()
	waitGone(t, h, 30*time.Second)
	t.Logf("the lost server container was gone %.1fs after abox run returned", time.Since(ended).Seconds())
	if len(h.Events(gw.Container, "release")) == 0 {
		t.Errorf("the gateway released the session's container: the test did not reproduce the lost container (events %v)",
			containerEvents(h, gw))
	}

	// One left with no run live: a container as the gateway labels its servers, on the network.
	h.MustDocker("run", "-d", "--label", gateway.ServerLabel+"=true", "--label", gateway.ServerNameLabel+"="+spawnedServer,
		"--network", h.Network, "--entrypoint", "/mcpstub", harness.MCPStubImage(t), "server", "--chatty")
	f := doctorChecks(t, h)["gateway.servers-ended"]
	if f.Status != "fail" || !strings.Contains(f.Detail, "server "+spawnedServer) {
		t.Errorf("doctor's gateway.servers-ended with a server container and no run: %s %q", f.Status, f.Detail)
	}
	res := mustAbox(t, h, "gateway", "up")
	if !strings.Contains(res.Stdout, "removed 1 MCP server container(s) left by finished runs") {
		t.Errorf("abox gateway up did not say it removed the container:\n%s", res)
	}
	waitGone(t, h, 10*time.Second)
}
