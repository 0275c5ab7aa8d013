package isolate

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/termtext"
)

// Collect brings the result of run id into the user's repository as the branch abox/<id>. It
// must be called once the run's containers are gone: nothing may write the clone meanwhile.
//
//  1. The clone is sanitized ([sanitize]) and what the agent left uncommitted is committed as
//     its own commit, "abox: uncommitted changes at the end of run <id>", with plumbing only.
//     Files larger than the bound are left out of it and reported in Run.LeftOut.
//  2. The user's repository takes the clone's HEAD from a bundle, every object checked.
//  3. When masks removed paths at the start, a last commit made in a private index puts them
//     back as they were, so merging the branch does not delete the user's masked files.
//
// The user's working tree, index and HEAD are untouched; only refs/heads/abox/<id> changes.
func (r *Repo) Collect(ctx context.Context, id string) (*Run, error) {
	unlock, err := r.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	run, err := r.Load(id)
	if err != nil {
		return nil, err
	}
	if run.State != Pending {
		return nil, fmt.Errorf("run %s is %s, not pending", id, run.State)
	}
	dir := r.Project.Clone(id)
	if err := sanitize(dir); err != nil {
		return nil, err
	}
	head, err := r.inClone(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("the clone's HEAD names no commit")
	}
	if err := r.checkIndex(ctx, dir); err != nil {
		return nil, err
	}
	left, err := r.leftOut(ctx, dir)
	if err != nil {
		return nil, err
	}
	run.LeftOut = left
	tip, err := r.commitRest(ctx, dir, run, trim(head), left)
	if err != nil {
		return nil, err
	}
	if err := r.bring(ctx, dir, run, tip); err != nil {
		return nil, fmt.Errorf("fetching run %s: %w", id, err)
	}
	final, err := r.restoreMasked(ctx, run, tip)
	if err != nil {
		return nil, err
	}
	if _, err := r.host(ctx, "update-ref", "refs/heads/"+run.Branch, final); err != nil {
		return nil, err
	}
	run.Tip = final
	return run, r.save(run)
}

// checkIndex refuses a clone whose index names a path git would look for outside its work
// tree: git add and ls-files --modified open every path the index holds relative to the work
// tree, and git checks those paths when it writes an index, not when it reads one. An entry
// "../../etc/shadow", written into .git/index by hand, would have abox's git hash that host file
// into the branch (and, but for [Repo.fetch]'s check, a tree named ".." into the user's
// repository).
func (r *Repo) checkIndex(ctx context.Context, dir string) error {
	out, err := r.inClone(ctx, dir, "ls-files", "-z", "--cached")
	if err != nil {
		return fmt.Errorf("reading the clone's index: %w", err)
	}
	for _, p := range splitZ(out) {
		if !inTree(p) {
			return fmt.Errorf("the clone's index names %q, a path outside its work tree: refusing to use it", p)
		}
	}
	return nil
}

// inTree reports whether the index path p stays in the work tree and out of .git: relative,
// with no empty, ".", ".." or ".git" name.
func inTree(p string) bool {
	for _, s := range strings.Split(p, "/") {
		if s == "" || s == "." || s == ".." || strings.EqualFold(s, ".git") {
			return false
		}
	}
	return true
}

// bring makes the clone's commit tip an object of the user's repository.
func (r *Repo) bring(ctx context.Context, dir string, run *Run, tip string) error {
	// Nothing to bring when tip is the base or one of its ancestors: the user has it already.
	if _, err := r.inClone(ctx, dir, "merge-base", "--is-ancestor", tip, run.Base); err == nil {
		return nil
	}
	// A ref abox names, so the bundle and the fetch name a ref and not a bare object id.
	ref := "refs/abox-collect/" + run.ID
	if _, err := r.inClone(ctx, dir, "update-ref", ref, tip); err != nil {
		return err
	}
	fetched := "refs/abox-fetched/" + run.ID
	if err := r.fetch(ctx, dir, run, ref, tip, fetched); err != nil {
		return err
	}
	defer r.host(context.WithoutCancel(ctx), "update-ref", "-d", fetched)
	got, err := r.host(ctx, "rev-parse", "--verify", fetched+"^{commit}")
	if err != nil || trim(got) != tip {
		return fmt.Errorf("the fetched commit is not the clone's %s", tip)
	}
	return nil
}

// leftOut lists the untracked or modified files of the clone larger than the bound, and those
// that are not files git can commit, and nested repositories. It stats them without following a symlink; it reads none.
// A tracked file left out keeps its last committed content on the branch.
func (r *Repo) leftOut(ctx context.Context, dir string) ([]Big, error) {
	out, err := r.inClone(ctx, dir, "ls-files", "-z", "--others", "--modified", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var big []Big
	seen := map[string]bool{}
	for _, f := range splitZ(out) {
		if seen[f] {
			continue
		}
		seen[f] = true
		if dir, ok := strings.CutSuffix(f, "/"); ok {
			// A nested repository, which git would add as a gitlink by reading its HEAD, through
			// a .git file that may point anywhere on the host.
			big = append(big, Big{Path: dir, Type: "nested git repository"})
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f)))
		switch {
		case err != nil:
		case st.IsDir():
			// A tracked gitlink whose directory changed: git add would read the HEAD of the
			// repository its .git file names, anywhere on the host, into the branch.
			big = append(big, Big{Path: f, Type: "nested git repository"})
		case st.Mode().IsRegular() && st.Size() > r.maxFile():
			big = append(big, Big{Path: f, Size: st.Size()})
		case st.Mode()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0:
			// git refuses them, which would leave the whole run uncollectable.
			big = append(big, Big{Path: f, Type: typeName(st.Mode())})
		}
	}
	sort.Slice(big, func(i, j int) bool { return big[i].Path < big[j].Path })
	return big, nil
}

// commitRest commits the clone's work tree on head and returns the new commit, or head when
// nothing is left uncommitted.
func (r *Repo) commitRest(ctx context.Context, dir string, run *Run, head string, left []Big) (string, error) {
	args := []string{"add", "--all", "--", "."}
	for _, b := range left {
		args = append(args, ":(exclude,literal)"+b.Path)
	}
	if _, err := r.inClone(ctx, dir, args...); err != nil {
		return "", fmt.Errorf("adding the run's uncommitted changes: %w", err)
	}
	tree, err := r.inClone(ctx, dir, "write-tree")
	if err != nil {
		return "", err
	}
	headTree, err := r.inClone(ctx, dir, "rev-parse", head+"^{tree}")
	if err != nil {
		return "", err
	}
	if trim(tree) == trim(headTree) {
		return head, nil
	}
	msg := fmt.Sprintf("abox: uncommitted changes at the end of run %s", run.ID)
	if len(left) > 0 {
		var names []string
		for _, b := range left {
			// The names are the agent's: escaped, so that git log shows no terminal control
			// and no line abox did not write.
			if b.Type != "" {
				names = append(names, fmt.Sprintf("%s (a %s)", termtext.Line(b.Path), b.Type))
			} else {
				names = append(names, fmt.Sprintf("%s (%d bytes)", termtext.Line(b.Path), b.Size))
			}
		}
		msg += "\n\nLeft out: " + strings.Join(names, ", ")
	}
	c, err := r.inClone(ctx, dir, "commit-tree", trim(tree), "-p", head, "-m", msg)
	if err != nil {
		return "", err
	}
	if _, err := r.inClone(ctx, dir, "update-ref", "HEAD", trim(c), head); err != nil {
		return "", err
	}
	return trim(c), nil
}

// restoreMasked returns tip with the masked paths put back as they were in run.Full, as a commit
// of its own, or tip when nothing was masked.
func (r *Repo) restoreMasked(ctx context.Context, run *Run, tip string) (string, error) {
	if len(run.Masked) == 0 {
		return tip, nil
	}
	tmp, err := r.hostTemp("index")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	index := filepath.Join(tmp, "index")
	if _, err := r.hostIndex(ctx, index, "read-tree", tip); err != nil {
		return "", err
	}
	args := append([]string{"--literal-pathspecs", "ls-tree", "-z", "--full-tree", run.Full, "--"}, run.Masked...)
	out, err := r.hostIndex(ctx, index, args...)
	if err != nil {
		return "", err
	}
	for _, line := range splitZ(out) {
		meta, p, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return "", fmt.Errorf("reading masked paths: unexpected ls-tree line %q", line)
		}
		if _, err := r.hostIndex(ctx, index, "update-index", "--add", "--replace", "--cacheinfo", f[0]+","+f[2]+","+p); err != nil {
			return "", fmt.Errorf("restoring %s: %w", p, err)
		}
	}
	tree, err := r.hostIndex(ctx, index, "write-tree")
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("abox: masked paths of run %s restored\n\nThey were not in the run's clone.", run.ID)
	c, err := r.hostIndex(ctx, index, "commit-tree", trim(tree), "-p", tip, "-m", msg)
	if err != nil {
		return "", err
	}
	return trim(c), nil
}

// fetch brings the commit tip, ref of the clone at dir, into the user's repository as fetched.
// The user's repository never reads the clone: abox has git in the clone write a bundle of what
// the branch adds to the run's base, and git in the user's repository indexes the bundle's pack
// with --strict, which checks every object and that everything they name is there, then sets
// fetched. Not git fetch from the bundle: that indexes the pack without any check, whatever
// fetch.fsckObjects says (git 2.39), so a tree holding .git/hooks/post-merge or ".." would
// land in the user's objects. No git command of the user's runs in the clone or reads its
// config, and one that runs as the repository's owner ([WorkspaceAccount]) needs no way into
// abox's state.
func (r *Repo) fetch(ctx context.Context, dir string, run *Run, ref, tip, fetched string) error {
	tmp, err := r.hostTemp("fetch")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bundle := filepath.Join(tmp, "run.bundle")
	if _, err := r.inClone(ctx, dir, "bundle", "create", "--quiet", bundle, ref, "^"+run.Base); err != nil {
		return err
	}
	f, err := os.Open(bundle)
	if err != nil {
		return err
	}
	defer f.Close()
	pack, err := bundlePack(f, tip+" "+ref)
	if err != nil {
		return err
	}
	if _, err := r.hostGit(ctx, git{args: []string{"index-pack", "--strict", "--fix-thin", "--stdin"}, stdin: pack}); err != nil {
		return fmt.Errorf("checking the run's objects: %w", err)
	}
	_, err = r.host(ctx, "update-ref", fetched, tip)
	return err
}

// bundlePack reads the header of a bundle abox's git wrote — its signature, capabilities,
// prerequisites and refs, up to an empty line — and returns the pack that follows. The header
// must name want, "<tip> <ref>", as the bundle's only ref.
func bundlePack(f io.Reader, want string) (io.Reader, error) {
	br := bufio.NewReader(f)
	sig, err := br.ReadString('\n')
	if err != nil || (sig != "# v2 git bundle\n" && sig != "# v3 git bundle\n") {
		return nil, fmt.Errorf("the run's bundle starts with %q, not a bundle's signature", sig)
	}
	var refs []string
	for n := 0; ; n++ {
		line, err := br.ReadString('\n')
		if err != nil || n > 1000 {
			return nil, fmt.Errorf("reading the run's bundle: its header does not end")
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			break
		}
		if !strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "@") {
			refs = append(refs, line)
		}
	}
	if len(refs) != 1 || refs[0] != want {
		return nil, fmt.Errorf("the run's bundle names %q, not %q", refs, want)
	}
	if magic, err := br.Peek(4); err != nil || string(magic) != "PACK" {
		return nil, fmt.Errorf("the run's bundle holds no pack")
	}
	return br, nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "device"
	}
	return "irregular file"
}
