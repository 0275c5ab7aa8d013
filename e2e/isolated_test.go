//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/doctor"
)

// Isolated runs (issue 21) on the real daemon: each run's agent works in a private clone of the
// project, and its branch arrives in the user's repository after the run.

// gitRepo makes the test's workspace a git repository with files, committed, owned by the
// agent's uid as a user's checkout is; its parents are opened so that uid reaches it (abox runs
// git in it as its owner).
func gitRepo(t *testing.T, h *harness.H, files map[string]string) {
	t.Helper()
	for d := h.Dir; d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	for rel, data := range files {
		workspaceFile(t, h.Workspace, rel, data)
	}
	repoGit(t, h, "init", "--quiet", "--initial-branch=main")
	repoGit(t, h, "add", "--all")
	repoGit(t, h, "commit", "--quiet", "-m", "first")
	if out, err := exec.Command("chown", "-R", "1000:1000", h.Workspace).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
}

// repoGit runs git in the workspace as the test (root), trusting it.
func repoGit(t *testing.T, h *harness.H, args ...string) string {
	t.Helper()
	full := append([]string{"-c", "safe.directory=*", "-c", "user.name=User", "-c", "user.email=user@example.invalid", "-C", h.Workspace}, args...)
	cmd := exec.Command("git", full...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+h.Home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// isolatedBranches returns the branch of each isolated run the project recorded, by run id.
func isolatedBranches(t *testing.T, h *harness.H) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range runRecords(t, h) {
		if b, _ := r["branch"].(string); b != "" {
			out[r["id"].(string)] = b
		}
	}
	return out
}

// TestIsolatedParallelRuns: three isolated runs of one project at once, each with its own netd,
// agent and clone, each leaving a different file (one committed by the agent, one left
// uncommitted, one a changed CI workflow). SIGINT to the third, while all three are running,
// leaves the other two running to the end. All three branches arrive in the user's repository;
// the user's HEAD and working tree are untouched until `abox merge`, after which the file is
// there; `abox diff` lists the workflow first and flags it; the masked file never reached a
// clone; `abox logs --runs` shows each run's branch and state, and doctor the pending runs with
// the workflow flagged; nuke removes every clone, leaving the collected branch reviewable.
func TestIsolatedParallelRuns(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	gitRepo(t, h, map[string]string{"README": "hello\n", ".github/workflows/ci.yml": "on: push\n", ".env": "TOKEN=isolated-secret\n"})
	workspaceFile(t, h.Workspace, "notes.secret", "untracked-secret\n") // never committed
	upProject(t, h, "iso", nil, "mounts:\n  mask: [\".env\"]\n")
	head := repoGit(t, h, "rev-parse", "HEAD")
	status := repoGit(t, h, "status", "--porcelain")

	// The first two agents outlast the start of all three, so that they are live at once; the
	// third runs until it is interrupted.
	env := `[ -e .env ] && echo "env-present [$(cat .env)]" || echo env-absent; [ -e notes.secret ] && echo untracked-present || echo untracked-absent`
	committed := strings.Join([]string{env, "echo a > a.txt", "git add a.txt", "git -c user.name=agent -c user.email=agent@example.invalid commit --quiet -m 'agent: a'", "sleep 45", "echo done-a"}, "\n")
	uncommitted := strings.Join([]string{env, "echo b > b.txt", "sleep 45", "echo done-b"}, "\n")
	workflow := strings.Join([]string{env, "echo 'on: [push, pull_request]' > .github/workflows/ci.yml", "echo c > c.txt", "sleep 300", "echo done-c"}, "\n")

	var wg sync.WaitGroup
	results := make([]harness.Result, 2)
	for i, prompt := range []string{committed, uncommitted} {
		_, done := startAbox(t, h, h.Workspace, nil, "run", "--isolated", prompt)
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = done() }()
	}
	third, thirdDone := startAbox(t, h, h.Workspace, nil, "run", "--isolated", workflow)
	if !pollUntil(90*time.Second, func() bool { return len(runningAgents(h)) == 3 }) {
		t.Fatalf("three agents never ran at once: %v", runningAgents(h))
	}
	time.Sleep(2 * time.Second) // the third agent has written its files
	third.Process.Signal(syscall.SIGINT)
	res3 := thirdDone()
	if res3.ExitCode == 0 {
		t.Errorf("the interrupted run exited 0:\n%s", res3)
	}
	if n := len(runningAgents(h)); n != 2 {
		t.Errorf("after SIGINT to one run, %d agents run, want the other 2", n)
	}
	wg.Wait()
	for i, r := range results {
		if !r.OK() {
			t.Errorf("run %d: %s", i, r)
		}
		if out := agentOutput(r.Stdout); !strings.Contains(out, "env-absent") || !strings.Contains(out, "untracked-absent") || !strings.Contains(out, "done-") {
			t.Errorf("run %d: want the masked .env and the untracked file absent from the clone and the run finished:\n%s", i, out)
		}
	}

	branches := isolatedBranches(t, h)
	if len(branches) != 3 {
		t.Fatalf("%d isolated runs recorded, want 3: %v", len(branches), branches)
	}
	byFile := map[string]string{}
	for id, b := range branches {
		for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
			if hostGitOK(h, "cat-file", "-e", "refs/heads/"+b+":"+f) {
				byFile[f] = id
			}
		}
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if byFile[f] == "" {
			t.Errorf("no branch in the user's repository holds %s: %v", f, branches)
		}
	}
	if got := repoGit(t, h, "rev-parse", "HEAD"); got != head {
		t.Errorf("the user's HEAD moved: %s → %s", head, got)
	}
	if got := repoGit(t, h, "status", "--porcelain"); got != status {
		t.Errorf("the user's working tree changed:\n%s\nwant:\n%s", got, status)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if _, err := os.Lstat(filepath.Join(h.Workspace, f)); err == nil {
			t.Errorf("%s is in the user's working tree before any merge", f)
		}
	}
	if repoGit(t, h, "show", "refs/heads/"+branches[byFile["b.txt"]]+":.env") != "TOKEN=isolated-secret" {
		t.Errorf("the branch does not put the masked .env back as it was")
	}

	c := byFile["c.txt"]
	diff := h.Abox("diff", c, "--json")
	var d struct {
		Files []struct {
			Path string `json:"path"`
			Exec bool   `json:"exec_adjacent"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(diff.Stdout), &d); err != nil || len(d.Files) == 0 {
		t.Fatalf("abox diff %s --json: %v\n%s", c, err, diff)
	}
	if d.Files[0].Path != ".github/workflows/ci.yml" || !d.Files[0].Exec {
		t.Errorf("abox diff lists %+v first, want the workflow, flagged", d.Files[0])
	}
	if text := h.Abox("diff", c); !strings.HasPrefix(strings.SplitN(text.Stdout, "\n", 2)[1], "! ") {
		t.Errorf("abox diff's first file is not marked !:\n%s", text.Stdout)
	}

	iso := doctorChecks(t, h)["workspace.isolated-runs"]
	if iso.Status != doctor.Warn || !strings.Contains(iso.Detail, c+": .github/workflows/ci.yml") {
		t.Errorf("doctor's workspace.isolated-runs = %s: %s; want a warning naming %s's workflow", iso.Status, iso.Detail, c)
	}

	logs := h.Abox("logs", "--runs")
	for id, b := range branches {
		if !strings.Contains(logs.Stdout, "run "+id+": isolated, branch "+b+", pending") {
			t.Errorf("abox logs --runs does not show %s's branch pending:\n%s", id, logs.Stdout)
		}
	}

	a := byFile["a.txt"]
	if res := h.Abox("merge", a); !res.OK() {
		t.Fatalf("abox merge %s: %s", a, res)
	}
	if readWorkspace(h.Workspace, "a.txt") != "a\n" {
		t.Errorf("a.txt is not in the working tree after abox merge")
	}
	if got := h.Abox("logs", "--runs").Stdout; !strings.Contains(got, "run "+a+": isolated, branch "+branches[a]+", merged") {
		t.Errorf("abox logs --runs does not show %s merged:\n%s", a, got)
	}
	if res := h.Abox("discard", byFile["b.txt"]); !res.OK() {
		t.Errorf("abox discard: %s", res)
	}
	if hostGitOK(h, "rev-parse", "--verify", "--quiet", "refs/heads/"+branches[byFile["b.txt"]]) {
		t.Errorf("the discarded run's branch is still there")
	}

	// nuke sweeps the clones; the pending run's branch, already collected, is still reviewable.
	if res := h.Abox("nuke", "--yes", "--keep-auth"); !res.OK() || !strings.Contains(res.Stdout, "clones of isolated runs") {
		t.Errorf("abox nuke: %s", res)
	}
	clones := filepath.Join(h.StateHome, "projects", h.ProjectHash(), "clones")
	if ents, _ := os.ReadDir(clones); len(ents) != 0 {
		t.Errorf("clones left after nuke: %v", ents)
	}
	if res := h.Abox("diff", c); !res.OK() || !strings.Contains(res.Stdout, "ci.yml") {
		t.Errorf("abox diff after nuke: %s", res)
	}
}

// runningAgents lists the project's running agent containers.
func runningAgents(h *harness.H) []string {
	res := h.Docker("ps", "--filter", "label=abox.hash="+h.ProjectHash(), "--filter", "label=abox.role=agent",
		"--filter", "status=running", "--format", "{{.Names}}")
	return strings.Fields(res.Stdout)
}

// hostGitOK reports whether git succeeds in the workspace.
func hostGitOK(h *harness.H, args ...string) bool {
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", h.Workspace}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+h.Home)
	return cmd.Run() == nil
}

// TestIsolatedRefusesNoRepository: an isolated run of a project that is not a git repository
// is refused with the fix, before any container exists, and records no run.
func TestIsolatedRefusesNoRepository(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	upProject(t, h, "isonorepo", nil, "")
	res := h.Abox("run", "--isolated", "echo hi")
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "error: ") || !strings.Contains(res.Stderr, "is not a git repository") ||
		!strings.Contains(res.Stderr, "↳ run `git init`") {
		t.Errorf("abox run --isolated outside a repository: %s; want exit 1, the error and the git init hint", res)
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers exist after the refusal: %v", left)
	}
	if n := runCount(h); n != 0 {
		t.Errorf("%d runs recorded after the refusal", n)
	}
}
