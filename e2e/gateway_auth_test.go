//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
)

// TestGatewayAuthProvenByBehaviour runs abox's unauthenticated probe against the gateway
// stand-in in both of its modes. Enforcing (as docker/mcp-gateway from v0.43.1): `abox up`
// proves it refuses an initialize without the token and one with a wrong token, and doctor
// says so. Open (the stand-in built as the real gateway was before v0.43.1, which ignored the
// token in a container), with the very same arguments and token: `abox gateway up`, `abox run`
// and doctor each refuse it, naming `abox gateway update`, and no agent starts.
func TestGatewayAuthProvenByBehaviour(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	cfg := h.DefaultConfig()
	h.WriteConfig(cfg)
	mcpCustomServers(t, h)
	h.WriteManifest("version: 1\nproject: gwauth\nprofile: " + h.Profile + "\nservers: [echo]\n")
	url := gateway.URL(h.Profile, 8811)

	// enforcing
	mustAbox(t, h, "up", "--yes")
	if code := postWithoutToken(t, h, url); code != "401" {
		t.Errorf("the enforcing stand-in answered an initialize without a token with %s", code)
	}
	if _, err := os.Stat(filepath.Join(h.StateHome, "gateways", h.Profile, gateway.AuthProofFile)); err != nil {
		t.Errorf("abox up recorded no proof of the gateway's token check: %v", err)
	}
	res := h.Abox("doctor", "--all")
	if !strings.Contains(res.Stdout, "✔ gateway verifies signatures and tokens: --verify-signatures; refuses requests without its token (401) and with a wrong one (401)") {
		t.Errorf("doctor on the enforcing gateway: %s", res)
	}

	// open: the same project and arguments, the vulnerable build of the gateway image
	cfg.Gateway.Image = harness.ImageID(t, harness.MCPStubOpenImage(t))
	h.WriteConfig(cfg)
	res = h.Abox("gateway", "up")
	wantOpenRefusal(t, "gateway up", res, 3, h.Profile)
	if !strings.Contains(res.Stderr, "recreating "+gateway.Name(h.Profile)) {
		t.Errorf("gateway up did not start the open build: %s", res)
	}
	if code := postWithoutToken(t, h, url); code != "200" {
		t.Fatalf("the open stand-in answered an initialize without a token with %s, want 200: it is not open", code)
	}

	res = h.Abox("run", "echo the agent ran")
	wantOpenRefusal(t, "run", res, 3, h.Profile)
	if strings.Contains(res.Stdout, "the agent ran") {
		t.Errorf("an agent ran behind the open gateway: %s", res)
	}
	if out := h.MustDocker("ps", "--all", "--quiet", "--filter", "label=abox.role=agent", "--filter", "label=abox.project=gwauth"); out != "" {
		t.Errorf("agent containers exist after the refused run: %s", out)
	}

	res = h.Abox("doctor")
	if res.ExitCode != 2 || !strings.Contains(res.Stdout, "✖ gateway verifies signatures and tokens: the "+h.Profile+
		" gateway does not enforce its token: an initialize without a token got HTTP 200, one with a wrong token HTTP 200") ||
		!strings.Contains(res.Stdout, "`abox gateway update`") {
		t.Errorf("doctor on the open gateway: %s", res)
	}
}

// postWithoutToken sends the gateway an MCP initialize with no Authorization header from a
// throwaway container on the test network, and returns the HTTP status.
func postWithoutToken(t *testing.T, h *harness.H, url string) string {
	t.Helper()
	res := h.Run(harness.RunOptions{Cmd: []string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
		"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
		"--data", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`, url}})
	return strings.TrimSpace(res.Stdout)
}

func wantOpenRefusal(t *testing.T, what string, res harness.Result, code int, profile string) {
	t.Helper()
	if res.ExitCode != code || !strings.Contains(res.Stderr, "error: the "+profile+" gateway does not enforce its token: "+
		"an initialize without a token got HTTP 200, one with a wrong token HTTP 200") ||
		!strings.Contains(res.Stderr, "↳ pin a gateway that enforces its token (docker/mcp-gateway v0.43.1 or later) with `abox gateway update`") {
		t.Errorf("%s behind the open gateway, want exit %d and the hint: %s", what, code, res)
	}
}
