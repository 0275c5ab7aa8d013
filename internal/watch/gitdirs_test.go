package watch

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGitStateReadsLinkedWorktreeConfigs: with extensions.worktreeConfig, git in a linked
// worktree reads .git/worktrees/<name>/config.worktree, so the user's other checkout runs the
// core.fsmonitor set there; a worktree whose commondir leads elsewhere reads that directory's
// config and hooks; a relative core.hooksPath of a worktree is taken from its own checkout.
func TestGitStateReadsLinkedWorktreeConfigs(t *testing.T) {
	ws, other := t.TempDir(), t.TempDir()
	write(t, ws, map[string]string{
		".git/config":                       "[core]\n\tbare = false\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n",
		".git/worktrees/co/commondir":       "../..\n",
		".git/worktrees/co/gitdir":          filepath.Join(other, ".git") + "\n",
		".git/worktrees/co/config.worktree": "[core]\n\tfsmonitor = /workspace/evil.sh\n\thooksPath = myhooks\n",
		".git/worktrees/away/commondir":     "../../../.gitcommon\n",
		".gitcommon/config":                 "[alias]\n\tst = !evil\n",
		".gitcommon/hooks/post-checkout":    "#!/bin/sh\n",
		".git/worktrees/link":               "->../../.gitcommon",
	})
	write(t, other, map[string]string{"myhooks/pre-commit": "#!/bin/sh\n"})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"key:extensions.worktreeconfig":                     "true",
		"key:worktrees/co:core.fsmonitor":                   "/workspace/evil.sh",
		"key:worktrees/co:core.hookspath":                   "myhooks",
		"hook:worktrees/co:myhooks/pre-commit":              Fingerprint(filepath.Join(other, "myhooks/pre-commit")),
		"worktrees/away:commondir":                          filepath.Join(ws, ".gitcommon"),
		"key:worktrees/away:alias.st":                       "!evil",
		"hook:worktrees/away:post-checkout":                 Fingerprint(filepath.Join(ws, ".gitcommon/hooks/post-checkout")),
		"link:" + filepath.Join(ws, ".git/worktrees/link"):  "../../.gitcommon",
		"error:" + filepath.Join(ws, ".git/worktrees/link"): "a symlink; the worktree's configuration was not read",
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("GitState[%s] = %q, want %q", k, st[k], v)
		}
	}
	if got := DescribeGitKey("key:worktrees/co:core.fsmonitor"); got != "worktrees/co:core.fsmonitor" {
		t.Errorf("DescribeGitKey = %q", got)
	}
}

func TestGitStateWorktreesBoundSays(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{".git/config": ""}
	for i := 0; i <= MaxWorktrees; i++ {
		files[fmt.Sprintf(".git/worktrees/w%03d/commondir", i)] = "../..\n"
	}
	files[".git/worktrees/zzz/config.worktree"] = "[core]\n\tfsmonitor = x\n"
	write(t, ws, files)
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	if e := st["error:"+filepath.Join(ws, ".git/worktrees")]; !strings.Contains(e, "more than 100") {
		t.Errorf("past the bound: %q, want it named", e)
	}
	if _, ok := st["key:worktrees/zzz:core.fsmonitor"]; ok {
		t.Error("a worktree past the bound was read")
	}
}

// TestGitStateJudgesRemotes: a remote or push URL that runs something on this machine (a local
// path, file://, a helper transport) is kept and a network one is not; a branch's remote or
// push remote and remote.pushDefault are kept when git would take them for such a URL, not
// when they name a remote defined beside them; the legacy remote files are fingerprinted.
func TestGitStateJudgesRemotes(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, map[string]string{
		".git/config": "[remote \"origin\"]\n\turl = https://example.test/r.git\n\tpushurl = .cache/mirror.git\n" +
			"[remote \"up\"]\n\turl = git@example.test:r.git\n\tpushurl = file:///srv/r.git\n" +
			"[remote \"helper\"]\n\turl = evil::x\n" +
			"[branch \"main\"]\n\tremote = origin\n\tpushRemote = mirror.git\n" +
			"[branch \"dev\"]\n\tremote = .\n\tpushRemote = https://example.test/fork.git\n" +
			"[remote]\n\tpushDefault = up\n" +
			"[include]\n\tpath = more.cfg\n",
		".git/more.cfg":        "[branch \"x\"]\n\tremote = helper\n\tpushremote = /home/user/r.git\n",
		".git/remotes/origin":  "URL: ./evil.git\n",
		".git/branches/backup": "/srv/backup.git\n",
	})
	st, err := GitState(ws, "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range st {
		if strings.HasPrefix(k, "key:") && k != "key:include.path" || strings.HasPrefix(k, "remotefile:") {
			got[k] = v
		}
	}
	want := map[string]string{
		"key:remote.origin.pushurl":  ".cache/mirror.git",
		"key:remote.up.pushurl":      "file:///srv/r.git",
		"key:remote.helper.url":      "evil::x",
		"key:branch.main.pushremote": "mirror.git",
		"key:branch.x.pushremote":    "/home/user/r.git",
		"remotefile:remotes/origin":  Fingerprint(filepath.Join(ws, ".git/remotes/origin")),
		"remotefile:branches/backup": Fingerprint(filepath.Join(ws, ".git/branches/backup")),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GitState's remotes (-want +got):\n%s", diff)
	}
	if keys, _ := CountGit(st); keys != len(want)+1 {
		t.Errorf("CountGit = %d keys, want %d", keys, len(want)+1)
	}
}

func TestURLRunsHere(t *testing.T) {
	for v, want := range map[string]bool{
		".cache/mirror.git":           true,
		"/srv/r.git":                  true,
		"../r":                        true,
		"r":                           true,
		"~/r.git":                     true,
		"./a:b":                       true,
		"file:///srv/r.git":           true,
		"FILE:///srv/r.git":           true,
		"ext::sh -c evil":             true,
		"fd::3":                       true,
		"evil::https://example.test/": true,
		"evil+x://example.test/r":     true,
		"https://example.test/r.git":  false,
		"HTTP://example.test/r.git":   false,
		"ssh://git@example.test/r":    false,
		"git://example.test/r":        false,
		"git@example.test:r.git":      false,
		"example.test:/srv/r.git":     false,
		"":                            false,
		"ftps://example.test/r":       false,
	} {
		if got := urlRunsHere(v); got != want {
			t.Errorf("urlRunsHere(%q) = %v, want %v", v, got, want)
		}
	}
}
