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
	// remotefile:remotes/origin → the fingerprint of a legacy remote file git reads
	gitRemoteFilePrefix = "remotefile:"
)

// ErrNotRepo is returned by [GitState] for a workspace without .git.
var ErrNotRepo = errors.New("not a git repository")

// GitState fingerprints what in a repository's git directory makes git run code or redirect
// credentials: the dangerous keys ([Dangerous]) of .git/config, of config.worktree and of every
// file they include (followed without evaluating includeIf conditions, as if all held), every
// hook file that is not a .sample, by content, and what git reads besides for this repository:
// the hooks of core.hooksPath, the git directories of submodules and of linked worktrees (their
// config.worktree), and the legacy remote files. home expands ~/ in include paths.
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
	return repoState(fp, home, fp.ws)
}

// repoState fingerprints the repository whose work tree is dir: the git directory its .git
// names.
func repoState(fp *fingerprinter, home, dir string) (map[string]string, error) {
	gitDir, common, pointer, err := findGitDir(fp, dir)
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
	readGitDir(fp, st, home, gitDir, common, dir)
	return st, nil
}

// readGitDir adds to st what git reads in the git directory gitDir (common its common
// directory): the dangerous keys of its config files, their remote selectors judged against
// the remotes they define, its hooks and those of core.hooksPath (a relative one taken from
// the work tree: core.worktree, else workTree), its legacy remote files, and the git
// directories of its submodules and linked worktrees.
func readGitDir(fp *fingerprinter, st map[string]string, home, gitDir, common, workTree string) {
	r := newConfigReader(fp, st, home)
	r.read(filepath.Join(common, "config"), 0, false)
	if gitDir != common {
		r.read(filepath.Join(gitDir, "config.worktree"), 0, true)
	} else {
		r.read(filepath.Join(common, "config.worktree"), 0, true)
	}
	r.judgeSelectors()
	hooks(fp, st, filepath.Join(common, "hooks"), "")
	hooksPaths(fp, st, home, filepath.Join(common, "hooks"), r.workTree(gitDir, workTree))
	remoteFiles(fp, st, common)
	modules(fp, st, home, common)
	worktrees(fp, st, home, common, r.remotes)
}

// findGitDir returns the git directory of the work tree dir, its common directory (equal unless
// a worktree), and the "gitdir:" pointer when dir/.git is a file.
func findGitDir(fp *fingerprinter, dir string) (gitDir, common, pointer string, err error) {
	dotgit := filepath.Join(dir, ".git")
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
		gitDir = filepath.Join(dir, gitDir)
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
	// remotes are the remotes the files read define (remote.<name>.url or .vcs); selectors
	// the entries that choose a remote by name, judged against them once all are read.
	remotes   map[string]bool
	selectors []Entry
}

func newConfigReader(fp *fingerprinter, st map[string]string, home string) *configReader {
	return &configReader{fp: fp, st: st, home: home, seen: map[string]bool{}, remotes: map[string]bool{}}
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
			r.add(e)
		}
		if name, ok := definesRemote(e); ok {
			r.remotes[name] = true
		}
		if isRemoteSelector(e) {
			r.selectors = append(r.selectors, e)
		}
		if isInclude(e) && depth < MaxIncludes {
			r.read(r.includePath(path, e.Value), depth+1, false)
		}
	}
}

// add records the dangerous entry e, after the values of its key read before.
func (r *configReader) add(e Entry) {
	k := gitKeyPrefix + e.Key
	if old, ok := r.st[k]; ok {
		r.st[k] = old + "\n" + shownValue(e)
	} else {
		r.st[k] = shownValue(e)
	}
}

// judgeSelectors records each remote selector read whose value git would take for a URL that
// runs something on this machine ([selectorRunsHere]): a name no file read defines as a remote
// is a relative path to git.
func (r *configReader) judgeSelectors() {
	for _, e := range r.selectors {
		if !e.NoValue && selectorRunsHere(e.Value, r.remotes) {
			r.add(e)
		}
	}
	r.selectors = nil
}

// workTree returns where git takes the work tree of the git directory gitDir to be: the last
// core.worktree read (relative to gitDir, ~ expanded), else def.
func (r *configReader) workTree(gitDir, def string) string {
	v, ok := r.st[gitKeyPrefix+"core.worktree"]
	if !ok {
		return def
	}
	v = v[strings.LastIndexByte(v, '\n')+1:]
	switch {
	case v == "" || v == "(true)":
		return def
	case strings.HasPrefix(v, "~"):
		return expandHome(r.home, v)
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	}
	return filepath.Join(gitDir, v)
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
	listFiles(fp, st, dir, gitHookPrefix+prefix, "hooks")
}

// listFiles adds the fingerprint of every file in dir, keyed by key and its name, but .sample
// files when what is "hooks". At most [MaxHooks] names are read, in the directory's order, and
// a bound hit is named. A dir that is a symlink is recorded by its target and not listed.
func listFiles(fp *fingerprinter, st map[string]string, dir, key, what string) {
	if target, err := os.Readlink(dir); err == nil {
		st[gitLinkPrefix+dir] = target
		st[gitErrorPrefix+dir] = "a symlink; its " + what + " were not read"
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
		if what == "hooks" && strings.HasSuffix(name, ".sample") {
			continue
		}
		st[key+name] = fp.of(filepath.Join(dir, name))
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
	case strings.HasPrefix(k, gitRemoteFilePrefix):
		return "remote file " + strings.TrimPrefix(k, gitRemoteFilePrefix)
	}
	return k
}

// CountGit counts the dangerous keys (legacy remote files with them) and the hooks in a
// [GitState] fingerprint.
func CountGit(st map[string]string) (keys, hooks int) {
	for k := range st {
		switch {
		case strings.HasPrefix(k, gitKeyPrefix), strings.HasPrefix(k, gitRemoteFilePrefix):
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
