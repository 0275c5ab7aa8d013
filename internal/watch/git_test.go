package watch

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// write creates files under dir: name → content; a content starting with "->" makes a symlink.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(p)
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGitStateNotRepo(t *testing.T) {
	if _, err := GitState(t.TempDir(), ""); !errors.Is(err, ErrNotRepo) {
		t.Fatalf("GitState(no .git) error = %v, want ErrNotRepo", err)
	}
}

func TestGitStateKeepsOnlyDangerousKeysAndHooks(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		".git/config": "[core]\n\tbare = false\n\tHooksPath = .githooks\n[remote \"origin\"]\n\turl = https://x/y\n" +
			"[alias]\n\tst = status\n\tst = status -s\n",
		".git/hooks/pre-commit":         "#!/bin/sh\necho hi\n",
		".git/hooks/pre-push.sample":    "#!/bin/sh\n",
		".git/hooks/post-checkout":      "->../../evil.sh",
		"evil.sh":                       "#!/bin/sh\nrm -rf ~\n",
		".git/config.worktree":          "[core]\n\tsshCommand = ssh -o ProxyCommand=evil\n",
		".git/hooks/fsmonitor-watchman": "x",
	})
	st, err := GitState(ws, "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"key:core.hookspath":      ".githooks",
		"key:alias.st":            "status\nstatus -s",
		"key:core.sshcommand":     "ssh -o ProxyCommand=evil",
		"hook:pre-commit":         Fingerprint(filepath.Join(ws, ".git/hooks/pre-commit")),
		"hook:post-checkout":      "symlink:../../evil.sh" + linkSep + Fingerprint(filepath.Join(ws, "evil.sh")),
		"hook:fsmonitor-watchman": Fingerprint(filepath.Join(ws, ".git/hooks/fsmonitor-watchman")),
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("GitState (-want +got):\n%s", diff)
	}
	if keys, hooks := CountGit(st); keys != 3 || hooks != 3 {
		t.Errorf("CountGit = %d keys, %d hooks, want 3, 3", keys, hooks)
	}
}

func TestGitStateFollowsIncludes(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	write(t, ws, map[string]string{
		".git/config":      "[include]\n\tpath = ../inc.cfg\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = ~/home.cfg\n",
		"inc.cfg":          "[core]\n\tfsmonitor = ./watch.sh\n[include]\n\tpath = inc.cfg\n",
		".git/hooks/.keep": "",
	})
	write(t, home, map[string]string{"home.cfg": "[credential]\n\thelper = !evil\n"})
	st, err := GitState(ws, home)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key:core.fsmonitor", "key:credential.helper", "include:" + filepath.Join(ws, "inc.cfg"), "include:" + filepath.Join(home, "home.cfg")} {
		if _, ok := st[k]; !ok {
			t.Errorf("GitState: %s missing from %v", k, st)
		}
	}
	// changing the included file, not .git/config, is a change
	before := st
	write(t, ws, map[string]string{"inc.cfg": "[core]\n\tfsmonitor = ./other.sh\n"})
	after, _ := GitState(ws, home)
	if len(Diff(before, after)) == 0 {
		t.Error("GitState: a change in an included file went unnoticed")
	}
}

func TestGitStateWorktreePointer(t *testing.T) {
	ws := t.TempDir()
	main := t.TempDir()
	write(t, main, map[string]string{
		".git/config":                "[core]\n\tpager = evil\n",
		".git/worktrees/w/commondir": "../..\n",
		".git/hooks/pre-commit":      "x",
	})
	write(t, ws, map[string]string{".git": "gitdir: " + filepath.Join(main, ".git/worktrees/w") + "\n"})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	if st["key:core.pager"] != "evil" || st["hook:pre-commit"] == "" || st["gitdir"] == "" {
		t.Errorf("GitState(worktree) = %v, want the common dir's config and hooks and the pointer", st)
	}
}

func TestGitStateUnparseableAndSymlinkedConfig(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{"real.cfg": "[core]\n\thooksPath = /h\n[bad\n", ".git/config": "->../real.cfg"})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(ws, ".git", "config")
	if st["key:core.hookspath"] != "/h" || !strings.HasPrefix(st["error:"+cfg], "unparseable") || st["link:"+cfg] != "../real.cfg" {
		t.Errorf("GitState = %v, want the key, the parse error and the link", st)
	}
}

func TestFingerprintNeverBlocksOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal("mkfifo:", err)
	}
	within(t, "Fingerprint(fifo)", func() {
		if got := Fingerprint(p); got != fpFIFO {
			t.Errorf("Fingerprint(fifo) = %q, want %q", got, fpFIFO)
		}
	})
}

func TestGitStateReadsHooksPathHooks(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	write(t, ws, map[string]string{
		".git/config":               "[core]\n\thooksPath = .githooks\n\thooksPath = ~/hooks\n\thooksPath = linked/hooks\n",
		".git/hooks/pre-push":       "#!/bin/sh\n",
		".githooks/pre-commit":      "#!/bin/sh\nexit 0\n",
		".githooks/pre-push.sample": "#!/bin/sh\n",
		"real/hooks/post-merge":     "#!/bin/sh\n",
		"linked":                    "->real",
	})
	write(t, home, map[string]string{"hooks/commit-msg": "#!/bin/sh\n"})
	st, err := GitState(ws, home)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"hook:pre-push", "hook:.githooks/pre-commit", "hook:~/hooks/commit-msg"} {
		if _, ok := st[k]; !ok {
			t.Errorf("GitState lacks %s: %v", k, st)
		}
	}
	if _, ok := st["hook:.githooks/pre-push.sample"]; ok {
		t.Errorf("GitState lists a .sample: %v", st)
	}
	// git runs real/hooks/post-merge for linked/hooks: listed, and the link recorded
	if st["hook:linked/hooks/post-merge"] != Fingerprint(filepath.Join(ws, "real/hooks/post-merge")) || st["link:"+filepath.Join(ws, "linked")] != "real" {
		t.Errorf("a hooksPath through a symlink: %v, want its hooks and the link", st)
	}
	before := st["hook:.githooks/pre-commit"]
	write(t, ws, map[string]string{".githooks/pre-commit": "#!/bin/sh\ntouch /tmp/pwned\n"})
	if st, _ := GitState(ws, home); st["hook:.githooks/pre-commit"] == before {
		t.Error("a rewritten hook in core.hooksPath left the fingerprint unchanged")
	}
}

func TestGitStateFollowsCommonDirOfADotGitDirectory(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		".git/config":                 "[core]\n\tbare = false\n",
		".git/commondir":              "../.gitcommon\n",
		".gitcommon/config":           "[core]\n\tfsmonitor = /workspace/evil.sh\n",
		".gitcommon/hooks/pre-commit": "#!/bin/sh\ntouch /tmp/pwned\n",
	})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"key:core.fsmonitor": "/workspace/evil.sh", "commondir": filepath.Join(ws, ".gitcommon")} {
		if st[k] != want {
			t.Errorf("GitState[%s] = %q, want %q (%v)", k, st[k], want, st)
		}
	}
	if _, ok := st["hook:pre-commit"]; !ok {
		t.Errorf("GitState lacks the common directory's hook: %v", st)
	}
}

func TestGitStateReadsSubmoduleGitDirs(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		".git/config":                               "[core]\n\tbare = false\n",
		".git/modules/lib/HEAD":                     "ref: refs/heads/main\n",
		".git/modules/lib/config":                   "[core]\n\tfsmonitor = /workspace/evil.sh\n",
		".git/modules/lib/hooks/post-checkout":      "#!/bin/sh\n",
		".git/modules/lib/modules/inner/HEAD":       "ref: refs/heads/main\n",
		".git/modules/lib/modules/inner/config":     "[alias]\n\tst = !sh evil\n",
		".git/modules/vendor/deep/HEAD":             "ref: refs/heads/main\n",
		".git/modules/vendor/deep/hooks/pre-commit": "#!/bin/sh\n",
	})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key:modules/lib:core.fsmonitor", "hook:modules/lib:post-checkout",
		"key:modules/lib/modules/inner:alias.st", "hook:modules/vendor/deep:pre-commit"} {
		if _, ok := st[k]; !ok {
			t.Errorf("GitState lacks %s: %v", k, st)
		}
	}
	if got := DescribeGitKey("key:modules/lib:core.fsmonitor"); got != "modules/lib:core.fsmonitor" {
		t.Errorf("DescribeGitKey = %q", got)
	}
}

func TestGitStateIncludeThroughTildeUser(t *testing.T) {
	ws := t.TempDir()
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skip("no current user with a home directory")
	}
	rel, err := filepath.Rel(u.HomeDir, filepath.Join(ws, "evil.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws, map[string]string{
		".git/config": "[include]\n\tpath = ~" + u.Username + "/" + filepath.ToSlash(rel) + "\n",
		"evil.cfg":    "[core]\n\tfsmonitor = /workspace/evil.sh\n",
	})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	if st["key:core.fsmonitor"] != "/workspace/evil.sh" {
		t.Errorf("GitState = %v, want the fsmonitor of the file ~%s/ leads to", st, u.Username)
	}
}
