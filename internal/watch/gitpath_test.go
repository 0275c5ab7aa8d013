package watch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitPathCase is a workspace with a path git builds — an include, core.hooksPath, a .git
// file's gitdir:, a commondir — planted so that, joined as text, it names a decoy: the file git
// really reads says "echo real" where the decoy says "echo decoy". ask is what git is asked
// ([gitOracle]); out marks a path a symlink of the workspace leads out of it, which the watch
// names instead of reading; fails one git itself refuses (too many links).
type gitPathCase struct {
	name  string
	setup func(t *testing.T, ws, host string)
	ask   string // "fsmonitor", "hooks" or "commondir"
	dir   string // where git runs, in the workspace ("" for its top)
	key   string // the GitState key that holds abox's answer to ask
	out   bool
	fails bool
}

const (
	fsmReal  = "[core]\n\tfsmonitor = echo real\n"
	fsmDecoy = "[core]\n\tfsmonitor = echo decoy\n"
	fsmHost  = "[core]\n\tfsmonitor = echo host\n"
)

var gitPathCases = []gitPathCase{
	{name: "include.path through a linked directory, then ..", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[include]\n\tpath = a/link/../x.cfg\n")
		write(t, ws, map[string]string{".git/a/link": "->../../sub/dir", "sub/dir/.keep": "", "sub/x.cfg": fsmReal, ".git/a/x.cfg": fsmDecoy})
	}},
	{name: "includeIf path through a linked directory, then ..", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[includeIf \"gitdir:/\"]\n\tpath = a/link/../x.cfg\n")
		write(t, ws, map[string]string{".git/a/link": "->../../sub/dir", "sub/dir/.keep": "", "sub/x.cfg": fsmReal, ".git/a/x.cfg": fsmDecoy})
	}},
	{name: "an include's include follows the first include's path as built", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[include]\n\tpath = a/link/../x.cfg\n")
		write(t, ws, map[string]string{".git/a/link": "->../../sub/dir", "sub/dir/.keep": "",
			"sub/x.cfg": "[include]\n\tpath = y.cfg\n", "sub/y.cfg": fsmReal, ".git/a/x.cfg": "", ".git/a/y.cfg": fsmDecoy})
	}},
	{name: "a linked include's include follows the link's name, not its target", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[include]\n\tpath = inc.cfg\n")
		write(t, ws, map[string]string{".git/inc.cfg": "->../sub/dir/inc.cfg", "sub/dir/inc.cfg": "[include]\n\tpath = y.cfg\n",
			".git/y.cfg": fsmReal, "sub/dir/y.cfg": fsmDecoy})
	}},
	{name: "absolute include.path through a linked directory, then ..", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[include]\n\tpath = "+ws+"/b/link/../x.cfg\n")
		write(t, ws, map[string]string{"b/link": "->../sub/dir", "sub/dir/.keep": "", "sub/x.cfg": fsmReal, "b/x.cfg": fsmDecoy})
	}},
	{name: "include.path through a chain of 40 links", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[include]\n\tpath = c1/../x.cfg\n")
		write(t, ws, linkChain(".git/c", 40, "../sub/dir"))
		write(t, ws, map[string]string{"sub/dir/.keep": "", "sub/x.cfg": fsmReal, ".git/x.cfg": fsmDecoy})
	}},
	{name: "include.path through a chain of 41 links", ask: "fsmonitor", fails: true, setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[include]\n\tpath = c1/../x.cfg\n")
		write(t, ws, linkChain(".git/c", 41, "../sub/dir"))
		write(t, ws, map[string]string{"sub/dir/.keep": "", "sub/x.cfg": fsmReal, ".git/x.cfg": fsmDecoy})
	}},
	{name: "include.path through a loop of links", ask: "fsmonitor", fails: true, setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[include]\n\tpath = l1/x.cfg\n")
		write(t, ws, map[string]string{".git/l1": "->l2", ".git/l2": "->l1"})
	}},
	{name: "include.path led out of the workspace by a link", ask: "fsmonitor", out: true, setup: func(t *testing.T, ws, host string) {
		gitInit(t, ws, "", "[include]\n\tpath = out/../x.cfg\n")
		write(t, host, map[string]string{"dir/.keep": "", "x.cfg": fsmHost})
		write(t, ws, map[string]string{".git/out": "->" + filepath.Join(host, "dir"), ".git/x.cfg": fsmDecoy})
	}},
	{name: "core.hooksPath through a linked directory, then ..", ask: "hooks", key: "hook:h/link/../hooks/pre-commit", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[core]\n\thooksPath = h/link/../hooks\n")
		write(t, ws, map[string]string{"h/link": "->../sub/dir", "sub/dir/.keep": "", "sub/hooks/pre-commit": "echo real", "h/hooks/pre-commit": "echo decoy"})
	}},
	{name: "core.hooksPath a link to a directory", ask: "hooks", key: "hook:.githooks/pre-commit", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "[core]\n\thooksPath = .githooks\n")
		write(t, ws, map[string]string{".githooks": "->tools/hooks", "tools/hooks/pre-commit": "echo real"})
	}},
	{name: "core.hooksPath led out of the workspace by a link", ask: "hooks", key: "hook:out/hooks/pre-commit", out: true, setup: func(t *testing.T, ws, host string) {
		gitInit(t, ws, "", "[core]\n\thooksPath = out/hooks\n")
		write(t, host, map[string]string{"hooks/pre-commit": "echo host"})
		write(t, ws, map[string]string{"out": "->" + host, "out.keep": ""})
	}},
	{name: "gitdir: through a linked directory, then ..", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, filepath.Join(ws, "store/real.git"), "--bare", fsmReal)
		gitInit(t, filepath.Join(ws, "a/real.git"), "--bare", fsmDecoy)
		write(t, ws, map[string]string{"a/link": "->../store/deep", "store/deep/.keep": "", ".git": "gitdir: a/link/../real.git\n"})
	}},
	{name: "gitdir: ending in a blank", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, filepath.Join(ws, "real.git "), "--bare", fsmReal)
		gitInit(t, filepath.Join(ws, "real.git"), "--bare", fsmDecoy)
		write(t, ws, map[string]string{".git": "gitdir: real.git \n"})
	}},
	{name: "commondir through a linked directory, then ..", ask: "commondir", key: "commondir", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "")
		gitInit(t, filepath.Join(ws, "store/common"), "--bare", fsmReal)
		gitInit(t, filepath.Join(ws, ".git/c/common"), "--bare", fsmDecoy)
		write(t, ws, map[string]string{".git/c/link": "->../../store/deep", "store/deep/.keep": "", ".git/commondir": "c/link/../common\n"})
	}},
	{name: "commondir's config through a linked directory, then ..", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "")
		gitInit(t, filepath.Join(ws, "store/common"), "--bare", fsmReal)
		gitInit(t, filepath.Join(ws, ".git/c/common"), "--bare", fsmDecoy)
		write(t, ws, map[string]string{".git/c/link": "->../../store/deep", "store/deep/.keep": "", ".git/commondir": "c/link/../common\n"})
	}},
	{name: "commondir ending in a blank", ask: "fsmonitor", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "")
		gitInit(t, filepath.Join(ws, ".git/common "), "--bare", fsmReal)
		gitInit(t, filepath.Join(ws, ".git/common"), "--bare", fsmDecoy)
		write(t, ws, map[string]string{".git/commondir": "common \n"})
	}},
	{name: "a linked worktree's commondir through a linked directory, then ..", ask: "commondir", dir: "co", key: "worktrees/co:commondir", setup: func(t *testing.T, ws, _ string) {
		gitInit(t, ws, "", "")
		gitInit(t, filepath.Join(ws, "store/common"), "--bare", fsmReal)
		gitInit(t, filepath.Join(ws, ".git/wtc/common"), "--bare", fsmDecoy)
		write(t, ws, map[string]string{
			".git/worktrees/co/HEAD":      "ref: refs/heads/main\n",
			".git/worktrees/co/gitdir":    filepath.Join(ws, "co/.git") + "\n",
			".git/worktrees/co/commondir": "../../wtc/link/../common\n",
			".git/wtc/link":               "->../../store/deep",
			"store/deep/.keep":            "",
			"co/.git":                     "gitdir: " + filepath.Join(ws, ".git/worktrees/co") + "\n",
		})
	}},
}

// TestGitPathsWalkedAsGitDoes: for each path git builds with a link planted on it, the watch
// reads what the real git on this machine reads — the core.fsmonitor `git config` finds, the
// hooks directory `git rev-parse --git-path hooks` names, the common directory `git rev-parse
// --git-common-dir` names — and not the decoy the path joined as text names. A path a symlink
// of the workspace leads out of it is named with where it leads, not read; one git refuses
// (more than 40 links, a loop) is named unreadable.
func TestGitPathsWalkedAsGitDoes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is the oracle of this test and is not installed: %v", err)
	}
	for _, tc := range gitPathCases {
		t.Run(tc.name, func(t *testing.T) {
			ws, host := t.TempDir(), t.TempDir()
			tc.setup(t, ws, host)
			git, gitErr := gitOracle(t, ws, tc)
			st, err := GitState(ws, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.fails:
				if gitErr == nil {
					t.Fatalf("git answered %q; the case says it refuses", git)
				}
				if v, ok := st["key:core.fsmonitor"]; ok {
					t.Errorf("abox read core.fsmonitor = %q where git reads nothing", v)
				}
				if !strings.Contains(fmt.Sprint(st), "too many levels of symbolic links") {
					t.Errorf("GitState = %v, want the path named unreadable for its links", st)
				}
			case gitErr != nil:
				t.Fatalf("git: %v", gitErr)
			case tc.out:
				if got := abox(t, ws, tc, st); got != "" {
					t.Errorf("abox read %q through a link out of the workspace", got)
				}
				if !strings.Contains(fmt.Sprint(st), "out of the workspace, to "+git) {
					t.Errorf("GitState = %v, want it to name %s, which git reads, as out of the workspace", st, git)
				}
			default:
				if got := abox(t, ws, tc, st); got != git {
					t.Errorf("abox reads %q, git %q (GitState %v)", got, git, st)
				}
			}
		})
	}
}

// gitOracle asks the real git, in a throwaway HOME with no system or global config, what tc asks:
// the core.fsmonitor it reads, or where the hooks directory or the common directory it uses
// lead, resolved by the kernel (a hooks directory: the hash of its pre-commit, read through
// git's path). A case whose link leads out answers where the file git reads is. Nothing git
// is asked runs a hook or the fsmonitor.
func gitOracle(t *testing.T, ws string, tc gitPathCase) (string, error) {
	t.Helper()
	dir := filepath.Join(ws, tc.dir)
	var args []string
	switch tc.ask {
	case "fsmonitor":
		args = []string{"config", "--show-origin", "--get", "core.fsmonitor"}
	case "hooks":
		args = []string{"rev-parse", "--git-path", "hooks"}
	case "commondir":
		args = []string{"rev-parse", "--git-common-dir"}
	}
	out, err := runGit(t, dir, args...)
	if err != nil {
		return "", err
	}
	switch tc.ask {
	case "fsmonitor":
		origin, value, _ := strings.Cut(out, "\t")
		if tc.out {
			return filepath.EvalSymlinks(dir + "/" + strings.TrimPrefix(origin, "file:"))
		}
		if value != "echo real" {
			t.Fatalf("git reads core.fsmonitor = %q from %s; the case is built for echo real", value, origin)
		}
		return value, nil
	case "hooks":
		hook := dir + "/" + out + "/pre-commit" // as git runs it: the kernel walks it
		if tc.out {
			return filepath.EvalSymlinks(dir + "/" + out)
		}
		data, err := os.ReadFile(hook)
		if err != nil || string(data) != "echo real" {
			t.Fatalf("git's pre-commit %s holds %q (%v); the case is built for echo real", hook, data, err)
		}
		sum := sha256.Sum256(data)
		return fpFile + hex.EncodeToString(sum[:]), nil
	}
	if !filepath.IsAbs(out) {
		out = dir + "/" + out
	}
	return filepath.EvalSymlinks(out)
}

// abox is GitState's answer to what tc asks: the last core.fsmonitor read, a hook's fingerprint,
// or the common directory with its links resolved.
func abox(t *testing.T, ws string, tc gitPathCase, st map[string]string) string {
	t.Helper()
	switch tc.ask {
	case "fsmonitor":
		v := st["key:core.fsmonitor"]
		return v[strings.LastIndexByte(v, '\n')+1:]
	case "hooks":
		return st[tc.key]
	}
	real, err := filepath.EvalSymlinks(st[tc.key])
	if err != nil {
		t.Fatalf("GitState[%s] = %q: %v", tc.key, st[tc.key], err)
	}
	return real
}

// runGit runs git in dir with a throwaway HOME and no system or global config, and returns its
// output's first line.
func runGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir), "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, nil
}

// gitInit makes dir a repository with git init (flags: "" or "--bare") and appends config to
// its config file.
func gitInit(t *testing.T, dir, flags, config string) {
	t.Helper()
	args := []string{"init", "-q"}
	if flags != "" {
		args = append(args, flags)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runGit(t, dir, append(args, dir)...); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, ".git", "config")
	if flags == "--bare" {
		cfg = filepath.Join(dir, "config")
	}
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(config); err != nil {
		t.Fatal(err)
	}
}

// linkChain returns n symlinks prefix1 → prefix2 → … → prefixN → last, for [write].
func linkChain(prefix string, n int, last string) map[string]string {
	files := map[string]string{}
	base := filepath.Base(prefix)
	for i := 1; i <= n; i++ {
		next := fmt.Sprintf("%s%d", base, i+1)
		if i == n {
			next = last
		}
		files[fmt.Sprintf("%s%d", prefix, i)] = "->" + next
	}
	return files
}

// TestGitPathWalksBounded: the agent plants 200 includes, each through a chain of 40 links whose
// targets climb in and out of a directory 800 times: walked whole, they would hold the host's
// look for seconds. The walks of one snapshot look at [MaxGitWalk] names at most; the includes
// past the bound are named unreadable, so they show as a change rather than go unread quietly.
func TestGitPathWalksBounded(t *testing.T) {
	ws := t.TempDir()
	gitInit(t, ws, "", "")
	files := map[string]string{".git/x/.keep": ""}
	climb := strings.Repeat("x/../", 800)
	for i := 1; i <= 40; i++ {
		next := fmt.Sprintf("l%d", i+1)
		if i == 40 {
			next = "x"
		}
		files[fmt.Sprintf(".git/l%d", i)] = "->" + climb + next
	}
	var cfg strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&cfg, "[include]\n\tpath = l1/f%d\n", i)
	}
	files[".git/config"] = cfg.String()
	write(t, ws, files)
	st, _ := GitState(ws, "") // how long it takes is the benchmarks' business; that it ends, the bound's
	if got := st["include:"+filepath.Join(ws, ".git/l1/f199")]; !strings.Contains(got, "more to walk than abox looks at") {
		t.Errorf("the last include = %q, want it named unreadable for the bound", got)
	}
}
