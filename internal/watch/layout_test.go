package watch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// layoutCases are directories as the agent could lay them out, with whether git takes each
// for a git directory. over marks one abox recognises and git does not (a commondir naming a
// directory without objects and refs: abox does not follow it to look).
var layoutCases = []struct {
	name  string
	files map[string]string
	want  bool
	over  bool
}{
	{"bare layout", map[string]string{"HEAD": "ref: refs/heads/main\n", "objects/.keep": "", "refs/.keep": ""}, true, false},
	{"blanks after ref:", map[string]string{"HEAD": "ref:\t  refs/heads/x\n", "objects/.keep": "", "refs/.keep": ""}, true, false},
	{"detached HEAD", map[string]string{"HEAD": strings.Repeat("ab", 20) + "\n", "objects/.keep": "", "refs/.keep": ""}, true, false},
	{"HEAD a link to refs/", map[string]string{"HEAD": "->refs/heads/main", "objects/.keep": "", "refs/heads/.keep": ""}, true, false},
	{"objects and refs are links", map[string]string{"HEAD": "ref: refs/heads/main\n", "real/objects/.keep": "", "real/refs/.keep": "", "objects": "->real/objects", "refs": "->real/refs"}, true, false},
	{"commondir", map[string]string{"HEAD": "ref: refs/heads/main\n", "commondir": "../common\n", "../common/objects/.keep": "", "../common/refs/.keep": ""}, true, false},
	{"commondir to nothing", map[string]string{"HEAD": "ref: refs/heads/main\n", "commondir": "../nowhere\n"}, true, true},
	{"HEAD not a ref", map[string]string{"HEAD": "refs/heads/main\n", "objects/.keep": "", "refs/.keep": ""}, false, false},
	{"HEAD garbage", map[string]string{"HEAD": "ref: heads/main\n", "objects/.keep": "", "refs/.keep": ""}, false, false},
	{"short object name", map[string]string{"HEAD": "abcdef\n", "objects/.keep": "", "refs/.keep": ""}, false, false},
	{"HEAD a link elsewhere", map[string]string{"HEAD": "->../HEAD2", "../HEAD2": "ref: refs/heads/main\n", "objects/.keep": "", "refs/.keep": ""}, false, false},
	{"no refs", map[string]string{"HEAD": "ref: refs/heads/main\n", "objects/.keep": ""}, false, false},
	{"no HEAD", map[string]string{"objects/.keep": "", "refs/.keep": "", "config": ""}, false, false},
}

// layoutDir writes a case's files under a directory of its own and returns the layout's path
// (dir/x.git: "../" names reach its parent).
func layoutDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "p", "x.git")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, files)
	return dir
}

func dirNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	return names
}

func TestIsGitDirLayout(t *testing.T) {
	for _, tc := range layoutCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := layoutDir(t, tc.files)
			if got := isGitDirLayout(dir, dirNames(t, dir)); got != tc.want {
				t.Errorf("isGitDirLayout = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("HEAD a FIFO", func(t *testing.T) {
		dir := layoutDir(t, map[string]string{"objects/.keep": "", "refs/.keep": ""})
		mkfifo(t, filepath.Join(dir, "HEAD"))
		within(t, "isGitDirLayout", func() {
			if isGitDirLayout(dir, dirNames(t, dir)) {
				t.Error("a FIFO HEAD was taken for a valid one")
			}
		})
	})
}

// TestIsGitDirLayoutMatchesGit: git itself, asked where the git directory is from inside each
// case (rev-parse, which runs no hook and no fsmonitor, with no system or global config), agrees
// with isGitDirLayout, but where the case says abox recognises more.
func TestIsGitDirLayoutMatchesGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is the oracle of this test and is not installed: %v", err)
	}
	for _, tc := range layoutCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := layoutDir(t, tc.files)
			home := t.TempDir()
			cmd := exec.Command(gitBin, "-c", "safe.directory=*", "rev-parse", "--absolute-git-dir")
			cmd.Dir = dir
			cmd.Env = []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
				"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}
			out, _ := cmd.Output()
			real, _ := filepath.EvalSymlinks(dir)
			git := strings.TrimSpace(string(out)) == real
			if git != (tc.want && !tc.over) {
				t.Errorf("git takes %s for a git directory: %v (rev-parse: %q); the case says %v", dir, git, out, tc.want && !tc.over)
			}
		})
	}
}

func TestValidHeadContent(t *testing.T) {
	for in, want := range map[string]bool{
		"ref: refs/heads/main\n":               true,
		"ref:refs/heads/main":                  true,
		"ref: \n\trefs/x":                      true,
		"refs/heads/main":                      true, // a committed symlink's target
		strings.Repeat("0", 40):                true,
		strings.Repeat("F", 64) + "\n":         true,
		strings.Repeat("0", 39):                false,
		"ref: heads/main":                      false,
		" ref: refs/heads/main":                false,
		"":                                     false,
		"gitdir: ../x":                         false,
		strings.Repeat("g", 40):                false,
		"ref: refs/heads/main" + "\x00garbage": true,
	} {
		if got := ValidHeadContent(in); got != want {
			t.Errorf("ValidHeadContent(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestTakeReadsGitDirectoriesByLayout: a git directory laid out by hand anywhere in the
// workspace — a bare repository under tests/fixtures with core.worktree and core.fsmonitor, a
// mirror with a pre-receive hook, one inside a nested repository's work tree, the workspace's
// root when it has no .git — is found and read like the workspace's own, and the walk goes on
// below it; what is not a git directory to git is not.
func TestTakeReadsGitDirectoriesByLayout(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		".git/config":                             "[core]\n\tbare = false\n",
		"tests/fixtures/sample.git/HEAD":          "ref: refs/heads/main\n",
		"tests/fixtures/sample.git/config":        "[core]\n\tbare = false\n\tworktree = /home/user\n\tfsmonitor = /workspace/evil.sh\n",
		"tests/fixtures/sample.git/objects/.keep": "",
		"tests/fixtures/sample.git/refs/.keep":    "",
		// a git directory is walked on: the agent can make one of a directory the user works in
		"docs/HEAD":                             "ref: refs/heads/main\n",
		"docs/objects/.keep":                    "",
		"docs/refs/.keep":                       "",
		"docs/sub/.git/config":                  "[alias]\n\tx = !evil\n",
		"docs/sub/inner.git/HEAD":               "ref: refs/heads/main\n",
		"docs/sub/inner.git/commondir":          "../../../.cache/mirror.git\n",
		".cache/mirror.git/HEAD":                "ref: refs/heads/main\n",
		".cache/mirror.git/objects/pack/.keep":  "",
		".cache/mirror.git/refs/heads/.keep":    "",
		".cache/mirror.git/hooks/pre-receive":   "#!/bin/sh\ntouch /tmp/pwned\n",
		".cache/mirror.git/hooks/update.sample": "#!/bin/sh\n",
		"sub/.git/HEAD":                         "ref: refs/heads/main\n",
		"sub/vendor/dep.git/HEAD":               strings.Repeat("1", 40) + "\n",
		"sub/vendor/dep.git/commondir":          "../../../.cache/mirror.git\n",
		"sub/vendor/dep.git/config.worktree":    "[core]\n\tsshCommand = evil\n",
		"notrepo.git/HEAD":                      "not a ref\n",
		"notrepo.git/objects/.keep":             "",
		"notrepo.git/refs/.keep":                "",
		"notrepo.git/config":                    "[core]\n\tfsmonitor = /workspace/evil.sh\n",
	})
	snap := Take(Scope{Workspace: ws})
	want := map[string]string{
		"key:tests/fixtures/sample.git:core.fsmonitor": "/workspace/evil.sh",
		"key:tests/fixtures/sample.git:core.worktree":  "/home/user",
		"hook:.cache/mirror.git:pre-receive":           Fingerprint(filepath.Join(ws, ".cache/mirror.git/hooks/pre-receive")),
		"key:sub/vendor/dep.git:core.sshcommand":       "evil",
		"sub/vendor/dep.git:commondir":                 filepath.Join(ws, ".cache/mirror.git"),
		"hook:sub/vendor/dep.git:pre-receive":          Fingerprint(filepath.Join(ws, ".cache/mirror.git/hooks/pre-receive")),
		"key:docs/sub/.git:alias.x":                    "!evil",
		"hook:docs/sub/inner.git:pre-receive":          Fingerprint(filepath.Join(ws, ".cache/mirror.git/hooks/pre-receive")),
	}
	for k, v := range want {
		if snap.Git[k] != v {
			t.Errorf("Take: %s = %q, want %q", k, snap.Git[k], v)
		}
	}
	for k := range snap.Git {
		if strings.Contains(k, "notrepo.git") || strings.Contains(k, "update.sample") {
			t.Errorf("Take read what git does not take for a repository: %s", k)
		}
	}

	bare := t.TempDir()
	write(t, bare, map[string]string{"HEAD": "ref: refs/heads/main\n", "objects/.keep": "", "refs/.keep": "", "config": "[core]\n\tfsmonitor = x\n"})
	if snap := Take(Scope{Workspace: bare}); snap.Repo || snap.Git["key:.:core.fsmonitor"] != "x" {
		t.Errorf("a workspace that is a git directory without .git: %+v, want its keys under .:", snap)
	}
}

// TestGitDirLayoutsCountTowardTheBound: repositories found by their layout count toward
// MaxNestedRepos like .git ones, and the bound is named.
func TestGitDirLayoutsCountTowardTheBound(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{".git/config": ""}
	for i := 0; i <= MaxNestedRepos; i++ {
		d := filepath.Join("fixtures", strings.Repeat("r", 1+i%3)+string(rune('a'+i/3))+".git")
		files[d+"/HEAD"], files[d+"/objects/.keep"], files[d+"/refs/.keep"] = "ref: refs/heads/main\n", "", ""
	}
	files["zzz/last.git/HEAD"], files["zzz/last.git/objects/.keep"], files["zzz/last.git/refs/.keep"] = "ref: refs/heads/main\n", "", ""
	files["zzz/last.git/config"] = "[core]\n\tfsmonitor = /workspace/evil.sh\n"
	write(t, ws, files)
	snap := Take(Scope{Workspace: ws})
	if e := snap.Git[gitErrorPrefix+"nested repositories"]; !strings.Contains(e, fmt.Sprintf("more than %d repositories", MaxNestedRepos)) {
		t.Errorf("past the bound: %q, want it named", e)
	}
	if _, ok := snap.Git["key:zzz/last.git:core.fsmonitor"]; ok {
		t.Error("a repository past the bound was read")
	}
}
