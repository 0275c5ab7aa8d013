//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/gateway"
)

// TestGatewayLifecycle drives `abox gateway` against the real daemon with the mcpstub gateway:
// it starts on the test network with nothing published, answers MCP with the profile token and
// 401 without, lists its tools, is kept by a second up, recreated when the server set changes
// (never two containers), and removed by down. The token never reaches an argv.
func TestGatewayLifecycle(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	cfg := h.DefaultConfig()
	// The test never builds the netd image: a unique base gives its tag to the probe image
	// built below, so it cannot collide with a real netd image of another test.
	cfg.Image.Base, cfg.Image.CACertificates = stub, nil
	h.WriteConfig(cfg)
	// The stub "runs" its built-in servers echo (tool echo) and math (tool add); as custom
	// servers they name a local image, which abox checks is present and never pulls.
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"),
		"echo:\n  image: "+stub+"\n  pin: false\n  tools: [echo]\n"+
			"math:\n  image: "+stub+"\n  pin: false\n  tools: [add]\n")
	h.WriteManifest("version: 1\nproject: gw\nprofile: " + h.Profile + "\nservers: [echo]\n")
	mustAbox(t, h, "render")
	probeImage := buildProbeImage(t, h)
	name := gateway.Name(h.Profile)

	res := mustAbox(t, h, "gateway", "up")
	if !strings.Contains(res.Stdout, "started") || !strings.Contains(res.Stdout, "healthy, 1 tool") {
		t.Errorf("gateway up: %s", res)
	}
	first := inspectGateway(t, h, name)
	checkIsolation(t, h, first)
	token := readToken(t, h)
	if strings.Contains(strings.Join(first.Args, " "), token) {
		t.Error("the token is in the gateway's argv")
	}
	if left, _ := filepath.Glob(filepath.Join(h.StateHome, "gateways", h.Profile, ".gateway-env-*")); len(left) > 0 {
		t.Errorf("env files left behind: %v", left)
	}

	url := gateway.URL(h.Profile, 8811)
	if r := probe(t, h, probeImage, url, token); !r.OK || strings.Join(r.ToolNames(), ",") != "echo" {
		t.Errorf("probe with the token = %+v, want ok with tool echo", r)
	}
	if r := probe(t, h, probeImage, url, "not-the-token"); r.OK || r.Status != 401 {
		t.Errorf("probe with a wrong token = %+v, want 401", r)
	}
	curl := h.Run(harness.RunOptions{Cmd: []string{"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
		"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream", "--data", "{}", url}})
	if strings.TrimSpace(curl.Stdout) != "401" {
		t.Errorf("POST without a token = %s, want 401", curl)
	}

	res = mustAbox(t, h, "gateway", "status", "--tools")
	if !strings.Contains(res.Stdout, "running, healthy") || !strings.Contains(res.Stdout, "tools (1): echo") {
		t.Errorf("gateway status --tools: %s", res)
	}

	res = mustAbox(t, h, "gateway", "up")
	if again := inspectGateway(t, h, name); again.ID != first.ID || !strings.Contains(res.Stdout, "unchanged") {
		t.Errorf("second gateway up replaced the container: %s", res)
	}
	countGateways(t, h, 1)

	mustAbox(t, h, "mcp", "add", "math")
	res = mustAbox(t, h, "gateway", "up")
	second := inspectGateway(t, h, name)
	if second.ID == first.ID || !strings.Contains(res.Stdout, "recreated (changed servers") {
		t.Errorf("gateway up after mcp add math did not recreate the gateway: %s", res)
	}
	countGateways(t, h, 1)
	if v, _ := gateway.ArgValue(second.Args, "--servers"); v != "echo,math" {
		t.Errorf("--servers = %q, want echo,math", v)
	}
	res = mustAbox(t, h, "gateway", "status", "--json", "--tools")
	var st []struct {
		Health string
		Tools  []string
	}
	if err := json.Unmarshal([]byte(res.Stdout), &st); err != nil || len(st) != 1 || st[0].Health != "healthy" ||
		strings.Join(st[0].Tools, ",") != "add,echo" {
		t.Errorf("gateway status --json --tools = %v, %v: %s", st, err, res)
	}

	mustAbox(t, h, "gateway", "down")
	if r := h.Docker("container", "inspect", name); r.OK() {
		t.Errorf("%s still exists after gateway down", name)
	}
}

func mustAbox(t *testing.T, h *harness.H, args ...string) harness.Result {
	t.Helper()
	res := h.Abox(args...)
	if !res.OK() {
		t.Fatalf("abox %s: %s", strings.Join(args, " "), res)
	}
	return res
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// buildProbeImage tags, as the project's netd image, a FROM scratch image holding only the abox
// binary, which is all the probe needs, and removes it when the test ends.
func buildProbeImage(t *testing.T, h *harness.H) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts", "runspec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rs struct{ Netd struct{ Image string } }
	if err := json.Unmarshal(data, &rs); err != nil || rs.Netd.Image == "" {
		t.Fatalf("runspec.json: %v", err)
	}
	dir := t.TempDir()
	bin, err := os.ReadFile(harness.AboxBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "abox"), string(bin))
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM scratch\nCOPY abox /usr/local/bin/abox\n")
	if err := os.Chmod(filepath.Join(dir, "abox"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.MustDocker("build", "-q", "--label", harness.LabelTest+"="+h.ID, "-t", rs.Netd.Image, dir)
	t.Cleanup(func() { h.Docker("image", "rm", "--force", rs.Netd.Image) })
	return rs.Netd.Image
}

type container struct {
	ID     string `json:"Id"`
	Args   []string
	Config struct {
		Labels map[string]string
	}
	HostConfig struct {
		PortBindings map[string][]any
		Binds        []string
		Mounts       []struct {
			Source, Target string
			ReadOnly       bool
		}
	}
	NetworkSettings struct {
		Networks map[string]any
		Ports    map[string][]any
	}
}

func inspectGateway(t *testing.T, h *harness.H, name string) container {
	t.Helper()
	var c container
	if err := json.Unmarshal([]byte(h.MustDocker("container", "inspect", "--format", "{{json .}}", name)), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// checkIsolation: exactly the test network, nothing published, the socket at its default path,
// the catalog read-only where the gateway confines catalogs, abox's labels.
func checkIsolation(t *testing.T, h *harness.H, c container) {
	t.Helper()
	if len(c.NetworkSettings.Networks) != 1 || c.NetworkSettings.Networks[h.Network] == nil {
		t.Errorf("networks = %v, want only %s", c.NetworkSettings.Networks, h.Network)
	}
	for port, b := range c.NetworkSettings.Ports {
		if len(b) > 0 {
			t.Errorf("port %s is published: %v", port, b)
		}
	}
	if len(c.HostConfig.PortBindings) > 0 {
		t.Errorf("port bindings: %v", c.HostConfig.PortBindings)
	}
	if !strings.Contains(strings.Join(c.HostConfig.Binds, " "), "/var/run/docker.sock:/var/run/docker.sock") {
		t.Errorf("binds = %v, want the socket at /var/run/docker.sock", c.HostConfig.Binds)
	}
	catalog := false
	for _, m := range c.HostConfig.Mounts {
		catalog = catalog || (m.Target == "/root/.docker/mcp/catalogs/abox-"+h.Profile+".yaml" && m.ReadOnly)
	}
	if !catalog {
		t.Errorf("mounts = %+v, want the catalog read-only", c.HostConfig.Mounts)
	}
	if l := c.Config.Labels; l["abox.managed"] != "true" || l["abox.role"] != "gateway" || l["abox.profile"] != h.Profile {
		t.Errorf("labels = %v", l)
	}
}

func countGateways(t *testing.T, h *harness.H, want int) {
	t.Helper()
	out := h.MustDocker("container", "ls", "-aq", "--filter", "label=abox.role=gateway", "--filter", "label=abox.profile="+h.Profile)
	if n := len(strings.Fields(out)); n != want {
		t.Errorf("%d gateway containers for %s, want %d", n, h.Profile, want)
	}
}

func readToken(t *testing.T, h *harness.H) string {
	t.Helper()
	tok, err := gateway.ReadToken(filepath.Join(h.StateHome, "gateways", h.Profile))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// probe runs abox's probe as abox does, on the test network with the token on stdin.
func probe(t *testing.T, h *harness.H, image, url, token string) *gateway.ProbeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"run", "--rm", "-i", "--network", h.Network, "--label", harness.LabelTest + "=" + h.ID,
		"--user", "65534:65534", "--entrypoint", gateway.ProbeEntrypoint, image, "mcp-probe", url}
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdin = strings.NewReader(token + "\n")
	var out bytes.Buffer
	cmd.Stdout = &out
	_ = cmd.Run() // a refused probe exits 1 and still prints its result
	r, err := gateway.ParseProbe(out.Bytes())
	if err != nil {
		t.Fatalf("probe: %v: %q", err, out.String())
	}
	return r
}
