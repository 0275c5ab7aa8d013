//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
)

// The rest of the lifecycle: shell on a terminal, logs, nuke.

func TestShellOnATerminal(t *testing.T) {
	h := harness.Setup(t)
	upProject(t, h, "shell", nil, "")
	// script(1) gives abox a pseudo-terminal, as a user's terminal would.
	cmd := exec.Command("script", "-qec", harness.AboxBinary(t)+" shell", "/dev/null")
	cmd.Dir, cmd.Env = h.Workspace, h.Env()
	// The docker CLI discards input typed before it puts the terminal in raw mode, as a user's
	// early keystrokes are: type once the shell runs.
	stdin, _ := cmd.StdinPipe()
	go func() {
		waitRunning(t, h, "agent")
		time.Sleep(2 * time.Second)
		stdin.Write([]byte("id -u; echo shell-was-here > from-shell.txt; exit 3\n"))
	}()
	out, err := cmd.CombinedOutput()
	stdin.Close()
	h.WaitAfterRun()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 3 || !strings.Contains(string(out), "1000") {
		t.Fatalf("abox shell exited %d, want the shell's 3 and uid 1000:\n%s", code, out)
	}
	if data, _ := os.ReadFile(filepath.Join(h.Workspace, "from-shell.txt")); string(data) != "shell-was-here\n" {
		t.Errorf("the shell's file is %q", data)
	}
	runs := runRecords(t, h)
	if len(runs) != 1 || runs[0]["kind"] != "shell" || runs[0]["permission_mode"] != "interactive" {
		t.Errorf("run record = %v, want one interactive shell", runs)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers left after the shell: %v", left)
	}
	// Without a terminal, shell refuses with a hint instead of hanging.
	if res := h.Abox("shell"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "needs a terminal") {
		t.Errorf("abox shell without a terminal: %s", res)
	}
}

func TestLogsShowRunsAndTranscripts(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "logs", nil, "")
	if res := h.Abox("run", "echo line-from-the-agent; echo '::tool_use name=Bash'"); !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	res := h.Abox("logs", "--runs", "--json")
	var runs []struct {
		ID        string `json:"id"`
		SessionID string `json:"session_id"`
		ToolCalls int    `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &runs); err != nil || len(runs) != 1 || runs[0].SessionID == "" || runs[0].ToolCalls != 1 {
		t.Fatalf("abox logs --runs --json = %v, %v:\n%s", runs, err, res)
	}
	table := h.Abox("logs")
	if !strings.Contains(table.Stdout, runs[0].ID) || !strings.Contains(table.Stdout, runs[0].SessionID) {
		t.Errorf("abox logs table lacks the run or its session:\n%s", table.Stdout)
	}
	tr := h.Abox("logs", "--transcript", runs[0].ID[:4])
	for _, want := range []string{"session " + runs[0].SessionID, "line-from-the-agent", "→ Bash", "result: success"} {
		if !strings.Contains(tr.Stdout, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr.Stdout)
		}
	}
	if res := h.Abox("logs", "--transcript", "nosuchrun"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "abox logs --runs") {
		t.Errorf("unknown transcript: %s", res)
	}
}

func TestNukeRemovesOnlyThisProject(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "nuked", nil, "")
	ws2 := filepath.Join(h.Dir, "kept")
	os.MkdirAll(ws2, 0o755)
	os.Chown(ws2, 1000, 1000)
	os.WriteFile(filepath.Join(ws2, "agentbox.yaml"), []byte("version: 1\nproject: kept\nprofile: "+h.Profile+"\n"), 0o644)
	if res := h.AboxIn(ws2, "up", "--yes"); !res.OK() {
		t.Fatalf("abox up (kept): %s", res)
	}
	for _, dir := range []string{h.Workspace, ws2} {
		if res := h.AboxIn(dir, "run", "--keep", "true"); !res.OK() {
			t.Fatalf("abox run --keep: %s", res)
		}
	}
	if len(projectContainers(h)) != 2 {
		t.Fatalf("want the kept agent and netd of the first project, got %v", projectContainers(h))
	}
	res := h.Abox("nuke", "--yes")
	if !res.OK() || !strings.Contains(res.Stdout, "kept the Claude login volume") {
		t.Fatalf("abox nuke --yes: %s", res)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("nuke left containers of the project: %v", left)
	}
	others := h.Docker("ps", "-a", "--filter", "label=abox.project=kept", "--format", "{{.Names}}")
	if len(strings.Fields(others.Stdout)) != 2 {
		t.Errorf("nuke touched another project's containers: %q", others.Stdout)
	}
	state := filepath.Join(h.StateHome, "projects", h.ProjectHash())
	for _, gone := range []string{filepath.Join(state, "artifacts"), filepath.Join(state, "approved.yaml"), filepath.Join(h.Workspace, ".devcontainer")} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("%s survived nuke", gone)
		}
	}
	if _, err := os.Stat(filepath.Join(h.Workspace, "agentbox.yaml")); err != nil {
		t.Errorf("nuke removed the manifest: %v", err)
	}
	vol := "abox-claude-" + h.ProjectHash()
	if res := h.Docker("volume", "inspect", vol); !res.OK() {
		t.Errorf("the login volume was removed without being asked for")
	}
	if res := h.Abox("nuke", "--yes", "--include-auth"); !res.OK() {
		t.Fatalf("abox nuke --include-auth: %s", res)
	}
	if res := h.Docker("volume", "inspect", vol); res.OK() {
		t.Errorf("--include-auth kept the login volume")
	}
	h.Docker(append([]string{"rm", "-f", "-v"}, strings.Fields(others.Stdout)...)...)
}
