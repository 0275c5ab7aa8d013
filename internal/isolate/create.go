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
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/statefs"
)

// CreateOptions say how to make a clone.
type CreateOptions struct {
	ID           string   // the run's id; a random one when empty
	FromWorktree bool     // carry the tracked uncommitted changes (staged or not) into the clone
	Mask         []string // mask patterns: mounts.mask and defaults.mask
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
		return nil, errors.New("the project's repository has no commit at HEAD: commit something first")
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
		return fmt.Errorf("the project %s is not a git repository: an isolated run clones it", r.Project.Workspace)
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
	tmp, err := os.MkdirTemp(r.Project.Dir, ".index-*")
	if err != nil {
		if err := statefs.MkdirAll(r.Project.Dir); err != nil {
			return err
		}
		if tmp, err = os.MkdirTemp(r.Project.Dir, ".index-*"); err != nil {
			return err
		}
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
	files, err := r.hostIndex(ctx, index, "ls-files", "-z")
	if err != nil {
		return err
	}
	pats := parseMasks(o.Mask)
	for _, f := range splitZ(files) {
		if masked(pats, f) {
			run.Masked = append(run.Masked, f)
		}
	}
	sort.Strings(run.Masked)
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

func (r *Repo) copyIndex(ctx context.Context, dst string) error {
	p, err := r.host(ctx, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(trim(p))
	if errors.Is(err, fs.ErrNotExist) {
		return os.WriteFile(dst, nil, 0o600) // no index yet: start empty, add -u then adds nothing
	}
	if err != nil {
		return fmt.Errorf("reading the index: %w", err)
	}
	return os.WriteFile(dst, data, 0o600)
}

// makeClone initialises the clone, has the user's repository push the start commit into it and
// checks it out.
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
	// Pushed from the user's repository, whose own hooks are off, to a ref that is not checked
	// out (receive-pack refuses to update the current branch, and git passes no -c override to
	// a local transport's other side); the receiving side is the clone abox just wrote.
	ref, start := "refs/heads/"+run.Branch, "refs/abox-start/"+run.ID
	if _, err := r.host(ctx, "push", "--quiet", "--no-verify", filepath.Join(dir, ".git"), run.Start+":"+start); err != nil {
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
