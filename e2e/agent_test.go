//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// Claude Code's side of the sandbox, with the stand-in claude as the agent: what persists
// between runs of a project and what does not, the settings and hook binary the agent cannot
// change, the login check, and sessions continued across runs.

// rtkConfig turns rtk on with source file: a tiny script stands in for the binary.
func rtkConfig(t *testing.T, h *harness.H, cfg harness.Config) harness.Config {
	t.Helper()
	path := filepath.Join(h.Dir, "rtk")
	script := []byte("#!/bin/sh\necho \"rtk-stand-in $*\"\n")
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	cfg.Extra["rtk"] = map[string]any{"enabled": true, "source": "file", "version": "0.43.0",
		"path": path, "sha256": hex.EncodeToString(sum[:])}
	return cfg
}

// mustRun runs a prompt in the workspace's project and returns the agent's output.
func mustRun(t *testing.T, h *harness.H, args ...string) string {
	t.Helper()
	res := h.Abox(append([]string{"run"}, args...)...)
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	return agentOutput(res.Stdout)
}

func TestAgentStatePersistsPerProject(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "persist", nil, "")
	out := mustRun(t, h, `echo "planted by persist" > ~/.claude.json && readlink ~/.claude.json
echo planted > ~/.config/planted
(echo "alias ls=evil" >> ~/.bashrc) 2>/dev/null || echo "bashrc read-only"`)
	if strings.TrimSpace(out) != "/home/agent/.claude/.claude.json\nbashrc read-only" {
		t.Fatalf("first run printed %q, want ~/.claude.json linked into the volume and ~/.bashrc read-only", out)
	}
	// A rebuilt image (rtk adds layers, so a new tag) and another abox up keep the volume.
	h.WriteConfig(rtkConfig(t, h, h.DefaultConfig()))
	if res := h.Abox("up", "--yes"); !res.OK() {
		t.Fatalf("abox up: %s", res)
	}
	out = mustRun(t, h, `cat ~/.claude.json ~/.claude/.claude.json; cat ~/.config/planted 2>/dev/null || echo "config fresh"`)
	if want := "planted by persist\nplanted by persist\nconfig fresh"; strings.TrimSpace(out) != want {
		t.Errorf("next run of the project sees %q, want ~/.claude.json kept and the rest of home fresh", out)
	}
	other := harness.Setup(t)
	upProject(t, other, "other", nil, "")
	out = mustRun(t, other, `cat ~/.claude.json 2>/dev/null || echo absent; ls -A ~/.claude`)
	if strings.Contains(out, "planted") || !strings.HasPrefix(out, "absent") {
		t.Errorf("another project sees %q, want no ~/.claude.json of the first", out)
	}
}

func TestRTKSettingsAndHookReadOnly(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	h.WriteConfig(rtkConfig(t, h, h.DefaultConfig()))
	h.WriteManifest("version: 1\nproject: rtk\nprofile: " + h.Profile + "\n")
	if res := h.Abox("up", "--yes"); !res.OK() {
		t.Fatalf("abox up: %s", res)
	}
	settings := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "artifacts", "agent", "settings.json")
	before, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		`echo "settings $STANDIN_SETTINGS"`,
		`grep -q '/usr/local/bin/rtk hook claude' "$STANDIN_SETTINGS" && echo "hook rendered"`,
		`cmp -s "$STANDIN_SETTINGS" /etc/claude-code/managed-settings.json && echo "managed same"`,
		`/usr/local/bin/rtk hook claude`,
		`for f in /opt/abox/settings.json /etc/claude-code/managed-settings.json /usr/local/bin/rtk; do`,
		`  (echo '{"disableAllHooks":true}' >> "$f") 2>/dev/null && echo "TAMPERED wrote $f"`,
		`  chmod 0777 "$f" 2>/dev/null && echo "TAMPERED chmod $f"`,
		`  rm -f "$f" 2>/dev/null; [ -e "$f" ] || echo "TAMPERED removed $f"`,
		`done`,
		`mv /usr/local/bin/rtk /tmp/rtk 2>/dev/null && echo "TAMPERED moved rtk"`,
		`mkdir /etc/claude-code/managed-settings.d 2>/dev/null && echo "TAMPERED drop-in dir"`,
		`mount -o remount,rw /opt/abox 2>/dev/null && echo "TAMPERED remount"`,
		`stat -c '%U %a %n' /usr/local/bin/rtk /etc/claude-code`,
	}, "\n")
	out := mustRun(t, h, script)
	for _, want := range []string{"settings /opt/abox/settings.json", "hook rendered", "managed same",
		"rtk-stand-in hook claude", "root 755 /usr/local/bin/rtk", "root 755 /etc/claude-code"} {
		if !strings.Contains(out, want) {
			t.Errorf("agent output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TAMPERED") {
		t.Errorf("the agent changed its settings or hook:\n%s", out)
	}
	if after, err := os.ReadFile(settings); err != nil || string(after) != string(before) {
		t.Errorf("settings.json on the host changed: %v\n%s", err, after)
	}
}

func TestAuthLoginCheck(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	cfg := h.DefaultConfig()
	cfg.Extra["agent_env"] = map[string]string{"STANDIN_REQUIRE_AUTH": "1"}
	h.WriteConfig(cfg)
	h.WriteManifest("version: 1\nproject: auth\nprofile: " + h.Profile + "\n")
	if res := h.Abox("up", "--yes"); !res.OK() {
		t.Fatalf("abox up: %s", res)
	}
	state := filepath.Join(h.StateHome, "projects", h.ProjectHash())
	runs := func() int {
		data, _ := os.ReadFile(filepath.Join(state, "runs.jsonl"))
		return strings.Count(string(data), "\n")
	}
	refused := func(when string, started bool) {
		t.Helper()
		before := runs()
		res := h.Abox("run", "touch prompt-ran")
		if res.OK() || !strings.Contains(res.Stderr, "error: Claude Code is not logged in") ||
			!strings.Contains(res.Stderr, "↳ run `abox shell` once") {
			t.Errorf("%s: abox run exited %d, want the login error and hint:\n%s", when, res.ExitCode, res)
		}
		if _, err := os.Stat(filepath.Join(h.Workspace, "prompt-ran")); err == nil {
			t.Errorf("%s: the agent ran its prompt", when)
		}
		if n := runs() - before; (n == 1) != started || n > 1 {
			t.Errorf("%s: %d run(s) recorded, want a started sandbox %v", when, n, started)
		}
	}
	refused("empty volume", false)

	// A login, as `abox shell` would leave it, makes the next run go ahead and be remembered.
	volume := "abox-claude-" + h.ProjectHash()
	login := func(cmd string) {
		t.Helper()
		res := h.Run(harness.RunOptions{Image: harness.BaseImageID(t), Mounts: []string{volume + ":/c"},
			Cmd: []string{"sh", "-c", cmd + " && chown -R 1000:1000 /c"}})
		if !res.OK() {
			t.Fatalf("seeding the volume: %s", res)
		}
	}
	login(`echo '{"claudeAiOauth":{}}' > /c/.credentials.json`)
	if out := mustRun(t, h, "echo logged-in"); strings.TrimSpace(out) != "logged-in" {
		t.Errorf("logged-in run printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(state, "claude-login.json")); err != nil {
		t.Errorf("the login was not remembered: %v", err)
	}

	// Logged out behind abox's back: the run starts, ends asking for /login, and abox says why.
	login(`rm /c/.credentials.json`)
	refused("logged out after a login", true)
	if _, err := os.Stat(filepath.Join(state, "claude-login.json")); err == nil {
		t.Error("the login is still remembered after the run ended logged out")
	}
	refused("and the run after", false)
}

func TestResumeContinue(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "resume", nil, "")
	mustRun(t, h, `echo first > note.txt`)
	runs := runRecords(t, h)
	first, _ := runs[0]["session_id"].(string)
	if first == "" {
		t.Fatalf("first run recorded no session: %v", runs[0])
	}
	prev := `echo "prev=$STANDIN_PREV_SESSION"; ls ~/.claude/projects/-workspace/"$STANDIN_PREV_SESSION".jsonl`
	out := mustRun(t, h, "--continue", prev)
	if !strings.Contains(out, "prev="+first+"\n") || !strings.Contains(out, first+".jsonl") {
		t.Errorf("--continue: the stand-in saw %q, want the first run's session %s and its file", out, first)
	}
	runs = runRecords(t, h)
	argv, err := os.ReadFile(filepath.Join(runs[1]["run_dir"].(string), "argv.json"))
	if err != nil || !strings.Contains(string(argv), `"--continue"`) {
		t.Errorf("the agent's argv lacks --continue (%v):\n%s", err, argv)
	}
	out = mustRun(t, h, "--resume", first, prev)
	if !strings.Contains(out, "prev="+first+"\n") {
		t.Errorf("--resume %s: the stand-in saw %q", first, out)
	}
	if res := h.Abox("logs", "--runs"); !res.OK() || !strings.Contains(res.Stdout, first) {
		t.Errorf("abox logs --runs does not show session %s:\n%s", first, res)
	}
	if res := h.Abox("run", "--resume=--dangerously-skip-permissions", "true"); res.OK() ||
		!strings.Contains(res.Stderr, "is not a session id") {
		t.Errorf("a flag as --resume id was not refused:\n%s", res)
	}
}
