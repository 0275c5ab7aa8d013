package isolate

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/linkwalk"
)

// A branch can replace what the user keeps beside the tracked files. git merge refuses to
// overwrite an untracked file but takes an ignored one for expendable: in git 2.39 a branch that
// adds a tracked .env overwrites the user's ignored .env (and its secret), in a fast-forward and a
// merge commit alike, and one that adds a file where the user has an ignored symlink, or a
// directory of ignored files (node_modules/, .venv/, build output), removes them. [Repo.Diff]
// finds each such path of the user's work tree and marks the branch's files whose checkout
// replaces it ([File.Ignored]); [Repo.Merge] refuses them unless forced. The package doc says how
// they are found, and why so.

// markIgnored sets Ignored on every file of files whose checkout replaces something of the
// user's work tree that git ignores.
func (r *Repo) markIgnored(ctx context.Context, files []File) error {
	wt := &workTree{root: r.Project.Workspace, dirs: map[string]bool{}, repos: map[string]bool{}}
	at := map[string]replacement{} // a file's path → what of the work tree its checkout replaces
	seen := map[string]bool{}
	var plain, nested, dirs []string
	for _, f := range files {
		if f.Status == "D" || f.Status == "L" {
			continue
		}
		rp := wt.replaced(f.Path, f.Mode == "160000")
		if rp.path == "" {
			continue
		}
		at[f.Path] = rp
		switch {
		case seen[rp.path]:
		case rp.dir:
			dirs = append(dirs, rp.path)
		case rp.nested:
			nested = append(nested, rp.path)
		default:
			plain = append(plain, rp.path)
		}
		seen[rp.path] = true
	}
	ignored := map[string]bool{}
	if err := r.checkIgnore(ctx, plain, false, ignored); err != nil {
		return err
	}
	if err := r.checkIgnore(ctx, nested, true, ignored); err != nil {
		return err
	}
	if err := r.ignoredBelow(ctx, dirs, ignored); err != nil {
		return err
	}
	for i := range files {
		if rp := at[files[i].Path]; rp.path != "" && ignored[rp.path] {
			files[i].Ignored = rp.path
			if rp.dir {
				files[i].Ignored += "/"
			}
		}
	}
	return nil
}

// replacement is what of the user's work tree the checkout of a file replaces.
type replacement struct {
	path   string
	dir    bool // a directory, with all it holds
	nested bool // below a repository of its own there, a submodule's checkout say
}

// replaced says what of the work tree the checkout of a file at p replaces: the first of p's
// directories that is not a real directory there (a file, or a symlink, which git replaces
// with a directory and abox does not follow), else p itself when something is there — taken
// as a directory only if the file is not a gitlink, whose checkout is one. Its path is "" when
// nothing is replaced.
func (wt *workTree) replaced(p string, gitlink bool) replacement {
	names := strings.Split(p, "/")
	nested := false
	for i := 1; i < len(names); i++ {
		d := strings.Join(names[:i], "/")
		if !wt.isDir(d) {
			if wt.lookup(d).Kind == linkwalk.Absent {
				return replacement{}
			}
			return replacement{path: d, nested: nested}
		}
		nested = nested || wt.isRepo(d)
	}
	switch wt.lookup(p).Kind {
	case linkwalk.Absent:
		return replacement{}
	case linkwalk.Dir:
		if gitlink {
			return replacement{}
		}
		return replacement{path: p, dir: true, nested: nested}
	}
	return replacement{path: p, nested: nested}
}

// isRepo reports whether the real directory d holds a .git of any kind.
func (wt *workTree) isRepo(d string) bool {
	v, ok := wt.repos[d]
	if !ok {
		_, err := os.Lstat(filepath.Join(wt.root, filepath.FromSlash(d), ".git"))
		v = err == nil
		wt.repos[d] = v
	}
	return v
}

// checkIgnore adds to ignored which of paths — each below real directories only — git ignores
// in the user's work tree: `git check-ignore`, with the user's config, reads every source of
// ignore rules as `git merge` reads them, and says nothing of a path the index tracks. Below a
// repository of the work tree's own (noIndex), the index tracks nothing, and check-ignore would
// refuse a path inside a submodule it names: it is asked without the index. Each path is given
// as "./<path>", which git takes as a path even when it begins with pathspec magic.
func (r *Repo) checkIgnore(ctx context.Context, paths []string, noIndex bool, ignored map[string]bool) error {
	if len(paths) == 0 {
		return nil
	}
	var in strings.Builder
	for _, p := range paths {
		in.WriteString("./" + p + "\x00")
	}
	args := []string{"check-ignore", "-z", "--stdin"}
	if noIndex {
		args = append(args, "--no-index")
	}
	raw, err := r.hostIn(ctx, in.String(), args...)
	if ge := (*GitError)(nil); errors.As(err, &ge) && ge.Code == 1 {
		return nil // none is ignored
	}
	if err != nil {
		return err
	}
	for _, p := range splitZ(raw) {
		ignored[strings.TrimPrefix(p, "./")] = true
	}
	return nil
}

// argBatch bounds the bytes of pathspecs one git command is given.
const argBatch = 256 << 10

// ignoredBelow adds to ignored each of dirs, real directories of the user's work tree, that git
// ignores or that holds something git ignores: git merge removes such a directory whole to write
// a file in its place. git's own walk (`ls-files --others --ignored`) finds them, following no
// symlink below them; it shows an ignored directory whole, an ancestor of one of dirs included.
func (r *Repo) ignoredBelow(ctx context.Context, dirs []string, ignored map[string]bool) error {
	for len(dirs) > 0 {
		args := []string{"ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--no-empty-directory", "--"}
		var batch []string
		for size := 0; len(dirs) > 0 && size < argBatch; dirs = dirs[1:] {
			args = append(args, ":(literal)"+dirs[0])
			batch = append(batch, dirs[0])
			size += len(dirs[0])
		}
		raw, err := r.host(ctx, args...)
		if err != nil {
			return err
		}
		sort.Strings(batch)
		for _, p := range splitZ(raw) {
			markHolders(batch, p, ignored)
		}
	}
	return nil
}

// markHolders adds to ignored each of dirs (sorted) that holds p, a path ls-files printed, or
// that p holds when it is a directory shown whole ("vendor/").
func markHolders(dirs []string, p string, ignored map[string]bool) {
	for d := strings.TrimSuffix(p, "/"); d != "." && d != "/"; d = path.Dir(d) {
		if i := sort.SearchStrings(dirs, d); i < len(dirs) && dirs[i] == d {
			ignored[d] = true
		}
	}
	if strings.HasSuffix(p, "/") {
		for i := sort.SearchStrings(dirs, p); i < len(dirs) && strings.HasPrefix(dirs[i], p); i++ {
			ignored[dirs[i]] = true
		}
	}
}
