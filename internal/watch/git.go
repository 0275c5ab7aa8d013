package watch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/aboxhq/abox/internal/wsfile"
)

// Limits on what git-tamper reads.
const (
	MaxConfigSize = 4 << 20 // bytes of one config file
	MaxIncludes   = 10      // include depth, as git's own limit
	MaxHooks      = 200     // files in the hooks directory
)

// Fingerprint prefixes of [GitState] keys.
const (
	gitKeyPrefix     = "key:"     // key:core.hookspath → its values
	gitHookPrefix    = "hook:"    // hook:pre-commit → the file's fingerprint
	gitIncludePrefix = "include:" // include:/abs/path → the included file's fingerprint
	gitErrorPrefix   = "error:"   // error:<file> → why it could not be read or parsed
	gitLinkPrefix    = "link:"    // link:<config file> → the symlink's target
)

// ErrNotRepo is returned by [GitState] for a workspace without .git.
var ErrNotRepo = errors.New("not a git repository")

// GitState fingerprints what in a repository's git directory makes git run code or redirect
// credentials: the dangerous keys ([Dangerous]) of .git/config, of config.worktree and of every
// file they include (followed without evaluating includeIf conditions, as if all held), and
// every hook file that is not a .sample, by content. home expands ~/ in include paths.
//
// A .git file ("gitdir: …", a worktree or submodule) is followed, and its commondir too; the
// pointer itself is part of the fingerprint. Git is never run: it would execute the very hooks
// and helpers being checked. Files in the workspace are read as [Files] reads them: a symlink is
// followed only while it stays in the workspace, and nothing but a regular file is opened.
// Files outside it (a worktree's common directory, an include under ~) are git's to follow.
func GitState(ws, home string) (map[string]string, error) {
	fp := newFingerprinter(ws)
	defer fp.close()
	return gitState(fp, home)
}

func gitState(fp *fingerprinter, home string) (map[string]string, error) {
	gitDir, common, pointer, err := findGitDir(fp)
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	if pointer != "" {
		st["gitdir"] = pointer
	}
	if pointer == "" && common != gitDir {
		st["commondir"] = common // a worktree's is already in its gitdir pointer's reach
	}
	r := &configReader{fp: fp, st: st, home: home, seen: map[string]bool{}}
	r.read(filepath.Join(common, "config"), 0, false)
	if gitDir != common {
		r.read(filepath.Join(gitDir, "config.worktree"), 0, true)
	} else {
		r.read(filepath.Join(common, "config.worktree"), 0, true)
	}
	hooks(fp, st, filepath.Join(common, "hooks"), "")
	hooksPaths(fp, st, home, filepath.Join(common, "hooks"))
	modules(fp, st, home, common)
	return st, nil
}

// MaxModules bounds the submodule git directories read under modules/, nested ones included.
const MaxModules = 100

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
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(dir)
				st[gitLinkPrefix+dir] = target
				st[gitErrorPrefix+dir] = "a symlink; the submodules in it were not read"
			}
			return
		}
		f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			st[gitErrorPrefix+dir] = errText(err)
			return
		}
		names, err := f.Readdirnames(MaxModules + 1)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			st[gitErrorPrefix+dir] = errText(err)
		}
		sort.Strings(names)
		for _, name := range names {
			sub, subRel := filepath.Join(dir, name), rel+name
			if fi, err := os.Lstat(sub); err != nil || !fi.IsDir() {
				continue
			}
			if left--; left < 0 || depth >= MaxIncludes {
				st[gitErrorPrefix+filepath.Join(common, "modules")] = fmt.Sprintf("more than %d submodule directories, or nested deeper than %d; only the first were read", MaxModules, MaxIncludes)
				return
			}
			if _, err := os.Lstat(filepath.Join(sub, "HEAD")); err != nil {
				visit(sub, subRel+"/", depth+1) // part of a name with slashes
				continue
			}
			mod := map[string]string{}
			r := &configReader{fp: fp, st: mod, home: home, seen: map[string]bool{}}
			r.read(filepath.Join(sub, "config"), 0, true)
			r.read(filepath.Join(sub, "config.worktree"), 0, true)
			hooks(fp, mod, filepath.Join(sub, "hooks"), "")
			for k, v := range mod {
				if p, ok := strings.CutPrefix(k, gitKeyPrefix); ok {
					k = gitKeyPrefix + "modules/" + subRel + ":" + p
				} else if p, ok := strings.CutPrefix(k, gitHookPrefix); ok {
					k = gitHookPrefix + "modules/" + subRel + ":" + p
				}
				st[k] = v
			}
			visit(filepath.Join(sub, "modules"), subRel+"/modules/", depth+1)
		}
	}
	visit(filepath.Join(common, "modules"), "", 0)
}

// hooksPaths adds the hooks of every directory core.hooksPath names (each value read, though git
// uses the last): git runs those instead of the git directory's own. A repository that keeps its
// hooks in the work tree (.githooks, husky's .husky/_) has them where the agent can write, so
// they are fingerprinted like .git/hooks, keyed by the value: hook:.githooks/pre-commit. A
// relative value is relative to the work tree's root, where git runs hooks; in the workspace,
// a directory reached through a symlink is recorded as such and not listed.
func hooksPaths(fp *fingerprinter, st map[string]string, home, gitHooks string) {
	values, ok := st[gitKeyPrefix+"core.hookspath"]
	if !ok {
		return
	}
	for _, v := range strings.Split(values, "\n") {
		dir := v
		switch {
		case v == "" || v == "(true)":
			continue
		case strings.HasPrefix(v, "~"):
			dir = expandHome(home, v)
		case !filepath.IsAbs(v):
			dir = filepath.Join(fp.ws, v)
		}
		dir = filepath.Clean(dir)
		if dir == gitHooks {
			continue
		}
		if rel, err := filepath.Rel(fp.ws, dir); err == nil && filepath.IsLocal(rel) {
			if via := linkedParent(fp.ws, rel); via != "" {
				st[gitErrorPrefix+dir] = "reached through the symlink " + via + "; its hooks were not read"
				continue
			}
		}
		hooks(fp, st, dir, v+"/")
	}
}

// linkedParent returns the first directory of rel below ws that is not a real directory, or "".
func linkedParent(ws, rel string) string {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	p := ws
	for _, name := range parts[:len(parts)-1] {
		p = filepath.Join(p, name)
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// findGitDir returns the git directory of the workspace, its common directory (equal unless a
// worktree), and the "gitdir:" pointer when .git is a file.
func findGitDir(fp *fingerprinter) (gitDir, common, pointer string, err error) {
	dotgit := filepath.Join(fp.ws, ".git")
	st, err := os.Lstat(dotgit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", "", ErrNotRepo
	case err != nil:
		return "", "", "", err
	case st.IsDir():
		// git honours a commondir file in any git directory, not only in a worktree's: it moves
		// config and hooks elsewhere, so it is followed here too.
		return dotgit, commonDir(fp, dotgit), "", nil
	case !st.Mode().IsRegular():
		return "", "", "", fmt.Errorf("%s is a %s, neither a directory nor a gitdir file", dotgit, wsfile.Kind(st.Mode()))
	}
	data, err := wsfile.Read(dotgit, 4096, false)
	if err != nil {
		return "", "", "", err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	target, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", "", "", fmt.Errorf("%s does not start with %q", dotgit, "gitdir:")
	}
	pointer = strings.TrimSpace(target)
	gitDir = pointer
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(fp.ws, gitDir)
	}
	return filepath.Clean(gitDir), commonDir(fp, gitDir), pointer, nil
}

// commonDir returns the common directory of the git directory gitDir: what its commondir file
// names (relative to gitDir), else gitDir itself.
func commonDir(fp *fingerprinter, gitDir string) string {
	common := gitDir
	if c, err := fp.read(filepath.Join(gitDir, "commondir"), 4096); err == nil {
		if c := strings.TrimSpace(string(c)); filepath.IsAbs(c) {
			common = c
		} else if c != "" {
			common = filepath.Join(gitDir, c)
		}
	}
	return filepath.Clean(common)
}

// read reads at most max bytes of a regular file: one in the workspace through the workspace
// root, following links only inside it; one outside as git would, following links, but only to
// a regular file.
func (f *fingerprinter) read(path string, max int64) ([]byte, error) {
	if rel, err := filepath.Rel(f.ws, path); err == nil && filepath.IsLocal(rel) {
		if f.root == nil {
			return nil, fmt.Errorf("the workspace cannot be opened")
		}
		return wsfile.ReadIn(f.root, rel, max)
	}
	return wsfile.Read(path, max, true)
}

// configReader reads config files into a fingerprint, following includes.
type configReader struct {
	fp   *fingerprinter
	st   map[string]string
	home string
	seen map[string]bool
}

// read adds the dangerous keys of the config file at path. optional files may be missing.
func (r *configReader) read(path string, depth int, optional bool) {
	if r.seen[path] {
		return
	}
	r.seen[path] = true
	if target, err := os.Readlink(path); err == nil {
		r.st[gitLinkPrefix+path] = target // git follows it; abox too, inside the workspace, and records where
	}
	data, err := r.fp.read(path, MaxConfigSize)
	if errors.Is(err, fs.ErrNotExist) && optional {
		return
	}
	if depth > 0 {
		r.st[gitIncludePrefix+path] = fingerprintData(data, err)
	}
	if err != nil {
		if depth == 0 {
			r.st[gitErrorPrefix+path] = errText(err)
		}
		return
	}
	entries, perr := ParseConfig(data)
	if perr != nil {
		r.st[gitErrorPrefix+path] = "unparseable: " + perr.Error()
	}
	for _, e := range entries {
		if Dangerous(e) {
			k := gitKeyPrefix + e.Key
			if old, ok := r.st[k]; ok {
				r.st[k] = old + "\n" + shownValue(e)
			} else {
				r.st[k] = shownValue(e)
			}
		}
		if isInclude(e) && depth < MaxIncludes {
			r.read(r.includePath(path, e.Value), depth+1, false)
		}
	}
}

// includePath resolves an include.path value as git does: ~/ is the home directory, ~user/ that
// user's home directory, a relative path is relative to the including file's directory.
func (r *configReader) includePath(from, p string) string {
	switch {
	case strings.HasPrefix(p, "~"):
		p = expandHome(r.home, p)
	case !filepath.IsAbs(p):
		p = filepath.Join(filepath.Dir(from), p)
	}
	return filepath.Clean(p)
}

// expandHome expands a path that starts with ~ as git does for pathname values: ~/ is home,
// ~user/ that user's home directory. An unknown user's path leads nowhere, as it does for git.
func expandHome(home, p string) string {
	name, rest, _ := strings.Cut(p[1:], "/")
	if name == "" {
		return filepath.Join(home, rest)
	}
	u, err := user.Lookup(name)
	if err != nil {
		return filepath.Join("/nonexistent-user-"+name, rest)
	}
	return filepath.Join(u.HomeDir, rest)
}

func shownValue(e Entry) string {
	if e.NoValue {
		return "(true)"
	}
	return e.Value
}

// hooks adds the fingerprint of every hook in dir that is not a .sample, keyed by prefix and
// its name. A hooks directory that is a symlink is recorded by its target and not listed.
func hooks(fp *fingerprinter, st map[string]string, dir, prefix string) {
	if target, err := os.Readlink(dir); err == nil {
		st[gitLinkPrefix+dir] = target
		st[gitErrorPrefix+dir] = "a symlink; its hooks were not read"
		return
	}
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			st[gitErrorPrefix+dir] = errText(err)
		}
		return
	}
	defer f.Close()
	names, err := f.Readdirnames(MaxHooks + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		st[gitErrorPrefix+dir] = errText(err)
	}
	if len(names) > MaxHooks {
		st[gitErrorPrefix+dir] = fmt.Sprintf("more than %d entries; only the first were read", MaxHooks)
		names = names[:MaxHooks]
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, ".sample") {
			continue
		}
		st[gitHookPrefix+prefix+name] = fp.of(filepath.Join(dir, name))
	}
}

func fingerprintData(data []byte, err error) string {
	if err != nil {
		return fpUnread + errText(err)
	}
	sum := sha256.Sum256(data)
	return fpFile + hex.EncodeToString(sum[:])
}

// DescribeGitKey turns a GitState key into words for a report: "core.fsmonitor", "hook
// pre-commit", "included file /x".
func DescribeGitKey(k string) string {
	switch {
	case strings.HasPrefix(k, gitKeyPrefix):
		return strings.TrimPrefix(k, gitKeyPrefix)
	case strings.HasPrefix(k, gitHookPrefix):
		return "hook " + strings.TrimPrefix(k, gitHookPrefix)
	case strings.HasPrefix(k, gitIncludePrefix):
		return "included file " + strings.TrimPrefix(k, gitIncludePrefix)
	case strings.HasPrefix(k, gitErrorPrefix):
		return "unreadable " + strings.TrimPrefix(k, gitErrorPrefix)
	case strings.HasPrefix(k, gitLinkPrefix):
		return "symlink " + strings.TrimPrefix(k, gitLinkPrefix)
	}
	return k
}

// CountGit counts the dangerous keys and the hooks in a [GitState] fingerprint.
func CountGit(st map[string]string) (keys, hooks int) {
	for k := range st {
		switch {
		case strings.HasPrefix(k, gitKeyPrefix):
			keys++
		case strings.HasPrefix(k, gitHookPrefix):
			hooks++
		}
	}
	return keys, hooks
}

// GitPresent lists what a [GitState] fingerprint holds, for a person, sorted: "core.hookspath =
// .githooks", "hook pre-commit", "hook post-merge (a FIFO)".
func GitPresent(st map[string]string) []string {
	out := make([]string, 0, len(st))
	for k, v := range st {
		out = append(out, ExecChange{Area: AreaGit, Name: k, Change: "added", New: v}.Text())
	}
	sort.Strings(out)
	return out
}
