package isolate

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Collect brings the result of run id into the user's repository as the branch abox/<id>. It
// must be called once the run's containers are gone: nothing may write the clone meanwhile.
//
//  1. The clone is sanitized ([sanitize]) and what the agent left uncommitted is committed as
//     its own commit, "abox: uncommitted changes at the end of run <id>", with plumbing only.
//     Files larger than the bound are left out of it and reported in Run.LeftOut.
//  2. The user's repository fetches the clone's HEAD, with hooks off and every object checked.
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
	left, err := r.leftOut(ctx, dir)
	if err != nil {
		return nil, err
	}
	run.LeftOut = left
	tip, err := r.commitRest(ctx, dir, run, trim(head), left)
	if err != nil {
		return nil, err
	}
	// A ref abox names, so the fetch asks for a ref and not a bare object id.
	tmpRef := "refs/abox-collect/" + id
	if _, err := r.inClone(ctx, dir, "update-ref", tmpRef, tip); err != nil {
		return nil, err
	}
	fetched := "refs/abox-fetched/" + id
	if err := r.fetch(ctx, dir, "+"+tmpRef+":"+fetched); err != nil {
		return nil, fmt.Errorf("fetching run %s: %w", id, err)
	}
	defer r.host(context.WithoutCancel(ctx), "update-ref", "-d", fetched)
	got, err := r.host(ctx, "rev-parse", "--verify", fetched+"^{commit}")
	if err != nil || trim(got) != tip {
		return nil, fmt.Errorf("fetching run %s: the fetched commit is not the clone's %s", id, tip)
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
			if b.Type != "" {
				names = append(names, fmt.Sprintf("%s (a %s)", b.Path, b.Type))
			} else {
				names = append(names, fmt.Sprintf("%s (%d bytes)", b.Path, b.Size))
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
	tmp, err := os.MkdirTemp(r.Project.Dir, ".index-*")
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

// fetch runs `git fetch` in the user's repository from the clone at dir. Git passes no -c
// override to the other side of a local transport, and that side, upload-pack, runs in the
// clone: so the fetch runs without system config and with a global config abox writes, which
// says only that the clone is a safe directory (it may belong to the agent's uid). Upload-pack
// therefore reads no config but that and the clone's, which [sanitize] rewrote.
func (r *Repo) fetch(ctx context.Context, dir, refspec string) error {
	tmp, err := os.MkdirTemp(r.Project.Dir, ".fetch-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	global := filepath.Join(tmp, "gitconfig")
	if err := os.WriteFile(global, []byte("[safe]\n\tdirectory = "+quoteConfig(dir)+"\n"), 0o600); err != nil {
		return err
	}
	env := append(hostEnv(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+global)
	args := withOverrides(hostOverrides, []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
		"--no-recurse-submodules", "--no-auto-gc", filepath.Join(dir, ".git"), refspec})
	_, err = r.run(ctx, git{dir: r.Project.Workspace, args: args, env: env})
	return err
}

// quoteConfig quotes s as a git config value.
func quoteConfig(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
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
