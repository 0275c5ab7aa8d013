package watch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// What git reads in a git directory besides its config and hooks: the hooks of core.hooksPath,
// the git directories of submodules (modules/) and of linked worktrees (worktrees/), and the
// legacy remote files (remotes/, branches/). Each is fingerprinted under a key qualified with
// where it was found ([qualify]).

// Bounds of the git directories read under one common directory.
const (
	MaxModules   = 100 // submodule git directories under modules/, nested ones included
	MaxWorktrees = 100 // linked worktrees under worktrees/
)

// qualify returns the key k of a nested git directory's state as the enclosing state keys it:
// where (ending in ":") in front of a key, hook or remote file's name, and of the other names
// of its own (gitdir, commondir); error, link and include keys name an absolute path already.
func qualify(k, where string) string {
	for _, p := range []string{gitKeyPrefix, gitHookPrefix, gitRemoteFilePrefix, gitRefPrefix, gitFilePrefix, gitIndexPrefix} {
		if rest, ok := strings.CutPrefix(k, p); ok {
			return p + where + rest
		}
	}
	for _, p := range []string{gitErrorPrefix, gitLinkPrefix, gitIncludePrefix} {
		if strings.HasPrefix(k, p) {
			return k
		}
	}
	return where + k
}

// mergeQualified adds inner's keys to st, qualified with where.
func mergeQualified(st, inner map[string]string, where string) {
	for k, v := range inner {
		st[qualify(k, where)] = v
	}
}

// readDirNames lists at most n names of the directory dir without following a symlink to it;
// one that is a symlink is recorded by its target, with an error saying what was not read.
func readDirNames(st map[string]string, dir string, n int, what string) ([]string, bool) {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(dir)
			st[gitLinkPrefix+dir] = target
			st[gitErrorPrefix+dir] = "a symlink; the " + what + " in it were not read"
		}
		return nil, false
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		st[gitErrorPrefix+dir] = errText(err)
		return nil, false
	}
	names, err := f.Readdirnames(n)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		st[gitErrorPrefix+dir] = errText(err)
	}
	sort.Strings(names)
	return names, true
}

// modules adds, for every submodule git directory under common/modules (nested ones too), its
// dangerous config keys and its hooks, keyed with the module's path: key:modules/lib:core.fsmonitor,
// hook:modules/lib:post-checkout. git runs them on the host — `git status` in the superproject
// looks into each submodule, `git submodule update` checks it out — and they are neither
// .git/config nor the masked .git/hooks. A directory is a module when it holds HEAD; a
// submodule's name may hold slashes, so other directories are descended into. Links are not
// followed.
func modules(fp *fingerprinter, st map[string]string, home, common string) {
	left := MaxModules
	var visit func(dir, rel string, depth int)
	visit = func(dir, rel string, depth int) {
		names, ok := readDirNames(st, dir, MaxModules+1, "submodules")
		if !ok {
			return
		}
		for _, name := range names {
			sub, subRel := filepath.Join(dir, name), rel+name
			if fi, err := os.Lstat(sub); err != nil || !fi.IsDir() {
				continue
			}
			if left--; left < 0 || depth >= MaxIncludes {
				fp.gitBound(st, filepath.Join(common, "modules"), fmt.Sprintf("more than %d submodule directories, or nested deeper than %d; only the first were read", MaxModules, MaxIncludes))
				return
			}
			if _, err := os.Lstat(filepath.Join(sub, "HEAD")); err != nil {
				visit(sub, subRel+"/", depth+1) // part of a name with slashes
				continue
			}
			mod := map[string]string{}
			r := newConfigReader(fp, mod, home)
			r.read(filepath.Join(sub, "config"), 0, true)
			r.read(filepath.Join(sub, "config.worktree"), 0, true)
			r.judgeSelectors()
			hooks(fp, mod, filepath.Join(sub, "hooks"), "")
			for k, v := range mod {
				if strings.HasPrefix(k, gitKeyPrefix) || strings.HasPrefix(k, gitHookPrefix) {
					k = qualify(k, "modules/"+subRel+":")
				}
				st[k] = v
			}
			visit(filepath.Join(sub, "modules"), subRel+"/modules/", depth+1)
		}
	}
	visit(filepath.Join(common, "modules"), "", 0)
}

// worktrees adds, for every linked worktree's git directory under common/worktrees, what git
// reads there for that worktree besides the common directory: its config.worktree (read when
// extensions.worktreeConfig is set in the common config, so `git status` in the user's other
// checkout runs the core.fsmonitor it sets), the hooks of a core.hooksPath it sets, and a
// commondir that leads elsewhere than common, whose config and hooks that worktree then
// reads. Keys are qualified with worktrees/<name>:. remotes are those the common config
// defines, against which its remote selectors are judged. Links are not followed.
func worktrees(fp *fingerprinter, st map[string]string, home, common string, remotes map[string]bool) {
	dir := filepath.Join(common, "worktrees")
	names, ok := readDirNames(st, dir, MaxWorktrees+1, "worktrees")
	if !ok {
		return
	}
	if len(names) > MaxWorktrees {
		fp.gitBound(st, dir, fmt.Sprintf("more than %d entries; only the first were read", MaxWorktrees))
		names = names[:MaxWorktrees]
	}
	for _, name := range names {
		wt := filepath.Join(dir, name)
		fi, err := os.Lstat(wt)
		if err != nil || !fi.IsDir() {
			if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(wt)
				st[gitLinkPrefix+wt] = target
				st[gitErrorPrefix+wt] = "a symlink; the worktree's configuration was not read"
			}
			continue
		}
		inner := map[string]string{}
		r := newConfigReader(fp, inner, home)
		c := commonDir(fp, inner, wt)
		if c == common {
			for n := range remotes {
				r.remotes[n] = true
			}
		} else {
			inner["commondir"] = c
			r.read(filepath.Join(c, "config"), 0, false)
			hooks(fp, inner, filepath.Join(c, "hooks"), "")
		}
		r.read(filepath.Join(wt, "config.worktree"), 0, true)
		r.judgeSelectors()
		hooksPaths(fp, inner, home, filepath.Join(c, "hooks"), r.workTree(wt, worktreeRoot(fp, wt)))
		mergeQualified(st, inner, "worktrees/"+name+":")
	}
}

// worktreeRoot returns the work tree of the linked worktree whose git directory is wt: the
// directory holding the .git file its gitdir file names, or wt when that cannot be read.
func worktreeRoot(fp *fingerprinter, wt string) string {
	data, err := fp.readGit(fp.gitPath(wt+"/gitdir"), 4096)
	p := strings.TrimSpace(string(data))
	if err != nil || p == "" {
		return wt
	}
	if !filepath.IsAbs(p) {
		p = wt + "/" + p
	}
	return p[:strings.LastIndexByte(p, '/')+1] // as text: the walk of what follows resolves it
}

// remoteFiles adds the fingerprint of every legacy remote file of the common directory:
// remotes/<name> and branches/<name>, which git reads for a remote the config does not define.
// The agent can drop [remote "origin"] from the config and write remotes/origin with a URL of
// its own.
func remoteFiles(fp *fingerprinter, st map[string]string, common string) {
	for _, sub := range []string{"remotes", "branches"} {
		listFiles(fp, st, filepath.Join(common, sub), gitRemoteFilePrefix+sub+"/", "remote files")
	}
}

// hooksPaths adds the hooks of every directory core.hooksPath names (each value read, though git
// uses the last): git runs those instead of the git directory's own. A repository that keeps its
// hooks in the work tree (.githooks, husky's .husky/_) has them where the agent can write, so
// they are fingerprinted like .git/hooks, keyed by the value: hook:.githooks/pre-commit. A
// relative value follows workTree, the work tree's root, where git runs hooks (a bare
// repository's git directory), as text; the path is walked as the kernel walks it to run a hook
// ([listFiles]), so a hooks directory reached through a symlink in the workspace is the one
// listed, and one a symlink leads out of the workspace is named.
func hooksPaths(fp *fingerprinter, st map[string]string, home, gitHooks, workTree string) {
	values, ok := st[gitKeyPrefix+"core.hookspath"]
	if !ok {
		return
	}
	own := fp.gitPath(gitHooks)
	for _, v := range strings.Split(values, "\n") {
		dir := v
		switch {
		case v == "" || v == "(true)":
			continue
		case strings.HasPrefix(v, "~"):
			dir = expandHome(home, v)
		case !filepath.IsAbs(v):
			dir = workTree + "/" + v
		}
		if g := fp.gitPath(dir); g.err == nil && own.err == nil && g.real == own.real {
			continue
		}
		hooks(fp, st, dir, v+"/")
	}
}
