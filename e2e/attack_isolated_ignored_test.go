//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestAttackIsolatedReplacesIgnoredEnv: the user's checkout holds a .env with a secret that
// .gitignore ignores; as an untracked file it never reaches the clone. The agent of an isolated
// run commits a .env of its own. git merge overwrites an ignored file unasked, so the run's
// summary must say merge refuses .env, `abox diff` mark it "✖" as replacing the user's ignored
// file, and `abox merge` refuse it without --force, naming it, with a hint naming --force and
// `abox diff`, the user's .env untouched. Forced, the merge writes the agent's .env over the
// user's: the attack is real.
func TestAttackIsolatedReplacesIgnoredEnv(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	gitRepo(t, h, map[string]string{"README": "hello\n", ".gitignore": ".env\n"})
	userEnv := "TOKEN=user-ignored-secret\n"
	workspaceFile(t, h.Workspace, ".env", userEnv)
	upProject(t, h, "isoignored", nil, "")
	res := h.Abox("run", "--isolated", strings.Join([]string{
		`[ -e .env ] && echo env-present || echo env-absent`,
		`printf 'TOKEN=agent-chosen\n' > .env && git add --force .env`,
		`git -c core.hooksPath=/dev/null -c user.name=agent -c user.email=agent@example.invalid commit --quiet -m "agent: config"`,
		`echo planted`,
	}, "\n"))
	out := agentOutput(res.Stdout)
	if !res.OK() || !strings.Contains(out, "planted") {
		t.Fatalf("abox run --isolated: %s\nagent:\n%s", res, out)
	}
	if !strings.Contains(out, "env-absent") {
		t.Errorf("the user's ignored .env reached the clone:\n%s", out)
	}
	if !strings.Contains(res.Stderr, "abox merge refuses without --force: .env") {
		t.Errorf("the run's summary does not say merge refuses .env:\n%s", res.Stderr)
	}
	branches := isolatedBranches(t, h)
	if len(branches) != 1 {
		t.Fatalf("isolated runs recorded: %v, want 1", branches)
	}
	var id string
	for id = range branches {
	}

	diff := h.Abox("diff", id)
	if !diff.OK() || !strings.Contains(diff.Stdout, "✖ A .env  (execution-adjacent: Bun, pipenv, docker compose, Vite, Next.js, Flask (dotenv); replaces your .env, which git ignores: merge would overwrite it)") {
		t.Errorf("abox diff does not mark .env as replacing the user's ignored file:\n%s", diff)
	}
	head := repoGit(t, h, "rev-parse", "HEAD")
	refused := h.Abox("merge", id)
	if refused.OK() || !strings.Contains(refused.Stderr, ".env (replaces your .env") ||
		!strings.Contains(refused.Stderr, "--force") || !strings.Contains(refused.Stderr, "abox diff "+id) {
		t.Errorf("abox merge over the user's ignored .env: %s; want a refusal naming .env, with a hint naming --force and abox diff", refused)
	}
	if got := readWorkspace(h.Workspace, ".env"); got != userEnv {
		t.Errorf("after the refused merge the user's .env reads %q", got)
	}
	if got := repoGit(t, h, "rev-parse", "HEAD"); got != head {
		t.Errorf("the refused merge moved HEAD to %s", got)
	}

	// The control: forced, the merge writes the agent's .env over the user's ignored one.
	if res := h.Abox("merge", id, "--force"); !res.OK() {
		t.Fatalf("abox merge --force: %s", res)
	}
	if got := readWorkspace(h.Workspace, ".env"); got != "TOKEN=agent-chosen\n" {
		t.Errorf("after abox merge --force the user's .env reads %q, want the agent's", got)
	}
}
