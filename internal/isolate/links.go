package isolate

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/linkwalk"
)

// The trees the branch's symlinks are resolved in ([linkwalk]): the one a merge into the user's
// HEAD would check out — HEAD's tree with the branch's changes since the merge base, which is
// the branch's own tree when HEAD is still the run's base — and HEAD's own, to tell a link of the
// user's that the branch makes lead elsewhere from one that always led there.

// maxTreeEntries bounds the entries of the user's tree abox holds to resolve symlinks in.
const maxTreeEntries = 4_000_000

// treeEntry is what a tree names at one path: its kind and, for a symlink, its blob.
type treeEntry struct {
	kind linkwalk.Kind
	blob string
}

// linkTrees are the trees of one review, with their symlinks' targets.
type linkTrees struct {
	head    map[string]treeEntry // HEAD's tree; nil when HEAD and the branch share no commit
	over    map[string]treeEntry // what the merge changes: Absent where it deletes
	targets map[string]string    // symlink blob → target, for the blobs short enough to read
	disk    *workTree
}

// merged says what the tree after the merge holds at p; what neither names is the work tree's.
func (lt *linkTrees) merged(p string) linkwalk.Node {
	if e, ok := lt.over[p]; ok {
		return lt.node(e) // a path the merge deletes is gone, whatever the work tree holds now
	}
	return lt.before(p)
}

// before says what HEAD's tree holds at p, and the work tree where it names nothing.
func (lt *linkTrees) before(p string) linkwalk.Node {
	if e, ok := lt.head[p]; ok {
		return lt.node(e)
	}
	return lt.disk.lookup(p)
}

func (lt *linkTrees) node(e treeEntry) linkwalk.Node {
	if e.kind != linkwalk.Link {
		return linkwalk.Node{Kind: e.kind}
	}
	t, ok := lt.targets[e.blob]
	return linkwalk.Node{Kind: linkwalk.Link, Target: t, Read: ok}
}

// mergedLinks lists the symlinks of the tree after the merge, sorted.
func (lt *linkTrees) mergedLinks() []string {
	var out []string
	for p, e := range lt.over {
		if e.kind == linkwalk.Link {
			out = append(out, p)
		}
	}
	for p, e := range lt.head {
		if _, changed := lt.over[p]; e.kind == linkwalk.Link && !changed {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// resolveLinks says where each symlink files add or change leads once merged into the user's
// HEAD, and appends the user's own symlinks that the branch leaves as they are but makes lead
// elsewhere, out of the repository (status L): a branch that turns a directory into a link
// changes where every link through it leads.
func (r *Repo) resolveLinks(ctx context.Context, run *Run, files []File) ([]File, error) {
	lt, err := r.readLinkTrees(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("reading the trees to resolve symlinks in: %w", err)
	}
	ws := filepath.ToSlash(r.Project.Workspace)
	merged := linkwalk.New(linkwalk.Options{Lookup: lt.merged, Top: ws, StopAtGit: true})
	changed := map[string]bool{}
	for i := range files {
		f := &files[i]
		changed[f.Path] = true
		if f.Status == "D" || f.Mode != "120000" {
			continue
		}
		d := linkwalk.Dest{Kind: linkwalk.Unresolvable, Why: fmt.Sprintf("a target longer than %d bytes, not read", maxLinkTarget)}
		if !f.linkUnread {
			d = merged.Target(f.Path, f.Link)
		}
		f.Leads, f.Out = &d, d.Out()
	}
	markThroughLinks(files, lt, merged, r.ExecPatterns())
	if lt.head == nil {
		return files, nil
	}
	before := linkwalk.New(linkwalk.Options{Lookup: lt.before, Top: ws, StopAtGit: true})
	for _, p := range lt.mergedLinks() {
		if changed[p] {
			continue
		}
		n := lt.merged(p)
		d := merged.Link(p, n)
		if !d.Out() {
			continue
		}
		if was := lt.before(p); was.Kind == linkwalk.Link && before.Link(p, was) == d {
			continue
		}
		files = append(files, File{Path: p, Status: "L", Mode: "120000", Link: n.Target, Leads: &d, Out: true})
	}
	return files, nil
}

// readLinkTrees reads the trees run's symlinks are resolved in, and every symlink's target.
func (r *Repo) readLinkTrees(ctx context.Context, run *Run) (*linkTrees, error) {
	lt := &linkTrees{disk: &workTree{root: r.Project.Workspace, dirs: map[string]bool{}}}
	base := ""
	if out, err := r.host(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil {
		if mb, err := r.host(ctx, "merge-base", trim(out), run.Tip); err == nil {
			base = trim(mb)
			if lt.head, err = r.listTree(ctx, trim(out)); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if base == "" { // nothing to merge with: the branch's tree is what would be checked out
		lt.over, err = r.listTree(ctx, run.Tip)
	} else {
		lt.over, err = r.changes(ctx, base, run.Tip)
	}
	if err != nil {
		return nil, err
	}
	lt.targets, err = r.linkTargets(ctx, lt.head, lt.over)
	return lt, err
}

// listTree reads the whole tree of commit, its directories included.
func (r *Repo) listTree(ctx context.Context, commit string) (map[string]treeEntry, error) {
	l := &treeListing{entries: map[string]treeEntry{}}
	if _, err := r.hostGit(ctx, git{args: []string{"ls-tree", "-r", "-t", "-z", "--full-tree", commit}, stdout: l}); err != nil {
		return nil, err
	}
	if l.err != nil {
		return nil, l.err
	}
	return l.entries, nil
}

// changes reads what tip changes since base as entries: linkwalk.Absent for a deleted path, and the
// directories that hold what it adds.
func (r *Repo) changes(ctx context.Context, base, tip string) (map[string]treeEntry, error) {
	raw, err := r.host(ctx, "diff", "--raw", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "--abbrev=40", base, tip)
	if err != nil {
		return nil, err
	}
	over := map[string]treeEntry{}
	parts := splitZ(raw)
	for i := 0; i+1 < len(parts); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(parts[i], ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("reading the diff: unexpected %q", parts[i])
		}
		p := parts[i+1]
		if meta[4][:1] == "D" {
			if _, set := over[p]; !set {
				over[p] = treeEntry{kind: linkwalk.Absent}
			}
			continue
		}
		over[p] = entryOf(meta[1], meta[3])
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if over[d].kind == linkwalk.Dir {
				break
			}
			over[d] = treeEntry{kind: linkwalk.Dir}
		}
	}
	return over, nil
}

// entryOf is the entry of a tree listing's mode and object.
func entryOf(mode, object string) treeEntry {
	switch mode {
	case "040000":
		return treeEntry{kind: linkwalk.Dir}
	case "120000":
		return treeEntry{kind: linkwalk.Link, blob: object}
	case "160000":
		return treeEntry{kind: linkwalk.Submodule}
	}
	return treeEntry{kind: linkwalk.File}
}

// linkTargets reads the target of every symlink of the trees, but those longer than
// [maxLinkTarget]: sizes first, then the contents, each a few git processes in all.
func (r *Repo) linkTargets(ctx context.Context, trees ...map[string]treeEntry) (map[string]string, error) {
	seen := map[string]bool{}
	var blobs []string
	for _, t := range trees {
		for _, e := range t {
			if e.kind == linkwalk.Link && !seen[e.blob] {
				seen[e.blob] = true
				blobs = append(blobs, e.blob)
			}
		}
	}
	sort.Strings(blobs)
	var small []string
	for i := 0; i < len(blobs); i += sizeBatch {
		sizes, err := r.sizes(ctx, blobs[i:min(i+sizeBatch, len(blobs))])
		if err != nil {
			return nil, err
		}
		for _, b := range blobs[i:min(i+sizeBatch, len(blobs))] {
			if n, ok := sizes[b]; ok && n <= maxLinkTarget {
				small = append(small, b)
			}
		}
	}
	return r.blobs(ctx, small)
}

// sizeBatch is how many blob sizes one git process prints: about 5 MiB of output.
const sizeBatch = 1 << 16

// treeListing takes the output of ls-tree -z as it comes, keeping each path's entry; past
// [maxTreeEntries] it keeps nothing more and says so.
type treeListing struct {
	entries map[string]treeEntry
	partial []byte
	err     error
}

func (l *treeListing) Write(b []byte) (int, error) {
	n := len(b)
	for l.err == nil && len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			l.partial = append(l.partial, b...)
			if len(l.partial) > 1<<20 {
				l.err = fmt.Errorf("ls-tree printed an entry longer than 1 MiB")
			}
			break
		}
		rec := b[:i]
		if len(l.partial) > 0 {
			rec = append(l.partial, rec...)
			l.partial = l.partial[:0]
		}
		l.add(rec)
		b = b[i+1:]
	}
	return n, nil // what is not kept is still read, so git is never left blocked writing
}

// add keeps one "<mode> <type> <object>\t<path>" record.
func (l *treeListing) add(rec []byte) {
	meta, p, ok := bytes.Cut(rec, []byte{'\t'})
	f := strings.Fields(string(meta))
	switch {
	case !ok || len(f) != 3:
		l.err = fmt.Errorf("reading the tree: unexpected ls-tree line %q", rec)
	case len(l.entries) >= maxTreeEntries:
		l.err = fmt.Errorf("the tree holds more than %d entries: abox does not resolve symlinks in it; merge the branch by hand", maxTreeEntries)
	default:
		l.entries[string(p)] = entryOf(f[0], f[2])
	}
}

// workTree says what the user's work tree holds at the paths no tree names — an ignored
// directory, a symlink the user made — which a merge leaves as they are. It looks without
// following a symlink on the way: below one, or below anything but a directory, it sees nothing.
// The work tree is the user's, not the agent's.
type workTree struct {
	root  string
	dirs  map[string]bool // path → a real directory
	repos map[string]bool // a real directory → it holds a .git ([workTree.isRepo])
}

func (wt *workTree) lookup(p string) linkwalk.Node {
	if wt == nil || !wt.isDir(path.Dir(p)) {
		return linkwalk.Node{}
	}
	full := filepath.Join(wt.root, filepath.FromSlash(p))
	st, err := os.Lstat(full)
	switch {
	case err != nil:
		return linkwalk.Node{}
	case st.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(full)
		return linkwalk.Node{Kind: linkwalk.Link, Target: t, Read: err == nil && len(t) <= maxLinkTarget}
	case st.IsDir():
		return linkwalk.Node{Kind: linkwalk.Dir}
	}
	return linkwalk.Node{Kind: linkwalk.File}
}

func (wt *workTree) isDir(p string) bool {
	if p == "." {
		return true
	}
	if v, ok := wt.dirs[p]; ok {
		return v
	}
	v := wt.isDir(path.Dir(p))
	if v {
		st, err := os.Lstat(filepath.Join(wt.root, filepath.FromSlash(p)))
		v = err == nil && st.IsDir()
	}
	wt.dirs[p] = v
	return v
}

// maxLinksPerDest bounds the symlinks to one place that [markThroughLinks] tries a file under.
const maxLinksPerDest = 8

// markThroughLinks marks each file of files that a symlink of the tree after the merge reaches
// under a path the catalog covers: with .claude -> tools/claude, the host's Claude Code reads
// tools/claude/settings.json as .claude/settings.json, and with Makefile -> build/rules.txt
// make reads build/rules.txt. Each link is resolved in the merged tree as the kernel would
// ([linkwalk]); a file under the place it leads to is looked up under the link's path instead.
func markThroughLinks(files []File, lt *linkTrees, merged *linkwalk.Walker, pats []string) {
	into := map[string][]string{} // where a link leads inside → the links
	for _, p := range lt.mergedLinks() {
		d := merged.Link(p, lt.merged(p))
		if d.Kind == linkwalk.Inside && d.Path != "." && len(into[d.Path]) < maxLinksPerDest {
			into[d.Path] = append(into[d.Path], p)
		}
	}
	if len(into) == 0 {
		return
	}
	for i := range files {
		f := &files[i]
		if f.Exec || f.Status == "D" {
			continue
		}
		for at := f.Path; at != "." && at != "/" && !f.Exec; at = path.Dir(at) {
			for _, link := range into[at] {
				as := link + strings.TrimPrefix(f.Path, at)
				if why := execWhy(pats, as, nil); why != "" {
					f.Exec, f.Why = true, why+", as "+as+" through the symlink "+link
					break
				}
			}
		}
	}
}
