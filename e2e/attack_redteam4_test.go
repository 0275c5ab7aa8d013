//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// Red team 4: attacks on the watch — what the agent leaves in the workspace for the host's tools
// (or for git) to run, and whether the live run's summary, doctor and an isolated run's review
// say so. A test that fails shows a hole; each asserts the safe behaviour: reported by the live
// run and doctor, marked "!" by `abox diff`. The git paths joined as text (include.path,
// core.hooksPath, gitdir:, commondir through links) are another engineer's and not attacked here.

// red4Plant is a file the agent leaves and what on the host reads it.
type red4Plant struct{ path, content, reader string }

// red4Script writes each plant, then says so.
func red4Script(plants []red4Plant) string {
	var lines []string
	for _, p := range plants {
		lines = append(lines, `mkdir -p "$(dirname `+shq(p.path)+`)" && printf '%s' `+shq(p.content)+` > `+shq(p.path))
	}
	return strings.Join(append(lines, "echo planted"), "\n")
}

// red4Live plants in a live run and fails the test for each plant the run's summary or doctor's
// workspace.exec-surface does not name.
func red4Live(t *testing.T, h *harness.H, plants []red4Plant) {
	t.Helper()
	res := h.Abox("run", red4Script(plants))
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "planted") {
		t.Fatalf("abox run: %s", res)
	}
	surface := doctorChecks(t, h)["workspace.exec-surface"]
	data := jsonOf(surface.Data)
	for _, p := range plants {
		if !strings.Contains(res.Stderr, " "+p.path) {
			t.Errorf("live: the run's summary does not name %s (read by %s)", p.path, p.reader)
		}
		if !strings.Contains(data, `"`+p.path+`"`) {
			t.Errorf("live: doctor's workspace.exec-surface does not name %s (read by %s)", p.path, p.reader)
		}
	}
	t.Logf("the live run's summary:\n%s", res.Stderr)
}

// red4Isolated plants in an isolated run and fails the test for each plant `abox diff` does not
// mark "!".
func red4Isolated(t *testing.T, h *harness.H, plants []red4Plant) {
	t.Helper()
	before := isolatedBranches(t, h)
	res := h.Abox("run", "--isolated", red4Script(plants))
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "planted") {
		t.Fatalf("abox run --isolated: %s", res)
	}
	id := ""
	for r := range isolatedBranches(t, h) {
		if _, old := before[r]; !old {
			id = r
		}
	}
	if id == "" {
		t.Fatalf("no new isolated run recorded")
	}
	diff := h.Abox("diff", id)
	if !diff.OK() {
		t.Fatalf("abox diff: %s", diff)
	}
	for _, p := range plants {
		if !red4Marked(diff.Stdout, p.path) {
			t.Errorf("isolated: abox diff does not mark %s (read by %s)", p.path, p.reader)
		}
	}
	t.Logf("abox diff:\n%s", diff.Stdout)
}

// red4Marked reports whether the diff's line for path is marked ("!" or "✖").
func red4Marked(diff, path string) bool {
	for _, l := range strings.Split(diff, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[2] == path {
			return f[0] == "!" || f[0] == "✖"
		}
	}
	return false
}

// red4Repo makes the workspace a git repository with files committed, owned by the agent's uid.
func red4Repo(t *testing.T, h *harness.H, files map[string]string, links map[string]string) {
	t.Helper()
	for rel, data := range files {
		workspaceFile(t, h.Workspace, rel, data)
	}
	for rel, target := range links {
		if err := os.Symlink(target, filepath.Join(h.Workspace, rel)); err != nil {
			t.Fatal(err)
		}
	}
	gitRepo(t, h, nil)
}

// TestAttackRedTeam4HardLinkedMakefile: the agent hard-links notes.txt to the Makefile (no
// content changes), then, in a later run, writes only notes.txt. The watch hashes the Makefile's
// content, so the second run reports it changed. Holds.
func TestAttackRedTeam4HardLinkedMakefile(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	red4Repo(t, h, map[string]string{"README": "hello\n", "Makefile": "all:\n\ttrue\n"}, nil)
	upProject(t, h, "rt4hardlink", nil, "")
	agentOwns(t, h)
	plantRun(t, h, `ln Makefile notes.txt`)
	res := plantRun(t, h, `printf 'all:\n\tsh /workspace/evil.sh\n' > notes.txt`)
	summaryNames(t, res, "changed Makefile")
}

// TestAttackRedTeam4IncludeIfConditions: the agent includes a config of its own only under
// conditions (includeIf onbranch:, gitdir: of another path, hasconfig:), which git may or may not
// meet on the host. The watch reads every include as if its condition held, so core.sshCommand
// and core.fsmonitor in them are reported. Holds.
func TestAttackRedTeam4IncludeIfConditions(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	red4Repo(t, h, map[string]string{"README": "hello\n"}, nil)
	upProject(t, h, "rt4includeif", nil, "")
	agentOwns(t, h)
	res := plantRun(t, h,
		`printf '[core]\n\tsshCommand = sh /workspace/evil.sh\n' > .git/branch.cfg`,
		`printf '[core]\n\tfsmonitor = /workspace/evil.sh\n' > .git/other.cfg`,
		`printf '[includeIf "onbranch:release/**"]\n\tpath = branch.cfg\n[includeIf "hasconfig:remote.*.url:https://github.com/**"]\n\tpath = other.cfg\n' >> .git/config`,
	)
	summaryNames(t, res, "core.sshcommand = sh /workspace/evil.sh", "core.fsmonitor = /workspace/evil.sh")
}
