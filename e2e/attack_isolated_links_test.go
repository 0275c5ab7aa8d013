//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aboxhq/abox/e2e/harness"
)

// linkPairScript is issue 34's attack, as the agent commits it in its clone: y, depth names
// below the top, is a link to the top; notes.txt names y, then as many "..", then target (an
// absolute host path): joined as text, the ".." cancel y and the names above it and the rest
// reads as a path inside the repository. Walked as the kernel walks it, notes.txt climbs from
// the top to / (depth is at least the workspace's), then to target. hooks leads into .git
// through y.
func linkPairScript(depth int, target string) string {
	deep := strings.Repeat("a/", depth-1)
	return strings.Join([]string{
		`set -eu`,
		`mkdir -p ` + deep,
		`ln -s ` + strings.TrimSuffix(strings.Repeat("../", depth-1), "/") + ` ` + deep + `y`,
		`ln -s ` + shq(deep+"y/"+strings.Repeat("../", depth)+strings.TrimPrefix(target, "/")) + ` notes.txt`,
		`ln -s ` + deep + `y/.git/hooks hooks`,
		`echo linked`,
	}, "\n")
}

// TestAttackIsolatedLinkThroughLink: issue 34. An isolated agent commits notes.txt, a link that
// joins as text to a path inside the repository and leads, through its other link y, to a file
// outside it (the user's ~/.bashrc in the report; a file of the test's own here), and hooks,
// which leads into .git through y. The run's summary says merge refuses them; `abox diff` says
// where each really leads, in text and --json; `abox merge` refuses both and leaves the user's
// tree and HEAD as they were. Forced, the merge writes the links, and an append to notes.txt on
// the host reaches the outside file: the refusal was of a link that really leads there.
func TestAttackIsolatedLinkThroughLink(t *testing.T) {
	t.Parallel()
	h := harness.Setup(t)
	_, outside := attackDirs(t, h)
	victim := filepath.Join(outside, "bashrc")
	if err := os.WriteFile(victim, []byte("# the user's own\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	gitRepo(t, h, map[string]string{"README": "hello\n"})
	upProject(t, h, "isolinks", nil, "")
	head := repoGit(t, h, "rev-parse", "HEAD")
	depth := 9
	for _, ws := range []string{h.Workspace, evalSymlinks(t, h.Workspace)} {
		depth = max(depth, strings.Count(ws, "/")+1)
	}

	res := h.Abox("run", "--isolated", linkPairScript(depth, victim))
	if !res.OK() || !strings.Contains(agentOutput(res.Stdout), "linked") {
		t.Fatalf("the linking run: %s", res)
	}
	if !strings.Contains(res.Stderr, "abox merge refuses without --force: hooks, notes.txt") {
		t.Errorf("the run's summary does not say merge refuses the links:\n%s", res.Stderr)
	}
	var id string
	for id = range isolatedBranches(t, h) {
	}

	diff := h.Abox("diff", id)
	for _, want := range []string{
		"; outside the repository: " + victim + ")\n",
		"✖ A hooks  (-> " + strings.Repeat("a/", depth-1) + "y/.git/hooks; into .git: .git/hooks)\n",
		"  A " + strings.Repeat("a/", depth-1) + "y  (-> " + strings.TrimSuffix(strings.Repeat("../", depth-1), "/") + "; leads to the repository's top)\n",
	} {
		if !diff.OK() || !strings.Contains(diff.Stdout, want) {
			t.Errorf("abox diff lacks %q:\n%s", want, diff)
		}
	}
	if !strings.Contains(diff.Stdout, "✖ A notes.txt  (-> ") {
		t.Errorf("abox diff does not flag notes.txt:\n%s", diff.Stdout)
	}
	js := h.Abox("diff", id, "--json")
	var d struct {
		Files []struct {
			Path  string `json:"path"`
			Leads struct{ Kind, Path string }
			Out   bool `json:"link_out"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(js.Stdout), &d); err != nil {
		t.Fatalf("abox diff --json: %v\n%s", err, js)
	}
	leads := map[string]string{}
	for _, f := range d.Files {
		leads[f.Path] = f.Leads.Kind + " " + f.Leads.Path
	}
	if leads["notes.txt"] != "outside "+victim || leads["hooks"] != "git .git/hooks" {
		t.Errorf("abox diff --json: notes.txt leads %q, hooks %q", leads["notes.txt"], leads["hooks"])
	}

	refused := h.Abox("merge", id)
	if refused.OK() || !strings.Contains(refused.Stderr, "outside the repository: "+victim) || !strings.Contains(refused.Stderr, "into .git: .git/hooks") {
		t.Errorf("abox merge of the link pair: %s; want a refusal of notes.txt and hooks", refused)
	}
	if got := repoGit(t, h, "rev-parse", "HEAD"); got != head {
		t.Errorf("the refused merge moved HEAD to %s", got)
	}
	if _, err := os.Lstat(filepath.Join(h.Workspace, "notes.txt")); err == nil {
		t.Error("the refused merge wrote notes.txt")
	}

	// Forced (or merged already, the control off), the links land as links, and lead where
	// abox said: the verdict was the kernel's.
	if res := h.Abox("merge", id, "--force"); !refused.OK() && !res.OK() {
		t.Fatalf("abox merge --force: %s", res)
	}
	f, err := os.OpenFile(filepath.Join(h.Workspace, "notes.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("notes.txt after the forced merge: %v", err)
	}
	f.WriteString("appended to notes.txt\n")
	f.Close()
	if got := readWorkspace(outside, "bashrc"); got != "# the user's own\nappended to notes.txt\n" {
		t.Errorf("an append to notes.txt did not reach the outside file (%q): the test's link pair does not lead there", got)
	}
	hooks, err1 := os.Stat(filepath.Join(h.Workspace, "hooks"))
	gitHooks, err2 := os.Stat(filepath.Join(h.Workspace, ".git", "hooks"))
	if err1 != nil || err2 != nil || !os.SameFile(hooks, gitHooks) {
		t.Errorf("hooks does not lead to .git/hooks: %v, %v", err1, err2)
	}
}

func evalSymlinks(t *testing.T, p string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return real
}
