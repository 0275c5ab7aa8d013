//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/doctor"
	"github.com/aboxhq/abox/internal/telemetry"
)

// Masks from inside: the agent floods the workspace so that the mask walk gives up, moves a
// masked file's directory so that the pattern no longer matches, reaches a masked file through
// a hard link, and swaps .git for one without the masked hooks. Each is a run, then the next.

// chownWorkspace gives the workspace to the agent's uid, as a user's checkout is theirs.
func chownWorkspace(t *testing.T, h *harness.H) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", "1000:1000", h.Workspace).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

// TestAttackMaskExhaustion: the agent fills a directory that sorts before .env with more
// entries than the mask walk looks at. The next run is refused (exit 3) before any container
// is created, naming the directory; the agent never runs, so the canary is not printed.
func TestAttackMaskExhaustion(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	const canary = "canary-exhaustion"
	workspaceFile(t, h.Workspace, ".env", "TOKEN="+canary+"\n")
	chownWorkspace(t, h)
	cfg := h.DefaultConfig()
	cfg.Extra["limits"] = map[string]any{"pids": 1024, "memory": "4g", "mask_walk": 5000}
	upProject(t, h, "exhaust", nil, "")
	h.WriteConfig(cfg) // a user's own limit: the walk bound applies from the next run on
	out, _ := attackRun(t, h, `mkdir .aaa && cd .aaa && seq 1 5010 | xargs touch && echo "flooded $(ls | wc -l)"`)
	if !strings.Contains(out, "flooded 5010") {
		t.Fatalf("the flood did not happen:\n%s", out)
	}
	shim := newDockerShim(t, "", 0)
	_, wait := startAbox(t, h, h.Workspace, shim.env(h), "run", "cat .env")
	res := wait()
	if res.ExitCode != 3 || !strings.Contains(res.Stderr, "more than 5000 entries") || !strings.Contains(res.Stderr, "5010 of them in .aaa") ||
		!strings.Contains(res.Stderr, "↳ remove what does not belong in .aaa, or raise limits.mask_walk") {
		t.Errorf("abox run after the flood: %s\nwant exit 3 naming .aaa, with a hint", res)
	}
	if strings.Contains(res.Stdout+res.Stderr, canary) {
		t.Errorf("the canary was printed:\n%s", res)
	}
	for _, c := range shim.calls() {
		if f := strings.Fields(c); len(f) > 0 && (f[0] == "run" || f[0] == "create" || f[0] == "start") {
			t.Errorf("abox ran `docker %s` for a refused run", c)
		}
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers after the refusal: %v", left)
	}
}

// TestAttackMaskMoved: the agent renames the directory of a masked file and of a masked
// directory (the mounts move along, so it reads nothing during the run). The run reports
// where the content went, and the next run masks it there: the canary is unreadable.
func TestAttackMaskMoved(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	const canary = "canary-moved"
	workspaceFile(t, h.Workspace, "config/master.key", canary+"\n")
	workspaceFile(t, h.Workspace, "deploy/keys/id.pem", canary+"\n")
	chownWorkspace(t, h)
	upProject(t, h, "moved", nil, "mounts:\n  mask: [config/master.key, deploy/keys/]\n")
	res := h.Abox("run", strings.Join([]string{shellProbe,
		`try mv-config mv config config.moved`,
		`try mv-deploy mv deploy deploy.moved`,
		`echo "during [$(cat config.moved/master.key deploy.moved/keys/id.pem 2>/dev/null | tr -d '\n')]"`,
	}, "\n"))
	if !res.OK() {
		t.Fatalf("abox run: %s", res)
	}
	out := agentOutput(res.Stdout)
	probesOK(t, probes(t, out), "mv-config", "mv-deploy")
	if !strings.Contains(out, "during []") {
		t.Errorf("the agent read the moved content during the run:\n%s", out)
	}
	for _, want := range []string{"mask moved: config/master.key; the masked content is now at config.moved/master.key",
		"mask moved: deploy/keys; the masked content is now at deploy.moved/keys"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("the summary lacks %q:\n%s", want, res.Stderr)
		}
	}
	out, _ = attackRun(t, h,
		`echo "after [$(cat config.moved/master.key deploy.moved/keys/id.pem 2>/dev/null | tr -d '\n')]"`,
		`echo "ls [$(ls -A deploy.moved/keys)]"`,
		`grep -rqs `+canary+` /workspace && echo leaked || echo sealed`)
	if !strings.Contains(out, "after []") || !strings.Contains(out, "ls []") || !strings.Contains(out, "sealed") {
		t.Errorf("the next run read the moved content:\n%s", out)
	}
	for _, rel := range []string{"config.moved/master.key", "deploy.moved/keys/id.pem"} {
		if got := readWorkspace(h.Workspace, rel); got != canary+"\n" {
			t.Errorf("host %s = %q, want it intact", rel, got)
		}
	}
}

// TestAttackMaskHardLink: hard links to a masked file and to a file in a masked directory,
// made on the host between runs, read as empty in the next run; the agent cannot make one
// from inside; and a masked file with a link outside the workspace, where abox cannot look,
// is refused by name.
func TestAttackMaskHardLink(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	const canary = "canary-link"
	ws := h.Workspace
	workspaceFile(t, ws, ".env", "TOKEN="+canary+"\n")
	workspaceFile(t, ws, "secrets/key.pem", canary+"\n")
	os.MkdirAll(filepath.Join(ws, "notes"), 0o755)
	chownWorkspace(t, h)
	upProject(t, h, "hardlink", nil, "mounts:\n  mask: [\"secrets/\"]\n")
	for from, to := range map[string]string{".env": "notes/env-copy", "secrets/key.pem": "key-copy.pem"} {
		if err := os.Link(filepath.Join(ws, from), filepath.Join(ws, to)); err != nil {
			t.Fatal(err)
		}
	}
	out, got := attackRun(t, h, shellProbe,
		`echo "read [$(cat notes/env-copy key-copy.pem 2>/dev/null | tr -d '\n')]"`,
		`try ln-env ln .env inside-env`,
		`try ln-copy ln notes/env-copy inside-copy`,
		`try ln-key ln key-copy.pem inside-key`,
		`grep -rqs `+canary+` /workspace && echo 'grep-canary {"ok":true}' || echo 'grep-canary {"ok":false}'`)
	if !strings.Contains(out, "read []") {
		t.Errorf("a hard link of masked content was readable:\n%s", out)
	}
	probesRefused(t, got, "ln-env", "ln-copy", "ln-key", "grep-canary")
	for _, rel := range []string{"inside-env", "inside-copy", "inside-key"} {
		if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
			t.Errorf("%s exists on the host after the run", rel)
		}
	}
	if err := os.Link(filepath.Join(ws, ".env"), filepath.Join(h.Dir, "outside-env")); err != nil {
		t.Fatal(err)
	}
	res := h.Abox("run", "cat .env notes/env-copy")
	if res.ExitCode != 3 || !strings.Contains(res.Stderr, "masked .env has 3 hard links but only 2 are in the workspace") ||
		!strings.Contains(res.Stderr, "↳ give it a single link") || strings.Contains(res.Stdout, canary) {
		t.Errorf("abox run with a link outside the workspace: %s\nwant exit 3 naming .env", res)
	}
}

// TestAttackMaskGitSwap: the agent moves .git aside (the masked hooks directory moves along),
// builds a new .git from a copy and plants an executable post-checkout hook in it. Teardown
// moves the planted hooks out of the workspace into the run's quarantine, without execute
// bits; the run fails and says so; the run record, `abox logs --runs` and doctor report it,
// doctor until the quarantine is removed; and the next run masks the original where it is.
func TestAttackMaskGitSwap(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	ws := h.Workspace
	workspaceFile(t, ws, ".git/HEAD", "ref: refs/heads/main\n")
	workspaceFile(t, ws, ".git/config", "[core]\n\trepositoryformatversion = 0\n")
	workspaceFile(t, ws, ".git/hooks/pre-commit.sample", "#!/bin/sh\nexit 0\n")
	chownWorkspace(t, h)
	upProject(t, h, "gitswap", nil, "")
	res := h.Abox("run", strings.Join([]string{
		`mv .git .git.moved && mkdir .git && cp -a .git.moved/. .git/ && chmod u+w .git/hooks`,
		`printf '#!/bin/sh\necho pwned\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`,
		`ls -l .git/hooks/post-checkout >/dev/null && echo swapped`,
	}, "\n"))
	if res.ExitCode != 1 || !strings.Contains(agentOutput(res.Stdout), "swapped") {
		t.Fatalf("abox run: %s\nwant the swap done and the run failed", res)
	}
	for _, want := range []string{"mask replaced: .git/hooks holds a directory the agent put there; abox moved it to ",
		"the masked content is now at .git.moved/hooks", "error: the agent put something in place of 1 masked path(s)"} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("abox run's output lacks %q:\n%s", want, res.Stderr)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git/hooks")); err == nil {
		t.Error("the planted .git/hooks is still in the workspace")
	}
	if _, err := os.Stat(filepath.Join(ws, ".git.moved/hooks/pre-commit.sample")); err != nil {
		t.Errorf("the original hooks: %v", err)
	}

	rec := lastRunRecord(t, h)
	if len(rec.Masks) != 1 || rec.Masks[0].Kind != telemetry.MaskPlanted || rec.Masks[0].Mask != ".git/hooks" || rec.Masks[0].Quarantine == "" {
		t.Fatalf("abox logs --runs --json: masks = %+v, want the planted .git/hooks", rec.Masks)
	}
	quarantined := filepath.Join(rec.Masks[0].Quarantine, "post-checkout")
	if fi, err := os.Stat(quarantined); err != nil || fi.Mode()&0o111 != 0 {
		t.Errorf("the quarantined hook: %v, %v; want it there, not executable", fi, err)
	}
	if text := h.Abox("logs", "--runs"); !strings.Contains(text.Stdout, "run "+rec.ID+": mask replaced: .git/hooks") {
		t.Errorf("abox logs --runs lacks the event:\n%s", text)
	}
	qdir := filepath.Dir(rec.Masks[0].Quarantine)
	check := doctorChecks(t, h)["workspace.masks-intact"]
	if check.Status != doctor.Fail || !strings.Contains(check.Hint, "rm -r "+qdir) || !strings.Contains(check.Detail, ".git/hooks") {
		t.Errorf("workspace.masks-intact = %s (%s / %s), want a failure naming the quarantine", check.Status, check.Detail, check.Hint)
	}
	if err := os.RemoveAll(qdir); err != nil {
		t.Fatal(err)
	}
	if check := doctorChecks(t, h)["workspace.masks-intact"]; check.Status == doctor.Fail {
		t.Errorf("workspace.masks-intact after the quarantine was removed = %s (%s)", check.Status, check.Detail)
	}
	out, _ := attackRun(t, h, `echo "hooks [$(ls -A .git.moved/hooks)]"`)
	if !strings.Contains(out, "hooks []") {
		t.Errorf("the next run sees the original hooks where they moved:\n%s", out)
	}
}

// lastRunRecord returns the newest run of `abox logs --runs --json`.
func lastRunRecord(t *testing.T, h *harness.H) telemetry.RunRecord {
	t.Helper()
	res := h.Abox("logs", "--runs", "--json")
	var runs []telemetry.RunRecord
	if err := json.Unmarshal([]byte(res.Stdout), &runs); err != nil || len(runs) == 0 {
		t.Fatalf("abox logs --runs --json: %v\n%s", err, res)
	}
	return runs[0]
}
