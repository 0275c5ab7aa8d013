//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
	"github.com/aboxhq/abox/internal/policy"
)

// The agent runs as the workspace's owner, whoever that is: a workspace of uid 1000, a CI
// runner's 1001, anyone's 4242 and one of netd's own uid each let the agent create, change and
// commit files that the host then sees as that owner's, with no capability; root's is refused.

// ownedRepo makes the test's workspace a git repository with one commit, owned by uid:gid.
func ownedRepo(t *testing.T, h *harness.H, uid, gid int) {
	t.Helper()
	writeFile(t, filepath.Join(h.Workspace, "README.md"), "a project\n")
	hostGit(t, h.Workspace, "init", "-q")
	hostGit(t, h.Workspace, "add", "README.md")
	hostGit(t, h.Workspace, "-c", "user.email=host@example.invalid", "-c", "user.name=host", "commit", "-qm", "first")
	chownTree(t, h.Workspace, uid, gid)
}

func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "safe.directory=*"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ownerOf(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
}

// agentWorkScript creates, changes and commits files the way a coding agent would, and prints
// what the agent is.
var agentWorkScript = bashLines(
	`echo made > made.txt`,
	`echo "changed by the agent" >> README.md`,
	`git add -A && git -c user.email=agent@example.invalid -c user.name=agent commit -qm "by the agent" && echo "commit ok"`,
	`echo "ids $(awk '/^Uid:|^Gid:|^CapEff:/{printf "%s=%s ", $1, $2}' /proc/self/status)"`,
)

func TestAgentRunsAsWorkspaceOwner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		uid, gid int
	}{
		{"uid 1000", 1000, 1000},
		{"a CI runner's 1001", 1001, 121},
		{"uid 4242", 4242, 4242},
		{"netd's uid", policy.NetdUID, policy.NetdUID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := harness.Setup(t)
			other := h.StartServer("other.test")
			ownedRepo(t, h, tc.uid, tc.gid)
			upProject(t, h, "owner", nil, "")
			script := agentWorkScript
			if tc.uid == policy.NetdUID {
				// the agent has netd's default uid, and so netd does not: nothing is let out for it
				script = bashLines(script,
					`echo "docker-dns $(claude net dns 127.0.0.11:53 other.test)"`,
					`echo "direct $(claude net tcp `+other.IP+`:2222 hello)"`,
					`echo "tls $(claude net tls `+other.IP+`:443 other.test)"`)
			}
			res := h.Abox("run", script)
			if !res.OK() {
				t.Fatalf("abox run: %s", res)
			}
			out := agentOutput(res.Stdout)
			if !strings.Contains(out, "commit ok") {
				t.Errorf("the agent could not commit:\n%s", out)
			}
			want := fmt.Sprintf("Uid:=%d Gid:=%d CapEff:=0000000000000000", tc.uid, tc.gid)
			if !strings.Contains(strings.ReplaceAll(out, "\t", " "), "ids Uid:="+fmt.Sprint(tc.uid)) || !strings.Contains(out, "CapEff:=0000000000000000") {
				t.Errorf("the agent is not %s with no capability:\n%s", want, out)
			}
			for _, f := range []string{"made.txt", "README.md", ".git/index"} {
				if got := ownerOf(t, filepath.Join(h.Workspace, f)); got != fmt.Sprintf("%d:%d", tc.uid, tc.gid) {
					t.Errorf("%s is owned by %s on the host, want %d:%d", f, got, tc.uid, tc.gid)
				}
			}
			if log := hostGit(t, h.Workspace, "log", "--format=%s"); !strings.HasPrefix(log, "by the agent\n") {
				t.Errorf("git log on the host = %q, want the agent's commit first", log)
			}
			if tc.uid == policy.NetdUID {
				probesRefused(t, probes(t, out), "docker-dns", "direct", "tls")
				if ev := h.Traffic(other.Container); len(ev) != 0 {
					t.Errorf("an agent of netd's uid reached other.test: %v", ev)
				}
			}
		})
	}
}

// TestRootOwnedWorkspaceRefused: a workspace owned by root, with no agent.uid in config.yaml,
// is refused before anything is built or started, with the owner named and a hint.
func TestRootOwnedWorkspaceRefused(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	chownTree(t, h.Workspace, 0, 0)
	h.WriteConfig(h.DefaultConfig())
	h.WriteManifest("version: 1\nproject: rooted\nprofile: " + h.Profile + "\n")
	for _, cmd := range [][]string{{"up", "--yes"}, {"run", "true"}} {
		res := h.Abox(cmd...)
		if res.ExitCode != 1 || !strings.Contains(res.Stderr, "is owned by uid 0 (root), and abox never runs the agent as root") ||
			!strings.Contains(res.Stderr, "↳ chown the project to the user who works on it") {
			t.Errorf("abox %s: %s, want exit 1 naming the owner, with the hint", cmd[0], res)
		}
	}
	if left := projectContainers(h); len(left) != 0 {
		t.Errorf("containers made for a root-owned workspace: %v", left)
	}
}

// TestOwnerChangeKeepsLogin: a project whose workspace passes from uid 1000 to 4242 is refused
// until `abox up`, which rebuilds the agent for 4242 and gives it the ~/.claude volume: the
// login the 1000 agent left there is still there, and the 4242 agent owns and reads it.
func TestOwnerChangeKeepsLogin(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	ownedRepo(t, h, 1000, 1000)
	upProject(t, h, "handover", nil, "")
	const login = `{"claudeAiOauth":{"accessToken":"e2e-login-of-1000"}}`
	if res := h.Abox("run", `printf '%s' '`+login+`' > ~/.claude/.credentials.json && chmod 600 ~/.claude/.credentials.json`); !res.OK() {
		t.Fatalf("abox run as 1000: %s", res)
	}
	chownTree(t, h.Workspace, 4242, 4242)
	if res := h.Abox("run", "true"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "the sandbox was built for 1000:1000") {
		t.Errorf("abox run after the chown: %s, want a refusal until abox up", res)
	}
	mustAbox(t, h, "up", "--yes")
	res := h.Abox("run", `echo "login $(cat ~/.claude/.credentials.json)"; echo "owner $(stat -c %u:%g ~/.claude ~/.claude/.credentials.json | tr '\n' ' ')"`)
	if !res.OK() {
		t.Fatalf("abox run as 4242: %s", res)
	}
	out := agentOutput(res.Stdout)
	if !strings.Contains(out, "login "+login) {
		t.Errorf("the login did not survive the change of owner:\n%s", out)
	}
	if !strings.Contains(out, "owner 4242:4242 4242:4242") {
		t.Errorf("~/.claude is not 4242's:\n%s", out)
	}
}
