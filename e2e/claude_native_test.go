//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/claudecode"
)

// TestClaudeNativeFromReleaseManifest: with claude_code.source native and no sha256 in
// config.yaml, `abox up` downloads Claude Code from a stand-in of the release host (HTTPS, the
// test CA), checks it against the sha256 the release's manifest gives, and builds it into the
// agent image, where the binary is byte for byte the release's and runs. A release whose binary
// is not the one its manifest names is refused (exit 3) before any image is built.
func TestClaudeNativeFromReleaseManifest(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	platform, err := claudecode.PlatformFor(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	standin, err := os.ReadFile(harness.StandinBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(standin)
	release := h.ReleaseServer()
	const version = "2.1.0" // what the stand-in reports
	publish := func(checksum string) {
		release.Put(version+"/manifest.json", fmt.Appendf(nil,
			`{"version": %q, "buildDate": "2026-11-24T22:00:00Z", "platforms": {%q: {"binary": "claude", "checksum": %q, "size": %d}}}`,
			version, platform, checksum, len(standin)))
		release.Put(version+"/"+platform+"/claude", standin)
	}
	cfg := h.DefaultConfig()
	cfg.ClaudeCode = harness.ClaudeCodeConfig{Source: "native", Version: version, ReleaseURL: release.URL}
	h.WriteConfig(cfg)
	h.WriteManifest("version: 1\nproject: native\nprofile: " + h.Profile + "\n")
	// The agent image's tag is a hash of what goes into it, so an earlier run of this test left
	// one that `abox up` would reuse without downloading anything.
	mustAbox(t, h, "render")
	h.Docker("image", "rm", "--force", agentImage(t, h))

	// a release host serving another binary than its manifest names
	publish(strings.Repeat("0", 64))
	res := h.Abox("up", "--yes")
	if res.ExitCode != 3 || !strings.Contains(res.Stderr, "refusing Claude Code "+version+": "+release.URL+"/"+version+"/"+platform+
		"/claude has sha256 "+hex.EncodeToString(sum[:])+", but the release manifest says "+strings.Repeat("0", 64)) ||
		!strings.Contains(res.Stderr, "↳ do not use this binary") {
		t.Fatalf("abox up with a tampered release: %s", res)
	}
	if strings.Contains(res.Stderr, "building ") {
		t.Errorf("an image was built from a refused release: %s", res)
	}

	publish(hex.EncodeToString(sum[:]))
	res = mustAbox(t, h, "up", "--yes")
	if !strings.Contains(res.Stderr, "downloading Claude Code "+version+" for "+platform+" from 127.0.0.1:") {
		t.Errorf("abox up did not download from the release stand-in: %s", res)
	}
	image := agentImage(t, h)
	got := h.MustDocker("run", "--rm", "--entrypoint", "sha256sum", image, "/usr/local/bin/claude")
	if !strings.HasPrefix(got, hex.EncodeToString(sum[:])+"  ") {
		t.Errorf("the agent image's claude has %q, want the release's %x", got, sum)
	}
	if v := h.MustDocker("run", "--rm", "--entrypoint", "/usr/local/bin/claude", image, "--version"); !strings.Contains(v, version) {
		t.Errorf("claude --version in the agent image = %q", v)
	}
	if n := release.Requests(version + "/" + platform + "/claude"); n != 2 {
		t.Errorf("the binary was requested %d times, want 2 (one refused, one verified)", n)
	}
}

// agentImage reads the agent image's tag from the project's rendered runspec.json.
func agentImage(t *testing.T, h *harness.H) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts", "runspec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rs struct{ Agent struct{ Image string } }
	if err := json.Unmarshal(data, &rs); err != nil || rs.Agent.Image == "" {
		t.Fatalf("runspec.json: %v", err)
	}
	return rs.Agent.Image
}
