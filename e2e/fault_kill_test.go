//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/telemetry"
)

// Faults from outside abox: its containers killed, and the Docker daemon restarted under it.
// netd killed mid-run is TestNetdKilledMidRun.

// TestFaultAgentKilled: `docker kill` of the agent mid-run ends the run at once with the
// agent's status; the run is recorded, netd shuts down cleanly (its counters and a query made
// before the kill are harvested) and both containers are removed.
func TestFaultAgentKilled(t *testing.T) {
	h := harness.Setup(t)
	upProject(t, h, "agentkill", nil, "")
	_, wait := startAbox(t, h, h.Workspace, nil, "run", "claude net dns 127.0.0.1:53 before-agent-kill.test; touch queried; sleep 300")
	agent := waitRunning(t, h, "agent")
	waitWorkspaceFile(t, h.Workspace, "queried")
	h.MustDocker("kill", agent)
	start := time.Now()
	res := wait()
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the run took %s to end after the agent was killed", d.Round(time.Second))
	}
	if res.ExitCode != 137 {
		t.Errorf("abox run exited %d, want the killed agent's 137:\n%s", res.ExitCode, res)
	}
	runs := runRecords(t, h)
	if len(runs) != 1 || runs[0]["exit_code"] != float64(137) || runs[0]["outcome"] != "exited" {
		t.Fatalf("runs = %v, want one exited run with exit code 137", runs)
	}
	hv, err := telemetry.ReadHarvest(filepath.Join(runs[0]["run_dir"].(string), "netd"))
	if err != nil || hv.Counters == nil || !strings.Contains(strings.Join(namesOf(hv.DNS), " "), "before-agent-kill.test") {
		t.Errorf("harvest: %v; want netd's counters and the query made before the kill", err)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

// TestFaultDockerdRestart: the Docker daemon restarts between `abox up` and `abox run`. The
// profile's gateway runs with --restart unless-stopped, so it comes back with the daemon and the
// next run's MCP call works, leaving nothing half-made. A gateway that stays down (stopped, as
// after a daemon restart without its policy) refuses the run before anything starts, naming it
// with a hint, and the run after `abox up` works.
//
// It restarts the shared daemon, so it runs only with ABOX_E2E_DISRUPTIVE=1 (as .ci/run sets)
// and only while no other Go test binary is running; with that set, other binaries that do not
// finish within ten minutes fail it rather than skip it.
func TestFaultDockerdRestart(t *testing.T) {
	if os.Getenv("ABOX_E2E_DISRUPTIVE") != "1" {
		t.Skip("restarts the shared Docker daemon: set ABOX_E2E_DISRUPTIVE=1 on a machine running no other e2e tests")
	}
	waitAlone(t)
	h := harness.Setup(t)
	h.WriteConfig(h.DefaultConfig())
	stub := harness.ImageID(t, harness.MCPStubImage(t))
	writeFile(t, filepath.Join(h.ConfigHome, "custom-servers.yaml"), "echo:\n  image: "+stub+"\n  pin: false\n  tools: [echo]\n")
	h.WriteManifest("version: 1\nproject: restart\nprofile: " + h.Profile + "\nservers: [echo]\n")
	mustAbox(t, h, "up", "--yes")
	restartDockerd(t)
	gw := "abox-gw-" + h.Profile
	if !pollUntil(time.Minute, func() bool {
		return strings.TrimSpace(h.Docker("inspect", "--format", "{{.State.Running}}", gw).Stdout) == "true"
	}) {
		t.Fatalf("the gateway %s did not come back with the daemon (its restart policy is unless-stopped)", gw)
	}
	res := h.Abox("run", `claude mcp-call call echo '{"text":"after the restart"}'`)
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "after the restart") {
		t.Errorf("the run after a daemon restart, the gateway back: %s", res)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("the run after the restart left containers: %v", left)
	}

	h.MustDocker("stop", gw)
	res = h.Abox("run", `claude mcp-call call echo '{"text":"gateway down"}'`)
	refusal := "error: the gateway " + gw + " of profile " + h.Profile + " is not running, so the agent's MCP tools would fail"
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, refusal) || !strings.Contains(res.Stderr, "↳ run `abox up` to start it") {
		t.Errorf("the run with the gateway stopped: %s\nwant exit 1 with %q and its hint", res, refusal)
	}
	if strings.Contains(agentOutput(res.Stdout), "gateway down") {
		t.Error("the agent ran while the gateway was down")
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("the refused run left containers: %v", left)
	}
	mustAbox(t, h, "up", "--yes")
	res = h.Abox("run", `claude mcp-call call echo '{"text":"after abox up"}'`)
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "after abox up") {
		t.Errorf("no working run after the daemon restart: %s", res)
	}
	if left := stagedFiles(h.StateHome); len(left) != 0 {
		t.Errorf("staged files left: %v", left)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}

// waitAlone waits, for up to ten minutes, until this is the only Go test binary running on the
// machine (any of them may be using the daemon), and fails the test otherwise: it runs only
// where ABOX_E2E_DISRUPTIVE=1 says this machine's daemon is the tests' to restart.
func waitAlone(t *testing.T) {
	t.Helper()
	others := func() []string {
		var out []string
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			pid, _ := strconv.Atoi(filepath.Base(p))
			exe, _ := os.Readlink(p + "/exe")
			if pid != os.Getpid() && strings.HasSuffix(strings.TrimSuffix(exe, " (deleted)"), ".test") {
				out = append(out, exe)
			}
		}
		return out
	}
	if !pollUntil(10*time.Minute, func() bool { return len(others()) == 0 }) {
		t.Fatalf("other Go test binaries are still running after ten minutes (%v): not restarting the shared daemon under them", others())
	}
}

// restartDockerd stops the daemon named by /var/run/docker.pid and starts it again with
// e2e/setup.sh, which starts dockerd when `docker info` fails.
func restartDockerd(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile("/var/run/docker.pid")
	if err != nil {
		t.Fatalf("no dockerd pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stopping dockerd %d: %v", pid, err)
	}
	if !pollUntil(2*time.Minute, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Fatalf("dockerd %d did not stop", pid)
	}
	setup, _ := filepath.Abs("setup.sh")
	out, err := exec.Command("bash", setup).CombinedOutput()
	if err != nil {
		t.Fatalf("restarting dockerd with setup.sh: %v\n%s", err, out)
	}
	t.Logf("dockerd restarted:\n%s", out)
}
