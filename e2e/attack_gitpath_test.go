//go:build e2e

package e2e

import (
	"os/exec"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// TestAttackRedTeamLinkedInclude: issue 34 on a path git builds itself. The agent links
// .git/inc/link to sub/dir and includes inc/link/../evil.cfg from .git/config. Joined as text,
// that path names .git/inc/evil.cfg, a harmless decoy the agent writes too; git opens it as it
// is written, and the kernel climbs from where the link leads, to sub/evil.cfg, whose
// core.fsmonitor the host's next `git status` runs. The host's git, asked what it reads (git
// config --show-origin, which runs neither a hook nor the fsmonitor), must name sub's file, and
// the run's summary and doctor's git.tamper must report its fsmonitor.
func TestAttackRedTeamLinkedInclude(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	execWorkspace(t, h)
	upProject(t, h, "linkedinclude", nil, "")
	agentOwns(t, h)
	res := plantRun(t, h,
		`mkdir -p .git/inc sub/dir && ln -s ../../sub/dir .git/inc/link`,
		`printf '[core]\n\tbare = false\n' > .git/inc/evil.cfg`,
		`printf '[core]\n\tfsmonitor = /workspace/evil.sh\n' > sub/evil.cfg`,
		`printf '[include]\n\tpath = inc/link/../evil.cfg\n' >> .git/config`,
	)
	git := exec.Command("git", "-c", "safe.directory=*", "config", "--show-origin", "--get", "core.fsmonitor")
	git.Dir = h.Workspace
	git.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if out, err := git.Output(); err != nil || string(out) != "file:.git/inc/link/../evil.cfg\t/workspace/evil.sh\n" {
		t.Fatalf("the host's git reads core.fsmonitor = %q (%v); the attack is built for the linked sub/evil.cfg", out, err)
	}
	summaryNames(t, res, "core.fsmonitor = /workspace/evil.sh")
	gitTamperNames(t, h, "core.fsmonitor")
}
