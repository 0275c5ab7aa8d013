package isolate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aboxhq/abox/internal/linkwalk"
)

// File is one path the branch changes.
type File struct {
	Path string `json:"path"`
	// Status is A, M, D or T (type changed), or L: a symlink of the user's that the branch
	// leaves as it is but makes lead elsewhere, out of the repository.
	Status string `json:"status"`
	Mode   string `json:"mode"` // the new mode; "" when deleted
	Size   int64  `json:"size"` // of the new blob
	Exec   bool   `json:"exec_adjacent,omitempty"`
	// Why says what makes the file execution-adjacent: the tool of the catalog entry that
	// covers it ([watch.Lookup]), a hidden directory the catalog does not know, or mounts.watch.
	Why   string         `json:"exec_why,omitempty"`
	Big   bool           `json:"big,omitempty"`
	Link  string         `json:"link,omitempty"`  // a symlink's target, as committed
	Leads *linkwalk.Dest `json:"leads,omitempty"` // where the symlink leads once merged, resolved link by link
	// Out is set when the symlink leads out of the repository, into .git, or nowhere abox can
	// resolve ([linkwalk.Dest.Out]).
	Out bool `json:"link_out,omitempty"`

	// GitDir is the directory of the branch, holding this file, that git takes for a git
	// directory once checked out ([Repo.gitDirs]): git reads its config and runs its hooks.
	GitDir string `json:"git_dir,omitempty"`

	// Ignored is what of the user's work tree, which git ignores, the file's checkout replaces:
	// the file's own path, one of its directories that is a file or a symlink there, or a
	// directory ("build/") holding only what git ignores. git merge overwrites it unasked.
	Ignored string `json:"replaces_ignored,omitempty"`

	linkUnread bool // the target was too long to read
}

// Flagged reports whether Merge refuses f without force.
func (f File) Flagged() bool { return f.Big || f.Out || f.GitDir != "" || f.Ignored != "" }

// Diff is what a run's branch changes against its base.
type Diff struct {
	Run     *Run   `json:"run"`
	Files   []File `json:"files"` // execution-adjacent first
	LeftOut []Big  `json:"left_out,omitempty"`
	Stat    string `json:"stat"`
	Patch   string `json:"patch,omitempty"`
}

// Diff returns the changes of run id's branch against its base, the execution-adjacent files
// first, with where each symlink leads once merged into the user's HEAD ([File.Leads]). Git runs
// with --no-ext-diff and --no-textconv: no driver the branch's .gitattributes names is run. The
// patch is left out unless patch is true.
func (r *Repo) Diff(ctx context.Context, id string, patch bool) (*Diff, error) {
	run, err := r.collected(id)
	if err != nil {
		return nil, err
	}
	if err := r.checkBranch(ctx, run); err != nil {
		return nil, err
	}
	files, err := r.files(ctx, run)
	if err != nil {
		return nil, err
	}
	d := &Diff{Run: run, Files: files, LeftOut: run.LeftOut}
	safe := []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames"}
	stat, err := r.host(ctx, append(safe, "--stat=120", run.Base, run.Tip)...)
	if err != nil {
		return nil, err
	}
	d.Stat = string(stat)
	if patch {
		p, err := r.host(ctx, append(safe, run.Base, run.Tip)...)
		if err != nil {
			return nil, err
		}
		d.Patch = string(p)
	}
	return d, nil
}

func (r *Repo) collected(id string) (*Run, error) {
	run, err := r.Load(id)
	if err != nil {
		return nil, err
	}
	if run.Tip == "" {
		return nil, fmt.Errorf("run %s has not been collected", id)
	}
	return run, nil
}

// checkBranch refuses a branch that moved since Collect: what was reviewed is what lands.
func (r *Repo) checkBranch(ctx context.Context, run *Run) error {
	got, err := r.host(ctx, "rev-parse", "--verify", "--quiet", "refs/heads/"+run.Branch+"^{commit}")
	if err != nil {
		return fmt.Errorf("the branch %s is gone from the repository", run.Branch)
	}
	if trim(got) != run.Tip {
		return fmt.Errorf("the branch %s moved since the run was collected (%s, not %s)", run.Branch, trim(got)[:12], run.Tip[:12])
	}
	return nil
}

// files lists what base..tip changes, with sizes, link targets and flags.
func (r *Repo) files(ctx context.Context, run *Run) ([]File, error) {
	raw, err := r.host(ctx, "diff", "--raw", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "--abbrev=40", run.Base, run.Tip)
	if err != nil {
		return nil, err
	}
	parts := splitZ(raw)
	pats := r.ExecPatterns()
	var files []File
	var blobs []string
	for i := 0; i+1 < len(parts); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(parts[i], ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("reading the diff: unexpected %q", parts[i])
		}
		f := File{Path: parts[i+1], Status: meta[4][:1], Mode: meta[1]}
		if f.Status == "D" {
			f.Mode = ""
		}
		f.Why = execWhy(pats, f.Path, nil)
		f.Exec = f.Why != ""
		files = append(files, f)
		blobs = append(blobs, meta[3])
	}
	sizes, err := r.sizes(ctx, blobs)
	if err != nil {
		return nil, err
	}
	var links []string
	for i, f := range files {
		if f.Status != "D" && f.Mode == "120000" && sizes[blobs[i]] <= maxLinkTarget {
			links = append(links, blobs[i])
		}
	}
	targets, err := r.blobs(ctx, links)
	if err != nil {
		return nil, err
	}
	for i := range files {
		if files[i].Status == "D" {
			continue
		}
		describe(&files[i], blobs[i], sizes[blobs[i]], targets, r.maxFile())
	}
	if files, err = r.resolveLinks(ctx, run, files); err != nil {
		return nil, err
	}
	if err := r.markGitDirs(ctx, run.Tip, files); err != nil {
		return nil, err
	}
	if err := r.markVenvs(ctx, run.Tip, pats, files); err != nil {
		return nil, err
	}
	if err := r.markIgnored(ctx, files); err != nil {
		return nil, fmt.Errorf("looking for ignored files the branch replaces: %w", err)
	}
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].Exec != files[j].Exec {
			return files[i].Exec
		}
		return files[i].Path < files[j].Path
	})
	return files, nil
}

// sizes returns the size of every blob in one git process, however many files the branch
// changes; a deleted file's all-zero id and a submodule's commit are "missing" and left out.
func (r *Repo) sizes(ctx context.Context, blobs []string) (map[string]int64, error) {
	out, err := r.hostIn(ctx, strings.Join(blobs, "\n")+"\n", "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	for _, line := range strings.Split(trim(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "blob" {
			continue
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("reading blob sizes: %q", line)
		}
		sizes[f[0]] = n
	}
	return sizes, nil
}

// maxLinkTarget is the longest symlink target Diff reads: a longer one is flagged unread.
const maxLinkTarget = 4096

// linkBatch is how many blobs one git process prints for [Repo.blobs]: at most 16 MiB of
// targets, under the bound of one command's output.
const linkBatch = 4096

// blobs returns the content of each of ids, small blobs all, with one git process per
// [linkBatch] of them: a branch of a million symlinks costs some hundred processes, not a
// million.
func (r *Repo) blobs(ctx context.Context, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for len(ids) > 0 {
		n := min(len(ids), linkBatch)
		b, err := r.hostIn(ctx, strings.Join(ids[:n], "\n")+"\n", "cat-file", "--batch")
		if err != nil {
			return nil, err
		}
		raw := string(b) // sliced as a string: copying the rest for each blob is quadratic
		for _, id := range ids[:n] {
			head, rest, ok := strings.Cut(raw, "\n")
			f := strings.Fields(head)
			if !ok || len(f) != 3 || f[0] != id {
				return nil, fmt.Errorf("reading symlink targets: unexpected %q", head)
			}
			size, err := strconv.Atoi(f[2])
			if err != nil || size < 0 || size+1 > len(rest) {
				return nil, fmt.Errorf("reading symlink targets: unexpected %q", head)
			}
			out[id] = rest[:size]
			raw = rest[size+1:]
		}
		ids = ids[n:]
	}
	return out, nil
}

// describe fills in the size of f's new blob and, for a symlink, its target (from targets);
// where the symlink leads is [Repo.resolveLinks]'s.
func describe(f *File, blob string, size int64, targets map[string]string, maxFile int64) {
	if f.Mode == "160000" {
		f.Link = "submodule " + blob
		return
	}
	f.Size = size
	f.Big = f.Size > maxFile
	if f.Mode != "120000" {
		return
	}
	target, ok := targets[blob]
	if !ok {
		f.Link, f.linkUnread = fmt.Sprintf("(a target longer than %d bytes)", maxLinkTarget), true
		return
	}
	f.Link = target
}

// MergeOptions say how to land a run.
type MergeOptions struct {
	// Force merges files over the bound, symlinks that leave the repository ([File.Out]), files
	// of git directories ([File.GitDir]) and files that replace ignored ones ([File.Ignored]).
	Force bool
}

// Merge lands run id's branch on the user's current branch: a fast-forward when it can, a merge
// commit otherwise. It refuses a detached HEAD, a dirty working tree or index ([ErrDirty]), a
// branch that moved since Collect or does not descend from its base, and — unless forced —
// a branch that brings a file over the bound, a symlink that, once merged, leads out of the
// repository, into .git or nowhere abox can resolve ([Repo.Diff]), a file of a git directory
// ([File.GitDir]), or a file that replaces one of the user's that git ignores ([File.Ignored]);
// unforced, a fast-forward also runs with --no-overwrite-ignore, git's own guard (which a merge
// commit lacks in git 2.39). Hooks do not run; a conflicted merge is aborted and the tree left as
// it was.
func (r *Repo) Merge(ctx context.Context, id string, o MergeOptions) (*Run, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	run, err := r.collected(id)
	if err != nil {
		return nil, err
	}
	if run.State != Pending {
		return nil, fmt.Errorf("run %s is %s, not pending", id, run.State)
	}
	if err := r.checkBranch(ctx, run); err != nil {
		return nil, err
	}
	cur, err := r.host(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return nil, errors.New("HEAD is detached: check out the branch to merge into")
	}
	into := trim(cur)
	if into == run.Branch {
		return nil, fmt.Errorf("the run's own branch %s is checked out: check out the branch to merge into", into)
	}
	if err := r.clean(ctx); err != nil {
		return nil, err
	}
	if _, err := r.host(ctx, "merge-base", "--is-ancestor", run.Base, run.Tip); err != nil {
		return nil, fmt.Errorf("the branch %s does not descend from its base %s: merge it by hand if you mean to", run.Branch, run.Base[:12])
	}
	files, err := r.files(ctx, run)
	if err != nil {
		return nil, err
	}
	if bad := flagged(files); len(bad) > 0 && !o.Force {
		return nil, fmt.Errorf("the branch %s brings %s: %w", run.Branch, strings.Join(bad, ", "), ErrFlagged)
	}
	msg := fmt.Sprintf("abox: merge run %s", run.ID)
	args := []string{"merge", "--quiet", "--no-edit", "--no-verify", "--no-stat", "-m", msg}
	if !o.Force {
		args = append(args, "--no-overwrite-ignore")
	}
	if _, err := r.host(ctx, append(args, "refs/heads/"+run.Branch)...); err != nil {
		r.host(context.WithoutCancel(ctx), "merge", "--abort")
		return nil, fmt.Errorf("merging %s into %s: %w", run.Branch, into, err)
	}
	run.State, run.Into = Merged, into
	return run, r.save(run)
}

// flagged names what Merge refuses without force, one line each: a newline the agent put in a
// name or a target is shown as \n.
func flagged(files []File) []string {
	var out []string
	for _, f := range files {
		var s string
		switch {
		case f.Big:
			s = fmt.Sprintf("%s (%d bytes, over the bound)", f.Path, f.Size)
		case f.Out:
			s = fmt.Sprintf("%s (a symlink to %q, %s)", f.Path, f.Link, f.Leads)
		case f.GitDir != "":
			s = fmt.Sprintf("%s (in %s, a git directory to git)", f.Path, f.GitDir)
		case f.Ignored != "":
			s = fmt.Sprintf("%s (%s)", f.Path, f.ignoredNote())
		default:
			continue
		}
		out = append(out, strings.ReplaceAll(s, "\n", `\n`))
	}
	return out
}

// clean refuses a working tree or index with changes to tracked files.
func (r *Repo) clean(ctx context.Context) error {
	out, err := r.host(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=no", "--ignore-submodules=none")
	if err != nil {
		return err
	}
	if paths := splitZ(out); len(paths) > 0 {
		var names []string
		for _, p := range paths {
			if len(p) > 3 {
				names = append(names, p[3:])
			}
		}
		if len(names) > 5 {
			names = append(names[:5], "…")
		}
		return fmt.Errorf("%w (%s): commit or stash them first", ErrDirty, strings.Join(names, ", "))
	}
	return nil
}

// discardOrphan removes a clone that has no record ([Repo.Orphans]); nothing of it reached the
// user's repository.
func (r *Repo) discardOrphan(id string) (*Run, error) {
	dir := r.Project.Clone(id)
	if _, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("removing the clone: %w", err)
	}
	return &Run{ID: id, Branch: "abox/" + id, State: Discarded}, nil
}

// Discard removes run id's clone and branch and records it as discarded. A merged run keeps
// its state but loses its clone and branch.
func (r *Repo) Discard(ctx context.Context, id string) (*Run, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	run, err := r.Load(id)
	if errors.Is(err, ErrNotFound) {
		return r.discardOrphan(id)
	}
	if err != nil {
		return nil, err
	}
	ref := "refs/heads/" + run.Branch
	if cur, err := r.host(ctx, "symbolic-ref", "--quiet", "HEAD"); err == nil && trim(cur) == ref {
		return nil, fmt.Errorf("the run's branch %s is checked out: check out another branch first", run.Branch)
	}
	if _, err := r.host(ctx, "rev-parse", "--verify", "--quiet", ref); err == nil {
		if _, err := r.host(ctx, "update-ref", "-d", ref); err != nil {
			return nil, err
		}
	}
	// RemoveAll does not follow symlinks: whatever the agent linked stays where it is.
	if err := os.RemoveAll(r.Project.Clone(id)); err != nil {
		return nil, fmt.Errorf("removing the clone: %w", err)
	}
	if run.State == Pending {
		run.State = Discarded
	}
	return run, r.save(run)
}

// Sweep removes every clone of the project (`abox nuke`): orphans, and the clones of recorded
// runs. A pending run that was collected stays pending, since its branch is in the user's
// repository and Diff and Merge need nothing else; one never collected is recorded as
// discarded, as its work is gone with the clone. It returns the ids whose clone it removed.
func (r *Repo) Sweep() ([]string, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	runs, err := r.List()
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		if run.State == Pending && !run.Collected() {
			run.State = Discarded
			if err := r.save(run); err != nil {
				return nil, err
			}
		}
	}
	ents, err := os.ReadDir(r.Project.Clones())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(r.Project.Clones(), e.Name())); err != nil {
			return removed, fmt.Errorf("removing the clone %s: %w", e.Name(), err)
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
