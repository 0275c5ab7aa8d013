//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
)

// Red team 6: the gateway's long-lived server containers (R21) and abox's sweep of those it
// leaves.

// TestAttackRedTeam6SpareNetdKeepsLostServer: R21's very case (the gateway loses the run's
// server container: MCPSTUB_RELEASE_DEADLOCK=1, as TestMCPServersLeftByTheGatewayRemoved),
// with abox's default defaults.spare_netd and a second project on the machine that ran once
// and left its spare netd idling. The spare is a running abox.role=netd on the network, created
// before the lost container, so the sweep takes it for a live run that may own the container:
// the after-run process kept it, and doctor said every server container belonged to a live run,
// for as long as the other project was not run again. An idle spare now protects nothing.
func TestAttackRedTeam6SpareNetdKeepsLostServer(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upSpawnedServerWith(t, h, harness.MCPStubSpawnImageWith(t, "MCPSTUB_RELEASE_DEADLOCK=1"), ", --list-delay, 2s", harness.SpareNetd)

	// Another project, no MCP servers, run once: its after-run process leaves a spare netd.
	other := attackWorkspace(t, h, "idle6")
	workspaceFile(t, other, "agentbox.yaml", "version: 1\nproject: idle6\nprofile: "+h.Profile+"\n")
	if res := h.AboxIn(other, "up", "--yes"); !res.OK() {
		t.Fatalf("abox up (idle6): %s", res)
	}
	if res := h.AboxIn(other, "run", "true"); !res.OK() {
		t.Fatalf("abox run (idle6): %s", res)
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(strings.Fields(h.MustDocker("container", "ls", "-q", "--filter", "label=abox.role=netd", "--filter", "network="+h.Network))) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle6 left no spare netd within 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}

	agentCalls(t, h)               // the gateway loses this run's server container
	waitGone(t, h, 30*time.Second) // fails while idle6's spare netd shields it
}

// TestAttackRedTeam6NoNetworkOrphanNeverSwept: a server with server_network: none runs with
// --network none, so a container of it that the gateway loses is not on the abox network, which
// is the only place the sweep and doctor look: nothing ever removes it or names it. The test
// stands such a container up as the gateway labels its servers (as
// TestMCPServersLeftByTheGatewayRemoved does for one on the network), with no run live.
func TestAttackRedTeam6NoNetworkOrphanNeverSwept(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upSpawnedServerWith(t, h, harness.MCPStubSpawnImage(t), "", nil)
	id := strings.TrimSpace(h.MustDocker("run", "-d", "--label", gateway.ServerLabel+"=true", "--label", gateway.ServerNameLabel+"="+spawnedServer,
		"--label", "abox.e2e.redteam6="+h.Network, "--network", "none", "--entrypoint", "/mcpstub", harness.MCPStubImage(t), "server", "--chatty"))
	t.Cleanup(func() { h.Docker("rm", "-f", id) })
	if f := doctorChecks(t, h)["gateway.servers-ended"]; f.Status == "ok" {
		t.Errorf("doctor's gateway.servers-ended with a --network none server container and no run: %s %q", f.Status, f.Detail)
	}
	mustAbox(t, h, "gateway", "up")
	if h.Docker("container", "inspect", id).OK() {
		t.Errorf("abox gateway up left the --network none server container %s up", id[:12])
	}
}
