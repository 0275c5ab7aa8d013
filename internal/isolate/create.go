package isolate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/linkwalk"
	"github.com/aboxhq/abox/internal/statefs"
)

// CreateOptions say how to make a clone.
type CreateOptions struct {
	ID           string   // the run's id; a random one when empty
	FromWorktree bool     // carry the tracked uncommitted changes (staged or not) into the clone
	Mask         []string // mask patterns: mounts.mask and defaults.mask
	// Owner is who the clone is given to once it is made: the agent's uid and gid. Nil keeps
	// it abox's.
	Owner *Account
}

// Create makes the private clone of run o.ID in the project's state, on a new branch
// abox/<id> from the user's HEAD, and records the run as pending. The user's working tree,
// index, HEAD and refs are not changed.
//
// The clone is made from nothing: `git init` without templates (so no hook of the user's
// template directory is copied), then the user's repository pushes the start commit into it.
// The start commit is Base itself, or — when FromWorktree carries changes or a mask matches a
// tracked path — a commit on Base built in a private index, with the tracked changes added and
// the masked paths removed, so masked content of the worktree never reaches the clone.
func (r *Repo) Create(ctx context.Context, o CreateOptions) (*Run, error) {
	id := o.ID
	if id == "" {
		id = newID()
	}
	if err := ValidID(id); err != nil {
		return nil, err
	}
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Lstat(r.Project.IsolatedRun(id)); err == nil {
		return nil, fmt.Errorf("run %s already exists", id)
	}
	if err := r.checkTopLevel(ctx); err != nil {
		return nil, err
	}
	base, err := r.host(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("the project's repository has %w: commit something first", ErrNoCommit)
	}
	run := &Run{ID: id, Branch: "abox/" + id, Base: trim(base), State: Pending, Created: r.now().UTC()}
	if err := r.startCommit(ctx, run, o); err != nil {
		return nil, err
	}
	dir := r.Project.Clone(id)
	if err := r.makeClone(ctx, run, dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := own(dir, o.Owner); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := r.save(run); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return run, nil
}

func newID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// checkTopLevel refuses a workspace that is not the top level of a git work tree: the clone is
// of the whole repository, and a subdirectory would bring back paths the user did not open.
func (r *Repo) checkTopLevel(ctx context.Context) error {
	out, err := r.host(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("the project %s is %w: an isolated run clones it", r.Project.Workspace, ErrNotRepository)
	}
	top, err1 := filepath.EvalSymlinks(trim(out))
	ws, err2 := filepath.EvalSymlinks(r.Project.Workspace)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if top != ws {
		return fmt.Errorf("the project %s is inside the git repository %s, not its top level", ws, top)
	}
	return nil
}

// startCommit decides run.Full, run.Start and run.Masked, making the start commit in the user's
// object store when one is needed (it is reachable from no ref there).
func (r *Repo) startCommit(ctx context.Context, run *Run, o CreateOptions) error {
	tmp, err := r.hostTemp("index")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	if o.FromWorktree {
		// The user's index, copied, so that staged changes come along and stat data saves
		// hashing every file again.
		if err := r.copyIndex(ctx, index); err != nil {
			return err
		}
		if _, err := r.hostIndex(ctx, index, "add", "-u", "--", ":/"); err != nil {
			return fmt.Errorf("reading the worktree's changes: %w", err)
		}
	} else if _, err := r.hostIndex(ctx, index, "read-tree", run.Base); err != nil {
		return err
	}
	full, err := r.hostIndex(ctx, index, "write-tree")
	if err != nil {
		return err
	}
	run.Full = trim(full)
	files, err := r.hostIndex(ctx, index, "ls-files", "-z", "--stage")
	if err != nil {
		return err
	}
	t, err := r.readTreeIndex(ctx, files)
	if err != nil {
		return err
	}
	if run.Masked, err = t.masks(ctx, parseMasks(o.Mask)); err != nil {
		return err
	}
	if len(run.Masked) > 0 {
		args := append([]string{"--literal-pathspecs", "rm", "--cached", "--quiet", "--"}, run.Masked...)
		if _, err := r.hostIndex(ctx, index, args...); err != nil {
			return fmt.Errorf("removing masked paths: %w", err)
		}
	}
	tree, err := r.hostIndex(ctx, index, "write-tree")
	if err != nil {
		return err
	}
	baseTree, err := r.host(ctx, "rev-parse", run.Base+"^{tree}")
	if err != nil {
		return err
	}
	if trim(tree) == trim(baseTree) {
		run.Start = run.Base
		return nil
	}
	msg := fmt.Sprintf("abox: start of run %s", run.ID)
	if o.FromWorktree && run.Full != trim(baseTree) {
		msg += ": the worktree's uncommitted changes"
	}
	if len(run.Masked) > 0 {
		msg += fmt.Sprintf("; %d masked paths removed", len(run.Masked))
	}
	c, err := r.hostIndex(ctx, index, "commit-tree", trim(tree), "-p", run.Base, "-m", msg)
	if err != nil {
		return err
	}
	run.Start = trim(c)
	return nil
}

// indexTree is the tracked files of an index, with the blobs of its symlinks, for masking as
// a live run masks: there a masked symlink's target inside the workspace is masked too, and so
// is what a literal pattern names through a linked directory (internal/sandbox.FindMasks, which
// asks the filesystem). Here the links are walked as the kernel would walk them in the clone's
// checkout ([linkwalk]), not joined as text: with cfg a link to sub/dir, .env -> cfg/../secrets.env
// leads to sub/secrets.env, which is what must be masked, not a secrets.env at the top.
type indexTree struct {
	r     *Repo
	paths []string          // sorted
	links map[string]string // symlink path → blob
	subs  map[string]bool   // gitlinks: a submodule's content is not the clone's
	read  map[string]string // symlink blob → target
	err   error             // the first target that could not be read
}

// maxLinkHops bounds the masked symlinks followed while masking.
const maxLinkHops = 1000

func (r *Repo) readTreeIndex(ctx context.Context, staged []byte) (*indexTree, error) {
	t := &indexTree{r: r, links: map[string]string{}, subs: map[string]bool{}, read: map[string]string{}}
	for _, line := range splitZ(staged) {
		meta, p, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("reading the index: unexpected ls-files line %q", line)
		}
		if len(t.paths) == 0 || t.paths[len(t.paths)-1] != p { // one entry per path
			t.paths = append(t.paths, p)
		}
		switch f[0] {
		case "120000":
			t.links[p] = f[1]
		case "160000":
			t.subs[p] = true
		}
	}
	sort.Strings(t.paths)
	return t, nil
}

// node says what the tree holds at p, for [linkwalk]: a symlink with its target, a gitlink, a
// file, a directory (a path some tracked path lies below), or nothing.
func (t *indexTree) node(ctx context.Context, p string) linkwalk.Node {
	if blob, ok := t.links[p]; ok {
		target, ok := t.read[blob]
		if !ok {
			out, err := t.r.host(ctx, "cat-file", "blob", blob)
			if err != nil {
				if t.err == nil {
					t.err = err
				}
				return linkwalk.Node{Kind: linkwalk.Link}
			}
			target = string(out)
			t.read[blob] = target
		}
		return linkwalk.Node{Kind: linkwalk.Link, Target: target, Read: true}
	}
	if t.subs[p] {
		return linkwalk.Node{Kind: linkwalk.Submodule}
	}
	if i := sort.SearchStrings(t.paths, p); i < len(t.paths) && t.paths[i] == p {
		return linkwalk.Node{Kind: linkwalk.File}
	}
	if i := sort.SearchStrings(t.paths, p+"/"); i < len(t.paths) && strings.HasPrefix(t.paths[i], p+"/") {
		return linkwalk.Node{Kind: linkwalk.Dir}
	}
	return linkwalk.Node{}
}

// walker resolves the tree's symlinks as the kernel would in the clone's checkout.
func (t *indexTree) walker(ctx context.Context) *linkwalk.Walker {
	lookup := func(p string) linkwalk.Node { return t.node(ctx, p) }
	return linkwalk.New(linkwalk.Options{Lookup: lookup, Top: t.r.Project.Workspace, StopAtGit: true})
}

// leadsTo is the path the symlink at p names in the tree ([step]), "" when its target could
// not be read.
func (t *indexTree) leadsTo(ctx context.Context, w *linkwalk.Walker, p string) string {
	n := t.node(ctx, p)
	if !n.Read {
		return ""
	}
	return step(w, p, n.Target)
}

// step is the path target names from the directory holding at: its directories are walked as
// the kernel walks them ([linkwalk]), a link among them followed and ".." applied to where it
// led, and its last name is not followed, so that a link there is masked in turn. It is "" when
// the directories lead out of the tree, into .git or nowhere (a loop, more than
// [linkwalk.MaxLinks] links): there is then nothing of the tree to mask. A target ending in
// "/", "." or ".." is walked whole.
func step(w *linkwalk.Walker, at, target string) string {
	if i := strings.IndexByte(target, 0); i >= 0 {
		target = target[:i] // as symlink(2) reads it
	}
	dir, name := path.Split(target)
	if name == "" || name == "." || name == ".." {
		return inside(w.Target(at, target))
	}
	if dir == "" {
		dir = "."
	}
	d := inside(w.Target(at, dir))
	if d == "" {
		return ""
	}
	return path.Join(d, name)
}

func inside(d linkwalk.Dest) string {
	if d.Kind != linkwalk.Inside {
		return ""
	}
	return d.Path
}

// under lists the tracked paths at or below p.
func (t *indexTree) under(p string) []string {
	var out []string
	if i := sort.SearchStrings(t.paths, p); i < len(t.paths) && t.paths[i] == p {
		out = append(out, p)
	}
	for i := sort.SearchStrings(t.paths, p+"/"); i < len(t.paths) && strings.HasPrefix(t.paths[i], p+"/"); i++ {
		out = append(out, t.paths[i])
	}
	return out
}

// masks returns the tracked paths to remove from the clone, sorted: those pats match, what a
// literal pattern names through a linked directory, and, link after link, what a masked
// symlink leads to inside the tree (a file, or everything below a directory).
func (t *indexTree) masks(ctx context.Context, pats []maskPattern) ([]string, error) {
	set := map[string]bool{}
	var queue []string
	add := func(p string) {
		if !set[p] {
			set[p] = true
			if _, ok := t.links[p]; ok {
				queue = append(queue, p)
			}
		}
	}
	for _, p := range t.paths {
		if masked(pats, p) {
			add(p)
		}
	}
	hops := 0
	w := t.walker(ctx)
	for _, pat := range pats {
		if !pat.anchored || strings.ContainsAny(pat.glob, `*?[\`) {
			continue
		}
		if dest := step(w, ".", pat.glob); dest != "" {
			for _, p := range t.under(dest) {
				add(p)
			}
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if hops++; hops > maxLinkHops {
			return nil, fmt.Errorf("masking: more than %d symlinks to follow", maxLinkHops)
		}
		dest := t.leadsTo(ctx, w, p)
		if dest == "." {
			return nil, fmt.Errorf("the masked symlink %s leads to the repository's top: nothing of it could go in the clone", p)
		}
		if dest != "" {
			for _, q := range t.under(dest) {
				add(q)
			}
		}
	}
	if t.err != nil {
		return nil, t.err
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

func (r *Repo) copyIndex(ctx context.Context, dst string) error {
	p, err := r.host(ctx, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(trim(p))
	if errors.Is(err, fs.ErrNotExist) {
		data = nil // no index yet: start empty, add -u then adds nothing
	} else if err != nil {
		return fmt.Errorf("reading the index: %w", err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return err
	}
	return r.giveHost(dst)
}

// makeClone initialises the clone, fills it from a bundle of the start commit that the user's
// repository writes (git in the user's repository never touches the clone) and checks it out.
func (r *Repo) makeClone(ctx context.Context, run *Run, dir string) error {
	if err := statefs.MkdirAll(r.Project.Clones()); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating the clone: %w", err)
	}
	if _, err := r.run(ctx, git{dir: dir, args: []string{"init", "--quiet", "--template=", "--initial-branch=" + run.Branch, dir}, env: cloneEnv()}); err != nil {
		return fmt.Errorf("creating the clone: %w", err)
	}
	if err := sanitize(dir); err != nil {
		return err
	}
	tmp, err := r.hostTemp("start")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// A ref for the bundle to name, in the user's repository only while the bundle is written.
	start := "refs/abox-start/" + run.ID
	if _, err := r.host(ctx, "update-ref", start, run.Start); err != nil {
		return fmt.Errorf("filling the clone: %w", err)
	}
	bundle := filepath.Join(tmp, "start.bundle")
	_, err = r.host(ctx, "bundle", "create", "--quiet", bundle, start)
	r.host(context.WithoutCancel(ctx), "update-ref", "-d", start)
	if err != nil {
		return fmt.Errorf("filling the clone: %w", err)
	}
	ref := "refs/heads/" + run.Branch
	if _, err := r.inClone(ctx, dir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", bundle, start+":"+start); err != nil {
		return fmt.Errorf("filling the clone: %w", err)
	}
	if _, err := r.inClone(ctx, dir, "update-ref", ref, run.Start); err != nil {
		return fmt.Errorf("filling the clone: %w", err)
	}
	if _, err := r.inClone(ctx, dir, "update-ref", "-d", start); err != nil {
		return fmt.Errorf("filling the clone: %w", err)
	}
	if _, err := r.inClone(ctx, dir, "reset", "--quiet", "--hard", ref); err != nil {
		return fmt.Errorf("checking out the clone: %w", err)
	}
	head, err := r.inClone(ctx, dir, "rev-parse", "HEAD")
	if err != nil || trim(head) != run.Start {
		return fmt.Errorf("the clone's HEAD is not the start commit %s", run.Start)
	}
	return nil
}

func splitZ(b []byte) []string {
	var out []string
	for _, f := range bytes.Split(b, []byte{0}) {
		if len(f) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

func sortRuns(runs []*Run) {
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].Created.Equal(runs[j].Created) {
			return runs[i].Created.Before(runs[j].Created)
		}
		return strings.Compare(runs[i].ID, runs[j].ID) < 0
	})
}
