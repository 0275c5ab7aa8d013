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

// Bounds of the search for repositories inside the workspace.
const (
	MaxNestedWalk  = 500000 // workspace entries looked at
	MaxNestedRepos = 200    // repositories read
)

// nestedBound is the error key, and the [Snapshot.GitCapped] pattern, of the walk's bounds.
const nestedBound = "nested repositories"

// nestedRepos adds the git state of every repository inside the workspace other than its own,
// found by a walk that follows no link: a directory holding .git (a directory or a gitdir
// file), and a directory that is itself a git directory by its layout ([isGitDirLayout]) —
// a bare repository, or one the agent laid out by hand, whatever its name. git on the host
// reads them: `git status` in the workspace looks into every gitlink of its index as into a
// submodule and runs that repository's fsmonitor, the agent can make one and add it (`git init
// sub && git add sub`), `git status` inside a git directory (a shell prompt does that on
// entering it) reads its config, and a push to a local path runs its hooks. Each key is kept
// with the repository's path: key:sub/.git:core.fsmonitor, key:tests/fixtures/sample.git:
// core.worktree (the workspace's root, when it has no .git and is a git directory itself, is
// "."). A .git is not walked further (what git reads in it is read with its state); a git
// directory found by its layout is, as a user may work in it. The walk does not enter
// node_modules (installed dependencies); the gitlinks of the workspace's index, the
// repositories `git status` looks into, are read first, wherever they are ([readGitlinks]). A
// walk that reaches a bound says so ([fingerprinter.gitBound]).
func nestedRepos(fp *fingerprinter, st map[string]string, home string, gitlinks []string) {
	read := readGitlinks(fp, st, home, gitlinks)
	seen, repos := 0, 0
	bound := func(why string) {
		fp.gitBound(st, nestedBound, why+"; the rest of the workspace was not searched")
	}
	another := func() bool {
		if repos++; repos > MaxNestedRepos {
			bound(fmt.Sprintf("more than %d repositories", MaxNestedRepos))
			return false
		}
		return true
	}
	var visit func(dir, rel string, depth int) bool
	visit = func(dir, rel string, depth int) bool {
		entries, ok := readNested(dir, MaxNestedWalk-seen+1)
		if !ok {
			return true
		}
		if seen += len(entries); seen > MaxNestedWalk {
			bound(fmt.Sprintf("more than %d entries", MaxNestedWalk))
			return false
		}
		names := make(map[string]bool, len(entries))
		for _, e := range entries {
			names[e.Name()] = true
		}
		switch {
		case read[rel]:
		case names[".git"] && rel != "":
			if !another() {
				return false
			}
			addRepo(fp, st, home, dir, rel)
		case !names[".git"] && isGitDirLayout(dir, names):
			if !another() {
				return false
			}
			where := rel
			if where == "" {
				where = "./"
			}
			// and walked on: a directory the agent made a git directory may still be one the user
			// works in, with repositories of its own below
			addGitDir(fp, st, home, dir, where[:len(where)-1]+":")
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == ".git" || e.Name() == "node_modules" {
				continue
			}
			if depth+1 > MaxDepth {
				bound(fmt.Sprintf("%s is nested deeper than %d directories", rel+e.Name(), MaxDepth))
				return false
			}
			if !visit(filepath.Join(dir, e.Name()), rel+e.Name()+"/", depth+1) {
				return false
			}
		}
		return true
	}
	visit(fp.ws, "", 0)
}

// readNested lists at most n entries of dir, sorted, without following a link to it: a link
// swapped in since its parent was listed is not entered.
func readNested(dir string, n int) ([]fs.DirEntry, bool) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	entries, err := f.ReadDir(n)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, true
}

// addRepo adds the git state of the repository whose work tree is dir (rel, with a trailing
// slash, in the workspace), its keys qualified with its path.
func addRepo(fp *fingerprinter, st map[string]string, home, dir, rel string) {
	inner, err := repoState(fp, home, dir)
	if err != nil {
		st[gitErrorPrefix+filepath.Join(dir, ".git")] = err.Error()
		return
	}
	mergeQualified(st, inner, rel+".git:")
}

// readGitlinks adds the git state of the repository at each gitlink of the workspace's index
// that holds a .git, keyed by its path as the walk keys it, and returns the directories read
// ("sub/", ending in a slash). A path of the index is the agent's text: one that is not
// local, or whose directories are not all real directories of the workspace (a symlink on the
// way), is not read.
func readGitlinks(fp *fingerprinter, st map[string]string, home string, gitlinks []string) map[string]bool {
	read := map[string]bool{}
	for _, l := range gitlinks {
		if !filepath.IsLocal(l) || !realDirs(fp.ws, l) || read[l+"/"] {
			continue
		}
		dir := filepath.Join(fp.ws, l)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
			continue // not checked out: git status reads nothing there
		}
		read[l+"/"] = true
		addRepo(fp, st, home, dir, l+"/")
	}
	return read
}

// realDirs reports whether every name of rel, under ws, is a real directory, no symlink.
func realDirs(ws, rel string) bool {
	p := ws
	for _, name := range strings.Split(rel, "/") {
		if name == ".git" {
			return false
		}
		p = filepath.Join(p, name)
		if st, err := os.Lstat(p); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}
