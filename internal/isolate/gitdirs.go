package isolate

import (
	"context"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/watch"
)

// A branch can bring a repository in ordinary files: HEAD, config, objects/ and refs/ under
// tests/fixtures/sample.git are a git directory to git once they are checked out, whatever the
// directory is called, and `git status` inside it (a shell prompt does that) runs its
// core.fsmonitor, a push to it its hooks. git adds such a directory as plain files (it has no
// .git), so the collect's left-out rule for nested repositories does not see it. [Repo.Diff]
// recognises it in the run's tip as git's is_git_directory() would in the checkout, flags every
// file of the branch in it, and [Repo.Merge] refuses them without force.

// markGitDirs sets GitDir, and Exec, on every file of files the branch adds or changes in a
// directory [Repo.gitDirs] finds.
func (r *Repo) markGitDirs(ctx context.Context, tip string, files []File) error {
	dirs, err := r.gitDirs(ctx, tip, files)
	if err != nil {
		return err
	}
	for i := range files {
		if d := enclosing(files[i].Path, dirs); d != "" && files[i].Status != "D" {
			files[i].GitDir, files[i].Exec = d, true
		}
	}
	return nil
}

// enclosing returns the nearest directory of rel that is in dirs, or "".
func enclosing(rel string, dirs map[string]bool) string {
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		if dirs[d] {
			return d
		}
	}
	return ""
}

// gitDirs returns the directories of tip that git would take for a git directory once checked
// out and that hold a file of files the branch adds or changes: a HEAD blob git accepts
// ([watch.ValidHeadContent]; a symlink's target counts, as git accepts a HEAD link to refs/),
// and objects and refs, or a commondir, of any type. It asks git, in the user's repository, of
// the objects by name, [linkBatch] names to a process. A directory whose name holds a newline
// cannot be asked on a line and is taken for one.
func (r *Repo) gitDirs(ctx context.Context, tip string, files []File) (map[string]bool, error) {
	cand := map[string]bool{}
	for _, f := range files {
		if f.Status == "D" {
			continue
		}
		for d := path.Dir(f.Path); d != "." && d != "/" && !cand[d]; d = path.Dir(d) {
			cand[d] = true
		}
	}
	found := map[string]bool{}
	var ask []string
	for d := range cand {
		if strings.Contains(d, "\n") {
			found[d] = true
			continue
		}
		ask = append(ask, d)
	}
	sort.Strings(ask)
	heads, err := r.treeEntries(ctx, tip, ask, "HEAD")
	if err != nil {
		return nil, err
	}
	var withHead, blobs []string
	for _, d := range ask {
		if o := heads[d]; o.typ == "blob" {
			withHead = append(withHead, d)
			if o.size <= maxLinkTarget {
				blobs = append(blobs, o.id)
			}
		}
	}
	content, err := r.blobs(ctx, blobs)
	if err != nil {
		return nil, err
	}
	layout := map[string]map[string]bool{}
	for _, name := range []string{"objects", "refs", "commondir"} {
		got, err := r.treeEntries(ctx, tip, withHead, name)
		if err != nil {
			return nil, err
		}
		for d := range got {
			if layout[d] == nil {
				layout[d] = map[string]bool{}
			}
			layout[d][name] = true
		}
	}
	for _, d := range withHead {
		o := heads[d]
		// A HEAD too long to read here is taken for a valid one: too much is a refused merge
		// the user can force, too little a repository landed unreviewed.
		head, read := content[o.id]
		valid := !read || watch.ValidHeadContent(head)
		if l := layout[d]; valid && (l["commondir"] || (l["objects"] && l["refs"])) {
			found[d] = true
		}
	}
	return found, nil
}

var objectTypes = map[string]bool{"blob": true, "tree": true, "commit": true, "tag": true}

// objectInfo is what `git cat-file --batch-check` says of an object.
type objectInfo struct {
	id, typ string
	size    int64
}

// treeEntries returns, for each of dirs that holds an entry name in tip's tree, what it is.
func (r *Repo) treeEntries(ctx context.Context, tip string, dirs []string, name string) (map[string]objectInfo, error) {
	out := map[string]objectInfo{}
	for len(dirs) > 0 {
		n := min(len(dirs), linkBatch)
		var in strings.Builder
		for _, d := range dirs[:n] {
			in.WriteString(tip + ":" + d + "/" + name + "\n")
		}
		raw, err := r.hostIn(ctx, in.String(), "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
		if err != nil {
			return nil, err
		}
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		for i, d := range dirs[:n] {
			if i >= len(lines) {
				break
			}
			// "<id> <type> <size>", or "<name> missing" for a path tip does not have.
			f := strings.Fields(lines[i])
			if len(f) != 3 || !objectTypes[f[1]] {
				continue
			}
			size, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				continue
			}
			out[d] = objectInfo{id: f[0], typ: f[1], size: size}
		}
		dirs = dirs[n:]
	}
	return out, nil
}
