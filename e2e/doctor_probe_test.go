//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/render"
)

// TestDoctorProbesHold: `abox doctor --probe` on a project after `abox up` starts a throwaway
// sandbox whose agent, uid 1000 with no capability, tries every escape route; each holds (the
// gateway route is skipped: the project declares no server), and nothing is left running. The
// project allowlists a test server, which the spoof probe asks netd for while it tries to answer
// netd's upstream queries itself.
func TestDoctorProbesHold(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.StartServer("allowed.test")
	upProject(t, h, "probe", []string{"allowed.test"}, "")
	rep := doctorProbe(t, h)
	for _, c := range rep.Checks {
		if !strings.HasPrefix(c.ID, "probe.") {
			continue
		}
		want := doctor.OK
		if c.ID == "probe.gateway-direct" {
			want = doctor.Skip
		}
		if c.Status != want {
			t.Errorf("%s = %s (%s), want %s", c.ID, c.Status, c.Detail, want)
		}
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left after the probes: %v", left)
	}
}

// TestDoctorProbeGatewayHeld: with an MCP server declared, the probe's agent tries to reach the
// profile's gateway directly, around netd's forwarder, and cannot.
func TestDoctorProbeGatewayHeld(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upWithServer(t, h, "probe-gw")
	found := false
	for _, c := range doctorProbe(t, h).Checks {
		if c.ID == "probe.gateway-direct" {
			found = true
			if c.Status != doctor.OK {
				t.Errorf("%s = %s (%s), want ok", c.ID, c.Status, c.Detail)
			}
		}
	}
	if !found {
		t.Error("no probe.gateway-direct in the report")
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left after the probes: %v", left)
	}
}

// upWithServer runs `abox up` on a project that declares one MCP server, the stand-in's echo, so
// that its profile has a gateway.
func upWithServer(t *testing.T, h *harness.H, project string) {
	t.Helper()
	h.WriteConfig(h.DefaultConfig())
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"), "echo:\n  image: "+stub+"\n  pin: false\n  tools: [echo]\n")
	h.WriteManifest("version: 1\nproject: " + project + "\nprofile: " + h.Profile + "\nservers: [echo]\n")
	mustAbox(t, h, "up", "--yes")
}

// TestDoctorProbesSeeAnEscape is the control: the runspec rewritten (with artifacts.json to
// match, as only someone on the host could) to give the agent root and NET_ADMIN. The probes
// must then see the agent delete netd's table, hold root, and so reach the gateway directly.
func TestDoctorProbesSeeAnEscape(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upWithServer(t, h, "escape")
	dir := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts")
	rewrite(t, dir, func(rs *render.RunSpec) {
		rs.Agent.Args = append(rs.Agent.Args, "--cap-add", "NET_ADMIN", "--user", "0:0")
	})
	got := map[string]doctor.Result{}
	for _, c := range doctorProbe(t, h).Checks {
		got[c.ID] = c
	}
	// With netd's table deleted by the first probe, datagrams from 127.0.0.11 get out too.
	for _, id := range []string{"probe.ruleset", "probe.setuid", "probe.gateway-direct", "probe.conntrack-plant", "agent.capabilities", "agent.user"} {
		if got[id].Status != doctor.Fail {
			t.Errorf("%s = %s (%s), want fail", id, got[id].Status, got[id].Detail)
		}
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left after the probes: %v", left)
	}
}

// doctorProbe runs `abox doctor --probe --json` and decodes the report; the exit status is 0 or
// 2 depending on the other checks, which these tests do not judge.
func doctorProbe(t *testing.T, h *harness.H) doctor.Report {
	t.Helper()
	res := h.Abox("doctor", "--probe", "--json")
	if res.ExitCode != 0 && res.ExitCode != 2 {
		t.Fatalf("abox doctor --probe: %s", res)
	}
	var rep doctor.Report
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, res)
	}
	return rep
}

// rewrite edits runspec.json and records its new hash in artifacts.json.
func rewrite(t *testing.T, dir string, edit func(*render.RunSpec)) {
	t.Helper()
	path := filepath.Join(dir, render.RunSpecFile)
	var rs render.RunSpec
	readJSON(t, path, &rs)
	edit(&rs)
	data, _ := json.MarshalIndent(rs, "", "  ")
	writeReadOnly(t, path, data)
	var idx render.Index
	readJSON(t, filepath.Join(dir, render.IndexName), &idx)
	sum := sha256.Sum256(data)
	idx.Files[render.RunSpecFile] = render.IndexFile{SHA256: hex.EncodeToString(sum[:]), Mode: "0444"}
	data, _ = json.MarshalIndent(idx, "", "  ")
	writeReadOnly(t, filepath.Join(dir, render.IndexName), data)
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func writeReadOnly(t *testing.T, path string, data []byte) {
	t.Helper()
	os.Chmod(path, 0o644)
	if err := os.WriteFile(path, data, 0o444); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o444)
}
