package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aboxhq/abox/internal/linkwalk"
	"github.com/aboxhq/abox/internal/wsfile"
)

// Paths git builds, and what they lead to.
//
// git builds the paths it reads as text and leaves them to the filesystem: a relative
// include.path after the including file's directory, a relative core.hooksPath after the work
// tree, a .git file's "gitdir:" after the .git file's directory, a commondir after its git
// directory. The kernel's path walk opens the include and runs the hook; strbuf_realpath(),
// which is that walk done by hand, resolves the gitdir and the commondir. Neither cleans the
// text first, so in a/link/../x the ".." climbs from the directory a/link leads to instead of
// cancelling "link" (issue 34): joined as text, the watch would read a decoy and miss the
// core.fsmonitor of the file git reads. So the watch does not clean such a path either. It
// walks it as the kernel does ([fingerprinter.gitPath]), name by name from the root, following
// every symlink it meets, up to Linux's 40, and reads what the walk reaches:
//
//   - in the workspace: through the workspace root, as the watched files are read;
//   - out of it, when the path git built named a place out of it already (an include under ~,
//     the common directory of a worktree elsewhere): as git reads it, a regular file only;
//   - out of it through a symlink in the workspace: not at all. The agent chose that link; the
//     state records it by its target and says where the walk led, as a watched symlink out of
//     the workspace is recorded by its target alone.
//
// Every symlink of the workspace a walk follows is recorded by its target, so that retargeting
// one shows. internal/linkwalk walks one tree and stops at its edge; the paths here start on
// the host (the workspace's own path is their beginning) and may leave the workspace and come
// back through an absolute link, so this walk is over the host's filesystem. It only lstats
// names and reads links; it opens nothing.

// MaxGitWalk bounds the names the walks of git's paths look at in one snapshot. A path walked
// past it is named unreadable: the agent can plant many includes through long chains of links,
// each walk of which costs up to 40 link targets of 4 KiB, and the host's look must stay short.
const MaxGitWalk = 1 << 19

// errWalkBound is a walk stopped by [MaxGitWalk].
var errWalkBound = fmt.Errorf("more to walk than abox looks at in one snapshot (%d names)", MaxGitWalk)

// errTooManyLinks is a walk that met more than [linkwalk.MaxLinks] symlinks: the kernel's ELOOP,
// for a loop of links or a chain longer than Linux follows.
var errTooManyLinks = fmt.Errorf("%w (more than %d: a loop, or a chain longer than Linux follows)", syscall.ELOOP, linkwalk.MaxLinks)

// gitPath is where a path git built leads.
type gitPath struct {
	// key names the path in the git state: its directory resolved and its last name as
	// built, from the workspace's path when the directory is in it; else the path as built,
	// cleaned. For a path without links it is the path cleaned.
	key  string
	real string // where the walk ended, every symlink resolved
	rel  string // real, relative to the workspace, when in is set
	in   bool   // real is in the workspace
	// via is the last symlink of the workspace the walk followed, when it ended out of the
	// workspace: the link that led it out.
	via string
	// link is the target of the path's last name when that is a symlink; links the targets of
	// the workspace's symlinks the walk followed, by their path.
	link  string
	links map[string]string
	err   error // why the walk stopped short: a name missing, a file for a directory, a loop
}

// gitPath walks p, an absolute path as git built it (never cleaned), as the kernel would to
// open it.
func (f *fingerprinter) gitPath(p string) gitPath {
	if !filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			p = wd + "/" + p
		}
	}
	w := pathWalk{f: f, cur: "/", links: map[string]string{}}
	rest := p
	if r, ok := strings.CutPrefix(p, f.ws+"/"); ok {
		// from the workspace, as git walks the paths it builds from its work tree: the links
		// above it are not the path's, and do not count towards its 40
		w.cur, rest = f.realWS, r
	}
	i := strings.LastIndexByte(rest, '/')
	dir, base := rest[:i+1], rest[i+1:]
	w.walk(dir)
	g := gitPath{links: w.links}
	switch {
	case base == "" || base == "." || base == "..":
		w.walk(base)
		g.key = w.cur
	default:
		g.key = filepath.Join(w.cur, base)
		if w.err == nil {
			g.link, _ = os.Readlink(g.key)
		}
		w.walk(base)
	}
	g.real, g.err = w.cur, w.err
	if rel, ok := f.inside(g.real); ok {
		g.in, g.rel = true, rel
	} else if w.wsLink != "" {
		g.via = w.wsLink
	}
	switch dirRel, ok := f.inside(filepath.Dir(g.key)); {
	case ok:
		g.key = filepath.Join(f.ws, dirRel, filepath.Base(g.key))
	case w.wsLink == "":
		g.key = filepath.Clean(p) // named out of the workspace: as it always was
	}
	return g
}

// inside returns p relative to the workspace, if p (a path without symlinks) is in it.
func (f *fingerprinter) inside(p string) (string, bool) {
	rel, err := filepath.Rel(f.realWS, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// pathWalk is one walk of a path, as the kernel walks it.
type pathWalk struct {
	f      *fingerprinter
	cur    string            // the directory reached: a host path without symlinks
	n      int               // symlinks followed
	links  map[string]string // the workspace's symlinks followed, by their path from the workspace's
	wsLink string            // the last of them
	err    error
}

// walk goes down p's names from cur, following each symlink met, the last name's too. After an
// error it stays where it stopped, with the names left joined as text, so that an error can name
// the path.
func (w *pathWalk) walk(p string) {
	todo := strings.Split(p, "/")
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if w.err == nil {
			if w.f.gitWalkLeft--; w.f.gitWalkLeft < 0 {
				w.err = &fs.PathError{Op: "open", Path: filepath.Join(w.cur, name), Err: errWalkBound}
				w.f.gitBound(map[string]string{}, "the walks of git's paths", errWalkBound.Error()+"; the paths past it are named unreadable")
			}
		}
		if w.err != nil {
			w.cur = filepath.Join(w.cur, name)
			continue
		}
		switch name {
		case "", ".":
			continue
		case "..":
			w.cur = filepath.Dir(w.cur)
			continue
		}
		next := filepath.Join(w.cur, name)
		st, err := os.Lstat(next)
		switch {
		case err != nil:
			w.err, w.cur = err, next
		case st.Mode()&fs.ModeSymlink != 0:
			todo = w.follow(next, todo)
		case !st.IsDir() && hasName(todo):
			w.err, w.cur = &fs.PathError{Op: "open", Path: next, Err: syscall.ENOTDIR}, next
		default:
			w.cur = next
		}
	}
}

// follow follows the symlink at next (its directory is w.cur) and returns the names left to walk.
func (w *pathWalk) follow(next string, todo []string) []string {
	if w.n++; w.n > linkwalk.MaxLinks {
		w.err, w.cur = &fs.PathError{Op: "open", Path: next, Err: errTooManyLinks}, next
		return todo
	}
	target, err := os.Readlink(next)
	if err != nil {
		w.err, w.cur = err, next
		return todo
	}
	if rel, ok := w.f.inside(next); ok {
		w.links[filepath.Join(w.f.ws, rel)] = target
		w.wsLink = filepath.Join(w.f.ws, rel)
	}
	if strings.HasPrefix(target, "/") {
		w.cur = "/"
	}
	return append(strings.Split(target, "/"), todo...)
}

// hasName reports whether names holds a name to walk, not only the empty ones of trailing
// slashes.
func hasName(names []string) bool {
	for _, n := range names {
		if n != "" {
			return true
		}
	}
	return false
}

// outside says where a symlink of the workspace led g out of it.
func (g gitPath) outside() string {
	if g.via == g.key {
		return "a symlink out of the workspace, to " + g.real
	}
	return fmt.Sprintf("leads out of the workspace, to %s, through the symlink %s", g.real, g.via)
}

// readGit reads at most max bytes of the regular file g leads to: in the workspace through its
// root, named out of it as git would, led out of it by one of its links not at all.
func (f *fingerprinter) readGit(g gitPath, max int64) ([]byte, error) {
	switch {
	case g.err != nil:
		return nil, g.err
	case g.in:
		if f.root == nil {
			return nil, errors.New("the workspace cannot be opened")
		}
		return wsfile.ReadIn(f.root, g.rel, max)
	case g.via != "":
		return nil, errors.New(g.outside() + "; not read")
	}
	return wsfile.Read(g.real, max, false)
}

// dirOf returns the directory p leads to as the git state goes on from it, as git goes on from
// its realpath: in the workspace, named from the workspace's path; named out of it, where it
// leads. When a symlink of the workspace led it out, or the walk stopped short, p itself, so
// that every read below it says why it was not made.
func (f *fingerprinter) dirOf(p string) (string, gitPath) {
	g := f.gitPath(p)
	switch {
	case g.err != nil, g.via != "":
		return p, g
	case g.in:
		return filepath.Join(f.ws, g.rel), g
	}
	return g.real, g
}

// recordLinks adds to st the symlinks of the workspace g's walk followed, by their targets,
// and the target of g's last name when it is one.
func recordLinks(st map[string]string, g gitPath) {
	for p, target := range g.links {
		st[gitLinkPrefix+p] = target
	}
	if g.link != "" {
		st[gitLinkPrefix+g.key] = g.link
	}
}
