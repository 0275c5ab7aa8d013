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
// and helpers being checked. The paths git builds — an include, core.hooksPath, gitdir:, a
// commondir — are walked as the kernel walks them, not joined as text ([fingerprinter.gitPath]):
// what they reach in the workspace is read through its root, nothing but a regular file is
// opened, the workspace's symlinks on the way are recorded, and one that leads out of the
// workspace is named, not followed. Files a path names outside it (a worktree's common
// directory, an include under ~) are git's to follow, and read as git reads them.
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
	st := map[string]string{}
	gitDir, common, pointer, err := findGitDir(fp, st, dir)
	if err != nil {
		return nil, err
	}
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
	historyState(fp, st, common)
	modules(fp, st, home, common)
	worktrees(fp, st, home, common, r.remotes)
}

// findGitDir returns the git directory of the work tree dir, its common directory (equal unless
// a worktree), and the "gitdir:" pointer when dir/.git is a file. The pointer leads where git's
// realpath of it leads ([fingerprinter.dirOf]); the workspace's symlinks on the way are added to
// st.
func findGitDir(fp *fingerprinter, st map[string]string, dir string) (gitDir, common, pointer string, err error) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", "", ErrNotRepo
	case err != nil:
		return "", "", "", err
	case fi.IsDir():
		// git honours a commondir file in any git directory, not only in a worktree's: it moves
		// config and hooks elsewhere, so it is followed here too.
		return dotgit, commonDir(fp, st, dotgit), "", nil
	case !fi.Mode().IsRegular():
		return "", "", "", fmt.Errorf("%s is a %s, neither a directory nor a gitdir file", dotgit, wsfile.Kind(fi.Mode()))
	}
	data, err := wsfile.Read(dotgit, 4096, false)
	if err != nil {
		return "", "", "", err
	}
	pointer, err = parseGitFile(data)
	if err != nil {
		return "", "", "", fmt.Errorf("%s %w", dotgit, err)
	}
	gitDir = pointer
	if !filepath.IsAbs(gitDir) {
		gitDir = dir + "/" + gitDir // after the .git file's directory, as text: the walk resolves it
	}
	gitDir, g := fp.dirOf(gitDir)
	recordLinks(st, g)
	return gitDir, commonDir(fp, st, gitDir), pointer, nil
}

// parseGitFile returns the path a .git file names, read as git's read_gitfile_gently() reads
// it: the file starts with "gitdir: ", and the path is the rest, less the CRs and LFs that end
// it, up to a NUL. Blanks are part of the path: "gitdir: x " names "x ", not "x".
func parseGitFile(data []byte) (string, error) {
	rest, ok := strings.CutPrefix(string(data), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("does not start with %q", "gitdir: ")
	}
	p := cString(strings.TrimRight(rest, "\r\n"))
	if p == "" {
		return "", errors.New("names no path")
	}
	return p, nil
}

// cString is s up to its first NUL, as the C code that reads it sees it.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// commonDir returns the common directory of the git directory gitDir: what its commondir file
// names, after gitDir when relative, resolved as git's realpath of it resolves it; else gitDir
// itself. The file is read as get_common_dir_noenv() reads it: the CRs and LFs that end it are
// dropped, nothing else, and the path ends at a NUL. The workspace's symlinks on the way to the
// file and to the directory are added to st.
func commonDir(fp *fingerprinter, st map[string]string, gitDir string) string {
	file := fp.gitPath(gitDir + "/commondir")
	recordLinks(st, file)
	data, err := fp.readGit(file, 4096)
	if err != nil {
		return gitDir
	}
	c := cString(strings.TrimRight(string(data), "\r\n"))
	switch {
	case c == "":
		return gitDir
	case !filepath.IsAbs(c):
		c = gitDir + "/" + c
	}
	common, g := fp.dirOf(c)
	recordLinks(st, g)
	return common
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

// read adds the dangerous keys of the config file at path, a path as git builds it, which is
// walked as git's open of it walks it ([fingerprinter.gitPath]). optional files may be missing.
func (r *configReader) read(path string, depth int, optional bool) {
	g := r.fp.gitPath(path)
	if r.seen[g.key] {
		return
	}
	r.seen[g.key] = true
	recordLinks(r.st, g) // git follows them; abox too, inside the workspace, and records where
	data, err := r.fp.readGit(g, MaxConfigSize)
	if errors.Is(err, fs.ErrNotExist) && optional {
		return
	}
	if depth > 0 {
		r.st[gitIncludePrefix+g.key] = fingerprintData(data, err)
	}
	if err != nil {
		if depth == 0 {
			r.st[gitErrorPrefix+g.key] = errText(err)
		}
		return
	}
	entries, perr := ParseConfig(data)
	if perr != nil {
		r.st[gitErrorPrefix+g.key] = "unparseable: " + perr.Error()
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
// core.worktree read (after gitDir when relative, ~ expanded), else def; a path as git builds
// it, joined as text for [fingerprinter.gitPath] to walk.
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
		return v
	}
	return gitDir + "/" + v
}

// includePath builds the path of an include.path value as git's handle_path_include() does: ~/
// is the home directory, ~user/ that user's home directory, and a relative path follows the
// including file's directory as text. Nothing is cleaned: in "a/link/../x" the ".." climbs from
// where a/link leads, when the path is walked.
func (r *configReader) includePath(from, p string) string {
	switch {
	case strings.HasPrefix(p, "~"):
		return expandHome(r.home, p)
	case filepath.IsAbs(p):
		return p
	}
	return from[:strings.LastIndexByte(from, '/')+1] + p
}

// expandHome expands a path that starts with ~ as git does for pathname values: ~/ is home,
// ~user/ that user's home directory. An unknown user's path leads nowhere, as it does for git.
// The rest is kept as written, for the walk.
func expandHome(home, p string) string {
	name, rest, _ := strings.Cut(p[1:], "/")
	if name == "" {
		return home + "/" + rest
	}
	u, err := user.Lookup(name)
	if err != nil {
		return "/nonexistent-user-" + name + "/" + rest
	}
	return u.HomeDir + "/" + rest
}

func shownValue(e Entry) string {
	if e.NoValue {
		return "(true)"
	}
	return e.Value
}

// hooks adds the fingerprint of every hook in dir that is not a .sample, keyed by prefix and
// its name.
func hooks(fp *fingerprinter, st map[string]string, dir, prefix string) {
	listFiles(fp, st, dir, gitHookPrefix+prefix, "hooks")
}

// listFiles adds the fingerprint of every file in dir, keyed by key and its name, but .sample
// files when what is "hooks". dir is a path as git builds it, walked as git's reads walk it
// ([fingerprinter.gitPath]): the workspace's symlinks on the way are recorded by their targets,
// and a directory one of them leads out of the workspace is named, not listed. At most
// [MaxHooks] names are read, in the directory's order, and a bound hit is named.
func listFiles(fp *fingerprinter, st map[string]string, dir, key, what string) {
	g := fp.gitPath(dir)
	recordLinks(st, g)
	real := g.real
	switch {
	case errors.Is(g.err, fs.ErrNotExist):
		return
	case g.err != nil:
		st[gitErrorPrefix+g.key] = errText(g.err)
		return
	case g.via != "":
		st[gitErrorPrefix+g.key] = g.outside() + "; its " + what + " were not read"
		return
	case g.in:
		real = filepath.Join(fp.ws, g.rel)
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			st[gitErrorPrefix+g.key] = errText(err)
		}
		return
	}
	defer f.Close()
	names, err := f.Readdirnames(MaxHooks + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		st[gitErrorPrefix+g.key] = errText(err)
	}
	if len(names) > MaxHooks {
		fp.gitBound(st, g.key, fmt.Sprintf("more than %d entries; only the first were read", MaxHooks))
		names = names[:MaxHooks]
	}
	sort.Strings(names)
	for _, name := range names {
		if what == "hooks" && strings.HasSuffix(name, ".sample") {
			continue
		}
		st[key+name] = fp.of(filepath.Join(real, name))
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
	case strings.HasPrefix(k, gitRefPrefix):
		return "ref " + strings.TrimPrefix(k, gitRefPrefix)
	case strings.HasPrefix(k, gitFilePrefix):
		return "git file " + strings.TrimPrefix(k, gitFilePrefix)
	case k == indexMore:
		return fmt.Sprintf("index entries marked skip-worktree or assume-unchanged beyond the first %d", MaxFlagged)
	case strings.HasPrefix(k, gitIndexPrefix):
		return "index entry " + strings.TrimPrefix(k, gitIndexPrefix)
	}
	return k
}

// CountGit counts the dangerous keys (legacy remote files with them) and the hooks in a
// [GitState] fingerprint.
func CountGit(st map[string]string) (keys, hooks int) {
	for k := range st {
		switch {
		case strings.HasPrefix(k, gitKeyPrefix), strings.HasPrefix(k, gitRemoteFilePrefix), strings.HasPrefix(k, gitRefPrefix),
			strings.HasPrefix(k, gitFilePrefix), strings.HasPrefix(k, gitIndexPrefix):
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
