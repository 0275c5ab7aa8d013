package isolate

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aboxhq/abox/internal/watch"
)

// What a branch brings that runs on the host is judged by the one catalog the live watch, the
// run's summary and doctor read ([watch.Catalog]), looked up wherever the file lies
// ([watch.Lookup]): a reviewer of a branch cannot always tell a workspace package, and too much
// is a longer list where too little is a hidden workflow. Since no catalog is complete, a file
// in a hidden directory the catalog does not know, in an entry of one it knows for something
// else, and a hidden file it does not know are marked too ([watch.HiddenWhy]); and so is
// whatever the user's own patterns name, and what a symlink the catalog covers leads to.

// ExecPatterns are the user's patterns [Repo.Diff] flags on top of the catalog: defaults.watch
// and mounts.watch.
func (r *Repo) ExecPatterns() []string { return r.Watch }

// noVenv takes no directory for a virtualenv: the first look at a branch's files, before
// [Repo.markVenvs] knows them.
func noVenv(string) bool { return false }

// execWhy says what makes rel execution-adjacent — the tool of the catalog entry that covers
// it, what the catalog does not know ([watch.HiddenWhy]), or the user's patterns pats — or "" when
// nothing does. venv reports the directories taken for virtualenvs.
func execWhy(pats []string, rel string, venv func(string) bool) string {
	if venv == nil {
		venv = noVenv
	}
	if e, ok := watch.Lookup(rel, venv); ok {
		return e.Tool
	}
	if why := watch.HiddenWhy(rel); why != "" {
		return why
	}
	if userMatch(pats, rel) {
		return "a watched path (defaults.watch, mounts.watch)"
	}
	return ""
}

// markVenvs marks the files of files in a virtualenv by what the catalog says of one: a
// directory holding pyvenv.cfg in the branch's tip or in the user's checkout, where a merge
// overwrites an ignored .venv/bin/python as readily as any file.
func (r *Repo) markVenvs(ctx context.Context, tip string, pats []string, files []File) error {
	cand := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "." && d != "/" && !cand[d]; d = path.Dir(d) {
			cand[d] = true
		}
	}
	venvs := map[string]bool{}
	var ask []string
	for d := range cand {
		if st, err := os.Lstat(filepath.Join(r.Project.Workspace, filepath.FromSlash(d), "pyvenv.cfg")); err == nil && !st.IsDir() {
			venvs[d] = true
		}
		if !strings.Contains(d, "\n") {
			ask = append(ask, d)
		}
	}
	sort.Strings(ask)
	inTip, err := r.treeEntries(ctx, tip, ask, "pyvenv.cfg")
	if err != nil {
		return err
	}
	for d := range inTip {
		venvs[d] = true
	}
	if len(venvs) == 0 {
		return nil
	}
	isVenv := func(d string) bool { return venvs[d] }
	for i := range files {
		if why := execWhy(pats, files[i].Path, isVenv); why != "" && why != files[i].Why {
			files[i].Why, files[i].Exec = why, true
		}
	}
	return nil
}

// userMatch reports whether rel matches one of pats: a pattern with a slash is anchored at the
// root and covers everything below the path it names; one without matches a path any of whose
// names it matches, at any depth (a Makefile in a subdirectory runs as well). It flags more than
// watch's anchored matching would: too much is a longer list, too little is a hidden workflow.
func userMatch(pats []string, rel string) bool {
	segs := strings.Split(rel, "/")
	for _, raw := range pats {
		p := strings.Trim(raw, "/")
		if p == "" {
			continue
		}
		if !strings.Contains(p, "/") {
			for _, s := range segs {
				if ok, _ := path.Match(p, s); ok {
					return true
				}
			}
			continue
		}
		ps := strings.Split(p, "/")
		if len(ps) > len(segs) {
			continue
		}
		all := true
		for i, g := range ps {
			if ok, _ := path.Match(g, segs[i]); !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
