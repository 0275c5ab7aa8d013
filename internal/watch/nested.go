package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Bounds of the search for repositories inside the workspace.
const (
	MaxNestedWalk  = 200000 // workspace entries looked at
	MaxNestedRepos = 50     // repositories read
)

// nestedRepos adds the git state of every repository inside the workspace other than its own:
// a directory holding .git (a directory or a gitdir file), found by a walk that follows no link
// and does not enter a .git. git on the host reads them — `git status` in the workspace looks
// into every gitlink of its index as into a submodule, and runs that repository's fsmonitor —
// and the agent can make one and add it (`git init sub && git add sub`). Each key is kept with
// the repository's path: key:sub/.git:core.fsmonitor. A walk that reaches a bound says so in an
// error key, which shows as a change when it is new.
func nestedRepos(fp *fingerprinter, st map[string]string, home string) {
	seen, repos := 0, 0
	bound := func(why string) {
		st[gitErrorPrefix+"nested repositories"] = why + "; the rest of the workspace was not searched"
	}
	var visit func(dir, rel string, depth int) bool
	visit = func(dir, rel string, depth int) bool {
		f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0) // a link swapped in since it was listed is not entered
		if err != nil {
			return true
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return true
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		if seen += len(entries); seen > MaxNestedWalk {
			bound(fmt.Sprintf("more than %d entries", MaxNestedWalk))
			return false
		}
		for _, e := range entries {
			if e.Name() == ".git" && rel != "" {
				if repos++; repos > MaxNestedRepos {
					bound(fmt.Sprintf("more than %d repositories", MaxNestedRepos))
					return false
				}
				addRepo(fp, st, home, dir, rel)
			}
		}
		for _, e := range entries {
			if !e.IsDir() || e.Name() == ".git" {
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

// addRepo adds the git state of the repository whose work tree is dir (rel, with a trailing
// slash, in the workspace), its keys qualified with its path.
func addRepo(fp *fingerprinter, st map[string]string, home, dir, rel string) {
	sub := newFingerprinter(dir)
	sub.hashLeft = fp.hashLeft
	defer func() { fp.hashLeft = sub.hashLeft; sub.close() }()
	name := rel + ".git:"
	inner, err := gitState(sub, home)
	if err != nil {
		st[gitErrorPrefix+filepath.Join(dir, ".git")] = err.Error()
		return
	}
	for k, v := range inner {
		switch {
		case strings.HasPrefix(k, gitKeyPrefix):
			k = gitKeyPrefix + name + strings.TrimPrefix(k, gitKeyPrefix)
		case strings.HasPrefix(k, gitHookPrefix):
			k = gitHookPrefix + name + strings.TrimPrefix(k, gitHookPrefix)
		case strings.HasPrefix(k, gitErrorPrefix), strings.HasPrefix(k, gitLinkPrefix), strings.HasPrefix(k, gitIncludePrefix):
			// keyed by an absolute path already
		default:
			k = name + k
		}
		st[k] = v
	}
}
